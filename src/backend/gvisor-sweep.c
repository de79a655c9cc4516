/* Host cgroups that runsc made and nobody removed.  `runsc run` removes its
 * cgroups when it ends, and `runsc delete` when asked; neither happens when
 * the monitor and the keeper are killed together (SIGKILL of everything
 * that carries a test's marker, say): the sandbox still dies (runsc's
 * parent-death signals), but its empty groups stay.  After each teardown
 * the keeper removes such leftovers: empty "gvisor-agentbox-*" groups below
 * its own cgroup, older than a minute, so a group runsc has just made and
 * not yet entered is never taken from under it.  A group that still holds
 * a task cannot be removed at all (rmdir: EBUSY). */
#include "backend/gvisor-internal.h"

#include <dirent.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "isolate/cgroup-internal.h"

#define STALE_AFTER_S 60

static void
sweep_dir (const char *dir, time_t now)
{
	cleanup_dir DIR *d = opendir (dir);
	struct dirent *de;

	while (d && (de = readdir (d)) != NULL) {
		struct stat st;
		if (strncmp (de->d_name, AB_GVISOR_CGROUP_PREFIX, strlen (AB_GVISOR_CGROUP_PREFIX))
		            != 0
		    || fstatat (dirfd (d), de->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0
		    || !S_ISDIR (st.st_mode) || now - st.st_mtime < STALE_AFTER_S)
			continue;
		unlinkat (dirfd (d), de->d_name, AT_REMOVEDIR);
	}
}

void
ab_gvisor_sweep_cgroups (void)
{
	ab_error_t err = AB_ERROR_INIT;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (&err);
	time_t now = time (NULL);

	for (size_t i = 0; l && i < l->n_hier; i++)
		if (l->hier[i].dir)
			sweep_dir (l->hier[i].dir, now);
}
