/* probe: attack and behaviour probes for the agentbox integration tests.
 *
 * Each subcommand makes one real attempt and prints exactly one line,
 * "<name>: <result>", where <result> is "ok" when the attempt succeeded or
 * the errno name (EPERM, ESRCH, ...) when it failed, then exits 0.  The
 * tests assert on that line, so a denial is checked for its reason and not
 * only for a non-zero status.  Every wait and every loop is bounded in time
 * and count, so a broken sandbox cannot make a probe run away on the host.
 *
 * Dynamic, libc only: the tests run it from the sandbox's workspace with
 * the host's /usr visible.  Raw syscall(2) is used wherever the point is to
 * reach the kernel without a library in the way. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/bpf.h>
#include <linux/io_uring.h>
#include <linux/perf_event.h>
#include <linux/sched.h>
#include <linux/userfaultfd.h>
#include <netinet/in.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/mount.h>
#include <sys/personality.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include <arpa/inet.h>

#ifndef UFFD_USER_MODE_ONLY
#define UFFD_USER_MODE_ONLY 1
#endif
#define KEYCTL_JOIN_SESSION_KEYRING 1
#define PROBE_MAX_WAIT_S            60

static const char *probe_name = "probe";

static const char *
errname (int e)
{
	const char *n = strerrorname_np (e);
	return n ? n : "E?";
}

/* Print "<name>: ok" when rc >= 0, else "<name>: <errno name>". */
static int
report (long rc, int e)
{
	if (rc >= 0)
		printf ("%s: ok\n", probe_name);
	else
		printf ("%s: %s\n", probe_name, errname (e));
	fflush (stdout);
	return 0;
}

static void
sleep_ms (long ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };
	while (nanosleep (&ts, &ts) < 0 && errno == EINTR)
		;
}

static long
now_ms (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000L + ts.tv_nsec / 1000000L;
}

/* A child that waits (bounded) to be a target, then exits. */
static pid_t
spawn_idle_child (int seconds)
{
	pid_t pid = fork ();
	if (pid == 0) {
		alarm ((unsigned)seconds);
		for (;;)
			pause ();
	}
	return pid;
}

static void
reap (pid_t pid)
{
	if (pid <= 0)
		return;
	kill (pid, SIGKILL);
	waitpid (pid, NULL, 0);
}

/* Attach to our own child: allowed by plain ptrace rules (same uid,
 * dumpable, a descendant), so a failure can only come from the sandbox. */
static int
p_ptrace (int argc, char **argv)
{
	pid_t target = argc > 0 ? (pid_t)atoi (argv[0]) : spawn_idle_child (5);
	long rc = ptrace (PTRACE_ATTACH, target, NULL, NULL);
	int e = errno;
	if (rc == 0)
		ptrace (PTRACE_DETACH, target, NULL, NULL);
	if (argc == 0)
		reap (target);
	return report (rc, e);
}

static int
p_process_vm (int argc, char **argv)
{
	char buf[16], src[16] = "secret";
	pid_t target = argc > 0 ? (pid_t)atoi (argv[0]) : spawn_idle_child (5);
	struct iovec local = { buf, sizeof buf }, remote = { src, sizeof src };
	long rc = syscall (SYS_process_vm_readv, target, &local, 1UL, &remote, 1UL, 0UL);
	int e = errno;
	if (argc == 0)
		reap (target);
	return report (rc, e);
}

static int
p_keyctl (int argc, char **argv)
{
	long rc = syscall (SYS_keyctl, KEYCTL_JOIN_SESSION_KEYRING, NULL);
	return report (rc, errno);
}

static int
p_bpf (int argc, char **argv)
{
	union bpf_attr attr;
	memset (&attr, 0, sizeof attr);
	attr.map_type = BPF_MAP_TYPE_ARRAY;
	attr.key_size = 4;
	attr.value_size = 4;
	attr.max_entries = 1;
	long rc = syscall (SYS_bpf, BPF_MAP_CREATE, &attr, sizeof attr);
	return report (rc, errno);
}

/* A user-space-only software counter on ourselves: allowed at
 * perf_event_paranoid 2, so EPERM here is the sandbox's doing. */
static int
p_perf (int argc, char **argv)
{
	struct perf_event_attr attr;
	memset (&attr, 0, sizeof attr);
	attr.size = sizeof attr;
	attr.type = PERF_TYPE_SOFTWARE;
	attr.config = PERF_COUNT_SW_TASK_CLOCK;
	attr.exclude_kernel = 1;
	attr.exclude_hv = 1;
	long rc = syscall (SYS_perf_event_open, &attr, 0, -1, -1, 0UL);
	return report (rc, errno);
}

/* UFFD_USER_MODE_ONLY is allowed unprivileged even with
 * vm.unprivileged_userfaultfd = 0. */
static int
p_userfaultfd (int argc, char **argv)
{
	long rc = syscall (SYS_userfaultfd, O_CLOEXEC | UFFD_USER_MODE_ONLY);
	return report (rc, errno);
}

static int
p_io_uring (int argc, char **argv)
{
	struct io_uring_params p;
	memset (&p, 0, sizeof p);
	long rc = syscall (SYS_io_uring_setup, 4U, &p);
	return report (rc, errno);
}

static int
p_unshare_user (int argc, char **argv)
{
	int rc = unshare (CLONE_NEWUSER);
	return report (rc, errno);
}

static int
p_unshare_mount (int argc, char **argv)
{
	int rc = unshare (CLONE_NEWNS);
	return report (rc, errno);
}

/* The raw clone(2) path to a new user namespace, for filters that only
 * look at unshare(2). */
static int
p_clone_user (int argc, char **argv)
{
	long rc = syscall (SYS_clone, (unsigned long)(CLONE_NEWUSER | SIGCHLD), NULL, NULL, NULL,
	                   0UL);
	int e = errno;
	if (rc == 0)
		_exit (0);
	if (rc > 0)
		waitpid ((pid_t)rc, NULL, 0);
	return report (rc, e);
}

/* clone3 must fail with ENOSYS (not EPERM) so libc falls back to clone. */
static int
p_clone3 (int argc, char **argv)
{
	struct clone_args args;
	memset (&args, 0, sizeof args);
	args.exit_signal = SIGCHLD;
	long rc = syscall (SYS_clone3, &args, sizeof args);
	int e = errno;
	if (rc == 0)
		_exit (0);
	if (rc > 0)
		waitpid ((pid_t)rc, NULL, 0);
	return report (rc, e);
}

static int
p_mount (int argc, char **argv)
{
	const char *target = argc > 0 ? argv[0] : "/tmp";
	int rc = mount ("none", target, "tmpfs", 0, "size=1m");
	int e = errno;
	if (rc == 0)
		umount2 (target, MNT_DETACH);
	return report (rc, e);
}

static int
p_fsopen (int argc, char **argv)
{
	long rc = syscall (SYS_fsopen, "tmpfs", 0U);
	return report (rc, errno);
}

/* The first of 0, 1, 2 that is a terminal, else the controlling one. */
static int
tty_fd (void)
{
	for (int fd = 0; fd < 3; fd++)
		if (isatty (fd))
			return fd;
	return open ("/dev/tty", O_RDWR | O_NOCTTY | O_CLOEXEC);
}

/* TIOCSTI pushes bytes into the terminal's input queue: with the caller's
 * terminal, that is typing commands into the user's shell (CVE-2017-5226).
 * "hi" sets bit 32 of the request: the kernel truncates it to 32 bits, so a
 * filter that compares all 64 bits misses it (CVE-2023-28100 class). */
static int
p_tiocsti (int argc, char **argv)
{
	unsigned long req = TIOCSTI;
	char c = '\n';
	int fd = tty_fd ();
	if (fd < 0)
		return report (-1, errno);
	if (argc > 0 && strcmp (argv[0], "hi") == 0)
		req |= 1UL << 32;
	long rc = syscall (SYS_ioctl, fd, req, &c);
	return report (rc, errno);
}

static int
p_tioclinux (int argc, char **argv)
{
	char subcode = 11; /* TIOCL_GETKMSGREDIRECT: harmless if allowed */
	int fd = tty_fd ();
	if (fd < 0)
		return report (-1, errno);
	long rc = syscall (SYS_ioctl, fd, (unsigned long)TIOCLINUX, &subcode);
	return report (rc, errno);
}

static int
p_personality (int argc, char **argv)
{
	long rc = syscall (SYS_personality, (unsigned long)READ_IMPLIES_EXEC);
	int e = errno;
	if (rc >= 0)
		syscall (SYS_personality, (unsigned long)rc);
	return report (rc, e);
}

/* The i386 ABI from a 64-bit process: int $0x80 with i386 getpid (20). */
static int
p_int80 (int argc, char **argv)
{
	long rc;
	__asm__ volatile("int $0x80" : "=a"(rc) : "a"(20L) : "memory", "rcx", "r11");
	return report (rc >= 0 ? rc : -1, rc >= 0 ? 0 : (int)-rc);
}

/* The x32 ABI: getpid (39) with __X32_SYSCALL_BIT. */
static int
p_x32 (int argc, char **argv)
{
	long rc = syscall (0x40000000L | 39L);
	return report (rc, errno);
}

/* Wait for a non-blocking connect, bounded. */
static int
connect_wait (int fd, const struct sockaddr *sa, socklen_t len)
{
	if (connect (fd, sa, len) == 0)
		return 0;
	if (errno != EINPROGRESS)
		return -1;
	struct pollfd pfd = { fd, POLLOUT, 0 };
	if (poll (&pfd, 1, 3000) <= 0) {
		errno = ETIMEDOUT;
		return -1;
	}
	int soerr = 0;
	socklen_t sl = sizeof soerr;
	getsockopt (fd, SOL_SOCKET, SO_ERROR, &soerr, &sl);
	errno = soerr;
	return soerr ? -1 : 0;
}

static int
p_connect (int argc, char **argv)
{
	if (argc < 2)
		return report (-1, EINVAL);
	struct sockaddr_in sa = { .sin_family = AF_INET,
		                  .sin_port = htons ((uint16_t)atoi (argv[1])) };
	if (inet_pton (AF_INET, argv[0], &sa.sin_addr) != 1)
		return report (-1, EINVAL);
	int fd = socket (AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return report (-1, errno);
	int rc = connect_wait (fd, (struct sockaddr *)&sa, sizeof sa);
	int e = errno;
	close (fd);
	return report (rc, e);
}

/* "@name" is an abstract socket, anything else a path. */
static socklen_t
unix_addr (struct sockaddr_un *su, const char *name)
{
	memset (su, 0, sizeof *su);
	su->sun_family = AF_UNIX;
	size_t n = strlen (name);
	if (n >= sizeof su->sun_path)
		n = sizeof su->sun_path - 1;
	memcpy (su->sun_path, name, n);
	if (name[0] == '@')
		su->sun_path[0] = '\0';
	return (socklen_t)(offsetof (struct sockaddr_un, sun_path) + n + (name[0] == '@' ? 0 : 1));
}

static int
p_connect_unix (int argc, char **argv)
{
	struct sockaddr_un su;
	if (argc < 1)
		return report (-1, EINVAL);
	socklen_t len = unix_addr (&su, argv[0]);
	int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return report (-1, errno);
	int rc = connect (fd, (struct sockaddr *)&su, len);
	int e = errno;
	close (fd);
	return report (rc, e);
}

/* Host side of the connect tests: prints "listen: PORT" once bound, then
 * "listen: accepted" or "listen: timeout" after at most SECONDS. */
static int
serve (int fd, int seconds)
{
	if (listen (fd, 8) < 0)
		return report (-1, errno);
	struct pollfd pfd = { fd, POLLIN, 0 };
	int n = poll (&pfd, 1, seconds * 1000);
	printf ("%s: %s\n", probe_name, n > 0 ? "accepted" : "timeout");
	fflush (stdout);
	return 0;
}

static int
p_listen (int argc, char **argv)
{
	struct sockaddr_in sa = { .sin_family = AF_INET, .sin_port = 0 };
	socklen_t sl = sizeof sa;
	int seconds = argc > 0 ? atoi (argv[0]) : 10;
	inet_pton (AF_INET, "127.0.0.1", &sa.sin_addr);
	int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind (fd, (struct sockaddr *)&sa, sizeof sa) < 0
	    || getsockname (fd, (struct sockaddr *)&sa, &sl) < 0)
		return report (-1, errno);
	printf ("%s: %d\n", probe_name, ntohs (sa.sin_port));
	fflush (stdout);
	return serve (fd, seconds);
}

static int
p_listen_unix (int argc, char **argv)
{
	struct sockaddr_un su;
	if (argc < 1)
		return report (-1, EINVAL);
	int seconds = argc > 1 ? atoi (argv[1]) : 10;
	socklen_t len = unix_addr (&su, argv[0]);
	int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind (fd, (struct sockaddr *)&su, len) < 0)
		return report (-1, errno);
	printf ("%s: bound\n", probe_name);
	fflush (stdout);
	return serve (fd, seconds);
}

/* "fds: 0 1 2": every open fd but the one reading the directory. */
static int
p_fds (int argc, char **argv)
{
	DIR *d = opendir ("/proc/self/fd");
	if (!d)
		return report (-1, errno);
	char line[4096] = "";
	size_t used = 0;
	struct dirent *de;
	while ((de = readdir (d)) != NULL) {
		if (de->d_name[0] == '.' || atoi (de->d_name) == dirfd (d))
			continue;
		int n = snprintf (line + used, sizeof line - used, " %s", de->d_name);
		if (n < 0 || (size_t)n >= sizeof line - used)
			break;
		used += (size_t)n;
	}
	closedir (d);
	printf ("%s:%s\n", probe_name, line);
	return 0;
}

/* Open PATH for writing directly, then through an O_PATH fd re-opened via
 * /proc/self/fd (the CVE-2019-5736 route).  Prints both results, e.g.
 * "write-exe: EACCES EACCES".  Never writes a byte: the tests check the
 * binary's checksum, and a broken sandbox must not damage a shared build. */
static int
p_write_exe (int argc, char **argv)
{
	if (argc < 1)
		return report (-1, EINVAL);
	int fd = open (argv[0], O_WRONLY | O_CLOEXEC);
	int e1 = fd < 0 ? errno : 0;
	if (fd >= 0)
		close (fd);
	int e2 = 0, pfd = open (argv[0], O_PATH | O_CLOEXEC);
	if (pfd < 0) {
		e2 = errno;
	} else {
		char p[64];
		snprintf (p, sizeof p, "/proc/self/fd/%d", pfd);
		fd = open (p, O_WRONLY | O_CLOEXEC);
		e2 = fd < 0 ? errno : 0;
		if (fd >= 0)
			close (fd);
		close (pfd);
	}
	printf ("%s: %s %s\n", probe_name, e1 ? errname (e1) : "ok", e2 ? errname (e2) : "ok");
	return 0;
}

/* Create (or truncate) PATH and write one byte. */
static int
p_write (int argc, char **argv)
{
	if (argc < 1)
		return report (-1, EINVAL);
	int fd = open (argv[0], O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0)
		return report (-1, errno);
	long rc = write (fd, "x", 1);
	int e = errno;
	close (fd);
	return report (rc, e);
}

/* "read: ok N" with the number of bytes read (up to 1 MiB), or the errno. */
static int
p_read (int argc, char **argv)
{
	static char buf[1 << 20];
	if (argc < 1)
		return report (-1, EINVAL);
	int fd = open (argv[0], O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return report (-1, errno);
	size_t total = 0;
	ssize_t n = 0;
	while (total < sizeof buf && (n = read (fd, buf + total, sizeof buf - total)) > 0)
		total += (size_t)n;
	int e = errno;
	close (fd);
	if (n < 0)
		return report (-1, e);
	printf ("%s: ok %zu\n", probe_name, total);
	return 0;
}

static int
p_kill (int argc, char **argv)
{
	if (argc < 1)
		return report (-1, EINVAL);
	int sig = argc > 1 ? atoi (argv[1]) : 0;
	int rc = kill ((pid_t)atoi (argv[0]), sig);
	return report (rc, errno);
}

static int
p_setuid_check (int argc, char **argv)
{
	uid_t r, e, s;
	gid_t gr, ge, gs;
	getresuid (&r, &e, &s);
	getresgid (&gr, &ge, &gs);
	printf ("%s: uid=%u euid=%u suid=%u gid=%u egid=%u\n", probe_name, r, e, s, gr, ge);
	return 0;
}

/* Fork children that idle until told to go, until fork fails or MAX
 * (default 1000) children exist.  "forkbomb: EAGAIN after N".  The
 * children are killed before the probe exits. */
static int
p_forkbomb (int argc, char **argv)
{
	int max = argc > 0 ? atoi (argv[0]) : 1000;
	pid_t *kids = calloc ((size_t)max + 1, sizeof *kids);
	int n = 0, e = 0;
	long deadline = now_ms () + 10000;
	if (!kids)
		return report (-1, ENOMEM);
	while (n < max && now_ms () < deadline) {
		pid_t pid = spawn_idle_child (20);
		if (pid < 0) {
			e = errno;
			break;
		}
		kids[n++] = pid;
	}
	for (int i = 0; i < n; i++)
		kill (kids[i], SIGKILL);
	for (int i = 0; i < n; i++)
		waitpid (kids[i], NULL, 0);
	printf ("%s: %s after %d\n", probe_name, e ? errname (e) : "ok", n);
	free (kids);
	return 0;
}

/* Allocate and touch MB mebibytes, one at a time. */
static int
p_memhog (int argc, char **argv)
{
	long mb = argc > 0 ? atol (argv[0]) : 256;
	for (long i = 0; i < mb; i++) {
		char *p = mmap (NULL, 1 << 20, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS,
		                -1, 0);
		if (p == MAP_FAILED)
			return report (-1, errno);
		memset (p, 0x5a, 1 << 20);
	}
	printf ("%s: ok %ld\n", probe_name, mb);
	return 0;
}

/* Sleep up to SECONDS (default 60); MARKER is only there to appear in
 * /proc/PID/cmdline for pgrep -f. */
static int
p_sleeper (int argc, char **argv)
{
	int seconds = argc > 1 ? atoi (argv[1]) : PROBE_MAX_WAIT_S;
	printf ("%s: ready\n", probe_name);
	fflush (stdout);
	long deadline = now_ms () + seconds * 1000L;
	while (now_ms () < deadline)
		sleep_ms (100);
	return 0;
}

/* A grandchild that leaves the session and ignores SIGTERM, then the
 * probe itself ignores SIGTERM too: both try to outlive a timeout. */
static int
p_stubborn (int argc, char **argv)
{
	if (argc < 1)
		return report (-1, EINVAL);
	signal (SIGTERM, SIG_IGN);
	pid_t child = fork ();
	if (child == 0) {
		if (fork () == 0) {
			setsid ();
			execl ("/proc/self/exe", "probe", "sleeper", argv[0], (char *)NULL);
			_exit (127);
		}
		_exit (0);
	}
	waitpid (child, NULL, 0);
	printf ("%s: started\n", probe_name);
	fflush (stdout);
	long deadline = now_ms () + PROBE_MAX_WAIT_S * 1000L;
	while (now_ms () < deadline)
		sleep_ms (100);
	return 0;
}

/* Print "sigwait: ready", then the name of the first of INT, TERM, HUP,
 * WINCH, USR1 that arrives ("sigwait: SIGTERM"), or "sigwait: timeout". */
static int
p_sigwait (int argc, char **argv)
{
	static const int sigs[] = { SIGINT, SIGTERM, SIGHUP, SIGWINCH, SIGUSR1 };
	sigset_t set;
	sigemptyset (&set);
	for (size_t i = 0; i < sizeof sigs / sizeof sigs[0]; i++)
		sigaddset (&set, sigs[i]);
	sigprocmask (SIG_BLOCK, &set, NULL);
	printf ("%s: ready\n", probe_name);
	fflush (stdout);
	struct timespec ts = { argc > 0 ? atoi (argv[0]) : 10, 0 };
	int sig = sigtimedwait (&set, NULL, &ts);
	if (sig < 0)
		printf ("%s: timeout\n", probe_name);
	else
		printf ("%s: SIG%s\n", probe_name, sigabbrev_np (sig));
	fflush (stdout);
	return 0;
}

static void
print_winsize (const char *what)
{
	struct winsize ws = { 0 };
	ioctl (1, TIOCGWINSZ, &ws);
	printf ("%s: %s %ux%u\n", probe_name, what, ws.ws_row, ws.ws_col);
	fflush (stdout);
}

/* Print the window size, wait (bounded) for SIGWINCH, print it again. */
static int
p_winch (int argc, char **argv)
{
	sigset_t set;
	sigemptyset (&set);
	sigaddset (&set, SIGWINCH);
	sigprocmask (SIG_BLOCK, &set, NULL);
	print_winsize ("ready");
	struct timespec ts = { 10, 0 };
	if (sigtimedwait (&set, NULL, &ts) < 0) {
		printf ("%s: timeout\n", probe_name);
		return 0;
	}
	print_winsize ("changed");
	return 0;
}

static int
p_tty (int argc, char **argv)
{
	const char *name = ttyname (0);
	printf ("%s: in=%d out=%d err=%d name=%s\n", probe_name, isatty (0), isatty (1), isatty (2),
	        name ? name : "none");
	return 0;
}

struct probe_s {
	const char *name;
	int (*fn) (int argc, char **argv);
	const char *usage;
};

static const struct probe_s probes[] = {
	{ "ptrace", p_ptrace, "[PID]  PTRACE_ATTACH to PID or to our own child" },
	{ "process-vm", p_process_vm, "[PID]  process_vm_readv" },
	{ "keyctl", p_keyctl, "  keyctl(JOIN_SESSION_KEYRING)" },
	{ "bpf", p_bpf, "  bpf(BPF_MAP_CREATE)" },
	{ "perf", p_perf, "  perf_event_open on ourselves, user space only" },
	{ "userfaultfd", p_userfaultfd, "  userfaultfd(UFFD_USER_MODE_ONLY)" },
	{ "io_uring", p_io_uring, "  io_uring_setup" },
	{ "unshare-user", p_unshare_user, "  unshare(CLONE_NEWUSER)" },
	{ "unshare-mount", p_unshare_mount, "  unshare(CLONE_NEWNS)" },
	{ "clone-user", p_clone_user, "  clone(CLONE_NEWUSER)" },
	{ "clone3", p_clone3, "  clone3 (plain fork)" },
	{ "mount", p_mount, "[TARGET]  mount a tmpfs (default /tmp)" },
	{ "fsopen", p_fsopen, "  fsopen(\"tmpfs\")" },
	{ "tiocsti", p_tiocsti, "[hi]  TIOCSTI on the terminal (hi: bit 32 set)" },
	{ "tioclinux", p_tioclinux, "  TIOCLINUX on the terminal" },
	{ "personality", p_personality, "  personality(READ_IMPLIES_EXEC)" },
	{ "int80", p_int80, "  i386 getpid through int $0x80" },
	{ "x32", p_x32, "  x32 getpid" },
	{ "connect", p_connect, "ADDR PORT  TCP connect (3 s bound)" },
	{ "connect-unix", p_connect_unix, "NAME  unix connect (@ = abstract)" },
	{ "listen", p_listen, "[SECONDS]  listen on 127.0.0.1, print the port" },
	{ "listen-unix", p_listen_unix, "NAME [SECONDS]  listen on a unix socket" },
	{ "fds", p_fds, "  list open fds" },
	{ "write-exe", p_write_exe, "PATH  open PATH for writing, directly and via O_PATH" },
	{ "write", p_write, "PATH  create PATH and write a byte" },
	{ "read", p_read, "PATH  read PATH" },
	{ "kill", p_kill, "PID [SIG]  kill(PID, SIG), SIG default 0" },
	{ "setuid-check", p_setuid_check, "  print real/effective/saved ids" },
	{ "forkbomb", p_forkbomb, "[MAX]  fork idle children until fork fails" },
	{ "memhog", p_memhog, "MB  allocate and touch MB MiB" },
	{ "sleeper", p_sleeper, "MARKER [SECONDS]  sleep, bounded" },
	{ "stubborn", p_stubborn, "MARKER  setsid grandchild ignoring SIGTERM" },
	{ "sigwait", p_sigwait, "[SECONDS]  wait for INT/TERM/HUP/WINCH/USR1" },
	{ "winch", p_winch, "  print window size, wait for SIGWINCH, print again" },
	{ "tty", p_tty, "  isatty and ttyname of 0, 1, 2" },
};

int
main (int argc, char **argv)
{
	if (argc >= 2) {
		for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++) {
			if (strcmp (argv[1], probes[i].name) == 0) {
				probe_name = probes[i].name;
				return probes[i].fn (argc - 2, argv + 2);
			}
		}
	}
	fprintf (stderr, "usage: probe SUBCOMMAND [ARGS]\n");
	for (size_t i = 0; i < sizeof probes / sizeof probes[0]; i++)
		fprintf (stderr, "  %s %s\n", probes[i].name, probes[i].usage);
	return 2;
}
