/* The detached monitor shared by the backends that drive an outside tool
 * (see monitor.h).  Its protocol with the caller, on a SOCK_SEQPACKET pair:
 * the intermediate child sends the monitor's pid, then the monitor sends
 * one report: "+" = ready, "-" and why it failed.  (A monitor that dies
 * first gives EOF, which must not read as ready.)  With spec->service_tied
 * the caller keeps its end open; EOF on it then tears the sandbox down,
 * and the monitor's last message on it, before it stops the sandbox, is
 * the exit report (struct exit_report_s) when the backend has a stats op.
 * Without service_tied the caller answers "+" with ACK before it closes
 * its end: a caller that died (or was killed) after asking for the
 * sandbox but before it heard of it can never find it again, so a monitor
 * that hears no ACK tears the sandbox down instead of living on.
 *
 * While ops->start runs (a VM may take seconds to boot), SIGTERM or the
 * caller hanging up cancels it: ab_monitor_start_cancel_fds gives the
 * start code both fds, and ab_monitor_wait_socket watches them. */
#include "backend/monitor.h"

#include <errno.h>
#include <limits.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"

#define REPORT_MAX 512
#define EXIT_TAG   '='
#define ACK        'k'
/* The caller acknowledges at once (it is blocked reading the report);
 * this only bounds a caller that froze or died. */
#define ACK_WAIT_MS 10000

/* This process is a monitor: its SIGTERM signalfd and its caller's end,
 * while the sandbox starts. */
static int cancel_fds[2] = { -1, -1 };

void
ab_monitor_start_cancel_fds (int fds[2])
{
	fds[0] = cancel_fds[0];
	fds[1] = cancel_fds[1];
}

static bool
start_cancelled (void)
{
	struct pollfd p[2] = { { .fd = cancel_fds[0], .events = POLLIN },
		               { .fd = cancel_fds[1], .events = POLLIN } };

	return poll (p, 2, 0) > 0;
}

/* The exit report; both ends are the same binary (a fork), so a struct. */
struct exit_report_s {
	char tag; /* EXIT_TAG */
	uint8_t oom_killed;
	uint64_t peak_memory;
	uint64_t cpu_ms;
};

void
ab_backend_make_id (char id[33])
{
	unsigned char raw[8];
	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		memset (raw, 0, sizeof raw);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (id + 2 * i, 3, "%02x", raw[i]);
}

static bool
socket_accepts (const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	cleanup_close int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || strlen (path) >= sizeof sun.sun_path)
		return false;
	strcpy (sun.sun_path, path);
	return connect (fd, (struct sockaddr *)&sun, sizeof sun) == 0;
}

int
ab_monitor_wait_socket (const char *path, int watch_fd, int timeout_ms, ab_error_t *err)
{
	uint64_t deadline = (ab_mono_us () / 1000) + (uint64_t)timeout_ms;
	int delay = 2;

	while (!socket_accepts (path)) {
		struct pollfd p = { .fd = watch_fd, .events = POLLIN };
		if ((ab_mono_us () / 1000) >= deadline)
			return ab_error (err, ETIMEDOUT, AB_E_SYSTEM,
			                 "the agent did not listen within %d ms", timeout_ms);
		if (start_cancelled ())
			return ab_error (err, ECANCELED, AB_E_SYSTEM,
			                 "cancelled: SIGTERM, or the caller went away");
		/* Back off from 2 ms to 50 ms: fast when the agent is quick,
		 * cheap while a VM boots. */
		if (poll (&p, watch_fd >= 0 ? 1 : 0, delay) > 0)
			return ab_error (err, 0, AB_E_SYSTEM,
			                 "the sandbox ended before its agent listened");
		delay = delay < 50 ? delay * 2 : 50;
	}
	return 0;
}

void
ab_monitor_remove_socket (const struct ab_spec_s *spec)
{
	char dir[PATH_MAX];
	char *slash;

	unlink (spec->service_socket);
	/* A tied caller's private directory (agentbox run): the caller may
	 * have been killed before it could remove it.  rmdir only if empty. */
	if (spec->service_tied
	    && snprintf (dir, sizeof dir, "%s", spec->service_socket) < (int)sizeof dir
	    && (slash = strrchr (dir, '/')) && slash != dir) {
		*slash = '\0';
		rmdir (dir);
	}
}

/* Until SIGTERM, the sandbox's end, or (tied) the caller's end. */
static void
supervise (const struct ab_spec_s *spec, const struct ab_monitor_ops_s *ops, void *ctx,
           int watch_fd, int term_fd, int caller_fd)
{
	struct pollfd p[3] = { { .fd = watch_fd, .events = POLLIN },
		               { .fd = term_fd, .events = POLLIN },
		               { .fd = caller_fd, .events = POLLIN } };

	if (ops->serve) {
		ops->serve (ctx, spec, watch_fd, term_fd, caller_fd);
		return;
	}
	while (poll (p, 3, -1) < 0 && errno == EINTR)
		;
}

/* Before stop: what the sandbox left behind (its cgroup) is still there. */
static void
send_exit_report (const struct ab_spec_s *spec, const struct ab_monitor_ops_s *ops, void *ctx,
                  int report_fd)
{
	struct ab_sandbox_exit_s ex = { 0 };
	struct exit_report_s r;

	ops->stats (ctx, spec, &ex);
	memset (&r, 0, sizeof r); /* no stray bytes in the padding */
	r.tag = EXIT_TAG;
	r.oom_killed = ex.oom_killed;
	r.peak_memory = ex.peak_memory;
	r.cpu_ms = ex.cpu_ms;
	send (report_fd, &r, sizeof r, MSG_NOSIGNAL);
}

/* Without service_tied: true once the caller has acknowledged "+". */
static bool
caller_took_it (int report_fd)
{
	struct pollfd p = { .fd = report_fd, .events = POLLIN };
	char c = 0;

	while (poll (&p, 1, ACK_WAIT_MS) < 0 && errno == EINTR)
		;
	return recv (report_fd, &c, 1, MSG_DONTWAIT) == 1 && c == ACK;
}

static void __attribute__ ((noreturn))
run_monitor (const struct ab_spec_s *spec, const char *id, const struct ab_monitor_ops_s *ops,
             void *ctx, int report_fd)
{
	ab_error_t err = AB_ERROR_INIT;
	const int keep[] = { report_fd };
	int term_fd, watch_fd;

	setsid (); /* terminal signals meant for the caller must not reach us */
	prctl (PR_SET_NAME, "agentbox-mon", 0, 0, 0);
	ab_close_fds_except (keep, 1);
	term_fd = ab_termination_signalfd ();
	cancel_fds[0] = term_fd;
	cancel_fds[1] = report_fd;
	watch_fd = ops->start (ctx, spec, id, &err);
	if (watch_fd < 0) {
		ops->stop (ctx, spec, id);
		ab_monitor_remove_socket (spec);
		char msg[REPORT_MAX];
		int n = snprintf (msg, sizeof msg, "-%s", err.msg[0] ? err.msg : "start failed");
		send (report_fd, msg, (size_t)n < sizeof msg ? (size_t)n : sizeof msg - 1,
		      MSG_NOSIGNAL);
		_exit (1);
	}
	cancel_fds[0] = cancel_fds[1] = -1;
	send (report_fd, "+", 1, MSG_NOSIGNAL);
	if (!spec->service_tied) {
		bool taken = caller_took_it (report_fd);
		close (report_fd);
		report_fd = -1;
		if (!taken) {
			ops->stop (ctx, spec, id);
			ab_monitor_remove_socket (spec);
			_exit (1);
		}
	}
	supervise (spec, ops, ctx, watch_fd, term_fd, report_fd);
	if (report_fd >= 0 && ops->stats)
		send_exit_report (spec, ops, ctx, report_fd);
	ops->stop (ctx, spec, id);
	ab_monitor_remove_socket (spec);
	_exit (0);
}

static int
await_report (int fd, pid_t *monitor_pid, ab_error_t *err)
{
	char msg[REPORT_MAX];
	pid_t pid = -1;
	ssize_t n;

	n = recv (fd, &pid, sizeof pid, 0);
	if (n != (ssize_t)sizeof pid)
		return ab_error (err, errno, AB_E_SYSTEM, "could not start the sandbox monitor");
	*monitor_pid = pid;
	do
		n = recv (fd, msg, sizeof msg - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sandbox monitor");
	if (n == 0)
		return ab_error (err, 0, AB_E_SYSTEM, "the sandbox monitor ended before reporting");
	msg[n] = '\0';
	if (msg[0] != '+')
		return ab_error (err, 0, AB_E_SYSTEM, "%s", msg + 1);
	return 0;
}

/* Tell an untied monitor that its sandbox has an owner now. */
static int
acknowledge (int fd, ab_error_t *err)
{
	const char ack = ACK;

	if (send (fd, &ack, 1, MSG_NOSIGNAL) != 1)
		return ab_error (err, errno, AB_E_SYSTEM, "the sandbox monitor went away");
	return 0;
}

int
ab_monitor_spawn (const struct ab_spec_s *spec, const char *id, const struct ab_monitor_ops_s *ops,
                  void *ctx, struct ab_sandbox_s *sb, ab_error_t *err)
{
	int sv[2], r;
	pid_t pid;

	sb->monitor_fd = -1;
	if (!spec->service_socket)
		return ab_error (err, 0, AB_E_INVALID,
		                 "this backend runs sandboxes in service mode only");
	if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	pid = fork ();
	if (pid < 0) {
		close (sv[0]), close (sv[1]);
		return ab_error (err, errno, AB_E_SYSTEM, "fork monitor");
	}
	if (pid == 0) {
		/* Re-parented away from the caller (which may be restarted). */
		pid_t m = fork ();
		close (sv[0]);
		if (m != 0) {
			send (sv[1], &m, sizeof m, MSG_NOSIGNAL);
			_exit (m < 0);
		}
		run_monitor (spec, id, ops, ctx, sv[1]);
	}
	close (sv[1]);
	while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
		;
	r = await_report (sv[0], &sb->monitor_pid, err);
	/* Tied: the monitor watches this end (close-on-exec: no child of the
	 * caller may hold it) until destroy or the caller's exit. */
	if (r == 0 && spec->service_tied) {
		sb->monitor_fd = sv[0];
		return 0;
	}
	if (r == 0)
		r = acknowledge (sv[0], err);
	close (sv[0]);
	return r;
}

int
ab_monitor_terminate (pid_t monitor_pid, int timeout_ms, ab_error_t *err)
{
	cleanup_close int pidfd = ab_sys_pidfd_open (monitor_pid, 0);
	struct pollfd p;

	if (pidfd < 0)
		return errno == ESRCH ? 0
		                      : ab_error (err, errno, AB_E_SYSTEM, "pidfd_open monitor");
	if (syscall (SYS_pidfd_send_signal, pidfd, SIGTERM, NULL, 0) < 0 && errno != ESRCH)
		return ab_error (err, errno, AB_E_SYSTEM, "signal sandbox monitor");
	p.fd = pidfd;
	p.events = POLLIN;
	if (poll (&p, 1, timeout_ms) != 1)
		return ab_error (err, ETIMEDOUT, AB_E_SYSTEM, "sandbox monitor did not end");
	return 0;
}

/* The monitor has ended: whatever it sent is queued.  Exactly one report
 * of the right size and tag counts; anything else is ignored. */
static void
read_exit_report (int fd, struct ab_sandbox_exit_s *ex)
{
	struct exit_report_s r;
	ssize_t n;

	for (;;) {
		n = recv (fd, &r, sizeof r, MSG_DONTWAIT | MSG_TRUNC);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return;
		if (n == (ssize_t)sizeof r && r.tag == EXIT_TAG)
			break;
	}
	ex->oom_killed = r.oom_killed != 0;
	ex->peak_memory = r.peak_memory;
	ex->cpu_ms = r.cpu_ms;
}

int
ab_monitor_destroy (struct ab_sandbox_s *sb, int timeout_ms, struct ab_sandbox_exit_s *ex,
                    ab_error_t *err)
{
	int r = ab_monitor_terminate (sb->monitor_pid, timeout_ms, err);

	if (sb->monitor_fd >= 0) {
		if (r == 0)
			read_exit_report (sb->monitor_fd, ex);
		close (sb->monitor_fd); /* a monitor that did not end: this ends it */
		sb->monitor_fd = -1;
	}
	return r;
}

enum ab_sandbox_state
ab_sandbox_state (const struct ab_sandbox_s *sb)
{
	if (sb->monitor_pid <= 0 || (kill (sb->monitor_pid, 0) < 0 && errno == ESRCH))
		return AB_SANDBOX_STOPPED;
	return AB_SANDBOX_RUNNING;
}
