/* Three connections to the agent, one per thread (a connection is not
 * thread-safe): the main thread follows the process's output, an input
 * thread copies the caller's stdin, a signal thread forwards signals and
 * window changes.  Both helpers stop when the main thread closes the
 * stop pipe.  The input thread is detached (it may be blocked writing
 * stdin that the process never reads), so it owns a copy of everything
 * it uses: it may still run after ab_run_remote has returned. */
#include "session/run-remote.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/signalfd.h>
#include <termios.h>
#include <unistd.h>

#include "base/fd.h"
#include "session/agent-client.h"
#include "session/agent-config.h"

#define STDIN_CHUNK (64 * 1024)

struct remote_s {
	const char *socket_path;
	uint32_t pid;
	int stop_r; /* readable: the process ended, helpers stop */
	int sig_fd;
	bool tty;
};

static bool
stopped (int stop_r, int fd, int *revents)
{
	struct pollfd p[2] = { { .fd = stop_r, .events = POLLIN }, { .fd = fd, .events = POLLIN } };

	while (poll (p, 2, -1) < 0)
		if (errno != EINTR)
			return true;
	*revents = p[1].revents;
	return p[0].revents != 0;
}

/* What the detached input thread owns. */
struct input_s {
	char *socket_path;
	uint32_t pid;
	int stop_r; /* its own duplicate of the stop pipe's read end */
};

static void *
input_thread (void *arg)
{
	struct input_s *in = arg;
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_agent_connect (in->socket_path, &err);
	char *buf = malloc (STDIN_CHUNK);
	int revents;

	while (c && buf && !stopped (in->stop_r, STDIN_FILENO, &revents)) {
		ssize_t n = read (STDIN_FILENO, buf, STDIN_CHUNK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0 || ab_agent_proc_write_stdin (c, in->pid, buf, (size_t)n, &err) < 0)
			break;
	}
	if (c)
		ab_agent_proc_close_stdin (c, in->pid, &err);
	free (buf);
	ab_agent_close (c);
	close (in->stop_r);
	free (in->socket_path);
	free (in);
	return NULL;
}

/* The input thread, detached, with its own copy of r. */
static void
start_input_thread (const struct remote_s *r)
{
	struct input_s *in = malloc (sizeof *in);
	pthread_t t;

	if (!in)
		return;
	in->pid = r->pid;
	in->socket_path = strdup (r->socket_path);
	in->stop_r = fcntl (r->stop_r, F_DUPFD_CLOEXEC, 0);
	if (!in->socket_path || in->stop_r < 0
	    || pthread_create (&t, NULL, input_thread, in) != 0) {
		if (in->stop_r >= 0)
			close (in->stop_r);
		free (in->socket_path);
		free (in);
		return;
	}
	pthread_detach (t);
}

static void
send_window_size (ab_agent_conn_t *c, uint32_t pid)
{
	struct winsize ws;
	ab_error_t err = AB_ERROR_INIT;

	if (ioctl (STDIN_FILENO, TIOCGWINSZ, &ws) == 0)
		ab_agent_proc_resize (c, pid, ws.ws_row, ws.ws_col, &err);
}

static void *
signal_thread (void *arg)
{
	struct remote_s *r = arg;
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_agent_connect (r->socket_path, &err);
	struct signalfd_siginfo si;
	int revents;

	while (c && !stopped (r->stop_r, r->sig_fd, &revents)) {
		if (read (r->sig_fd, &si, sizeof si) != (ssize_t)sizeof si)
			continue;
		if (si.ssi_signo == SIGWINCH) {
			if (r->tty)
				send_window_size (c, r->pid);
		} else if (ab_agent_proc_signal (c, r->pid, (int)si.ssi_signo, &err) < 0
		           && err.kind != AB_E_NOT_FOUND) {
			break;
		}
	}
	ab_agent_close (c);
	return NULL;
}

static int
forwarded_signals (sigset_t *old)
{
	sigset_t set;

	sigemptyset (&set);
	sigaddset (&set, SIGINT);
	sigaddset (&set, SIGTERM);
	sigaddset (&set, SIGHUP);
	sigaddset (&set, SIGQUIT);
	sigaddset (&set, SIGWINCH);
	pthread_sigmask (SIG_BLOCK, &set, old);
	return signalfd (-1, &set, SFD_CLOEXEC);
}

/* Output until EXIT; 0 with out filled, -1 when the sandbox went away. */
static int
follow (ab_agent_conn_t *c, const struct ab_agent_proc_s *p, struct ab_run_outcome_s *out,
        ab_error_t *err)
{
	struct ab_agent_event_s ev;

	for (;;) {
		int r = ab_agent_proc_next_event (c, p, &ev, -1, err);
		if (r < 0)
			return ab_error_wrap (err, "the sandbox went away");
		if (r == 0)
			continue;
		if (ev.kind == AB_AGENT_EV_EXIT) {
			out->wait_status = ev.exit.wait_status;
			out->timed_out = ev.exit.timed_out;
			out->exec_errno = ev.exit.exec_errno;
			return 0;
		}
		/* A caller that closed its stdout still gets the exit code. */
		ab_write_all (ev.kind == AB_AGENT_EV_STDOUT ? STDOUT_FILENO : STDERR_FILENO,
		              ev.data, ev.len);
	}
}

static void
fill_proc_spec (const struct ab_spec_s *spec, bool tty, struct ab_agent_proc_spec_s *ps)
{
	struct winsize ws;

	memset (ps, 0, sizeof *ps);
	ps->argv = spec->argv;
	ps->env = spec->env;
	ps->cwd = spec->workdir;
	ps->uid = spec->uid;
	ps->gid = spec->gid;
	ps->tty = tty;
	ps->stdin_open = true;
	ps->timeout_ms = spec->limits.timeout_ms;
	ps->grace_ms = spec->limits.kill_grace_ms;
	if (tty && ioctl (STDIN_FILENO, TIOCGWINSZ, &ws) == 0) {
		ps->rows = ws.ws_row;
		ps->cols = ws.ws_col;
	}
}

static int
run_with_helpers (ab_agent_conn_t *c, struct remote_s *r, const struct ab_agent_proc_s *p,
                  struct ab_run_outcome_s *out, ab_error_t *err)
{
	pthread_t sig_t;
	int stop[2], rc;
	bool have_sig;

	if (pipe2 (stop, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	r->stop_r = stop[0];
	start_input_thread (r);
	have_sig = r->sig_fd >= 0 && pthread_create (&sig_t, NULL, signal_thread, r) == 0;
	rc = follow (c, p, out, err);
	close (stop[1]);
	if (have_sig)
		pthread_join (sig_t, NULL);
	close (stop[0]);
	return rc;
}

int
ab_run_remote (const char *socket_path, const struct ab_spec_s *spec, bool tty,
               struct ab_run_outcome_s *out, ab_error_t *err)
{
	struct remote_s r = { .socket_path = socket_path, .tty = tty, .sig_fd = -1 };
	struct ab_agent_proc_spec_s ps;
	struct ab_agent_proc_s p;
	struct termios saved;
	bool raw = false;
	sigset_t old;
	int rc = -1;
	ab_agent_conn_t *c = ab_agent_connect (socket_path, err);

	if (!c)
		return -1;
	memset (out, 0, sizeof *out);
	out->landlock_abi = ab_agent_info (c)->landlock_abi;
	fill_proc_spec (spec, tty, &ps);
	r.sig_fd = forwarded_signals (&old);
	if (ab_session_configure_agent (c, spec, err) == 0
	    && ab_agent_proc_start (c, &ps, &p, err) == 0) {
		r.pid = p.pid;
		if (tty && tcgetattr (STDIN_FILENO, &saved) == 0) {
			struct termios t = saved;
			cfmakeraw (&t);
			raw = tcsetattr (STDIN_FILENO, TCSANOW, &t) == 0;
		}
		rc = run_with_helpers (c, &r, &p, out, err);
		if (raw)
			tcsetattr (STDIN_FILENO, TCSANOW, &saved);
	}
	if (r.sig_fd >= 0)
		close (r.sig_fd);
	pthread_sigmask (SIG_SETMASK, &old, NULL);
	ab_agent_close (c);
	return rc;
}
