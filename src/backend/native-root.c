#include "backend/native-root.h"

#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fsutil.h"
#include "base/tmpdir.h"
#include "base/xalloc.h"
#include "isolate/overlay.h"

#define ROOT_DIR_NAME "root-upper"

static char *
make_root_dir (const struct ab_spec_s *spec, ab_error_t *err)
{
	cleanup_free char *copy = NULL;
	char *dir;

	if (!spec->service_socket)
		return ab_make_temp_dir (NULL, "agentbox-root", err);
	copy = xstrdup (spec->service_socket);
	dir = xasprintf ("%s/%s", dirname (copy), ROOT_DIR_NAME);
	if (mkdir (dir, 0700) < 0) {
		ab_error (err, errno, errno == EEXIST ? AB_E_CONFLICT : AB_E_SYSTEM,
		          "root upper directory %s", dir);
		free (dir);
		return NULL;
	}
	return dir;
}

/* upper and work, owned by the sandbox's root; O_PATH fds of both. */
static int
make_layer_dirs (const char *dir, uid_t root_uid, int *upper, int *work, ab_error_t *err)
{
	cleanup_close int dfd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	const char *names[] = { "upper", "work" };
	int *fds[] = { upper, work };

	if (dfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", dir);
	for (int i = 0; i < 2; i++) {
		if (mkdirat (dfd, names[i], 0755) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s/%s", dir, names[i]);
		*fds[i] = openat (dfd, names[i], O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
		if (*fds[i] < 0 || fchown (*fds[i], root_uid, root_uid) < 0
		    || fchmod (*fds[i], 0755) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "prepare %s/%s", dir, names[i]);
	}
	return 0;
}

int
ab_native_root_mount (const struct ab_spec_s *spec, pid_t init_pid, uid_t root_uid, char **dir,
                      ab_error_t *err)
{
	cleanup_free char *ns_path = xasprintf ("/proc/%d/ns/user", (int)init_pid);
	cleanup_close int userns = open (ns_path, O_RDONLY | O_CLOEXEC);
	cleanup_close int upper = -1, work = -1;
	int fd;

	*dir = NULL;
	if (userns < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open the sandbox's user namespace");
	if (!spec->root.read_only
	    && (!(*dir = make_root_dir (spec, err))
	        || make_layer_dirs (*dir, root_uid, &upper, &work, err) < 0))
		fd = -1;
	else
		fd = ab_overlay_mount_fd (spec->root.layers, upper, work, userns, err);
	if (fd < 0) {
		ab_native_root_remove (*dir);
		free (*dir);
		*dir = NULL;
	}
	return fd;
}

void
ab_native_root_remove (const char *dir)
{
	if (dir)
		ab_rm_rf (dir);
}
