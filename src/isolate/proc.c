/* A fresh /proc for the sandbox's pid namespace (SECURITY.md 4): kernel
 * interfaces that leak host state or accept writes are masked with the
 * verified /dev/null or an empty read-only tmpfs, or made read-only. */
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/compat.h"
#include "base/sys.h"
#include "isolate/mountfd.h"
#include "isolate/sandbox-fs.h"

/* Files hidden behind /dev/null (as Docker and crun's defaults). */
static const char *const masked_files[] = {
	"kcore",                     /* physical memory image */
	"keys",                      /* keyring contents of the host */
	"timer_list",                /* host timers and pids */
	"sched_debug",               /* host scheduler state and task names */
	"latency_stats", "kallsyms", /* kernel symbol addresses (KASLR) */
};

/* Directories hidden behind an empty read-only tmpfs. */
static const char *const masked_dirs[] = { "acpi", "scsi", "asound" };

/* Writable kernel knobs, made read-only. */
static const char *const readonly_paths[] = { "sys", "sysrq-trigger", "irq", "bus", "fs" };

static int
mask_file (int proc, int null_mnt_src, const char *name, ab_error_t *err)
{
	cleanup_close int target = -1, mnt = -1;
	const uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

	target = ab_sys_openat2 (proc, name, O_PATH | O_CLOEXEC, resolve);
	if (target < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "/proc/%s", name);
	mnt = ab_mountfd_clone (null_mnt_src, "",
	                        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NOEXEC, err);
	if (mnt < 0)
		return -1;
	return ab_mount_attach (mnt, target, name, err);
}

static int
mask_dir (int proc, const char *name, ab_error_t *err)
{
	cleanup_close int target = -1, mnt = -1;
	const uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

	target = ab_sys_openat2 (proc, name, O_PATH | O_DIRECTORY | O_CLOEXEC, resolve);
	if (target < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "/proc/%s", name);
	mnt = ab_mountfd_tmpfs (
	        "mode=0555",
	        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err);
	if (mnt < 0)
		return -1;
	return ab_mount_attach (mnt, target, name, err);
}

static int
make_readonly (int proc, const char *name, ab_error_t *err)
{
	cleanup_close int mnt = -1, target = -1;
	const uint64_t resolve = RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS;

	target = ab_sys_openat2 (proc, name, O_PATH | O_CLOEXEC, resolve);
	if (target < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "/proc/%s", name);
	mnt = ab_mountfd_clone (
	        target, "",
	        MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err);
	if (mnt < 0)
		return -1;
	return ab_mount_attach (mnt, target, name, err);
}

int
ab_proc_setup (int root, ab_error_t *err)
{
	cleanup_close int target = ab_mkdir_beneath (root, "proc", err);
	cleanup_close int mnt = -1, proc = -1, null_src = -1;

	if (target < 0)
		return -1;
	mnt = ab_mountfd_new ("proc", NULL,
	                      MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV | MOUNT_ATTR_NOEXEC, err);
	if (mnt < 0 || ab_mount_attach (mnt, target, "/proc", err) < 0)
		return -1;
	proc = ab_mkdir_beneath (root, "proc", err);
	null_src = ab_sys_openat2 (root, "dev/null", O_PATH | O_CLOEXEC,
	                           RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS);
	if (proc < 0)
		return -1;
	if (null_src < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open the sandbox's /dev/null");
	for (size_t i = 0; i < sizeof masked_files / sizeof *masked_files; i++)
		if (mask_file (proc, null_src, masked_files[i], err) < 0)
			return -1;
	for (size_t i = 0; i < sizeof masked_dirs / sizeof *masked_dirs; i++)
		if (mask_dir (proc, masked_dirs[i], err) < 0)
			return -1;
	for (size_t i = 0; i < sizeof readonly_paths / sizeof *readonly_paths; i++)
		if (make_readonly (proc, readonly_paths[i], err) < 0)
			return -1;
	return 0;
}
