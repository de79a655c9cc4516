/* See sandbox-dir.h.  Runs in a backend's monitor, as root. */
#include "backend/sandbox-dir.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int
ab_sandbox_dir_create (const char *path, ab_error_t *err)
{
	int fd;

	if (mkdir (path, 0700) < 0)
		return ab_error (err, errno, errno == EEXIST ? AB_E_CONFLICT : AB_E_SYSTEM,
		                 "sandbox directory %s", path);
	fd = open (path, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		int e = errno;
		rmdir (path);
		return ab_error (err, e, AB_E_SYSTEM, "open %s", path);
	}
	return fd;
}

/* Made closed to all but root (us), then given its mode and owner: open
 * to no one else in between, whatever the umask. */
static int
create_closed (int dfd, const char *name, bool dir)
{
	int fd;

	if (dir)
		return mkdirat (dfd, name, 0700);
	fd = openat (dfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	close (fd);
	return 0;
}

int
ab_sandbox_dir_entry (int dfd, const char *name, bool dir, mode_t mode, uid_t owner,
                      ab_error_t *err)
{
	if (create_closed (dfd, name, dir) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", name);
	if (fchmodat (dfd, name, mode, 0) < 0
	    || fchownat (dfd, name, owner, owner, AT_SYMLINK_NOFOLLOW) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mode and owner of %s", name);
	return 0;
}

int
ab_service_link_claim (const char *path, ab_error_t *err)
{
	struct stat st;

	if (lstat (path, &st) == 0
	    && ((!S_ISSOCK (st.st_mode) && !S_ISLNK (st.st_mode)) || unlink (path) < 0))
		return ab_error (err, EEXIST, AB_E_CONFLICT, "%s", path);
	return 0;
}

void
ab_service_link_remove (const char *path, const char *target)
{
	char got[PATH_MAX];
	ssize_t n = readlink (path, got, sizeof got - 1);

	if (n < 0)
		return;
	got[n] = '\0';
	if (strcmp (got, target) == 0)
		unlink (path);
}
