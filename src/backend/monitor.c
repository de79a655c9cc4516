/* The one sandbox monitor (see monitor.h).  Its protocol with the caller,
 * on a SOCK_SEQPACKET pair, one format (struct report_s; both ends are the
 * same binary, a fork): in service mode the intermediate child first sends
 * the monitor's pid, then the monitor sends READY or FAILED and why.  (A
 * monitor that dies first gives EOF, which must not read as ready.)  When
 * the caller keeps its end (one-shot, or spec->service_tied), the
 * monitor's last message on it is the END report: the backend's stats and
 * the sandbox's own failure, if any.  The caller sends KILL_MSG on it to
 * have the sandbox killed; its EOF tears the sandbox down.  Without
 * service_tied the caller answers READY with ACK before it closes its
 * end: a caller that died (or was killed) after asking for the sandbox but
 * before it heard of it can never find it again, so a monitor that hears
 * no ACK tears the sandbox down instead of living on.
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
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/unix-socket.h"

#define REPORT_READY  '+'
#define REPORT_FAILED '-'
#define REPORT_END    '='
#define KILL_MSG      'x'
#define ACK           'k'
/* The caller acknowledges at once (it is blocked reading the report);
 * this only bounds a caller that froze or died. */
#define ACK_WAIT_MS 10000
/* After the time limit, the agent's kill grace and this much more, a
 * monitor with a kill hook ends the sandbox itself. */
#define BACKSTOP_SLACK_MS 5000

struct report_s {
	char tag; /* REPORT_* */
	uint8_t has_stats;
	uint8_t oom_killed;
	uint64_t peak_memory;
	uint64_t cpu_ms;
	uint8_t memory_by, pids_by, cpu_by;
	char error[AB_ERROR_MSG_MAX];
};

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
	ab_error_t ignored = AB_ERROR_INIT;
	cleanup_close int fd = ab_unix_connect (path, &ignored);

	return fd >= 0;
}

int
ab_monitor_wait_socket (const char *path, int watch_fd, int timeout_ms, ab_error_t *err)
{
	uint64_t deadline = ab_mono_ms () + (uint64_t)timeout_ms;
	int delay = 2;

	while (!socket_accepts (path)) {
		struct pollfd p = { .fd = watch_fd, .events = POLLIN };
		if (ab_mono_ms () >= deadline)
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

/* When a monitor with a kill hook gives up waiting for the agent to end
 * a sandbox past its time limit; -1: never. */
static int
backstop_ms (const struct ab_spec_s *spec)
{
	uint64_t t = spec->limits.timeout_ms;
	if (!t)
		return -1;
	t += spec->limits.kill_grace_ms + BACKSTOP_SLACK_MS;
	return t > INT32_MAX ? INT32_MAX : (int)t;
}

/* Until the sandbox's end.  Without a kill hook, SIGTERM or any event
 * from the caller ends the wait too (stop does the killing); with one,
 * they kill the sandbox and the wait goes on until it is gone. */
static void
supervise (const struct ab_spec_s *spec, const struct ab_monitor_ops_s *ops, void *ctx,
           int watch_fd, int term_fd, int caller_fd)
{
	struct pollfd p[3] = { { .fd = watch_fd, .events = POLLIN },
		               { .fd = term_fd, .events = POLLIN },
		               { .fd = caller_fd, .events = POLLIN } };
	int timeout = ops->kill ? backstop_ms (spec) : -1;

	if (ops->serve) {
		ops->serve (ctx, spec, watch_fd, term_fd, caller_fd);
		return;
	}
	for (;;) {
		int n = poll (p, 3, timeout);
		char c;
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || p[0].revents || (n > 0 && !ops->kill))
			return;
		if (n == 0) {
			ops->kill (ctx); /* the agent did not end it in time */
			timeout = -1;
			continue;
		}
		if (p[1].revents) {
			ops->kill (ctx); /* SIGTERM: destroy */
			p[1].fd = -1;
		}
		/* KILL_MSG: the caller asked; EOF: the caller is gone. */
		if (p[2].revents && recv (caller_fd, &c, 1, MSG_DONTWAIT) <= 0)
			p[2].fd = -1;
		if (p[2].revents)
			ops->kill (ctx);
	}
}

static void
send_report (int fd, char tag, const struct ab_sandbox_exit_s *ex, const char *error)
{
	struct report_s r;

	if (fd < 0)
		return;
	memset (&r, 0, sizeof r); /* no stray bytes in the padding */
	r.tag = tag;
	if (ex) {
		r.has_stats = 1;
		r.oom_killed = ex->oom_killed;
		r.peak_memory = ex->peak_memory;
		r.cpu_ms = ex->cpu_ms;
		r.memory_by = ex->memory_by;
		r.pids_by = ex->pids_by;
		r.cpu_by = ex->cpu_by;
	}
	snprintf (r.error, sizeof r.error, "%s", error ? error : "");
	send (fd, &r, sizeof r, MSG_NOSIGNAL);
}

/* A failed start: nothing is left, and whoever waits hears why. */
static void __attribute__ ((noreturn))
fail_start (const struct ab_spec_s *spec, const char *id, const struct ab_monitor_ops_s *ops,
            void *ctx, int report_fd, const ab_error_t *err)
{
	ab_error_t ignored = AB_ERROR_INIT;

	ops->stop (ctx, spec, id, &ignored);
	if (spec->service_socket)
		ab_monitor_remove_socket (spec);
	send_report (report_fd, spec->service_socket ? REPORT_FAILED : REPORT_END, NULL,
	             err->msg[0] ? err->msg : "start failed");
	_exit (1);
}

/* The end: stats while the backend can still read them (someone
 * listens), then stop, then the last report. */
static void __attribute__ ((noreturn))
finish (const struct ab_spec_s *spec, const char *id, const struct ab_monitor_ops_s *ops, void *ctx,
        int report_fd)
{
	ab_error_t failed = AB_ERROR_INIT, cleanup = AB_ERROR_INIT;
	struct ab_sandbox_exit_s ex = { 0 };
	char error[AB_ERROR_MSG_MAX];

	if (report_fd >= 0 && ops->stats)
		ops->stats (ctx, spec, &ex, &failed);
	snprintf (error, sizeof error, "%s", failed.msg);
	if (ops->stop (ctx, spec, id, &cleanup) < 0 && !error[0])
		snprintf (error, sizeof error, "cleanup: %s", cleanup.msg);
	if (spec->service_socket)
		ab_monitor_remove_socket (spec);
	send_report (report_fd, REPORT_END, ops->stats ? &ex : NULL, error);
	_exit (0);
}

/* Without service_tied: true once the caller has acknowledged READY. */
static bool
caller_took_it (int report_fd)
{
	struct pollfd p = { .fd = report_fd, .events = POLLIN };
	char c = 0;

	while (poll (&p, 1, ACK_WAIT_MS) < 0 && errno == EINTR)
		;
	return recv (report_fd, &c, 1, MSG_DONTWAIT) == 1 && c == ACK;
}

/* Service mode: READY; untied, the caller's ACK, or nobody owns the
 * sandbox and it is torn down. */
static int
report_ready (const struct ab_spec_s *spec, const char *id, const struct ab_monitor_ops_s *ops,
              void *ctx, int report_fd)
{
	ab_error_t ignored = AB_ERROR_INIT;
	bool taken;

	send_report (report_fd, REPORT_READY, NULL, NULL);
	if (spec->service_tied)
		return report_fd;
	taken = caller_took_it (report_fd);
	close (report_fd);
	if (!taken) {
		ops->stop (ctx, spec, id, &ignored);
		ab_monitor_remove_socket (spec);
		_exit (1);
	}
	return -1;
}

static void __attribute__ ((noreturn))
run_monitor (const struct ab_spec_s *spec, const char *id, const struct ab_monitor_ops_s *ops,
             void *ctx, const int *keep, size_t n_keep, int report_fd)
{
	ab_error_t err = AB_ERROR_INIT;
	int kept[8];
	size_t n = 0;
	int term_fd, watch_fd;

	kept[n++] = report_fd;
	for (size_t i = 0; i < n_keep && n < sizeof kept / sizeof *kept; i++)
		if (keep[i] >= 0)
			kept[n++] = keep[i];
	setsid (); /* terminal signals meant for the caller must not reach us */
	prctl (PR_SET_NAME, "agentbox-mon", 0, 0, 0);
	/* Only what the sandbox needs: the caller's relay pipe ends held here
	 * would hide EOF from both sides. */
	if (ab_close_fds_except (kept, n) < 0) {
		ab_error (&err, errno, AB_E_SYSTEM, "close inherited fds");
		fail_start (spec, id, ops, ctx, report_fd, &err);
	}
	/* Blocked from here: a SIGTERM during start is heard once it is
	 * done (what the backend starts resets its signal mask). */
	term_fd = ab_termination_signalfd ();
	cancel_fds[0] = term_fd;
	cancel_fds[1] = report_fd;
	watch_fd = ops->start (ctx, spec, id, &err);
	cancel_fds[0] = cancel_fds[1] = -1;
	if (watch_fd < 0)
		fail_start (spec, id, ops, ctx, report_fd, &err);
	if (spec->service_socket)
		report_fd = report_ready (spec, id, ops, ctx, report_fd);
	supervise (spec, ops, ctx, watch_fd, term_fd, report_fd);
	finish (spec, id, ops, ctx, report_fd);
}

static ssize_t
recv_report (int fd, struct report_s *r, int flags)
{
	ssize_t n;

	do
		n = recv (fd, r, sizeof *r, flags);
	while (n < 0 && errno == EINTR);
	return n;
}

static int
await_ready (int fd, pid_t *monitor_pid, ab_error_t *err)
{
	struct report_s r;
	pid_t pid = -1;
	ssize_t n;

	n = recv (fd, &pid, sizeof pid, 0);
	if (n != (ssize_t)sizeof pid)
		return ab_error (err, errno, AB_E_SYSTEM, "could not start the sandbox monitor");
	*monitor_pid = pid;
	n = recv_report (fd, &r, 0);
	if (n < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sandbox monitor");
	if (n != (ssize_t)sizeof r)
		return ab_error (err, 0, AB_E_SYSTEM, "the sandbox monitor ended before reporting");
	r.error[sizeof r.error - 1] = '\0';
	if (r.tag != REPORT_READY)
		return ab_error (err, 0, AB_E_SYSTEM, "%s", r.error);
	return 0;
}

void
ab_sandbox_begin (struct ab_sandbox_s *sb, const struct ab_backend_ops_s *backend)
{
	memset (sb, 0, sizeof *sb);
	sb->backend = backend;
	sb->agent_fd = -1;
	sb->monitor_pid = -1;
	sb->monitor_fd = -1;
	ab_backend_make_id (sb->id);
}

int
ab_monitor_require_service (const struct ab_spec_s *spec, const char *name, ab_error_t *err)
{
	if (!spec->service_socket)
		return ab_error (err, 0, AB_E_INVALID,
		                 "the %s backend runs sandboxes in service mode only", name);
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

/* In the first child.  Service mode: re-parented away from the caller
 * (which may be restarted), the monitor's pid reaching the caller first. */
static void __attribute__ ((noreturn))
monitor_child (const struct ab_spec_s *spec, const char *id, const struct ab_monitor_ops_s *ops,
               void *ctx, const int *keep, size_t n_keep, int link)
{
	if (spec->service_socket) {
		pid_t m = fork ();
		if (m < 0) {
			send (link, &m, sizeof m, MSG_NOSIGNAL);
			_exit (1);
		}
		if (m > 0)
			_exit (0);
		/* The monitor sends its own pid, so it is on the link before any
		 * report: sent by the parent, it could come after a fast start's
		 * READY (and the caller would read READY as the pid). */
		m = getpid ();
		send (link, &m, sizeof m, MSG_NOSIGNAL);
	}
	run_monitor (spec, id, ops, ctx, keep, n_keep, link);
}

int
ab_monitor_spawn (const struct ab_spec_s *spec, void *ctx, const int *keep, size_t n_keep,
                  struct ab_sandbox_s *sb, ab_error_t *err)
{
	const struct ab_monitor_ops_s *ops = sb->backend->monitor;
	int sv[2], r;
	pid_t pid;

	sb->monitor_fd = -1;
	if (socketpair (AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	pid = fork ();
	if (pid < 0) {
		close (sv[0]), close (sv[1]);
		return ab_error (err, errno, AB_E_SYSTEM, "fork monitor");
	}
	if (pid == 0) {
		close (sv[0]);
		monitor_child (spec, sb->id, ops, ctx, keep, n_keep, sv[1]);
	}
	close (sv[1]);
	if (!spec->service_socket) {
		sb->monitor_pid = pid;
		sb->monitor_child = true;
		sb->monitor_fd = sv[0];
		return 0;
	}
	while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
		;
	r = await_ready (sv[0], &sb->monitor_pid, err);
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

int
ab_monitor_kill (struct ab_sandbox_s *sb, ab_error_t *err)
{
	char k = KILL_MSG;

	if (!sb->monitor_child)
		return ab_monitor_terminate (sb->monitor_pid, sb->backend->monitor->stop_timeout_ms,
		                             err);
	if (send (sb->monitor_fd, &k, 1, MSG_NOSIGNAL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "ask monitor to kill sandbox");
	return 0;
}

/* The last report: the monitor has ended (service mode) or ends once the
 * sandbox has (one-shot: wait for it).  Exactly one END report of the
 * right size counts; anything else is skipped. */
static int
read_end_report (int fd, bool wait, struct report_s *r)
{
	for (;;) {
		ssize_t n = recv_report (fd, r, (wait ? 0 : MSG_DONTWAIT) | MSG_TRUNC);
		if (n <= 0)
			return -1;
		if (n == (ssize_t)sizeof *r && r->tag == REPORT_END) {
			r->error[sizeof r->error - 1] = '\0';
			return 0;
		}
	}
}

int
ab_monitor_destroy (struct ab_sandbox_s *sb, struct ab_sandbox_exit_s *ex, ab_error_t *err)
{
	struct report_s rep;
	int r = 0, got = -1;

	memset (ex, 0, sizeof *ex);
	if (sb->agent_fd >= 0) /* one-shot: the agent's end ends the sandbox */
		close (sb->agent_fd);
	sb->agent_fd = -1;
	if (!sb->monitor_child)
		r = ab_monitor_terminate (sb->monitor_pid, sb->backend->monitor->stop_timeout_ms,
		                          err);
	if (sb->monitor_fd < 0)
		return r;
	if (r == 0)
		got = read_end_report (sb->monitor_fd, sb->monitor_child, &rep);
	close (sb->monitor_fd); /* a monitor that did not end: this ends it */
	sb->monitor_fd = -1;
	if (sb->monitor_child)
		while (waitpid (sb->monitor_pid, NULL, 0) < 0 && errno == EINTR)
			;
	if (r < 0)
		return r;
	if (got < 0)
		return ab_error (err, 0, AB_E_INTERNAL, "sandbox monitor ended without a report");
	if (rep.has_stats) {
		ex->oom_killed = rep.oom_killed != 0;
		ex->peak_memory = rep.peak_memory;
		ex->cpu_ms = rep.cpu_ms;
		ex->memory_by = rep.memory_by;
		ex->pids_by = rep.pids_by;
		ex->cpu_by = rep.cpu_by;
	}
	if (rep.error[0])
		return ab_error (err, 0, AB_E_SYSTEM, "%s", rep.error);
	return 0;
}

enum ab_sandbox_state
ab_sandbox_state (const struct ab_sandbox_s *sb)
{
	if (sb->monitor_pid <= 0 || (kill (sb->monitor_pid, 0) < 0 && errno == ESRCH))
		return AB_SANDBOX_STOPPED;
	return AB_SANDBOX_RUNNING;
}
