/* One-shot mode (protocol version 1, docs/protocol.md): `agentbox run`.
 *
 * The agent guards the sandbox's one door (fd 3, the connection to the host):
 * reads the EXEC request, starts the command in its own session, reaps
 * every orphan, enforces the timeout (SIGTERM to every process, SIGKILL
 * after the grace period), and when the command ends makes sure nothing
 * else of the sandbox lives on before reporting the exit status.
 *
 * It never acts on signals sent from inside the sandbox: as PID 1 of its
 * pid namespace the kernel drops those it has no handler for, and the only
 * one it handles is SIGCHLD.  It is non-dumpable, so commands cannot trace
 * it or read its memory, environment or fds. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/service.h"
#include "proto/proto.h"

#define AB_ONESHOT_MAX_LISTEN 4

struct agent_s {
	int door;
	int sigfd;
	int timerfd;
	/* Listeners on 127.0.0.1:PORT asked for before EXEC (egress proxy,
	 * credential proxy): each connection goes to the host, tagged with
	 * the port it came in on. */
	int listen_fd[AB_ONESHOT_MAX_LISTEN];
	uint16_t listen_port[AB_ONESHOT_MAX_LISTEN];
	size_t n_listen;
	struct ab_child_s child;
	bool timed_out;
	bool in_grace;
	uint64_t grace_ms;
};

static void __attribute__ ((noreturn)) die_silently (int code)
{
	/* PID 1 exiting makes the kernel SIGKILL every process in the namespace. */
	_exit (code);
}

static void
send_error (int door, const ab_error_t *e)
{
	struct ab_tlv_writer_s w = { 0 };
	ab_error_t ignored = AB_ERROR_INIT;
	ab_tlv_put_str (&w, AB_TAG_MESSAGE, e->msg);
	ab_frame_send (door, AB_MSG_ERROR, 0, w.buf, w.len, NULL, 0, &ignored);
	ab_tlv_writer_free (&w);
}

static void
on_listener (struct agent_s *a, size_t i)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_tlv_writer_s w = { 0 };
	int c;

	ab_tlv_put_u32 (&w, AB_TAG_PORT, a->listen_port[i]);
	while ((c = accept4 (a->listen_fd[i], NULL, NULL, SOCK_CLOEXEC)) >= 0) {
		ab_frame_send (a->door, AB_MSG_EGRESS_CONN, 0, w.buf, w.len, &c, 1, &err);
		close (c); /* the host holds it now */
	}
	ab_tlv_writer_free (&w);
}

static int
setup_signals (ab_error_t *err)
{
	sigset_t set;
	sigemptyset (&set);
	sigaddset (&set, SIGCHLD);
	if (sigprocmask (SIG_BLOCK, &set, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sigprocmask");
	return signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void
arm_timer (int fd, uint64_t ms)
{
	struct itimerspec its = { 0 };
	its.it_value.tv_sec = (time_t)(ms / 1000);
	its.it_value.tv_nsec = (long)(ms % 1000) * 1000000L;
	if (ms == 0)
		its.it_value.tv_nsec = 1;
	timerfd_settime (fd, 0, &its, NULL);
}

static int
send_started (struct agent_s *a, int landlock_abi, ab_error_t *err)
{
	struct ab_tlv_writer_s w = { 0 };
	int r;

	ab_tlv_put_u32 (&w, AB_TAG_PID, (uint32_t)a->child.pid);
	ab_tlv_put_u32 (&w, AB_TAG_LANDLOCK_ABI, (uint32_t)landlock_abi);
	r = ab_frame_send (a->door, AB_MSG_STARTED, 0, w.buf, w.len, &a->child.pty_master,
	                   a->child.pty_master >= 0 ? 1 : 0, err);
	ab_tlv_writer_free (&w);
	return r;
}

static void __attribute__ ((noreturn)) finish (struct agent_s *a, int wait_status)
{
	struct ab_tlv_writer_s w = { 0 };
	ab_error_t err = AB_ERROR_INIT;

	/* Everything else in the sandbox dies with the command. */
	kill (-1, SIGKILL);
	ab_tlv_put_u32 (&w, AB_TAG_WAIT_STATUS, (uint32_t)wait_status);
	ab_tlv_put_u32 (&w, AB_TAG_TIMED_OUT, a->timed_out);
	ab_tlv_put_u32 (&w, AB_TAG_EXEC_ERRNO, (uint32_t)a->child.exec_errno);
	ab_frame_send (a->door, AB_MSG_EXIT, 0, w.buf, w.len, NULL, 0, &err);
	die_silently (0);
}

static void
reap (struct agent_s *a)
{
	struct signalfd_siginfo si;
	int status;
	pid_t pid;

	while (read (a->sigfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	while ((pid = waitpid (-1, &status, WNOHANG)) > 0)
		if (pid == a->child.pid)
			finish (a, status);
}

static void
on_timer (struct agent_s *a)
{
	uint64_t ticks;
	if (read (a->timerfd, &ticks, sizeof ticks) < 0)
		return;
	if (!a->in_grace) {
		/* kill(-1) from PID 1 reaches every process of the namespace but
		 * itself: setsid or a new process group does not escape it. */
		a->timed_out = true;
		a->in_grace = true;
		kill (-1, SIGTERM);
		arm_timer (a->timerfd, a->grace_ms);
	} else {
		kill (-1, SIGKILL);
	}
}

static void
on_door (struct agent_s *a)
{
	struct ab_frame_s f;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	uint32_t sig = 0;

	if (ab_frame_recv (a->door, &f, NULL, 0, NULL, &err) <= 0) {
		kill (-1, SIGKILL); /* the host is gone: so is the sandbox */
		die_silently (1);
	}
	if (f.type == AB_MSG_SIGNAL) {
		ab_tlv_reader_init (&r, f.payload, f.length);
		while (ab_tlv_next (&r, &t, &err) > 0)
			if (t.tag == AB_TAG_SIGNAL)
				ab_tlv_u32 (&t, &sig, &err);
		if (sig > 0 && sig < NSIG)
			kill (-a->child.pid, (int)sig);
	}
	ab_frame_free (&f);
}

static void __attribute__ ((noreturn)) serve (struct agent_s *a)
{
	struct pollfd p[3 + AB_ONESHOT_MAX_LISTEN] = {
		{ .fd = a->door, .events = POLLIN },
		{ .fd = a->sigfd, .events = POLLIN },
		{ .fd = a->timerfd, .events = POLLIN },
	};
	for (size_t i = 0; i < a->n_listen; i++)
		p[3 + i] = (struct pollfd){ .fd = a->listen_fd[i], .events = POLLIN };
	for (;;) {
		if (poll (p, 3 + a->n_listen, -1) < 0) {
			if (errno == EINTR)
				continue;
			die_silently (1);
		}
		if (p[1].revents)
			reap (a);
		if (p[2].revents)
			on_timer (a);
		for (size_t i = 0; i < a->n_listen; i++)
			if (p[3 + i].revents)
				on_listener (a, i);
		if (p[0].revents)
			on_door (a);
	}
}

static int
read_port (const struct ab_frame_s *f, uint16_t *port, ab_error_t *err)
{
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	uint32_t v = 0;

	ab_tlv_reader_init (&r, f->payload, f->length);
	while (ab_tlv_next (&r, &t, err) > 0)
		if (t.tag == AB_TAG_PORT && ab_tlv_u32 (&t, &v, err) < 0)
			return -1;
	if (v == 0 || v > 65535)
		return ab_error (err, 0, AB_E_INVALID, "EGRESS_LISTEN without a valid port");
	*port = (uint16_t)v;
	return 0;
}

static int
add_listener (struct agent_s *a, uint16_t port, ab_error_t *err)
{
	int fd;

	for (size_t i = 0; i < a->n_listen; i++)
		if (a->listen_port[i] == port)
			return 0; /* asked twice: one listener */
	if (a->n_listen == AB_ONESHOT_MAX_LISTEN)
		return ab_error (err, 0, AB_E_LIMIT, "more than %d listeners",
		                 AB_ONESHOT_MAX_LISTEN);
	if ((fd = ab_egress_listen (port, err)) < 0)
		return -1;
	a->listen_fd[a->n_listen] = fd;
	a->listen_port[a->n_listen++] = port;
	return 0;
}

/* Messages before EXEC set the sandbox up: EGRESS_LISTEN, once per port
 * (the egress proxy's, the credential proxy's). */
static int
receive_exec (struct agent_s *a, struct ab_exec_msg_s *req, ab_error_t *err)
{
	struct ab_frame_s f;
	int r;

	for (;;) {
		uint16_t port = 0;
		r = ab_frame_recv (a->door, &f, NULL, 0, NULL, err);
		if (r == 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "host closed the connection before EXEC");
		if (r < 0)
			return -1;
		if (f.type != AB_MSG_EGRESS_LISTEN)
			break;
		r = read_port (&f, &port, err);
		ab_frame_free (&f);
		if (r < 0 || add_listener (a, port, err) < 0)
			return -1;
	}
	if (f.type != AB_MSG_EXEC) {
		ab_frame_free (&f);
		return ab_error (err, 0, AB_E_INVALID, "expected EXEC, got message type %u",
		                 f.type);
	}
	r = ab_exec_msg_decode (f.payload, f.length, req, err);
	ab_frame_free (&f);
	return r;
}

void
ab_oneshot_run (void)
{
	struct agent_s a = { .door = AB_AGENT_DOOR_FD };
	struct ab_exec_msg_s req;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_tlv_writer_s hello = { 0 };

	fcntl (a.door, F_SETFD, FD_CLOEXEC);
	ab_agent_loopback_up ();
	ab_tlv_put_u32 (&hello, AB_TAG_VERSION, AB_PROTO_VERSION);
	if (ab_frame_send (a.door, AB_MSG_HELLO, 0, hello.buf, hello.len, NULL, 0, &err) < 0)
		die_silently (125);
	ab_tlv_writer_free (&hello);
	if ((a.sigfd = setup_signals (&err)) < 0
	    || (a.timerfd = timerfd_create (CLOCK_MONOTONIC, TFD_CLOEXEC | TFD_NONBLOCK)) < 0
	    || receive_exec (&a, &req, &err) < 0) {
		if (err.kind == AB_E_NONE)
			ab_error (&err, errno, AB_E_SYSTEM, "agent setup");
		send_error (a.door, &err);
		die_silently (125);
	}
	a.grace_ms = req.grace_ms;
	if (ab_agent_spawn (&req, NULL, &a.child, &err) < 0) {
		send_error (a.door, &err);
		die_silently (125);
	}
	ab_agent_release_stdio ();
	if (send_started (&a, ab_landlock_abi (), &err) < 0)
		die_silently (125);
	if (a.child.pty_master >= 0)
		close (a.child.pty_master);
	if (req.timeout_ms)
		arm_timer (a.timerfd, req.timeout_ms);
	ab_exec_msg_free (&req);
	serve (&a);
}
