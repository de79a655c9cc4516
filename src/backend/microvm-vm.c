/* The microVM's life inside its monitor (backend/monitor.h):
 *
 *   monitor ──fork/exec──► qemu-system-x86_64 -M microvm … (its own mount
 *      │                     namespace when root; dies with the monitor)
 *      ├── socketpair ◄──── virtserialport "org.agentbox.mux" ◄── guest agent
 *      └── spec->service_socket: each client is one multiplexed connection
 *
 * start: launch QEMU, wait for the guest's HELLO on the stream (the agent
 * has built its root and listens), then listen on the service socket.
 * serve: the host half of the multiplexer (proto/mux-relay.c) until
 * SIGTERM, QEMU's end or a broken stream.  stop: kill QEMU, remove the
 * private run directory. */
#include "backend/microvm-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include "backend/pause.h"
#include "backend/service-socket.h"
#include "base/tmpdir.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "proto/mux-relay.h"

#define CONSOLE_LOG  "console.log"
#define MASK_FILE    "masked"
#define CONSOLE_TAIL 240
#define MAX_EVENTS   64

/* ---- the kernel command line ----------------------------------------------- */

static uint64_t
mono_ns (clockid_t clk)
{
	struct timespec ts;
	clock_gettime (clk, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ULL + (uint64_t)ts.tv_nsec;
}

/* Under TCG the guest's TSC runs at the host's rate, and without a known
 * rate the guest kernel's calibration can hang (no PIT or HPET worth the
 * name in microvm): measure it here (20 ms). */
static uint64_t
host_tsc_khz (void)
{
#if defined(__x86_64__)
	uint64_t ns0 = mono_ns (CLOCK_MONOTONIC_RAW), t0 = __rdtsc (), ns, t;
	nanosleep (&(struct timespec){ 0, 20000000 }, NULL);
	t = __rdtsc ();
	ns = mono_ns (CLOCK_MONOTONIC_RAW) - ns0;
	return ns ? (t - t0) * 1000000ULL / ns : 0;
#else
	return 0;
#endif
}

static char *
kernel_cmdline (const struct ab_microvm_s *vm, const struct ab_microvm_layout_s *l, ab_error_t *err)
{
	cleanup_free char *cfg = ab_vm_boot_encode (&l->boot, err);
	char tsc[48] = "";
	uint64_t khz;
	char *line;

	if (!cfg)
		return NULL;
	if (!vm->kvm && (khz = host_tsc_khz ()) > 0)
		snprintf (tsc, sizeof tsc, " tsc_early_khz=%llu", (unsigned long long)khz);
	/* panic=-1: a guest whose PID 1 died reboots at once, which ends QEMU
	 * (-no-reboot).  What follows "--" is the agent's argv. */
	line = xasprintf ("console=ttyS0 quiet panic=-1 pci=off%s %s -- --vm", tsc, cfg);
	if (strlen (line) > AB_VM_CMDLINE_MAX) {
		free (line);
		ab_error (err, 0, AB_E_LIMIT,
		          "the microVM's configuration does not fit on the kernel command line "
		          "(too many mounts or masked paths)");
		return NULL;
	}
	return line;
}

/* ---- QEMU ------------------------------------------------------------------------ */

/* In QEMU's child, as root: the masked paths are covered in a mount
 * namespace of its own, so its 9p server cannot read them even if the
 * guest asked (slave: the host's later mounts still reach it, nothing
 * goes back). */
static int
hide_masked (const struct ab_microvm_s *vm, char **masks)
{
	char file[PATH_MAX + 16];

	if (!masks[0] || geteuid () != 0)
		return 0;
	snprintf (file, sizeof file, "%s/%s", vm->rundir, MASK_FILE);
	if (unshare (CLONE_NEWNS) < 0 || mount (NULL, "/", NULL, MS_REC | MS_SLAVE, NULL) < 0)
		return -1;
	for (size_t i = 0; masks[i]; i++) {
		struct stat st;
		if (lstat (masks[i], &st) < 0)
			continue;
		if (S_ISDIR (st.st_mode)
		            ? mount ("tmpfs", masks[i], "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
		                     "mode=0000,size=4k")
		            : mount (file, masks[i], NULL, MS_BIND, NULL))
			return -1;
	}
	return 0;
}

static void __attribute__ ((noreturn))
exec_qemu (const struct ab_microvm_s *vm, char **argv, char **masks, int stream, int log)
{
	sigset_t none;
	int null = open ("/dev/null", O_RDONLY | O_CLOEXEC);

	prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	sigemptyset (&none);
	sigprocmask (SIG_SETMASK, &none, NULL); /* the monitor's signalfd blocked some */
	if (hide_masked (vm, masks) < 0) {
		dprintf (log, "agentbox: hide masked paths from QEMU: %s\n", strerror (errno));
		_exit (127);
	}
	if (null < 0 || dup2 (null, 0) < 0 || dup2 (log, 1) < 0 || dup2 (log, 2) < 0
	    || dup2 (stream, AB_QEMU_MUX_FD) < 0) /* dup2 clears close-on-exec */
		_exit (127);
	ab_sys_close_range (AB_QEMU_MUX_FD + 1, ~0U, 0);
	execvp (argv[0], argv);
	dprintf (2, "agentbox: exec %s: %s\n", argv[0], strerror (errno));
	_exit (127);
}

static int
launch (struct ab_microvm_s *vm, char **argv, char **masks, ab_error_t *err)
{
	cleanup_free char *logpath = xasprintf ("%s/%s", vm->rundir, CONSOLE_LOG);
	cleanup_free char *maskpath = xasprintf ("%s/%s", vm->rundir, MASK_FILE);
	cleanup_close int log = -1, maskfd = -1;
	int sv[2];

	log = open (logpath, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);
	maskfd = open (maskpath, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0000);
	if (log < 0 || maskfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "microVM run directory %s", vm->rundir);
	if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	vm->qemu = fork ();
	if (vm->qemu < 0) {
		close (sv[0]), close (sv[1]);
		return ab_error (err, errno, AB_E_SYSTEM, "fork QEMU");
	}
	if (vm->qemu == 0)
		exec_qemu (vm, argv, masks, sv[1], log);
	close (sv[1]);
	vm->stream = sv[0];
	ab_set_nonblock (vm->stream, 1);
	vm->qemu_pidfd = ab_sys_pidfd_open (vm->qemu, 0);
	if (vm->qemu_pidfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pidfd_open QEMU");
	return 0;
}

/* The last lines QEMU and the guest printed, for an error message. */
static void
console_tail (const struct ab_microvm_s *vm, char *out, size_t cap)
{
	cleanup_free char *path = xasprintf ("%s/%s", vm->rundir, CONSOLE_LOG);
	cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC);
	char buf[CONSOLE_TAIL + 1];
	off_t size;
	ssize_t n;

	out[0] = '\0';
	if (fd < 0 || (size = lseek (fd, 0, SEEK_END)) <= 0)
		return;
	n = pread (fd, buf, CONSOLE_TAIL, size > CONSOLE_TAIL ? size - CONSOLE_TAIL : 0);
	if (n <= 0)
		return;
	buf[n] = '\0';
	for (char *p = buf; *p; p++)
		if (*p == '\n' || *p == '\r' || (unsigned char)*p < 0x20)
			*p = ' ';
	snprintf (out, cap, "; console: ...%s", buf);
}

/* ---- the event loop ---------------------------------------------------------- */

static void
watch_cb (void *ctx, int fd, unsigned events)
{
	struct ab_microvm_s *vm = ctx;
	struct epoll_event ev = { .data.fd = fd };

	ev.events =
	        (events & AB_MUX_EV_IN ? EPOLLIN : 0U) | (events & AB_MUX_EV_OUT ? EPOLLOUT : 0U);
	if (events == 0)
		epoll_ctl (vm->epfd, EPOLL_CTL_DEL, fd, NULL);
	else if (epoll_ctl (vm->epfd, EPOLL_CTL_MOD, fd, &ev) < 0 && errno == ENOENT)
		epoll_ctl (vm->epfd, EPOLL_CTL_ADD, fd, &ev);
}

static void
forget_cb (void *ctx, int fd)
{
	epoll_ctl (((struct ab_microvm_s *)ctx)->epfd, EPOLL_CTL_DEL, fd, NULL);
}

static void
hello_cb (void *ctx)
{
	((struct ab_microvm_s *)ctx)->hello = true;
}

static const struct ab_mux_relay_ops_s relay_ops = {
	.watch = watch_cb,
	.forget = forget_cb,
	.hello = hello_cb,
};

static int
add_fd (struct ab_microvm_s *vm, int fd)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.fd = fd };
	/* The start already watches the SIGTERM fd and the caller's end. */
	if (epoll_ctl (vm->epfd, EPOLL_CTL_ADD, fd, &ev) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

static void
accept_all (struct ab_microvm_s *vm)
{
	int fd;

	while ((fd = accept4 (vm->listen_fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0) {
		ab_error_t err = AB_ERROR_INIT;
		ab_mux_relay_add (vm->relay, fd, &err); /* at the limit: closed */
	}
}

enum pump_result { PUMP_OK, PUMP_QEMU_ENDED, PUMP_TERM, PUMP_BROKEN };

/* One batch of events (timeout_ms at most). */
static enum pump_result
pump (struct ab_microvm_s *vm, int term_fd, int caller_fd, int timeout_ms)
{
	struct epoll_event ev[MAX_EVENTS];
	int n = epoll_wait (vm->epfd, ev, MAX_EVENTS, timeout_ms);

	for (int i = 0; i < n; i++) {
		int fd = ev[i].data.fd;
		unsigned e = (ev[i].events & EPOLLIN ? AB_MUX_EV_IN : 0U)
		             | (ev[i].events & EPOLLOUT ? AB_MUX_EV_OUT : 0U)
		             | (ev[i].events & (EPOLLHUP | EPOLLERR) ? AB_MUX_EV_HUP : 0U);
		if (fd == vm->qemu_pidfd)
			return PUMP_QEMU_ENDED;
		if ((fd == term_fd && term_fd >= 0) || (fd == caller_fd && caller_fd >= 0))
			return PUMP_TERM;
		if (fd == vm->listen_fd && vm->listen_fd >= 0)
			accept_all (vm);
		else
			ab_mux_relay_event (vm->relay, fd, e);
	}
	return ab_mux_relay_failed (vm->relay) ? PUMP_BROKEN : PUMP_OK;
}

static int
ended_early (struct ab_microvm_s *vm, enum pump_result r, ab_error_t *err)
{
	char tail[CONSOLE_TAIL + 32], how[64];
	int status = 0;

	/* A broken stream is most often QEMU going down: its status says more. */
	if (r == PUMP_BROKEN
	    && poll (&(struct pollfd){ .fd = vm->qemu_pidfd, .events = POLLIN }, 1, 1000) == 1)
		r = PUMP_QEMU_ENDED;
	if (r == PUMP_BROKEN) {
		snprintf (how, sizeof how, "%.60s", ab_mux_relay_failed (vm->relay));
	} else {
		if (waitpid (vm->qemu, &status, 0) == vm->qemu)
			vm->qemu = -1;
		if (WIFSIGNALED (status))
			snprintf (how, sizeof how, "QEMU was killed by signal %d",
			          WTERMSIG (status));
		else
			snprintf (how, sizeof how, "QEMU exited with status %d",
			          WEXITSTATUS (status));
	}
	console_tail (vm, tail, sizeof tail);
	return ab_error (err, 0, AB_E_SYSTEM, "the microVM ended before its agent answered (%s)%s",
	                 how, tail);
}

/* Until the agent's HELLO, the boot budget, QEMU's end, or a cancel
 * (SIGTERM to the monitor, or its caller gone: nobody waits for this VM). */
static int
await_hello (struct ab_microvm_s *vm, ab_error_t *err)
{
	uint64_t deadline = ab_mono_ms () + (uint64_t)vm->boot_timeout_ms;
	char tail[CONSOLE_TAIL + 32];
	int cancel[2];

	ab_monitor_start_cancel_fds (cancel);
	for (int i = 0; i < 2; i++)
		if (cancel[i] >= 0 && add_fd (vm, cancel[i]) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "epoll_ctl");
	while (!vm->hello) {
		uint64_t now = ab_mono_ms ();
		enum pump_result r;
		if (now >= deadline) {
			console_tail (vm, tail, sizeof tail);
			return ab_error (
			        err, ETIMEDOUT, AB_E_SYSTEM,
			        "the microVM's agent did not answer within %d ms under %s%s",
			        vm->boot_timeout_ms, vm->kvm ? "kvm" : "tcg", tail);
		}
		r = pump (vm, cancel[0], cancel[1], (int)(deadline - now));
		if (r == PUMP_TERM)
			return ab_error (err, ECANCELED, AB_E_SYSTEM,
			                 "the microVM's boot was cancelled (SIGTERM, or the "
			                 "caller went away)");
		if (r == PUMP_QEMU_ENDED || r == PUMP_BROKEN)
			return ended_early (vm, r, err);
	}
	return 0;
}

/* ---- the monitor's operations ------------------------------------------------------ */

static int
prepare (struct ab_microvm_s *vm, const struct ab_spec_s *spec, struct ab_microvm_layout_s *l,
         char ***argv, ab_error_t *err)
{
	cleanup_free char *kernel = xasprintf ("%s/%s", vm->guest_dir, AB_MICROVM_KERNEL);
	cleanup_free char *initrd = xasprintf ("%s/%s", vm->guest_dir, AB_MICROVM_INITRD);
	cleanup_free char *log = xasprintf ("%s/%s", vm->rundir, CONSOLE_LOG);
	cleanup_free char *cmdline = NULL;
	cleanup_free char *qmp = ab_microvm_qmp_path (spec->service_socket);
	struct ab_qemu_vm_s q = {
		.kvm = vm->kvm,
		.memory_mib = ab_qemu_memory_mib (spec->limits.memory_bytes),
		.cpus = ab_qemu_cpus (spec->limits.cpu_millis),
		.kernel = kernel,
		.initrd = initrd,
		.console_log = log,
		.port_name = "org.agentbox.mux",
		.qmp_socket = qmp, /* pause: backend/pause.c */
	};

	if (spec->root.layers
	    && ab_microvm_root_disk (spec->root.layers, vm->root_disk, sizeof vm->root_disk, err)
	               < 0)
		return -1;
	if (ab_microvm_layout (spec, l, err) < 0 || !(cmdline = kernel_cmdline (vm, l, err)))
		return -1;
	q.append = cmdline;
	q.root_disk = vm->root_disk[0] ? vm->root_disk : NULL;
	q.shares = l->shares;
	q.n_shares = l->n_shares;
	*argv = ab_qemu_argv (&q, err);
	return *argv ? 0 : -1;
}

static int
vm_start (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct ab_microvm_s *vm = ctx;
	struct ab_microvm_layout_s l;
	char **argv = NULL;
	int r;

	vm->qemu = -1;
	vm->qemu_pidfd = vm->stream = vm->listen_fd = vm->epfd = -1;
	snprintf (vm->rundir, sizeof vm->rundir, "%s/agentbox-vm-%s-XXXXXX", ab_tmp_dir (), id);
	if (!mkdtemp (vm->rundir)) {
		vm->rundir[0] = '\0';
		return ab_error (err, errno, AB_E_SYSTEM, "microVM run directory");
	}
	vm->epfd = epoll_create1 (EPOLL_CLOEXEC);
	if (vm->epfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "epoll_create1");
	r = prepare (vm, spec, &l, &argv, err);
	if (r == 0)
		r = launch (vm, argv, l.masks, err);
	ab_qemu_argv_free (argv);
	ab_microvm_layout_free (&l);
	if (r < 0)
		return -1;
	vm->relay = ab_mux_relay_new (vm->stream, &relay_ops, vm);
	ab_mux_relay_send_hello (vm->relay);
	if (add_fd (vm, vm->qemu_pidfd) < 0 || await_hello (vm, err) < 0)
		return -1;
	/* The host end of the door: created only once the agent is ready,
	 * so a client that connects always reaches it. */
	vm->listen_fd = ab_service_socket_listen (spec->service_socket, SOCK_NONBLOCK, err);
	if (vm->listen_fd < 0 || add_fd (vm, vm->listen_fd) < 0)
		return -1;
	return vm->qemu_pidfd;
}

/* Until SIGTERM, QEMU's end, a broken stream, or (tied) the caller's end. */
static int
vm_serve (void *ctx, const struct ab_spec_s *spec, int watch_fd, int term_fd, int caller_fd)
{
	struct ab_microvm_s *vm = ctx;

	if (add_fd (vm, term_fd) < 0 || (caller_fd >= 0 && add_fd (vm, caller_fd) < 0))
		return -1;
	while (pump (vm, term_fd, caller_fd, -1) == PUMP_OK)
		;
	return 0;
}

static void
remove_rundir (struct ab_microvm_s *vm)
{
	static const char *const files[] = { CONSOLE_LOG, MASK_FILE };

	if (!vm->rundir[0])
		return;
	for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
		cleanup_free char *p = xasprintf ("%s/%s", vm->rundir, files[i]);
		unlink (p);
	}
	rmdir (vm->rundir);
	vm->rundir[0] = '\0';
}

static int
vm_stop (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct ab_microvm_s *vm = ctx;

	if (vm->qemu > 0) {
		kill (vm->qemu, SIGKILL);
		while (waitpid (vm->qemu, NULL, 0) < 0 && errno == EINTR)
			;
		vm->qemu = -1;
	}
	ab_mux_relay_free (vm->relay);
	vm->relay = NULL;
	int *fds[] = { &vm->qemu_pidfd, &vm->stream, &vm->listen_fd, &vm->epfd };
	for (size_t i = 0; i < sizeof fds / sizeof *fds; i++)
		if (*fds[i] >= 0) {
			close (*fds[i]);
			*fds[i] = -1;
		}
	remove_rundir (vm);
	cleanup_free char *qmp = ab_microvm_qmp_path (spec->service_socket);
	if (qmp)
		unlink (qmp); /* QEMU leaves its QMP socket behind */
	return 0;
}

/* What the host saw: QEMU's CPU time and peak resident memory (the guest's
 * RAM it touched plus its own), and whether the guest kernel OOM-killed a
 * command (it says so on the console, which commands cannot write to). */
static void
vm_stats (void *ctx, const struct ab_spec_s *spec, struct ab_sandbox_exit_s *ex, ab_error_t *err)
{
	struct ab_microvm_s *vm = ctx;
	cleanup_free char *log = xasprintf ("%s/%s", vm->rundir, CONSOLE_LOG);
	cleanup_file FILE *f = NULL;
	char line[512], path[64];
	unsigned long long ut, st;

	/* Memory and CPUs are the VM's size; pids a cgroup in the guest. */
	ab_limits_held_by (ex, &spec->limits, AB_LIMIT_VM);
	ex->pids_by = spec->limits.pids ? AB_LIMIT_CGROUP : AB_LIMIT_OFF;
	if (vm->qemu <= 0)
		return;
	snprintf (path, sizeof path, "/proc/%d/stat", (int)vm->qemu);
	if ((f = fopen (path, "re"))
	    && fscanf (f, "%*d (%*[^)]) %*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut,
	               &st)
	               == 2)
		ex->cpu_ms = (ut + st) * 1000 / (unsigned long long)sysconf (_SC_CLK_TCK);
	if (f)
		fclose (f);
	snprintf (path, sizeof path, "/proc/%d/status", (int)vm->qemu);
	f = fopen (path, "re");
	while (f && fgets (line, sizeof line, f))
		if (sscanf (line, "VmHWM: %llu kB", &ut) == 1)
			ex->peak_memory = ut * 1024;
	if (f)
		fclose (f);
	f = fopen (log, "re");
	while (f && fgets (line, sizeof line, f))
		if (strstr (line, "Out of memory: Killed process") || strstr (line, "oom-kill:"))
			ex->oom_killed = true;
}

const struct ab_monitor_ops_s ab_microvm_monitor_ops = {
	.start = vm_start,
	.stop = vm_stop,
	.serve = vm_serve,
	.stats = vm_stats,
	.stop_timeout_ms = 15000,
};
