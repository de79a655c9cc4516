/* The agent as the microVM guest's /init (`agentbox-agent --vm`, argv from
 * the kernel command line after "--"; docs/microvm.md).  The initramfs
 * holds only this binary, the kernel modules it needs and their load
 * order: no shell, no busybox.  In order:
 *
 *   1. devtmpfs, proc and sysfs in the initramfs; the console as stdio;
 *   2. the boot configuration from /proc/cmdline (proto/vm-boot.h);
 *   3. the modules, in the order the image builder took from modules.dep
 *      (virtio transport, virtio console, 9p; for a layered root also
 *      virtio_blk, ext4 and overlay from /modules.disk), then module loading is
 *      switched off for good (kernel.modules_disabled): no command can
 *      make the kernel load anything later (request_module runs modprobe
 *      with full privileges);
 *   4. the virtio-serial port of the host's multiplexer, opened now
 *      (it is not in the sandbox's /dev);
 *   5. the pids limit: a cgroup v2 with pids.max that this process joins,
 *      so every command inherits it;
 *   6. the sandbox's root (vm-root.c), hostname, switch into it;
 *   7. the agent forks into a pid namespace of its own, mounts its /proc
 *      and serves (service mode, sessions through the multiplexer); this
 *      process, the real init, waits and powers off when the agent ends.
 *
 * Any failure is printed on the console (the host shows its tail in the
 * error) and powers the guest off, which ends QEMU. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/reboot.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/service.h"
#include "agent/vm.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/sys.h"

#define MODULES_LIST  "/modules"
#define MODULES_DISK  "/modules.disk" /* loaded only for a layered root */
#define PORT_WAIT_MS  10000
#define CGROUP_DIR    "/sys/fs/cgroup"
#define SANDBOX_GROUP CGROUP_DIR "/sandbox"

static void __attribute__ ((noreturn)) die (const ab_error_t *err)
{
	ab_log_error (AB_LOG_ERROR, err, "vm");
	sync ();
	reboot (RB_POWER_OFF);
	_exit (125);
}

static const struct {
	const char *src, *dst, *fstype;
	unsigned long flags;
} early[] = {
	{ "devtmpfs", "/dev", "devtmpfs", MS_NOSUID | MS_NOEXEC },
	{ "proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC },
	{ "sysfs", "/sys", "sysfs", MS_NOSUID | MS_NODEV | MS_NOEXEC },
};

static int
early_mounts (ab_error_t *err)
{
	for (size_t i = 0; i < sizeof early / sizeof *early; i++) {
		if (mkdir (early[i].dst, 0755) < 0 && errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", early[i].dst);
		if (mount (early[i].src, early[i].dst, early[i].fstype, early[i].flags, NULL) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "mount %s", early[i].dst);
	}
	return 0;
}

/* The kernel found no /dev/console in the initramfs: 0, 1, 2 are closed. */
static void
console_stdio (void)
{
	int fd = open ("/dev/console", O_RDWR | O_NOCTTY);

	for (int i = 0; i < 3 && fd >= 0; i++)
		if (fd != i)
			dup2 (fd, i);
	if (fd > 2)
		close (fd);
}

/* Whole small file, NUL-terminated; -1 with errno. */
static ssize_t
read_small (const char *path, char *buf, size_t cap)
{
	cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
	size_t n = 0;
	ssize_t r = 0;

	if (fd < 0)
		return -1;
	while (n + 1 < cap && (r = read (fd, buf + n, cap - 1 - n)) > 0)
		n += (size_t)r;
	if (r < 0)
		return -1;
	buf[n] = '\0';
	return (ssize_t)n;
}

static int
write_small (const char *path, const char *text, ab_error_t *err)
{
	cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC);

	if (fd < 0 || ab_write_all (fd, text, strlen (text)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s", path);
	return 0;
}

static int
load_modules (const char *list_path, ab_error_t *err)
{
	char list[8192];
	char *save = NULL;

	if (read_small (list_path, list, sizeof list) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "read %s", list_path);
	for (char *line = strtok_r (list, "\n", &save); line; line = strtok_r (NULL, "\n", &save)) {
		cleanup_close int fd = open (line, O_RDONLY | O_CLOEXEC);
		if (fd < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "module %s", line);
		if (syscall (SYS_finit_module, fd, "", 0) < 0 && errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "load module %s", line);
	}
	return 0;
}

static int
open_port_named (const char *want)
{
	cleanup_dir DIR *d = opendir ("/sys/class/virtio-ports");
	struct dirent *e;

	while (d && (e = readdir (d))) {
		char path[300], name[128];
		if (e->d_name[0] == '.')
			continue;
		snprintf (path, sizeof path, "/sys/class/virtio-ports/%s/name", e->d_name);
		if (read_small (path, name, sizeof name) < 0)
			continue;
		name[strcspn (name, "\n")] = '\0';
		if (strcmp (name, want) != 0)
			continue;
		snprintf (path, sizeof path, "/dev/%s", e->d_name);
		return open (path, O_RDWR | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	}
	errno = ENOENT;
	return -1;
}

/* The port appears once the host's virtio-serial device announced it
 * (after the module loaded, asynchronously). */
static int
find_port (ab_error_t *err)
{
	for (int waited = 0; waited < PORT_WAIT_MS; waited += 5) {
		int fd = open_port_named (AB_VM_PORT_NAME);
		if (fd >= 0)
			return fd;
		if (errno != ENOENT)
			break;
		nanosleep (&(struct timespec){ 0, 5000000 }, NULL);
	}
	return ab_error (err, errno, AB_E_SYSTEM, "virtio port %s", AB_VM_PORT_NAME);
}

static int
limit_pids (uint64_t pids, ab_error_t *err)
{
	char num[32];

	if (pids == 0)
		return 0;
	if (mount ("cgroup2", CGROUP_DIR, "cgroup2", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mount cgroup2");
	if (write_small (CGROUP_DIR "/cgroup.subtree_control", "+pids", err) < 0)
		return -1;
	if (mkdir (SANDBOX_GROUP, 0755) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", SANDBOX_GROUP);
	snprintf (num, sizeof num, "%llu", (unsigned long long)pids);
	return write_small (SANDBOX_GROUP "/pids.max", num, err) < 0
	                       || write_small (SANDBOX_GROUP "/cgroup.procs", "0", err) < 0
	               ? -1
	               : 0;
}

/* The initramfs's mounts go (the port's fd stays open); the new root
 * moves over "/" and becomes ours (switch_root without a helper). */
static int
switch_root (ab_error_t *err)
{
	static const char *const old[] = { "/sys", "/proc", "/dev" };

	for (size_t i = 0; i < sizeof old / sizeof *old; i++)
		if (umount2 (old[i], MNT_DETACH) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "unmount %s", old[i]);
	if (chdir (AB_VM_NEWROOT) < 0 || mount (".", "/", NULL, MS_MOVE, NULL) < 0
	    || chroot (".") < 0 || chdir ("/") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "switch to the sandbox's root");
	return 0;
}

static int
boot (struct ab_vm_boot_s *cfg, int *port, ab_error_t *err)
{
	char cmdline[4096];

	if (read_small ("/proc/cmdline", cmdline, sizeof cmdline) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "read /proc/cmdline");
	if (ab_vm_boot_parse (cmdline, cfg, err) < 0 || load_modules (MODULES_LIST, err) < 0)
		return -1;
	if (ab_vm_boot_has_disk (cfg) && load_modules (MODULES_DISK, err) < 0)
		return ab_error_wrap (err, "a layered root needs a guest built with its modules "
		                           "(scripts/build-guest)");
	if (write_small ("/proc/sys/kernel/modules_disabled", "1", err) < 0)
		return -1;
	if ((*port = find_port (err)) < 0 || limit_pids (cfg->pids, err) < 0
	    || ab_vm_build_root (cfg, err) < 0)
		return -1;
	if (sethostname (cfg->hostname, strlen (cfg->hostname)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sethostname");
	return switch_root (err);
}

/* The agent proper: PID 1 of a pid namespace of its own, so commands see
 * only the sandbox's processes in /proc (not the guest's kernel threads)
 * and nothing in it can reach the real init. */
static void __attribute__ ((noreturn)) serve (int port)
{
	ab_error_t err = AB_ERROR_INIT;
	struct timespec t;
	int listen_fd;

	if (ab_vm_mount_proc (&err) < 0 || ab_loop_init (&err) < 0
	    || (listen_fd = ab_vm_mux_start (port, &err)) < 0)
		die (&err);
	clock_gettime (CLOCK_BOOTTIME, &t);
	ab_log (AB_LOG_INFO, "vm: ready %ld ms after boot",
	        (long)t.tv_sec * 1000 + t.tv_nsec / 1000000);
	ab_service_run (listen_fd);
}

/* The real init waits for the agent; when it ends (SHUTDOWN, or it died)
 * the guest powers off, which ends QEMU. */
static void __attribute__ ((noreturn)) reap_until (pid_t agent)
{
	int status = 0;
	pid_t p;

	while ((p = waitpid (-1, &status, 0)) != agent)
		if (p < 0 && errno == ECHILD)
			break;
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
		ab_log (AB_LOG_WARN, "vm: the agent ended (wait status %d)", status);
	sync ();
	reboot (RB_POWER_OFF);
	_exit (0);
}

void
ab_vm_init_run (void)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_vm_boot_s cfg;
	int port = -1;
	pid_t agent;

	if (early_mounts (&err) < 0)
		die (&err);
	console_stdio ();
	if (boot (&cfg, &port, &err) < 0)
		die (&err);
	ab_vm_boot_free (&cfg);
	agent = ab_sys_clone_fork (CLONE_NEWPID);
	if (agent < 0) {
		ab_error (&err, errno, AB_E_SYSTEM, "clone the agent's pid namespace");
		die (&err);
	}
	if (agent == 0)
		serve (port);
	close (port);
	reap_until (agent);
}
