/* The microVM guest's root filesystem, built by the agent (the guest's
 * /init, all capabilities, nothing else running yet) at AB_VM_NEWROOT:
 *
 *   tmpfs (or the image share)  read-only once built; a layered root: its
 *                               disk under a tmpfs overlay, writable
 *   ├─ host shares (9p)         read-only, nosuid, nodev; links as on the host
 *   ├─ /workspace (9p)          read-write, nosuid, nodev
 *   ├─ /dev                     tmpfs: null zero full random urandom tty, pts, shm
 *   ├─ /proc                    the agent's pid namespace's; /proc/sys and other
 *   │                           knobs read-only, kcore, kallsyms, … masked
 *   └─ /tmp                     tmpfs
 *
 * Commands run as uid 0 without capabilities, and for procfs that is not
 * enough: sysctl files check the euid, not a capability, so a writable
 * /proc/sys would let them set kernel.core_pattern (a helper run with
 * every capability) — it is mounted read-only.  The guest's own devices
 * (the virtio port of the door, the console) are not in /dev.
 *
 * Every mount point is resolved beneath the new root without following a
 * symlink (openat2 RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS) and mounted
 * through /proc/self/fd: an image (--rootfs) whose /tmp is a symlink to
 * somewhere else cannot redirect a mount (runc CVE-2021-30465 class). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#include <unistd.h>

#include "agent/vm.h"
#include "base/cleanup.h"
#include "base/sys.h"

/* 9p: msize 500 KB (fewer round trips, the virtio transport's limit);
 * host shares are cached (the host's /usr does not change under a
 * sandbox; "loose" is what makes exec fast under emulation); the
 * workspace is not ("mmap": only shared writable mappings are cached, so
 * the host sees every write at once and the guest every host change). */
#define NINEP_RO  "trans=virtio,version=9p2000.L,msize=512000,cache=loose"
#define NINEP_RW  "trans=virtio,version=9p2000.L,msize=512000,cache=mmap"
#define MASK_FILE "/masked"
/* A layered root (agentbox.m=disk): the first virtio disk, its mount and
 * the overlay's upper in the initramfs (out of the sandbox's reach). */
#define DISK_DEV     "/dev/vda"
#define DISK_LOWER   "/disk"
#define DISK_UPPER   "/disk-upper"
#define DISK_WAIT_MS 10000

static const struct {
	const char *name;
	unsigned major, minor;
} dev_nodes[] = {
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

static int
open_beneath (int root, const char *rel, int flags)
{
	return ab_sys_openat2 (root, rel, (uint64_t)(flags | O_PATH | O_CLOEXEC | O_NOFOLLOW),
	                       RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
}

/* mkdir -p of path (absolute, in the new root) without following links;
 * an O_PATH fd of it. */
static int
make_dir (int root, const char *path, ab_error_t *err)
{
	char buf[4096];
	char *p = buf;

	if (snprintf (buf, sizeof buf, "%s", path + 1) >= (int)sizeof buf)
		return ab_error (err, ENAMETOOLONG, AB_E_INVALID, "%s", path);
	for (;;) {
		char *slash = strchr (p, '/');
		if (slash)
			*slash = '\0';
		if (mkdirat (root, buf, 0755) < 0 && errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", path);
		if (!slash)
			break;
		*slash = '/';
		p = slash + 1;
	}
	int fd = open_beneath (root, buf, O_DIRECTORY);
	return fd < 0 ? ab_error (err, errno, AB_E_SYSTEM, "mount point %s", path) : fd;
}

static int
mount_on (int target, const char *src, const char *fstype, unsigned long flags, const char *data,
          const char *shown, ab_error_t *err)
{
	char at[64];

	snprintf (at, sizeof at, "/proc/self/fd/%d", target);
	if (mount (src, at, fstype, flags, data) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount %s on %s", fstype ? fstype : src,
		                 shown);
	return 0;
}

static int
mount_at (int root, const char *path, const char *src, const char *fstype, unsigned long flags,
          const char *data, ab_error_t *err)
{
	cleanup_close int dir = make_dir (root, path, err);
	return dir < 0 ? -1 : mount_on (dir, src, fstype, flags, data, path, err);
}

/* Bind path (a directory or a file; absent: nothing to do) onto itself
 * and make that read-only (MS_RDONLY does not reach a mount made before;
 * its bind-remount form does). */
static int
remount_ro (int root, const char *path, unsigned long extra, ab_error_t *err)
{
	cleanup_close int fd = open_beneath (root, path + 1, 0);
	char at[64];

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "%s", path);
	snprintf (at, sizeof at, "/proc/self/fd/%d", fd);
	if (mount_on (fd, at, NULL, MS_BIND, NULL, path, err) < 0)
		return -1;
	close (fd);
	fd = open_beneath (root, path + 1, 0); /* the bind, on top */
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "%s", path);
	return mount_on (fd, NULL, NULL, MS_REMOUNT | MS_BIND | MS_RDONLY | extra, NULL, path, err);
}

static int
build_dev (int root, ab_error_t *err)
{
	cleanup_close int dev = -1;

	if (mount_at (root, "/dev", "tmpfs", "tmpfs", MS_NOSUID | MS_NOEXEC, "mode=0755,size=64k",
	              err)
	    < 0)
		return -1;
	dev = open_beneath (root, "dev", O_DIRECTORY);
	if (dev < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "/dev");
	/* O_PATH fds cannot anchor mknodat: go through the magic link. */
	char at[64];
	snprintf (at, sizeof at, "/proc/self/fd/%d", dev);
	for (size_t i = 0; i < sizeof dev_nodes / sizeof *dev_nodes; i++) {
		char node[96];
		snprintf (node, sizeof node, "%s/%s", at, dev_nodes[i].name);
		if (mknod (node, S_IFCHR | 0666, makedev (dev_nodes[i].major, dev_nodes[i].minor))
		            < 0
		    || chmod (node, 0666) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "mknod /dev/%s",
			                 dev_nodes[i].name);
	}
	for (size_t i = 0; i < sizeof dev_links / sizeof *dev_links; i++) {
		char link[96];
		snprintf (link, sizeof link, "%s/%s", at, dev_links[i].name);
		if (symlink (dev_links[i].target, link) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "symlink /dev/%s",
			                 dev_links[i].name);
	}
	if (mount_at (root, "/dev/pts", "devpts", "devpts", MS_NOSUID | MS_NOEXEC,
	              "newinstance,ptmxmode=0666,mode=0620", err)
	            < 0
	    || mount_at (root, "/dev/shm", "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV | MS_NOEXEC,
	                 "mode=1777", err)
	               < 0)
		return -1;
	return 0;
}

/* As the native sandbox's /proc (isolate/proc.c): what leaks kernel
 * state behind /dev/null or an empty tmpfs, writable knobs read-only. */
static const char *const proc_masked_files[] = {
	"kcore", "keys", "timer_list", "sched_debug", "latency_stats", "kallsyms",
};
static const char *const proc_masked_dirs[] = { "acpi", "scsi", "asound" };
static const char *const proc_readonly[] = { "sys", "sysrq-trigger", "irq", "bus", "fs" };

int
ab_vm_mount_proc (ab_error_t *err)
{
	cleanup_close int root = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
	cleanup_close int dir = -1;
	char path[64];

	if (root < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open /");
	/* No /proc yet, so no /proc/self/fd to mount through: by path, once
	 * it is known to be a directory of the (read-only) root, not a link. */
	dir = open_beneath (root, "proc", O_DIRECTORY);
	if (dir < 0 || mount ("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount /proc");
	for (size_t i = 0; i < sizeof proc_masked_files / sizeof *proc_masked_files; i++) {
		cleanup_close int fd = -1;
		snprintf (path, sizeof path, "proc/%s", proc_masked_files[i]);
		fd = open_beneath (root, path, 0);
		if (fd >= 0 && mount_on (fd, "/dev/null", NULL, MS_BIND, NULL, path, err) < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof proc_masked_dirs / sizeof *proc_masked_dirs; i++) {
		cleanup_close int fd = -1;
		snprintf (path, sizeof path, "proc/%s", proc_masked_dirs[i]);
		fd = open_beneath (root, path, O_DIRECTORY);
		if (fd >= 0
		    && mount_on (fd, "tmpfs", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		                 "mode=0555,size=4k", path, err)
		               < 0)
			return -1;
	}
	for (size_t i = 0; i < sizeof proc_readonly / sizeof *proc_readonly; i++) {
		snprintf (path, sizeof path, "/proc/%s", proc_readonly[i]);
		if (remount_ro (root, path, MS_NOSUID | MS_NODEV | MS_NOEXEC, err) < 0)
			return -1;
	}
	return 0;
}

/* Hide path: an empty read-only tmpfs of mode 0 over a directory, an
 * empty file of mode 0 over anything else (in the initramfs, out of
 * reach): uid 0 without CAP_DAC_OVERRIDE cannot open either, as the
 * native sandbox's unmapped user cannot open the host's files.  A path
 * that is not there needs nothing. */
static int
mask (int root, const char *path, ab_error_t *err)
{
	cleanup_close int fd = open_beneath (root, path + 1, 0);
	struct stat st;

	if (fd < 0 && (errno == ENOENT || errno == ELOOP))
		return 0;
	if (fd < 0 || fstat (fd, &st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mask %s", path);
	if (S_ISDIR (st.st_mode))
		return mount_on (fd, "tmpfs", "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC,
		                 "mode=0000,size=4k", path, err);
	return mount_on (fd, MASK_FILE, NULL, MS_BIND, NULL, path, err);
}

static int
make_link (int root, const char *path, const char *target, ab_error_t *err)
{
	char parent[4096];
	const char *base = strrchr (path, '/') + 1;
	cleanup_close int dir = -1;

	snprintf (parent, sizeof parent, "%.*s", (int)(base - path), path);
	dir = strcmp (parent, "/") == 0 ? open_beneath (root, ".", O_DIRECTORY)
	                                : make_dir (root, parent, err);
	if (dir < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "%s", parent);
	char at[4200];
	snprintf (at, sizeof at, "/proc/self/fd/%d/%s", dir, base);
	if (symlink (target, at) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "symlink %s", path);
	return 0;
}

static int
apply_entry (int root, const struct ab_vm_entry_s *e, ab_error_t *err)
{
	char opts[64];

	switch (e->kind) {
	case AB_VM_RO:
		return mount_at (root, e->path, e->tag, "9p", MS_RDONLY | MS_NOSUID | MS_NODEV,
		                 NINEP_RO, err);
	case AB_VM_RW:
		return mount_at (root, e->path, e->tag, "9p", MS_NOSUID | MS_NODEV, NINEP_RW, err);
	case AB_VM_TMPFS:
		if (e->size)
			snprintf (opts, sizeof opts, "mode=1777,size=%llu",
			          (unsigned long long)e->size);
		else
			snprintf (opts, sizeof opts, "mode=1777");
		return mount_at (root, e->path, "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, opts, err);
	case AB_VM_LINK: return make_link (root, e->path, e->target, err);
	case AB_VM_MASK: return mask (root, e->path, err);
	case AB_VM_ROOT:
	case AB_VM_DISK: return 0;
	}
	return 0;
}

static const struct ab_vm_entry_s *
find_entry (const struct ab_vm_boot_s *boot, enum ab_vm_entry_kind kind)
{
	for (size_t i = 0; i < boot->n_entries; i++)
		if (boot->entries[i].kind == kind)
			return &boot->entries[i];
	return NULL;
}

bool
ab_vm_boot_has_disk (const struct ab_vm_boot_s *boot)
{
	return find_entry (boot, AB_VM_DISK) != NULL;
}

/* The disk appears in devtmpfs once virtio_blk probed it. */
static int
wait_disk (ab_error_t *err)
{
	struct stat st;

	for (int waited = 0; waited < DISK_WAIT_MS; waited += 5) {
		if (stat (DISK_DEV, &st) == 0 && S_ISBLK (st.st_mode))
			return 0;
		nanosleep (&(struct timespec){ 0, 5000000 }, NULL);
	}
	return ab_error (err, ENOENT, AB_E_SYSTEM, "the root disk %s did not appear", DISK_DEV);
}

/* A layered root: the host's ext4 image of the merged layers, read-only,
 * under an overlay whose upper is a tmpfs of the guest's (the sandbox's
 * writes cost guest memory and vanish with the VM).  Read-only roots get
 * the same overlay, made read-only once the mount points exist (an image
 * need not have /workspace or /proc). */
static int
mount_disk_root (ab_error_t *err)
{
	static const char *const dirs[] = { DISK_LOWER, DISK_UPPER };

	if (wait_disk (err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof dirs / sizeof *dirs; i++)
		if (mkdir (dirs[i], 0700) < 0 && errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", dirs[i]);
	if (mount (DISK_DEV, DISK_LOWER, "ext4", MS_RDONLY | MS_NOSUID | MS_NODEV, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount the root disk");
	if (mount ("tmpfs", DISK_UPPER, "tmpfs", MS_NOSUID | MS_NODEV, "mode=0755") < 0
	    || mkdir (DISK_UPPER "/upper", 0755) < 0 || mkdir (DISK_UPPER "/work", 0700) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "the root's upper layer");
	if (mount ("overlay", AB_VM_NEWROOT, "overlay", MS_NOSUID | MS_NODEV,
	           "lowerdir=" DISK_LOWER ",upperdir=" DISK_UPPER "/upper,workdir=" DISK_UPPER
	           "/work")
	    < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount the root's overlay");
	return 0;
}

static int
mount_new_root (const struct ab_vm_boot_s *boot, ab_error_t *err)
{
	const struct ab_vm_entry_s *img = find_entry (boot, AB_VM_ROOT);

	if (find_entry (boot, AB_VM_DISK))
		return mount_disk_root (err);
	if (img ? mount (img->tag, AB_VM_NEWROOT, "9p", MS_RDONLY | MS_NOSUID | MS_NODEV, NINEP_RO)
	        : mount ("tmpfs", AB_VM_NEWROOT, "tmpfs", MS_NOSUID | MS_NODEV,
	                 "mode=0755,size=1m"))
		return ab_error (err, errno, AB_E_SYSTEM, "mount the new root");
	return 0;
}

int
ab_vm_build_root (const struct ab_vm_boot_s *boot, ab_error_t *err)
{
	const struct ab_vm_entry_s *img = find_entry (boot, AB_VM_ROOT);
	const struct ab_vm_entry_s *disk = find_entry (boot, AB_VM_DISK);
	cleanup_close int root = -1;
	int proc;

	if (mkdir (AB_VM_NEWROOT, 0755) < 0 && errno != EEXIST)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", AB_VM_NEWROOT);
	root = open (MASK_FILE, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0000);
	if (root < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", MASK_FILE);
	close (root);
	if (mount_new_root (boot, err) < 0)
		return -1;
	root = open (AB_VM_NEWROOT, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (root < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open the new root");
	if (build_dev (root, err) < 0 || (proc = make_dir (root, "/proc", err)) < 0)
		return -1;
	close (proc); /* mounted later, by the agent in its own pid namespace */
	if (mount_at (root, "/tmp", "tmpfs", "tmpfs", MS_NOSUID | MS_NODEV, "mode=1777", err) < 0)
		return -1;
	for (size_t i = 0; i < boot->n_entries; i++)
		if (apply_entry (root, &boot->entries[i], err) < 0)
			return -1;
	if ((disk ? strcmp (disk->tag, "ro") == 0 : !img)
	    && mount (NULL, AB_VM_NEWROOT, NULL,
	              MS_REMOUNT | MS_BIND | MS_RDONLY | MS_NOSUID | MS_NODEV, NULL)
	               < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "make the root read-only");
	return 0;
}
