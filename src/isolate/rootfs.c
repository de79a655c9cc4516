#include "isolate/rootfs.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "isolate/mountfd.h"
#include "isolate/sandbox-fs.h"

#define RO_ATTRS (MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)
#define RW_ATTRS (MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV)

/* With --rootfs host, only these host trees enter the sandbox: no /root,
 * /home, /var, /run, /tmp, /srv, /mnt, /media, /boot, no host sockets. */
static const char *const host_root_names[] = {
	"usr", "bin", "sbin", "lib", "lib32", "lib64", "libx32", "etc",
};

/* With --rootfs DIR, everything of DIR but what the sandbox provides. */
static const char *const image_reserved_names[] = {
	"proc", "dev", "sys", "tmp", "workspace",
};

static bool
in_list (const char *name, const char *const *list, size_t n)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp (name, list[i]) == 0)
			return true;
	return false;
}

static int
capture_entry (struct ab_rootfs_s *rf, int dirfd, const char *name, ab_error_t *err)
{
	struct ab_root_entry_s e = { .name = xstrdup (name), .mnt_fd = -1 };
	struct stat st;

	if (fstatat (dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		free (e.name);
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "stat /%s", name);
	}
	if (S_ISLNK (st.st_mode)) {
		char target[PATH_MAX];
		ssize_t n = readlinkat (dirfd, name, target, sizeof target - 1);
		if (n < 0) {
			free (e.name);
			return ab_error (err, errno, AB_E_SYSTEM, "readlink /%s", name);
		}
		target[n] = '\0';
		e.link_target = xstrdup (target);
	} else if (S_ISDIR (st.st_mode) || S_ISREG (st.st_mode)) {
		e.mnt_fd = ab_mountfd_clone (dirfd, name, RO_ATTRS, err);
		if (e.mnt_fd < 0) {
			free (e.name);
			return -1;
		}
	} else {
		free (e.name); /* sockets, fifos, devices at the top level: never */
		return 0;
	}
	rf->entries = xrealloc (rf->entries, (rf->n_entries + 1) * sizeof *rf->entries);
	rf->entries[rf->n_entries++] = e;
	return 0;
}

static int
capture_host_root (struct ab_rootfs_s *rf, ab_error_t *err)
{
	cleanup_close int root = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	size_t n = sizeof host_root_names / sizeof *host_root_names;

	if (root < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open /");
	for (size_t i = 0; i < n; i++)
		if (capture_entry (rf, root, host_root_names[i], err) < 0)
			return -1;
	return 0;
}

/* `dir` is where the image is reachable now; `name` what the user gave. */
static int
capture_image_root (struct ab_rootfs_s *rf, const char *dir, const char *name, ab_error_t *err)
{
	size_t n_reserved = sizeof image_reserved_names / sizeof *image_reserved_names;
	cleanup_close int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC | O_NOFOLLOW);
	cleanup_dir DIR *d = NULL;
	struct dirent *de;

	if (fd < 0 && errno == EACCES)
		return ab_error (err, errno, AB_E_INVALID,
		                 "rootfs %s (the sandbox's root must be able to reach it: no 0700 "
		                 "parent directory)",
		                 name);
	if (fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_INVALID,
		                 "rootfs %s", name);
	d = fdopendir (dup (fd));
	if (!d)
		return ab_error (err, errno, AB_E_SYSTEM, "read rootfs %s", name);
	while ((errno = 0, de = readdir (d))) {
		if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0
		    || in_list (de->d_name, image_reserved_names, n_reserved))
			continue;
		if (capture_entry (rf, fd, de->d_name, err) < 0)
			return ab_error_wrap (err, "rootfs %s", name);
	}
	if (errno)
		return ab_error (err, errno, AB_E_SYSTEM, "read rootfs %s", name);
	return 0;
}

static int
capture_mounts (const struct ab_spec_s *spec, bool binds_later, struct ab_rootfs_s *rf,
                ab_error_t *err)
{
	rf->mount_fds = xmalloc ((spec->n_mounts + 1) * sizeof *rf->mount_fds);
	for (size_t i = 0; i < spec->n_mounts; i++)
		rf->mount_fds[i] = -1;
	for (size_t i = 0; i < spec->n_mounts && !binds_later; i++) {
		const struct ab_mount_s *m = &spec->mounts[i];
		if (m->kind == AB_MOUNT_TMPFS)
			continue;
		rf->mount_fds[i] =
		        ab_mountfd_clone (AT_FDCWD, m->source,
		                          m->kind == AB_MOUNT_RO_BIND ? RO_ATTRS : RW_ATTRS, err);
		if (rf->mount_fds[i] < 0)
			return -1;
	}
	return 0;
}

/* The image as a detached mount made on the host by the privileged
 * monitor (the sandbox's root may not be able to traverse its path):
 * attached for a moment at the staging point, its entries captured, then
 * detached again before the new root takes that place. */
static int
capture_image_mount (struct ab_rootfs_s *rf, int image_mnt, const char *name, ab_error_t *err)
{
	cleanup_close int target = open (AB_ROOT_STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	int r;

	if (target < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", AB_ROOT_STAGING);
	if (ab_mount_attach (image_mnt, target, "rootfs", err) < 0)
		return -1;
	r = capture_image_root (rf, AB_ROOT_STAGING, name, err);
	if (umount2 (AB_ROOT_STAGING, MNT_DETACH) < 0 && r == 0)
		r = ab_error (err, errno, AB_E_SYSTEM, "detach the rootfs staging mount");
	return r;
}

int
ab_rootfs_capture (const struct ab_spec_s *spec, bool binds_later, int image_mnt,
                   struct ab_rootfs_s *rf, ab_error_t *err)
{
	int r;

	memset (rf, 0, sizeof *rf);
	rf->workspace_fd = rf->root_fd = rf->overlay_fd = -1;
	for (size_t i = 0; i < AB_DEV_NODES; i++)
		rf->dev_fds[i] = -1;
	if (spec->workspace && !binds_later) {
		rf->workspace_fd = ab_mountfd_clone (AT_FDCWD, spec->workspace, RW_ATTRS, err);
		if (rf->workspace_fd < 0)
			return ab_error_wrap (err, "workspace");
	}
	if (spec->root.layers && image_mnt < 0)
		r = ab_error (err, 0, AB_E_INTERNAL, "a layered root without its overlay");
	else if (spec->root.layers && !spec->root.read_only)
		r = 0, rf->overlay_fd = image_mnt;
	else if (spec->root.layers)
		r = capture_image_mount (rf, image_mnt, "(layered root)", err);
	else if (!spec->rootfs)
		r = capture_host_root (rf, err);
	else if (image_mnt >= 0)
		r = capture_image_mount (rf, image_mnt, spec->rootfs, err);
	else
		r = capture_image_root (rf, spec->rootfs, spec->rootfs, err);
	if (r < 0)
		return -1;
	if (capture_mounts (spec, binds_later, rf, err) < 0)
		return -1;
	return ab_dev_capture (rf->dev_fds, err);
}

static int
attach_at (int root, int mnt_fd, const char *path, bool is_file, ab_error_t *err)
{
	cleanup_close int target =
	        is_file ? ab_mkfile_beneath (root, path, err) : ab_mkdir_beneath (root, path, err);
	if (target < 0)
		return -1;
	return ab_mount_attach (mnt_fd, target, path, err);
}

static int
populate_root_entries (int root, struct ab_rootfs_s *rf, ab_error_t *err)
{
	for (size_t i = 0; i < rf->n_entries; i++) {
		struct ab_root_entry_s *e = &rf->entries[i];
		struct stat st;
		if (e->link_target) {
			if (symlinkat (e->link_target, root, e->name) < 0)
				return ab_error (err, errno, AB_E_SYSTEM, "symlink /%s", e->name);
			continue;
		}
		if (fstat (e->mnt_fd, &st) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "stat /%s", e->name);
		if (attach_at (root, e->mnt_fd, e->name, !S_ISDIR (st.st_mode), err) < 0)
			return -1;
	}
	return 0;
}

static int
populate_mounts (int root, const struct ab_spec_s *spec, struct ab_rootfs_s *rf, ab_error_t *err)
{
	if (rf->workspace_fd >= 0
	    && attach_at (root, rf->workspace_fd, AB_WORKSPACE_DIR, false, err) < 0)
		return -1;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct ab_mount_s *m = &spec->mounts[i];
		cleanup_close int tmp = -1;
		int fd = rf->mount_fds[i];
		struct stat st;
		if (m->kind != AB_MOUNT_TMPFS && fd < 0)
			return ab_error (err, 0, AB_E_INTERNAL, "no mount for %s", m->destination);
		if (m->kind == AB_MOUNT_TMPFS) {
			char opts[64];
			if (m->size)
				snprintf (opts, sizeof opts, "mode=1777,size=%llu",
				          (unsigned long long)m->size);
			else
				snprintf (opts, sizeof opts, "mode=1777");
			fd = tmp = ab_mountfd_tmpfs (opts, RW_ATTRS, err);
			if (fd < 0)
				return -1;
		}
		if (fstat (fd, &st) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "stat %s", m->destination);
		if (attach_at (root, fd, m->destination, !S_ISDIR (st.st_mode), err) < 0)
			return -1;
	}
	return 0;
}

/* pivot_root(".", ".") stacks the old root under the new one; detaching
 * "." then drops the old root entirely (pivot_root(2), "NOTES"). */
static int
pivot_into (int root, ab_error_t *err)
{
	if (fchdir (root) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "chdir new root");
	if (ab_sys_pivot_root (".", ".") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pivot_root");
	if (umount2 (".", MNT_DETACH) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "detach old root");
	if (chdir ("/") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "chdir /");
	return 0;
}

static int
make_root (const struct ab_rootfs_s *rf, ab_error_t *err)
{
	/* Nothing we mount may propagate back to the host (SECURITY.md 1). */
	if (mount (NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "make / a slave mount");
	if (rf->overlay_fd >= 0) {
		cleanup_close int target = open (AB_ROOT_STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (target < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "open %s", AB_ROOT_STAGING);
		if (ab_mount_attach (rf->overlay_fd, target, "the layered root", err) < 0)
			return -1;
	} else if (mount ("tmpfs", AB_ROOT_STAGING, "tmpfs", MS_NOSUID | MS_NODEV,
	                  "mode=0755,size=1m")
	           < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount root tmpfs on %s",
		                 AB_ROOT_STAGING);
	int fd = open (AB_ROOT_STAGING, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open new root");
	return fd;
}

int
ab_rootfs_build (const struct ab_spec_s *spec, struct ab_rootfs_s *rf, ab_error_t *err)
{
	int root = make_root (rf, err);

	if (root < 0)
		return -1;
	rf->root_fd = root;
	if (populate_root_entries (root, rf, err) < 0 || ab_dev_setup (root, rf->dev_fds, err) < 0
	    || ab_proc_setup (root, err) < 0)
		return -1;
	return ab_tmpfs_setup (root, "tmp", err);
}

int
ab_rootfs_finish (const struct ab_spec_s *spec, struct ab_rootfs_s *rf, ab_error_t *err)
{
	int root = rf->root_fd;

	bool writable = rf->overlay_fd >= 0;

	if (populate_mounts (root, spec, rf, err) < 0)
		return -1;
	if (ab_mount_setattr_fd (
	            root, (writable ? 0 : MOUNT_ATTR_RDONLY) | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	            false, err)
	    < 0)
		return ab_error_wrap (err, "make the root read-only");
	if (pivot_into (root, err) < 0)
		return -1;
	close (root);
	rf->root_fd = -1;
	return 0;
}
