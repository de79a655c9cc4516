/* linux.devices: device nodes the bundle asks for in the container.
 *
 * In a user namespace mknod of a device is refused, so, as runc does
 * rootless, the host's own node is bind mounted: create finds a host node
 * of the same type and major:minor (the config's path on the host, else
 * one level of /dev) and hands a detached clone of it to init, which
 * attaches it at the path beneath the root.  The host node is never
 * changed: fileMode, uid and gid are not applied to it, and who may open
 * it is decided by its host owner and mode against the container's
 * (unprivileged, mapped) ids.  A FIFO ('p') needs no privilege: init
 * makes it.  linux.resources.devices rules are not written. */
#include "cli/oci.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "isolate/mountfd.h"

static const json_t *
devices (const json_t *config)
{
	return json_object_get (json_object_get (config, "linux"), "devices");
}

static int
check (const json_t *d, mode_t *type, dev_t *rdev, const char **path, ab_error_t *err)
{
	const char *t = json_string_value (json_object_get (d, "type"));

	*path = json_string_value (json_object_get (d, "path"));
	if (!*path || strncmp (*path, "/dev/", 5) != 0 || strstr (*path, "/..") || !t)
		return ab_error (err, 0, AB_E_INVALID, "linux.devices: bad entry %s",
		                 *path ? *path : "(no path)");
	*rdev = makedev ((unsigned)json_integer_value (json_object_get (d, "major")),
	                 (unsigned)json_integer_value (json_object_get (d, "minor")));
	if (strcmp (t, "c") == 0 || strcmp (t, "u") == 0)
		*type = S_IFCHR;
	else if (strcmp (t, "b") == 0)
		*type = S_IFBLK;
	else if (strcmp (t, "p") == 0)
		*type = S_IFIFO;
	else
		return ab_error (err, 0, AB_E_INVALID, "linux.devices %s: type %s", *path, t);
	return 0;
}

static bool
matches (int dfd, const char *name, mode_t type, dev_t rdev)
{
	struct stat st;

	return fstatat (dfd, name, &st, AT_SYMLINK_NOFOLLOW) == 0 && (st.st_mode & S_IFMT) == type
	       && st.st_rdev == rdev;
}

/* The host's node: its own path first, then /dev and its subdirectories. */
static int
host_node (const char *path, mode_t type, dev_t rdev, char *out, size_t size)
{
	cleanup_dir DIR *dev = NULL;
	struct dirent *e;

	if (matches (AT_FDCWD, path, type, rdev)) {
		snprintf (out, size, "%s", path);
		return 0;
	}
	if (!(dev = opendir ("/dev")))
		return -1;
	while ((e = readdir (dev))) {
		cleanup_dir DIR *sub = NULL;
		struct dirent *f;
		char dir[PATH_MAX];
		if (e->d_name[0] == '.')
			continue;
		if (matches (dirfd (dev), e->d_name, type, rdev)) {
			snprintf (out, size, "/dev/%s", e->d_name);
			return 0;
		}
		if (e->d_type != DT_DIR)
			continue;
		snprintf (dir, sizeof dir, "/dev/%s", e->d_name);
		for (sub = opendir (dir); sub && (f = readdir (sub));)
			if (f->d_name[0] != '.' && matches (dirfd (sub), f->d_name, type, rdev)) {
				snprintf (out, size, "%s/%s", dir, f->d_name);
				return 0;
			}
	}
	return -1;
}

int
ab_oci_devices_send (const json_t *config, int sync, ab_error_t *err)
{
	size_t i;
	json_t *d;

	json_array_foreach (devices (config), i, d)
	{
		const char *path;
		char host[PATH_MAX];
		mode_t type;
		dev_t rdev;
		int fd;
		if (check (d, &type, &rdev, &path, err) < 0)
			return -1;
		if (type == S_IFIFO)
			continue;
		if (host_node (path, type, rdev, host, sizeof host) < 0)
			return ab_error (err, ENOENT, AB_E_NOT_FOUND,
			                 "linux.devices %s: no host node %c %u:%u to bind", path,
			                 type == S_IFBLK ? 'b' : 'c', major (rdev), minor (rdev));
		fd = ab_sys_open_tree (AT_FDCWD, host, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC);
		if (fd < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "linux.devices: clone %s", host);
		if (ab_send_with_fds (sync, "d", 1, &fd, 1) < 0) {
			close (fd);
			return ab_error (err, errno, AB_E_SYSTEM, "hand %s to init", path);
		}
		close (fd);
	}
	return 0;
}

int
ab_oci_devices_attach (const json_t *config, int root, int sync, ab_error_t *err)
{
	size_t i;
	json_t *d;

	json_array_foreach (devices (config), i, d)
	{
		const char *path;
		mode_t type;
		dev_t rdev;
		char tag;
		size_t n = 0;
		cleanup_close int fd = -1, target = -1;
		if (check (d, &type, &rdev, &path, err) < 0)
			return -1;
		if (type == S_IFIFO) {
			cleanup_close int dev = ab_mkdir_beneath (root, "dev", err);
			const char *name = path + 5;
			if (dev < 0 || strchr (name, '/'))
				return ab_error (err, errno, AB_E_INVALID, "linux.devices %s",
				                 path);
			if (mknodat (dev, name, S_IFIFO | 0666, 0) < 0 && errno != EEXIST)
				return ab_error (err, errno, AB_E_SYSTEM, "mkfifo %s", path);
			continue;
		}
		if (ab_recv_with_fds (sync, &tag, 1, &fd, 1, &n) != 1 || n != 1)
			return ab_error (err, errno, AB_E_SYSTEM, "receive %s", path);
		if ((target = ab_mkfile_beneath (root, path + 1, err)) < 0
		    || ab_mount_attach (fd, target, path, err) < 0)
			return ab_error_wrap (err, "linux.devices");
	}
	return 0;
}
