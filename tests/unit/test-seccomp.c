/* The default seccomp filter (build/gen/seccomp-default.h) under the real
 * kernel: each probe runs in a fresh child that sets no_new_privs, installs
 * the filter exactly as the agent does, makes one call and reports what came
 * back.  Arguments are chosen so that a call the filter lets through gets a
 * different answer from the kernel (EBADF, a file descriptor, ...) than the
 * filter's EPERM or ENOSYS. */
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/netlink.h>
#include <linux/openat2.h>
#include <linux/seccomp.h>
#include <pthread.h>
#include <sched.h>
#include <setjmp.h>
#include <signal.h>
#include <spawn.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/personality.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "isolate/seccomp-profile.h"
#include "seccomp-default.h"

#ifndef __X32_SYSCALL_BIT
#define __X32_SYSCALL_BIT 0x40000000
#endif
#ifndef AF_VSOCK
#define AF_VSOCK 40
#endif
#ifndef AF_ALG
#define AF_ALG 38
#endif
#ifndef CLONE_NEWTIME
#define CLONE_NEWTIME 0x00000080
#endif
#ifndef SYS_clone3
#define SYS_clone3 435
#endif
#ifndef SYS_cachestat
#define SYS_cachestat 451
#endif

#define HIGH         UINT64_C (0xdead00000000) /* junk the kernel drops from an int argument */
#define SETUP_FAILED 111

enum expect {
	PASSES,  /* the kernel ran it: success, or exactly `err` when err != 0 */
	REFUSED, /* the filter answered -1 / err */
	KILLED,  /* the filter killed the process with SIGSYS */
};

struct probe_s {
	const char *what;
	long nr;
	uint64_t args[6];
	long (*fn) (void); /* instead of nr: a call through libc */
	enum expect expect;
	int err;
};

struct outcome_s {
	long ret;
	int err;
};

static void
install_filter_or_exit (void)
{
	struct sock_fprog prog = {
		.len = AB_SECCOMP_DEFAULT_LEN,
		.filter = (struct sock_filter *)ab_seccomp_default_filter,
	};

	if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
	    || prctl (PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog, 0, 0) < 0)
		_exit (SETUP_FAILED);
}

static void
child_run (const struct probe_s *p, int out_fd, bool filtered)
{
	pid_t self = getpid ();
	struct outcome_s o;

	/* No controlling terminal: a broken filter must not let vhangup reach
	 * the terminal the tests run in (the TIOCSTI probes use fd -1). */
	setsid ();
	if (filtered)
		install_filter_or_exit ();
	errno = 0;
	if (p->fn)
		o.ret = p->fn ();
	else
		o.ret = syscall (p->nr, p->args[0], p->args[1], p->args[2], p->args[3], p->args[4],
		                 p->args[5]);
	o.err = errno;
	if (getpid () != self) /* a clone the filter should have refused */
		_exit (0);
	if (write (out_fd, &o, sizeof o) != (ssize_t)sizeof o)
		_exit (SETUP_FAILED);
	_exit (0);
}

/* Runs the probe in a child; returns its wait status and fills *o when
 * the child got as far as reporting. */
static int
run_in_child (const struct probe_s *p, bool filtered, struct outcome_s *o, bool *reported)
{
	int fds[2], status = 0;
	pid_t pid;

	assert_int_equal (pipe2 (fds, O_CLOEXEC), 0);
	pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		close (fds[0]);
		child_run (p, fds[1], filtered);
	}
	close (fds[1]);
	*reported = read (fds[0], o, sizeof *o) == (ssize_t)sizeof *o;
	close (fds[0]);
	assert_int_equal (waitpid (pid, &status, 0), pid);
	return status;
}

/* Prints what went wrong and returns false; the callers go on with the
 * rest of their table so one run shows every mismatch. */
static bool
check_probe (const struct probe_s *p)
{
	struct outcome_s o = { 0 };
	bool reported;
	int status = run_in_child (p, true, &o, &reported);

	if (WIFEXITED (status) && WEXITSTATUS (status) == SETUP_FAILED) {
		print_error ("%s: could not install the filter\n", p->what);
		return false;
	}
	if (p->expect == KILLED) {
		if (WIFSIGNALED (status) && WTERMSIG (status) == SIGSYS)
			return true;
		print_error ("%s: expected death by SIGSYS, got status 0x%x (ret %ld errno %d)\n",
		             p->what, status, o.ret, o.err);
		return false;
	}
	if (!reported) {
		print_error ("%s: the child died (status 0x%x)\n", p->what, status);
		return false;
	}
	if (p->expect == REFUSED ? (o.ret == -1 && o.err == p->err)
	                         : (p->err == 0 ? o.ret >= 0 : (o.ret == -1 && o.err == p->err)))
		return true;
	print_error ("%s: expected %s%s, got ret %ld errno %d (%s)\n", p->what,
	             p->expect == REFUSED ? "the filter's "
	             : p->err             ? "the kernel's "
	                                  : "success",
	             p->err ? strerror (p->err) : "", o.ret, o.err, strerror (o.err));
	return false;
}

static void
check_probes (const struct probe_s *probes, size_t n)
{
	size_t failed = 0;

	for (size_t i = 0; i < n; i++)
		failed += !check_probe (&probes[i]);
	if (failed)
		fail_msg ("%zu of %zu probes failed", failed, n);
}

#define N(a) (sizeof (a) / sizeof ((a)[0]))
#define M1   (~UINT64_C (0))
#define ALL_M1                                                                                     \
	{                                                                                          \
		M1, M1, M1, M1, M1, M1                                                             \
	}

/* ---- calls through libc --------------------------------------------- */

static long
write_to_pipe (void)
{
	int fds[2];
	long r;

	if (pipe (fds) < 0)
		return -1;
	r = write (fds[1], "x", 1);
	return r == 1 ? 0 : -1;
}

static long
reap (pid_t pid)
{
	int status;

	if (waitpid (pid, &status, 0) != pid)
		return -1;
	return WIFEXITED (status) && WEXITSTATUS (status) == 0 ? 0 : -1;
}

static long
libc_fork (void)
{
	pid_t pid = fork ();

	if (pid == 0)
		_exit (0);
	return pid < 0 ? -1 : reap (pid);
}

static long
raw_clone (unsigned long flags)
{
	long pid = syscall (SYS_clone, flags, 0, 0, 0, 0);

	if (pid == 0)
		_exit (0);
	if (pid > 0) {
		reap ((pid_t)pid);
		return pid; /* the test wanted a refusal when flags hold a namespace */
	}
	return -1;
}

static long
clone_plain (void)
{
	long r = raw_clone (SIGCHLD);
	return r > 0 ? 0 : r;
}

static long
clone_newuser (void)
{
	return raw_clone (CLONE_NEWUSER | SIGCHLD);
}

static long
clone_newnet_high_bits (void)
{
	/* the kernel reads the low 32 bits of clone's flags */
	return raw_clone ((unsigned long)(CLONE_NEWNET | SIGCHLD) | (unsigned long)HIGH);
}

static void *
thread_main (void *arg)
{
	return arg;
}

static long
libc_thread (void)
{
	pthread_t t;
	int rc = pthread_create (&t, NULL, thread_main, NULL);

	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return pthread_join (t, NULL) == 0 ? 0 : -1;
}

static long
libc_posix_spawn (void)
{
	char *argv[] = { (char *)"true", NULL };
	char *envp[] = { NULL };
	pid_t pid;
	int rc = posix_spawnp (&pid, "true", NULL, NULL, argv, envp);

	if (rc != 0) {
		errno = rc;
		return -1;
	}
	return reap (pid);
}

/* getpid through the i386 entry point (int $0x80) */
static long
int80_getpid (void)
{
	long ret;

	__asm__ volatile("int $0x80" : "=a"(ret) : "a"(20L) : "memory", "r8", "r9", "r10", "r11");
	return ret;
}

/* ---- tests ---------------------------------------------------------- */

static void
test_filter_shape (void **state)
{
	(void)state;
	assert_int_equal (AB_SECCOMP_DEFAULT_LEN, N (ab_seccomp_default_filter));
	assert_true (AB_SECCOMP_DEFAULT_LEN > 0 && AB_SECCOMP_DEFAULT_LEN <= BPF_MAXINSNS);
	assert_int_equal (AB_SECCOMP_DEFAULT_VERSION, AB_SECCOMP_PROFILE_VERSION);
}

static void
test_everyday_calls_pass (void **state)
{
	static char buf[16];
	static struct open_how how = { .flags = O_RDONLY | O_DIRECTORY };
	struct statx stx;
	struct probe_s probes[] = {
		{ "getpid", SYS_getpid, { 0 }, NULL, PASSES, 0 },
		{ "write to a pipe", 0, { 0 }, write_to_pipe, PASSES, 0 },
		{ "fork() through libc", 0, { 0 }, libc_fork, PASSES, 0 },
		{ "clone(SIGCHLD)", 0, { 0 }, clone_plain, PASSES, 0 },
		{ "pthread_create (clone3 ENOSYS, then clone)", 0, { 0 }, libc_thread, PASSES, 0 },
		{ "posix_spawnp true", 0, { 0 }, libc_posix_spawn, PASSES, 0 },
		{ "openat2",
		  SYS_openat2,
		  { (uint64_t)AT_FDCWD, (uintptr_t) "/", (uintptr_t)&how, sizeof how },
		  NULL,
		  PASSES,
		  0 },
		{ "statx",
		  SYS_statx,
		  { (uint64_t)AT_FDCWD, (uintptr_t) "/", 0, STATX_BASIC_STATS, (uintptr_t)&stx },
		  NULL,
		  PASSES,
		  0 },
		{ "faccessat2",
		  SYS_faccessat2,
		  { (uint64_t)AT_FDCWD, (uintptr_t) "/", F_OK, 0 },
		  NULL,
		  PASSES,
		  0 },
		{ "close_range", SYS_close_range, { 1000, 2000, 0 }, NULL, PASSES, 0 },
		{ "getrandom", SYS_getrandom, { (uintptr_t)buf, sizeof buf, 0 }, NULL, PASSES, 0 },
		{ "memfd_create",
		  SYS_memfd_create,
		  { (uintptr_t) "t", MFD_CLOEXEC },
		  NULL,
		  PASSES,
		  0 },
		{ "copy_file_range(-1)",
		  SYS_copy_file_range,
		  { M1, 0, M1, 0, 1, 0 },
		  NULL,
		  PASSES,
		  EBADF },
		{ "epoll_pwait2(-1)",
		  SYS_epoll_pwait2,
		  { M1, 0, 1, 0, 0, 0 },
		  NULL,
		  PASSES,
		  EBADF },
		{ "pidfd_open(-1)", SYS_pidfd_open, { M1, 0 }, NULL, PASSES, EINVAL },
		{ "pidfd_send_signal(-1)",
		  SYS_pidfd_send_signal,
		  { M1, 0, 0, 0 },
		  NULL,
		  PASSES,
		  EBADF },
		{ "landlock ABI version",
		  SYS_landlock_create_ruleset,
		  { 0, 0, 1 },
		  NULL,
		  PASSES,
		  0 },
		{ "unshare(CLONE_FS | CLONE_FILES)",
		  SYS_unshare,
		  { CLONE_FS | CLONE_FILES },
		  NULL,
		  PASSES,
		  0 },
		{ "ioctl(-1, FIONREAD)",
		  SYS_ioctl,
		  { M1, FIONREAD, (uintptr_t)buf },
		  NULL,
		  PASSES,
		  EBADF },
		{ "ioctl(-1, TCGETS | high bits)",
		  SYS_ioctl,
		  { M1, TCGETS | HIGH, (uintptr_t)buf },
		  NULL,
		  PASSES,
		  EBADF },
		{ "personality(0xffffffff) query",
		  SYS_personality,
		  { 0xffffffff },
		  NULL,
		  PASSES,
		  0 },
		{ "personality(PER_LINUX)", SYS_personality, { PER_LINUX }, NULL, PASSES, 0 },
		{ "personality(PER_LINUX32)", SYS_personality, { PER_LINUX32 }, NULL, PASSES, 0 },
		{ "personality(UNAME26 | high bits)",
		  SYS_personality,
		  { UNAME26 | HIGH },
		  NULL,
		  PASSES,
		  0 },
		{ "socket(AF_UNIX)",
		  SYS_socket,
		  { AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0 },
		  NULL,
		  PASSES,
		  0 },
		{ "socket(AF_INET)", SYS_socket, { AF_INET, SOCK_DGRAM, 0 }, NULL, PASSES, 0 },
		{ "socket(AF_INET6)", SYS_socket, { AF_INET6, SOCK_STREAM, 0 }, NULL, PASSES, 0 },
		{ "socket(AF_NETLINK, NETLINK_ROUTE)",
		  SYS_socket,
		  { AF_NETLINK, SOCK_RAW, NETLINK_ROUTE },
		  NULL,
		  PASSES,
		  0 },
		{ "socket(AF_NETLINK, NETLINK_SOCK_DIAG)",
		  SYS_socket,
		  { AF_NETLINK, SOCK_RAW, NETLINK_SOCK_DIAG },
		  NULL,
		  PASSES,
		  0 },
		{ "socket(AF_UNIX | high bits)",
		  SYS_socket,
		  { AF_UNIX | HIGH, SOCK_STREAM, 0 },
		  NULL,
		  PASSES,
		  0 },
	};

	(void)state;
	check_probes (probes, N (probes));
}

static void
test_dangerous_calls_refused (void **state)
{
	char c = 'x';
	struct probe_s probes[] = {
		{ "ptrace(PTRACE_TRACEME)", SYS_ptrace, { 0 }, NULL, REFUSED, EPERM },
		{ "keyctl", SYS_keyctl, ALL_M1, NULL, REFUSED, EPERM },
		{ "bpf", SYS_bpf, ALL_M1, NULL, REFUSED, EPERM },
		{ "perf_event_open", SYS_perf_event_open, ALL_M1, NULL, REFUSED, EPERM },
		{ "userfaultfd", SYS_userfaultfd, { 0 }, NULL, REFUSED, EPERM },
		{ "io_uring_setup", SYS_io_uring_setup, ALL_M1, NULL, REFUSED, EPERM },
		{ "mount", SYS_mount, ALL_M1, NULL, REFUSED, EPERM },
		{ "setns", SYS_setns, ALL_M1, NULL, REFUSED, EPERM },
		{ "unshare(CLONE_NEWUSER)", SYS_unshare, { CLONE_NEWUSER }, NULL, REFUSED, EPERM },
		{ "unshare(CLONE_FS | CLONE_NEWNS)",
		  SYS_unshare,
		  { CLONE_FS | CLONE_NEWNS },
		  NULL,
		  REFUSED,
		  EPERM },
		{ "unshare(CLONE_NEWTIME)", SYS_unshare, { CLONE_NEWTIME }, NULL, REFUSED, EPERM },
		{ "clone(CLONE_NEWUSER)", 0, { 0 }, clone_newuser, REFUSED, EPERM },
		{ "clone(CLONE_NEWNET | high bits)",
		  0,
		  { 0 },
		  clone_newnet_high_bits,
		  REFUSED,
		  EPERM },
		{ "clone3 says ENOSYS", SYS_clone3, { 0, 0 }, NULL, REFUSED, ENOSYS },
		{ "ioctl(TIOCSTI)",
		  SYS_ioctl,
		  { M1, TIOCSTI, (uintptr_t)&c },
		  NULL,
		  REFUSED,
		  EPERM },
		{ "ioctl(TIOCSTI | high bits)",
		  SYS_ioctl,
		  { M1, TIOCSTI | HIGH, (uintptr_t)&c },
		  NULL,
		  REFUSED,
		  EPERM },
		{ "ioctl(TIOCLINUX, sign-extended)",
		  SYS_ioctl,
		  { M1, TIOCLINUX | UINT64_C (0xffffffff00000000), (uintptr_t)&c },
		  NULL,
		  REFUSED,
		  EPERM },
		{ "personality(ADDR_NO_RANDOMIZE)",
		  SYS_personality,
		  { ADDR_NO_RANDOMIZE },
		  NULL,
		  REFUSED,
		  EPERM },
		{ "personality(READ_IMPLIES_EXEC)",
		  SYS_personality,
		  { READ_IMPLIES_EXEC },
		  NULL,
		  REFUSED,
		  EPERM },
		{ "socket(AF_PACKET)",
		  SYS_socket,
		  { AF_PACKET, SOCK_RAW, 0 },
		  NULL,
		  REFUSED,
		  EAFNOSUPPORT },
		{ "socket(AF_PACKET | high bits)",
		  SYS_socket,
		  { AF_PACKET | HIGH, SOCK_RAW, 0 },
		  NULL,
		  REFUSED,
		  EAFNOSUPPORT },
		{ "socket(AF_VSOCK)",
		  SYS_socket,
		  { AF_VSOCK, SOCK_STREAM, 0 },
		  NULL,
		  REFUSED,
		  EAFNOSUPPORT },
		{ "socket(AF_ALG)",
		  SYS_socket,
		  { AF_ALG, SOCK_SEQPACKET, 0 },
		  NULL,
		  REFUSED,
		  EAFNOSUPPORT },
		{ "socket(AF_NETLINK, NETLINK_GENERIC)",
		  SYS_socket,
		  { AF_NETLINK, SOCK_RAW, NETLINK_GENERIC },
		  NULL,
		  REFUSED,
		  EAFNOSUPPORT },
		{ "socket(AF_NETLINK, NETLINK_NETFILTER)",
		  SYS_socket,
		  { AF_NETLINK, SOCK_RAW, NETLINK_NETFILTER },
		  NULL,
		  REFUSED,
		  EAFNOSUPPORT },
		{ "unknown syscall 1023", 1023, { 0 }, NULL, REFUSED, ENOSYS },
		{ "unlisted cachestat", SYS_cachestat, ALL_M1, NULL, REFUSED, ENOSYS },
		{ "x32 getpid", __X32_SYSCALL_BIT | SYS_getpid, { 0 }, NULL, KILLED, 0 },
		{ "x32 write", __X32_SYSCALL_BIT | SYS_write, { 1, 0, 0 }, NULL, KILLED, 0 },
	};

	(void)state;
	check_probes (probes, N (probes));
}

/* Every entry of the profile's deny table, at the kernel.  All arguments
 * are -1, so a call that slipped through would fail harmlessly. */
static void
test_deny_table (void **state)
{
	(void)state;
	size_t failed = 0;

	for (size_t i = 0; i < ab_seccomp_n_denied; i++) {
		const struct ab_seccomp_deny_s *d = &ab_seccomp_denied[i];
		struct probe_s p = { d->sc.name, d->sc.nr, ALL_M1, NULL, REFUSED, d->errnum };
		failed += !check_probe (&p);
	}
	if (failed)
		fail_msg ("%zu of %zu denied syscalls got through", failed, ab_seccomp_n_denied);
}

static void
test_i386_entry_killed (void **state)
{
	struct probe_s p = { "getpid through int $0x80", 0, { 0 }, int80_getpid, KILLED, 0 };
	struct outcome_s o;
	bool reported;
	int status = run_in_child (&p, false, &o, &reported);

	(void)state;
	if (!reported || o.ret <= 0) {
		print_message ("kernel without IA-32 emulation (status 0x%x); skipping\n", status);
		skip ();
	}
	if (!check_probe (&p))
		fail ();
}

/* Real programs under the filter: the allowlist must not be too tight for
 * a shell, coreutils and (when installed) Python. */
static void
run_program (const char *const argv[])
{
	int status;
	pid_t pid = fork ();

	assert_true (pid >= 0);
	if (pid == 0) {
		int null = open ("/dev/null", O_WRONLY | O_CLOEXEC);
		if (null < 0 || dup2 (null, STDOUT_FILENO) < 0)
			_exit (SETUP_FAILED);
		install_filter_or_exit ();
		execv (argv[0], (char *const *)argv);
		_exit (127);
	}
	assert_int_equal (waitpid (pid, &status, 0), pid);
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
		fail_msg ("%s %s %s: status 0x%x under the filter", argv[0], argv[1],
		          argv[2] ? argv[2] : "", status);
}

static void
test_real_programs (void **state)
{
	static const char *const progs[][5] = {
		{ "/bin/sh", "-c",
		  "ls / | wc -l && grep -q '^Seccomp:[[:space:]]*2' /proc/self/status", NULL },
		{ "/bin/sh", "-c", "d=$(mktemp -d) && echo hi > $d/f && cp $d/f $d/g && rm -r $d",
		  NULL },
		{ "/usr/bin/python3", "-c",
		  "import subprocess,threading,os;"
		  "t=threading.Thread(target=print);t.start();t.join();"
		  "assert subprocess.run(['true']).returncode==0",
		  NULL },
		{ "/bin/busybox", "sh", "-c", "true", NULL },
	};

	(void)state;
	for (size_t i = 0; i < N (progs); i++)
		if (access (progs[i][0], X_OK) == 0)
			run_program (progs[i]);
		else
			print_message ("%s not installed; not run\n", progs[i][0]);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_filter_shape),
		cmocka_unit_test (test_everyday_calls_pass),
		cmocka_unit_test (test_dangerous_calls_refused),
		cmocka_unit_test (test_deny_table),
		cmocka_unit_test (test_i386_entry_killed),
		cmocka_unit_test (test_real_programs),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
