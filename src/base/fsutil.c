/* File helpers shared by the daemon's state and the image store: a file
 * replaced atomically, a tree removed without following links. */
#include "base/fsutil.h"

#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"

int
ab_write_file_atomic (const char *path, const char *data, size_t len, ab_error_t *err)
{
	return ab_write_file_atomic_ex (path, data, len, true, err);
}

int
ab_write_file_atomic_ex (const char *path, const char *data, size_t len, bool durable,
                         ab_error_t *err)
{
	cleanup_free char *tmp = xasprintf ("%s.tmp", path);
	cleanup_free char *dir = xstrdup (path);
	cleanup_close int fd = -1, dfd = -1;
	char *slash = strrchr (dir, '/');

	fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", tmp);
	if (ab_write_all (fd, data, len) < 0 || (durable && fsync (fd) < 0)) {
		int e = errno;
		unlink (tmp);
		return ab_error (err, e, AB_E_SYSTEM, "write %s", tmp);
	}
	if (rename (tmp, path) < 0) {
		int e = errno;
		unlink (tmp);
		return ab_error (err, e, AB_E_SYSTEM, "rename %s", tmp);
	}
	if (!durable)
		return 0;
	if (slash)
		*slash = '\0';
	/* The rename is durable only once the directory is. */
	dfd = open (slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0)
		fsync (dfd);
	return 0;
}

static int
rm_one (const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	return (type == FTW_DP ? rmdir (path) : unlink (path)) < 0 && errno != ENOENT ? -1 : 0;
}

int
ab_rm_rf (const char *path)
{
	/* FTW_PHYS: never follow a symlink the sandbox may have planted in
	 * its workspace; FTW_MOUNT: never walk into another filesystem. */
	int r = nftw (path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return r < 0 && errno == ENOENT ? 0 : r;
}

char *
ab_default_state_dir (void)
{
	const char *env = getenv ("AGENTBOX_STATE_DIR");
	const char *xdg = getenv ("XDG_STATE_HOME"), *home = getenv ("HOME");

	if (env && env[0] == '/')
		return xstrdup (env);
	if (geteuid () == 0)
		return xstrdup ("/var/lib/agentbox");
	if (xdg && xdg[0] == '/')
		return xasprintf ("%s/agentbox", xdg);
	if (home && home[0] == '/')
		return xasprintf ("%s/.local/state/agentbox", home);
	return NULL;
}
