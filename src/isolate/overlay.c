#include "isolate/overlay.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/compat.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define LAYER_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* A detached, read-only (and idmapped) bind of one layer directory.  Not
 * recursive: a layer of the store has no submounts, and none of the
 * host's may come along. */
static int
layer_fd (const char *path, int userns_fd, ab_error_t *err)
{
	struct ab_mount_attr_s attr = { .attr_set = LAYER_ATTRS };
	cleanup_close int fd = ab_sys_open_tree (
	        AT_FDCWD, path, OPEN_TREE_CLONE | OPEN_TREE_CLOEXEC | AT_SYMLINK_NOFOLLOW);

	if (fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "root layer %s", path);
	if (userns_fd >= 0) {
		attr.attr_set |= MOUNT_ATTR_IDMAP;
		attr.userns_fd = (uint64_t)userns_fd;
	}
	if (ab_sys_mount_setattr (fd, "", AT_EMPTY_PATH, &attr) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "%s root layer %s",
		                 userns_fd >= 0 ? "idmap" : "bind", path);
	return steal_fd (&fd);
}

static int
set_fd (int fsfd, const char *key, int fd, const char *what, ab_error_t *err)
{
	if (ab_sys_fsconfig (fsfd, FSCONFIG_SET_FD, key, NULL, fd) < 0)
		return ab_error (err, errno, AB_E_SYSTEM,
		                 "overlayfs %s %s (needs Linux 6.13 or later)", key, what);
	return 0;
}

/* overlayfs takes "lowerdir+" top layer first.  It clones each layer's
 * mount only at FSCONFIG_CMD_CREATE: the detached mounts must stay open
 * (fds[]) until then, or they are gone by the time it looks. */
static int
add_layers (int fsfd, char *const *layers, size_t n, int userns_fd, int *fds, ab_error_t *err)
{
	for (size_t i = n; i-- > 0;) {
		fds[i] = layer_fd (layers[i], userns_fd, err);
		if (fds[i] < 0 || set_fd (fsfd, "lowerdir+", fds[i], layers[i], err) < 0)
			return -1;
	}
	return 0;
}

/* "volatile": no sync of the upper's filesystem at every syncfs and at
 * the unmount (the end of the sandbox: measured ~20 ms of a 45 ms run).
 * An upper layer lives as long as its sandbox and is never mounted again
 * after a crash, which is all overlayfs asks of a volatile upper. */
static int
set_volatile (int fsfd, ab_error_t *err)
{
	if (ab_sys_fsconfig (fsfd, FSCONFIG_SET_FLAG, "volatile", NULL, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "overlayfs volatile");
	return 0;
}

static void
close_all (int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (fds[i] >= 0)
			close (fds[i]);
	free (fds);
}

static int
create_overlay (int fsfd, bool writable, ab_error_t *err)
{
	int mfd;

	if (ab_sys_fsconfig (fsfd, FSCONFIG_CMD_CREATE, NULL, NULL, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create the overlayfs root");
	mfd = ab_sys_fsmount (fsfd, FSMOUNT_CLOEXEC,
	                      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV
	                              | (writable ? 0 : MOUNT_ATTR_RDONLY));
	if (mfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fsmount the overlayfs root");
	return mfd;
}

int
ab_overlay_mount_fd (char *const *layers, int upper_fd, int work_fd, int userns_fd, ab_error_t *err)
{
	cleanup_close int fsfd = -1;
	bool writable = upper_fd >= 0;
	size_t n = 0;
	int *fds, mfd;

	while (layers && layers[n])
		n++;
	if (n == 0)
		return ab_error (err, 0, AB_E_INVALID, "a layered root without layers");
	if (n == 1 && !writable)
		return layer_fd (layers[0], userns_fd, err);
	fsfd = ab_sys_fsopen ("overlay", FSOPEN_CLOEXEC);
	if (fsfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fsopen overlay");
	fds = xmalloc (n * sizeof *fds);
	for (size_t i = 0; i < n; i++)
		fds[i] = -1;
	if (add_layers (fsfd, layers, n, userns_fd, fds, err) < 0
	    || (writable
	        && (set_fd (fsfd, "upperdir", upper_fd, "", err) < 0
	            || set_fd (fsfd, "workdir", work_fd, "", err) < 0
	            || set_volatile (fsfd, err) < 0)))
		mfd = -1;
	else
		mfd = create_overlay (fsfd, writable, err);
	close_all (fds, n);
	return mfd;
}
