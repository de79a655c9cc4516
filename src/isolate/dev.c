/* A minimal /dev (SECURITY.md 5): a small tmpfs holding binds of six
 * verified host device nodes, a private devpts instance, /dev/shm and the
 * usual symlinks.  No other host device is reachable. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/compat.h"
#include "isolate/mountfd.h"
#include "isolate/sandbox-fs.h"

static const struct {
	const char *name;
	unsigned int major, minor;
} dev_nodes[AB_DEV_NODES] = {
	{ "null", 1, 3 },   { "zero", 1, 5 },    { "full", 1, 7 },
	{ "random", 1, 8 }, { "urandom", 1, 9 }, { "tty", 5, 0 },
};

static const struct {
	const char *name, *target;
} dev_links[] = {
	{ "ptmx", "pts/ptmx" },          { "fd", "/proc/self/fd" },
	{ "stdin", "/proc/self/fd/0" },  { "stdout", "/proc/self/fd/1" },
	{ "stderr", "/proc/self/fd/2" },
};

int
ab_dev_capture (int fds[AB_DEV_NODES], ab_error_t *err)
{
	cleanup_close int dev = open ("/dev", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (dev < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open /dev");
	for (size_t i = 0; i < AB_DEV_NODES; i++) {
		struct stat st;
		fds[i] = ab_mountfd_clone (dev, dev_nodes[i].name,
		                           MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
		if (fds[i] < 0)
			return ab_error_wrap (err, "/dev/%s", dev_nodes[i].name);
		/* Checked on the captured mount itself: no window for a swap. */
		if (fstat (fds[i], &st) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "stat /dev/%s",
			                 dev_nodes[i].name);
		if (!S_ISCHR (st.st_mode) || major (st.st_rdev) != dev_nodes[i].major
		    || minor (st.st_rdev) != dev_nodes[i].minor)
			return ab_error (err, 0, AB_E_DENIED,
			                 "host /dev/%s is not the device %u:%u", dev_nodes[i].name,
			                 dev_nodes[i].major, dev_nodes[i].minor);
	}
	return 0;
}

static int
mount_fresh (int dir, const char *path, const char *fstype, const char *options, uint64_t attrs,
             ab_error_t *err)
{
	cleanup_close int target = ab_mkdir_beneath (dir, path, err);
	cleanup_close int mnt = -1;

	if (target < 0)
		return -1;
	mnt = ab_mountfd_new (fstype, options, attrs, err);
	if (mnt < 0)
		return -1;
	return ab_mount_attach (mnt, target, path, err);
}

int
ab_dev_setup (int root, int fds[AB_DEV_NODES], ab_error_t *err)
{
	cleanup_close int dev = -1;

	if (mount_fresh (root, "dev", "tmpfs", "mode=0755,size=65536",
	                 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err)
	    < 0)
		return -1;
	dev = ab_mkdir_beneath (root, "dev", err);
	if (dev < 0)
		return -1;
	for (size_t i = 0; i < AB_DEV_NODES; i++) {
		cleanup_close int target = ab_mkfile_beneath (dev, dev_nodes[i].name, err);
		if (target < 0 || ab_mount_attach (fds[i], target, dev_nodes[i].name, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof dev_links / sizeof *dev_links; i++)
		if (symlinkat (dev_links[i].target, dev, dev_links[i].name) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "symlink /dev/%s",
			                 dev_links[i].name);
	if (mount_fresh (dev, "pts", "devpts", "newinstance,ptmxmode=0666,mode=0620",
	                 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err)
	    < 0)
		return -1;
	if (mount_fresh (dev, "shm", "tmpfs", "mode=1777",
	                 MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err)
	    < 0)
		return -1;
	/* The tmpfs itself is read-only: nothing new can appear in /dev. */
	return ab_mount_setattr_fd (dev, MOUNT_ATTR_RDONLY, false, err);
}

int
ab_tmpfs_setup (int root, const char *path, ab_error_t *err)
{
	return mount_fresh (root, path, "tmpfs", "mode=1777", MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	                    err);
}
