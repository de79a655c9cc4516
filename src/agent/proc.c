/* The process service: start (with every confinement layer of the one-shot
 * path, through ab_agent_spawn), signal, resize, list, attach, stdin, the
 * per-process timeout, and the table of processes: running ones plus the
 * last AB_PROC_KEEP_FINISHED finished ones with their retained output.
 *
 * Each process leads its own session and process group (setsid in the
 * child), and signals go to that group, so `sh -c 'a | b'` is stopped as a
 * whole.  The timeout and an explicit SIGTERM or SIGKILL reach every
 * process of the exec, also one that called setsid itself or whose parent
 * ended: the command runs below a keeper, its child subreaper, and the
 * keeper's whole subtree is signalled (agent/subtree.c).  The leader's own
 * exit kills nothing: what it left running in the background (nohup, a
 * server) lives on, but the exec's timeout, still armed while the keeper
 * has processes below it, ends them too.  Where no keeper can run (gVisor
 * 2022 has no PR_SET_CHILD_SUBREAPER) the walk starts at the command and
 * reaches what still hangs below it; an orphan is then reached only by
 * SHUTDOWN (kill(-1) from PID 1). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/wait.h>
#include <termios.h>
#include <time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/proc.h"
#include "agent/subtree.h"
#include "base/fd.h"
#include "base/clock.h"
#include "base/xalloc.h"

#define MAX_PROCS         4096
#define DEFAULT_GRACE_MS  5000
#define LIST_FRAME_BUDGET (512U * 1024)
#define LIST_ARGV_BUDGET  4096

struct ab_proc_s *ab_procs;
static size_t n_procs, n_finished;
static uint64_t finish_counter;

static char *const default_env[] = {
	(char *)"PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	NULL,
};

/* By the agent's pid (waitpid's).  A pid may be reused once its process
 * was reaped: the one not reaped yet is the live one. */
static struct ab_proc_s *
find_live_proc (uint32_t pid)
{
	for (struct ab_proc_s *p = ab_procs; p; p = p->next)
		if ((uint32_t)p->pid == pid && !p->reaped)
			return p;
	return NULL;
}

/* By the pid the protocol names: the commands' own view (cmdns.c). */
static struct ab_proc_s *
find_proc (uint32_t pid)
{
	for (struct ab_proc_s *p = ab_procs; p; p = p->next)
		if ((uint32_t)p->id == pid)
			return p;
	return NULL;
}

static char **
strv_copy (char *const *v)
{
	size_t n = 0;
	char **out;

	while (v && v[n])
		n++;
	out = xcalloc (n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup (v[i]);
	return out;
}

/* Let go of the keeper: what is still below it lives on, untracked. */
static void
keeper_release (struct ab_proc_s *p)
{
	if (p->keeper_fd < 0)
		return;
	ab_loop_del (&p->keeper_w);
	close (p->keeper_fd);
	p->keeper_fd = -1;
	p->keeper = -1;
}

static void
proc_free (struct ab_proc_s *p)
{
	/* A group still in its kill grace loses the SIGKILL: eviction only
	 * happens 64 finished processes later, long after any grace. */
	ab_timer_cancel (&p->timeout);
	ab_timer_cancel (&p->drain);
	keeper_release (p);
	ab_exec_mark_release (p->mark_fd, p->mark_id);
	for (char **a = p->argv; a && *a; a++)
		free (*a);
	free (p->argv);
	ab_ring_free (&p->out[0].ring);
	ab_ring_free (&p->out[1].ring);
	free (p->in_q);
	ab_loop_defer_free (p);
}

/* Drop the oldest finished process once more than the kept number are. */
static void
evict (void)
{
	struct ab_proc_s **pp, **oldest = NULL;
	struct ab_proc_s *p;
	ab_error_t err = AB_ERROR_INIT;

	if (n_finished <= AB_PROC_KEEP_FINISHED)
		return;
	for (pp = &ab_procs; *pp; pp = &(*pp)->next)
		if ((*pp)->finished && (!oldest || (*pp)->finish_seq < (*oldest)->finish_seq))
			oldest = pp;
	if (!oldest)
		return;
	p = *oldest;
	*oldest = p->next;
	n_finished--;
	n_procs--;
	ab_error (&err, 0, AB_E_NOT_FOUND, "process %d is no longer kept", (int)p->id);
	while (p->followers)
		ab_channel_finish (p->followers->ch, &err);
	proc_free (p);
}

void
ab_proc_check_finished (struct ab_proc_s *p)
{
	if (p->finished || !p->reaped || p->out[0].fd >= 0 || p->out[1].fd >= 0)
		return;
	p->finished = true;
	p->finish_seq = ++finish_counter;
	n_finished++;
	ab_timer_cancel (&p->drain);
	/* The timeout still bounds what the exec left running below its
	 * keeper (cancelled when the keeper ends). */
	if (!p->in_grace && p->keeper_fd < 0 && p->mark_fd < 0)
		ab_timer_cancel (&p->timeout);
	ab_proc_stdin_abort (p, "the process has ended");
	if (p->pty >= 0) {
		close (p->pty);
		p->pty = -1;
	}
	ab_proc_pump_followers (p);
	evict ();
}

static void
on_drain_timer (struct ab_timer_s *t)
{
	struct ab_proc_s *p = t->ctx;
	/* A background child still holds the pipes: take what is there. */
	ab_proc_drain_now (p);
	ab_proc_pump_followers (p);
	ab_proc_check_finished (p);
}

static void
proc_reaped (struct ab_proc_s *p, int status)
{
	p->reaped = true;
	p->wait_status = status;
	if (p->out[0].fd >= 0 || p->out[1].fd >= 0)
		ab_timer_arm (&p->drain, AB_PROC_DRAIN_MS, on_drain_timer, p);
	ab_proc_check_finished (p);
}

/* The agent reaped pid: a command whose keeper ended before it did (and
 * so became ours), a keeper, or an orphan PID 1 inherited. */
void
ab_proc_reaped (pid_t pid, int status)
{
	struct ab_proc_s *p = find_live_proc ((uint32_t)pid);

	if (p)
		proc_reaped (p, status);
	else
		ab_cmdns_reaped (pid);
}

/* The keeper ended, its subtree empty, or was killed: a command still
 * running is ours now (its SIGCHLD comes to us); one that is gone without
 * a report was reaped by the keeper as it died. */
static void
keeper_gone (struct ab_proc_s *p)
{
	keeper_release (p);
	if (!p->reaped && kill (p->pid, 0) < 0 && errno == ESRCH)
		proc_reaped (p, SIGKILL);
	if (p->finished && !p->in_grace)
		ab_timer_cancel (&p->timeout);
}

static void
on_keeper (struct ab_watch_s *w, uint32_t events)
{
	struct ab_proc_s *p = w->ctx;
	struct ab_keeper_msg_s m;
	ssize_t n;

	(void)events;
	do
		n = read (p->keeper_fd, &m, sizeof m);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n == (ssize_t)sizeof m && m.kind == AB_KEEPER_EXITED && m.pid == p->pid) {
		if (!p->reaped)
			proc_reaped (p, m.status);
		return;
	}
	keeper_gone (p); /* EOF, or a report that makes no sense */
}

/* Signal the exec: its process group, and with SIGTERM or SIGKILL every
 * process below its keeper (or below the command without one). */
static void
signal_exec (struct ab_proc_s *p, int sig)
{
	bool keeper = p->keeper_fd >= 0;
	struct ab_exec_target_s t = { .root = keeper      ? p->keeper
		                              : p->reaped ? -1
		                                          : p->pid,
		                      .with_root = !keeper,
		                      .mark_fd = p->mark_fd };

	if (sig == SIGKILL)
		ab_exec_kill (&t);
	else if (sig == SIGTERM)
		ab_exec_signal (&t, sig);
}

static void
on_timeout (struct ab_timer_s *t)
{
	struct ab_proc_s *p = t->ctx;

	if (!p->in_grace) {
		/* After the command's own end only what it left behind is
		 * stopped: its status is already told. */
		p->timed_out = !p->reaped;
		p->in_grace = true;
		kill (-p->pid, SIGTERM);
		signal_exec (p, SIGTERM);
		ab_timer_arm (&p->timeout, p->grace_ms, on_timeout, p);
	} else {
		kill (-p->pid, SIGKILL);
		signal_exec (p, SIGKILL);
	}
}

/* ---- PROC_START ------------------------------------------------------------ */

static void
build_exec (const struct ab_msg_s *m, struct ab_exec_msg_s *x)
{
	memset (x, 0, sizeof *x);
	x->argv = m->argv;
	x->n_argv = m->n_argv;
	x->env = m->n_env ? m->env : (char **)default_env;
	x->cwd = m->cwd ? m->cwd : (char *)"/";
	x->uid = m->uid;
	x->gid = m->gid;
	x->tty = m->tty;
	x->rows = m->rows;
	x->cols = m->cols;
	x->nofile = ab_config.nofile ? ab_config.nofile : ab_service_default_nofile ();
	x->rw_paths = ab_config.rw_paths;
	x->n_rw_paths = ab_config.n_rw_paths;
}

/* Pipes for a command without a terminal: [0] stdin (or /dev/null),
 * [1] stdout, [2] stderr as the child sees them; ours[] the other ends. */
static int
make_pipes (bool want_stdin, int child[3], int ours[3], ab_error_t *err)
{
	int p[2];

	for (int i = 0; i < 3; i++)
		child[i] = ours[i] = -1;
	if (!want_stdin)
		child[0] = open ("/dev/null", O_RDONLY | O_CLOEXEC);
	else if (pipe2 (p, O_CLOEXEC) == 0)
		child[0] = p[0], ours[0] = p[1];
	for (int i = 1; i < 3 && child[0] >= 0; i++) {
		if (pipe2 (p, O_CLOEXEC) < 0)
			break;
		ours[i] = p[0];
		child[i] = p[1];
	}
	if (child[0] >= 0 && child[1] >= 0 && child[2] >= 0)
		return 0;
	for (int i = 0; i < 3; i++) {
		if (child[i] >= 0)
			close (child[i]);
		if (ours[i] >= 0)
			close (ours[i]);
	}
	return ab_error (err, errno, AB_E_SYSTEM, "pipe");
}

static int
spawn (const struct ab_msg_s *m, struct ab_proc_s *p, ab_error_t *err)
{
	struct ab_exec_msg_s x;
	struct ab_child_s child;
	struct ab_kept_s kept;
	int cio[3], ours[3] = { -1, -1, -1 };

	build_exec (m, &x);
	if (!m->tty && make_pipes (m->stdin_open, cio, ours, err) < 0)
		return -1;
	if (ab_agent_spawn_kept (&x, m->tty ? NULL : cio, &child, &kept, err) < 0) {
		for (int i = 0; !m->tty && i < 3; i++)
			close (cio[i]), close (ours[i]);
		return -1;
	}
	for (int i = 0; !m->tty && i < 3; i++)
		close (cio[i]);
	p->pid = child.pid;
	p->id = kept.ns_pid;
	p->exec_errno = child.exec_errno;
	p->mark_fd = kept.mark_fd;
	p->mark_id = kept.mark_id;
	if (kept.fd >= 0) {
		ab_set_nonblock (kept.fd, 1);
		p->keeper = kept.keeper;
		p->keeper_fd = kept.fd;
		if (ab_loop_add (&p->keeper_w, kept.fd, EPOLLIN, on_keeper, p) < 0)
			keeper_release (p); /* the command becomes ours when it ends */
	}
	p->pty = child.pty_master;
	if (m->tty) {
		ours[1] = fcntl (p->pty, F_DUPFD_CLOEXEC, 3);
		if (m->stdin_open)
			ours[0] = fcntl (p->pty, F_DUPFD_CLOEXEC, 3);
	}
	p->in_fd = ours[0];
	if (p->in_fd >= 0)
		ab_set_nonblock (p->in_fd, 1);
	ab_proc_io_start (p, ours[1], ours[2]);
	return 0;
}

static int
check_start (struct ab_session_s *s, const struct ab_msg_s *m, ab_error_t *err)
{
	if (!ab_config.configured)
		return ab_error (err, 0, AB_E_CONFLICT, "the sandbox is not configured yet");
	if (n_procs >= MAX_PROCS)
		return ab_error (err, 0, AB_E_LIMIT, "too many processes");
	if (m->argv[0][0] == '\0')
		return ab_error (err, 0, AB_E_INVALID, "empty command");
	if (m->cwd && m->cwd[0] != '/')
		return ab_error (err, 0, AB_E_INVALID, "working directory %s is not absolute",
		                 m->cwd);
	if (ab_msg_has (m, AB_TAG_CHANNEL) && ab_session_channel (s, m->channel))
		return ab_error (err, 0, AB_E_CONFLICT, "channel %u is in use", m->channel);
	return 0;
}

static struct ab_proc_s *
proc_new (const struct ab_msg_s *m)
{
	struct ab_proc_s *p = xcalloc (1, sizeof *p), **pp;

	p->argv = strv_copy (m->argv);
	p->tty = m->tty;
	p->started_unix_ms = ab_unix_ms ();
	p->grace_ms = m->grace_ms ? m->grace_ms : DEFAULT_GRACE_MS;
	p->in_fd = p->pty = -1;
	p->in_w.fd = -1;
	p->keeper = p->keeper_fd = p->mark_fd = -1;
	p->acks_tail = &p->acks;
	for (pp = &ab_procs; *pp; pp = &(*pp)->next)
		;
	*pp = p; /* oldest first, as PROC_LIST shows them */
	n_procs++;
	return p;
}

static void
proc_unlink (struct ab_proc_s *p)
{
	for (struct ab_proc_s **pp = &ab_procs; *pp; pp = &(*pp)->next)
		if (*pp == p) {
			*pp = p->next;
			break;
		}
	n_procs--;
	proc_free (p);
}

void
ab_req_proc_start (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s ok;
	struct ab_proc_s *p;

	if (check_start (s, m, &err) < 0) {
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	p = proc_new (m);
	if (spawn (m, p, &err) < 0) {
		proc_unlink (p);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	/* Cannot fail: the channel id was checked free above. */
	if (ab_msg_has (m, AB_TAG_CHANNEL))
		ab_proc_follow (p, s, m->channel, false, &err);
	if (m->timeout_ms)
		ab_timer_arm (&p->timeout, m->timeout_ms, on_timeout, p);
	ab_msg_init (&ok, AB_MSG_OK);
	ab_msg_set (&ok, pid, AB_TAG_PID, (uint32_t)p->id);
	ab_session_ok (s, m->req_id, &ok);
}

/* ---- the other requests ------------------------------------------------------ */

static struct ab_proc_s *
find_or_fail (struct ab_session_s *s, const struct ab_msg_s *m)
{
	struct ab_proc_s *p = find_proc (m->pid);
	ab_error_t err = AB_ERROR_INIT;

	if (!p) {
		ab_error (&err, 0, AB_E_NOT_FOUND, "no process %u", m->pid);
		ab_session_fail (s, m->req_id, &err);
	}
	return p;
}

void
ab_req_proc_signal (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct ab_proc_s *p = find_or_fail (s, m);
	ab_error_t err = AB_ERROR_INIT;

	if (!p)
		return;
	/* Once reaped, the pid may be reused: a signal could hit a stranger. */
	if (p->reaped) {
		ab_error (&err, 0, AB_E_NOT_FOUND, "process %u has ended", m->pid);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	if (kill (-p->pid, (int)m->signal) < 0 && errno != ESRCH) {
		ab_error (&err, errno, errno == EINVAL ? AB_E_INVALID : AB_E_SYSTEM, "signal %u",
		          m->signal);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	/* A kill reaches every process of the exec, not only its group. */
	signal_exec (p, (int)m->signal);
	ab_session_ok (s, m->req_id, NULL);
}

void
ab_req_proc_resize (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct ab_proc_s *p = find_or_fail (s, m);
	struct winsize ws = { .ws_row = (unsigned short)m->rows,
		              .ws_col = (unsigned short)m->cols };
	ab_error_t err = AB_ERROR_INIT;

	if (!p)
		return;
	if (p->pty < 0)
		ab_error (&err, 0, AB_E_CONFLICT, "process %u has no terminal", m->pid);
	else if (ioctl (p->pty, TIOCSWINSZ, &ws) < 0)
		ab_error (&err, errno, AB_E_SYSTEM, "resize terminal");
	if (err.kind != AB_E_NONE)
		ab_session_fail (s, m->req_id, &err);
	else
		ab_session_ok (s, m->req_id, NULL);
}

static void
describe (const struct ab_proc_s *p, struct ab_msg_s *r, char **argv_buf)
{
	size_t budget = LIST_ARGV_BUDGET, n = 0;

	ab_msg_init (r, AB_MSG_NESTED_PROC);
	/* A huge command line is cut short: the list is an overview. */
	for (char **a = p->argv; a && *a && strlen (*a) < budget; a++) {
		budget -= strlen (*a);
		argv_buf[n++] = *a;
	}
	argv_buf[n] = NULL;
	r->argv = argv_buf;
	ab_msg_set (r, pid, AB_TAG_PID, (uint32_t)p->id);
	ab_msg_set (r, running, AB_TAG_RUNNING, !p->finished);
	ab_msg_set (r, tty, AB_TAG_TTY, p->tty);
	ab_msg_set (r, started_ms, AB_TAG_STARTED_MS, p->started_unix_ms);
	if (p->finished) {
		ab_msg_set (r, wait_status, AB_TAG_WAIT_STATUS, (uint32_t)p->wait_status);
		ab_msg_set (r, timed_out, AB_TAG_TIMED_OUT, p->timed_out);
		ab_msg_set (r, exec_errno, AB_TAG_EXEC_ERRNO, (uint32_t)p->exec_errno);
	}
}

static void
send_list_part (struct ab_session_s *s, uint32_t req_id, struct ab_msg_s *recs, size_t n, bool more)
{
	struct ab_msg_s ok;

	ab_msg_init (&ok, AB_MSG_OK);
	ok.procs = recs;
	ok.n_procs = n;
	if (more)
		ab_msg_set (&ok, more, AB_TAG_MORE, true);
	ab_session_ok (s, req_id, &ok);
}

void
ab_req_proc_list (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct ab_msg_s *recs = xcalloc (n_procs + 1, sizeof *recs);
	char ***argvs = xcalloc (n_procs + 1, sizeof *argvs);
	size_t n = 0, first = 0, bytes = 0;

	for (struct ab_proc_s *p = ab_procs; p; p = p->next, n++) {
		size_t argc = 0;
		while (p->argv[argc])
			argc++;
		argvs[n] = xcalloc (argc + 1, sizeof (char *));
		describe (p, &recs[n], argvs[n]);
		bytes += 128 + LIST_ARGV_BUDGET;
		if (bytes > LIST_FRAME_BUDGET) {
			send_list_part (s, m->req_id, recs + first, n + 1 - first, true);
			first = n + 1;
			bytes = 0;
		}
	}
	send_list_part (s, m->req_id, recs + first, n - first, false);
	for (size_t i = 0; i < n; i++)
		free (argvs[i]);
	free (argvs);
	free (recs);
}

void
ab_req_proc_attach (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct ab_proc_s *p = find_or_fail (s, m);
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s ok;

	if (!p)
		return;
	if (ab_proc_follow (p, s, m->channel, true, &err) < 0) {
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	ab_msg_init (&ok, AB_MSG_OK);
	ab_msg_set (&ok, pid, AB_TAG_PID, (uint32_t)p->id);
	ab_session_ok (s, m->req_id, &ok);
	ab_proc_pump_followers (p);
	ab_proc_update_reading (p);
}

static struct ab_proc_s *
stdin_target (struct ab_session_s *s, const struct ab_msg_s *m)
{
	struct ab_proc_s *p = find_or_fail (s, m);
	ab_error_t err = AB_ERROR_INIT;

	if (!p)
		return NULL;
	if (p->in_fd < 0 || p->stdin_close_pending) {
		ab_error (&err, 0, AB_E_CONFLICT,
		          "process %u does not take stdin (not asked for, or closed)", m->pid);
		ab_session_fail (s, m->req_id, &err);
		return NULL;
	}
	return p;
}

void
ab_req_proc_stdin (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct ab_proc_s *p = stdin_target (s, m);
	ab_error_t err = AB_ERROR_INIT;

	if (!p)
		return;
	if (m->data_len > 256 * 1024 || p->in_q_len + m->data_len > AB_PROC_STDIN_QUEUE_MAX) {
		ab_error (&err, 0, AB_E_LIMIT, "too much stdin queued for process %u", m->pid);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	if (m->data_len == 0) {
		ab_session_ok (s, m->req_id, NULL);
		return;
	}
	ab_proc_stdin_push (p, m->data, m->data_len, s, m->req_id, NULL);
}

void
ab_req_proc_close_stdin (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct ab_proc_s *p = stdin_target (s, m);

	if (!p)
		return;
	ab_proc_stdin_close (p);
	ab_session_ok (s, m->req_id, NULL);
}

/* ---- for the service ----------------------------------------------------------- */

void
ab_proc_forget_session (struct ab_session_s *s)
{
	for (struct ab_proc_s *p = ab_procs; p; p = p->next)
		for (struct ab_stdin_ack_s *a = p->acks; a; a = a->next)
			if (a->s == s)
				a->s = NULL;
}

void
ab_proc_signal_all (int sig)
{
	for (struct ab_proc_s *p = ab_procs; p; p = p->next)
		if (!p->reaped)
			kill (-p->pid, sig);
}

bool
ab_proc_any_running (void)
{
	for (struct ab_proc_s *p = ab_procs; p; p = p->next)
		if (!p->reaped)
			return true;
	return false;
}
