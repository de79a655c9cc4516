#include "isolate/mountfd.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"

int
ab_mount_setattr_fd (int fd, uint64_t set, bool recursive, ab_error_t *err)
{
	struct ab_mount_attr_s attr = { .attr_set = set };
	unsigned int flags = AT_EMPTY_PATH | (recursive ? AT_RECURSIVE : 0);

	if (set && ab_sys_mount_setattr (fd, "", flags, &attr) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount_setattr");
	return 0;
}

int
ab_mountfd_clone (int dirfd, const char *path, uint64_t attrs, ab_error_t *err)
{
	unsigned int flags =
	        OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_RECURSIVE | AT_SYMLINK_NOFOLLOW;
	cleanup_close int fd = -1;

	if (path[0] == '\0')
		flags |= AT_EMPTY_PATH;
	fd = ab_sys_open_tree (dirfd, path, flags);
	if (fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "bind%s%s", path[0] ? " " : "", path);
	if (ab_mount_setattr_fd (fd, attrs, true, err) < 0)
		return ab_error_wrap (err, "bind%s%s", path[0] ? " " : "", path);
	return steal_fd (&fd);
}

static int
configure (int fsfd, const char *options, ab_error_t *err)
{
	cleanup_free char *copy = xstrdup (options);
	char *save = NULL;

	for (char *opt = strtok_r (copy, ",", &save); opt; opt = strtok_r (NULL, ",", &save)) {
		char *eq = strchr (opt, '=');
		int r;
		if (eq) {
			*eq = '\0';
			r = ab_sys_fsconfig (fsfd, FSCONFIG_SET_STRING, opt, eq + 1, 0);
		} else {
			r = ab_sys_fsconfig (fsfd, FSCONFIG_SET_FLAG, opt, NULL, 0);
		}
		if (r < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "mount option %s", opt);
	}
	return 0;
}

int
ab_mountfd_new (const char *fstype, const char *options, uint64_t attrs, ab_error_t *err)
{
	cleanup_close int fsfd = ab_sys_fsopen (fstype, FSOPEN_CLOEXEC);
	int mfd;

	if (fsfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fsopen %s", fstype);
	if (options && configure (fsfd, options, err) < 0)
		return ab_error_wrap (err, "%s", fstype);
	if (ab_sys_fsconfig (fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", fstype);
	mfd = ab_sys_fsmount (fsfd, FSMOUNT_CLOEXEC, (unsigned int)attrs);
	if (mfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fsmount %s", fstype);
	return mfd;
}

int
ab_mountfd_tmpfs (const char *options, uint64_t attrs, ab_error_t *err)
{
	return ab_mountfd_new ("tmpfs", options, attrs, err);
}

/* Walk `path` one component at a time beneath dirfd; RESOLVE_BENEATH and
 * RESOLVE_NO_SYMLINKS make a hostile symlink or ".." an error. */
static int
walk_dirs (int root_fd, const char *path, bool last_is_file, ab_error_t *err)
{
	cleanup_free char *copy = xstrdup (path);
	cleanup_close int cur = dup (root_fd);
	char *save = NULL, *comp, *next;
	const uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

	if (cur < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "dup");
	comp = strtok_r (copy, "/", &save);
	while (comp) {
		int fd;
		next = strtok_r (NULL, "/", &save);
		if (!next && last_is_file) {
			fd = ab_sys_openat2 (cur, comp, O_CREAT | O_RDONLY | O_CLOEXEC | O_NOFOLLOW,
			                     resolve);
			if (fd < 0 && errno == EISDIR)
				fd = ab_sys_openat2 (cur, comp, O_PATH | O_CLOEXEC, resolve);
		} else {
			if (mkdirat (cur, comp, 0755) < 0 && errno != EEXIST)
				return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s (in %s)", comp,
				                 path);
			fd = ab_sys_openat2 (cur, comp, O_PATH | O_DIRECTORY | O_CLOEXEC, resolve);
		}
		if (fd < 0)
			return ab_error (err, errno, errno == ELOOP ? AB_E_DENIED : AB_E_SYSTEM,
			                 "mount target %s", path);
		close (cur);
		cur = fd;
		comp = next;
	}
	return steal_fd (&cur);
}

int
ab_mkdir_beneath (int root_fd, const char *path, ab_error_t *err)
{
	return walk_dirs (root_fd, path, false, err);
}

int
ab_mkfile_beneath (int root_fd, const char *path, ab_error_t *err)
{
	return walk_dirs (root_fd, path, true, err);
}

int
ab_mount_attach (int mnt_fd, int target_fd, const char *what, ab_error_t *err)
{
	if (ab_sys_move_mount (mnt_fd, "", target_fd, "",
	                       MOVE_MOUNT_F_EMPTY_PATH | MOVE_MOUNT_T_EMPTY_PATH)
	    < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount %s", what);
	return 0;
}
