/* The egress listeners on the sandbox's loopback (--network proxy, and the
 * credential proxy's port): every connection made to one is handed to the
 * host, where the egress policy (or the credential proxy) decides what it
 * may reach.  One-shot mode hands them over its one door; service mode to
 * the session that last sent EGRESS_LISTEN for that port (the daemon's
 * forwarded-ports thread), in one of two ways that session chose:
 *
 *   - fd passing (native): EGRESS_CONN {PORT} with the fd (SCM_RIGHTS);
 *   - stream (EGRESS_STREAM=1; gVisor's gofer and a microVM's
 *     virtio-serial cannot carry fds): EGRESS_READY {PORT, CONN} announces
 *     the connection, and the host claims it with EGRESS_OPEN {CONN,
 *     CHANNEL} on a connection of its own, which then carries its bytes as
 *     a port channel (port.c: credit flow control, half-close).  One host
 *     connection per egress connection: a slow reader stalls only its own.
 *
 * Until connections are handed over or claimed, up to MAX_QUEUED per port
 * wait here, then the kernel's backlog.  A stream-mode connection that is
 * not claimed within the subscriber's claim timeout is closed (the client
 * inside sees the connection end), so a host that announces interest and
 * then never claims cannot pin fds and queue slots forever.  A new
 * subscriber (a restarted daemon) is told about every connection still
 * waiting. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/service.h"

#define MAX_QUEUED 64
/* The egress proxy's port and the credential proxy's (3128, 8288). */
#define MAX_LISTENERS 4
/* How long an announced connection waits for EGRESS_OPEN, unless the
 * subscriber says (TIMEOUT_MS, at most MAX_CLAIM_MS). */
#define DEFAULT_CLAIM_MS 10000
#define MAX_CLAIM_MS     600000

struct waiting_s {
	int fd;
	uint32_t id;         /* stream mode: what EGRESS_OPEN names */
	uint64_t expires_ms; /* stream mode */
	bool announced;      /* EGRESS_READY went to the current subscriber */
};

struct listener_s {
	int fd;
	uint16_t port;
	struct ab_watch_s w;
	struct ab_session_s *subscriber; /* the session that last asked for port */
	bool stream;                     /* its mode: announce, never pass fds */
	uint64_t claim_ms;
	struct ab_timer_s expiry;
	struct waiting_s queued[MAX_QUEUED];
	size_t n_queued;
};

static struct listener_s listeners[MAX_LISTENERS];
static size_t n_listeners;
static uint32_t last_conn_id;

int
ab_egress_listen (uint16_t port, ab_error_t *err)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		                   .sin_port = htons (port),
		                   .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
	int one = 1;
	int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "egress listener socket");
	setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind (fd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen (fd, 256) < 0) {
		int e = errno;
		close (fd);
		return ab_error (err, e, AB_E_SYSTEM, "egress listener on 127.0.0.1:%u", port);
	}
	return fd;
}

/* Ids are never 0 and not reused while the agent lives (2^32 connections). */
static uint32_t
next_conn_id (void)
{
	if (++last_conn_id == 0)
		last_conn_id = 1;
	return last_conn_id;
}

static void
drop_at (struct listener_s *l, size_t i, bool close_fd)
{
	if (close_fd)
		close (l->queued[i].fd);
	for (size_t k = i + 1; k < l->n_queued; k++)
		l->queued[k - 1] = l->queued[k];
	l->n_queued--;
}

static void on_expiry (struct ab_timer_s *t);

/* Stream mode: the timer follows the oldest waiting connection. */
static void
arm_expiry (struct listener_s *l)
{
	uint64_t now = ab_mono_ms ();

	if (!l->stream || l->n_queued == 0) {
		ab_timer_cancel (&l->expiry);
		return;
	}
	ab_timer_arm (&l->expiry, l->queued[0].expires_ms > now ? l->queued[0].expires_ms - now : 0,
	              on_expiry, l);
}

static void
on_expiry (struct ab_timer_s *t)
{
	struct listener_s *l = t->ctx;
	uint64_t now = ab_mono_ms ();

	while (l->n_queued && l->queued[0].expires_ms <= now)
		drop_at (l, 0, true);
	arm_expiry (l);
	ab_egress_kick (); /* room again: accept */
}

static void
on_listen (struct ab_watch_s *w, uint32_t events)
{
	struct listener_s *l = w->ctx;

	while (l->n_queued < MAX_QUEUED) {
		int c = accept4 (l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			break;
		l->queued[l->n_queued++] = (struct waiting_s){
			.fd = c,
			.id = next_conn_id (),
			.expires_ms = ab_mono_ms () + l->claim_ms,
		};
		if (l->n_queued == 1)
			arm_expiry (l);
	}
	ab_egress_kick ();
}

/* Fd mode: hand what one listener queued to its subscriber, each fd with
 * the port (TAG_PORT) so a session that asked for several tells them
 * apart. */
static void
pass_fds (struct listener_s *l)
{
	struct ab_tlv_writer_s tw = { 0 };

	ab_tlv_put_u32 (&tw, AB_TAG_PORT, l->port);
	while (l->subscriber && l->n_queued) {
		int r = ab_session_send_fd (l->subscriber, AB_MSG_EGRESS_CONN, tw.buf, tw.len,
		                            l->queued[0].fd);
		if (r == 0)
			break; /* its output is busy: next batch */
		if (r < 0) {
			l->subscriber = NULL; /* broken; the session ends on its own */
			break;
		}
		drop_at (l, 0, true); /* the host holds it now */
	}
	ab_tlv_writer_free (&tw);
}

/* Stream mode: tell the subscriber about each connection it has not heard
 * of; they stay queued until claimed or expired. */
static void
announce (struct listener_s *l)
{
	for (size_t i = 0; i < l->n_queued && l->subscriber; i++) {
		struct ab_msg_s m;
		if (l->queued[i].announced)
			continue;
		if (!ab_session_can_send (l->subscriber))
			break; /* its output is full: after the next flush */
		ab_msg_init (&m, AB_MSG_EGRESS_READY);
		ab_msg_set (&m, port, AB_TAG_PORT, l->port);
		ab_msg_set (&m, conn, AB_TAG_CONN, l->queued[i].id);
		ab_session_send_msg (l->subscriber, 0, &m);
		l->queued[i].announced = true;
	}
}

static void
kick_one (struct listener_s *l)
{
	if (l->stream)
		announce (l);
	else
		pass_fds (l);
	ab_loop_set (&l->w, l->n_queued < MAX_QUEUED ? EPOLLIN : 0);
}

void
ab_egress_kick (void)
{
	for (size_t i = 0; i < n_listeners; i++)
		kick_one (&listeners[i]);
}

void
ab_egress_forget_session (struct ab_session_s *s)
{
	for (size_t i = 0; i < n_listeners; i++)
		if (listeners[i].subscriber == s)
			listeners[i].subscriber = NULL;
}

/* The listener on port, opened on first request. */
static struct listener_s *
listener_for (uint16_t port, ab_error_t *err)
{
	struct listener_s *l;

	for (size_t i = 0; i < n_listeners; i++)
		if (listeners[i].port == port)
			return &listeners[i];
	if (port == 0) {
		ab_error (err, 0, AB_E_INVALID, "EGRESS_LISTEN without a port");
		return NULL;
	}
	if (n_listeners == MAX_LISTENERS) {
		ab_error (err, 0, AB_E_LIMIT, "at most %d forwarded ports", MAX_LISTENERS);
		return NULL;
	}
	l = &listeners[n_listeners];
	*l = (struct listener_s){ .fd = -1, .port = port, .w = { .fd = -1 } };
	if ((l->fd = ab_egress_listen (port, err)) < 0)
		return NULL;
	if (ab_loop_add (&l->w, l->fd, EPOLLIN, on_listen, l) < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "epoll");
		close (l->fd);
		l->fd = -1;
		return NULL;
	}
	n_listeners++;
	return l;
}

/* The subscriber's mode and claim timeout; what waits is announced again
 * to it (the previous subscriber's announcements may never have been
 * read), and gets the new timeout counted from now. */
static void
subscribe (struct listener_s *l, struct ab_session_s *s, const struct ab_msg_s *m)
{
	uint64_t now = ab_mono_ms ();

	l->subscriber = s;
	l->stream = m->egress_stream;
	l->claim_ms = ab_msg_has (m, AB_TAG_TIMEOUT_MS) ? m->timeout_ms : DEFAULT_CLAIM_MS;
	for (size_t i = 0; i < l->n_queued; i++) {
		l->queued[i].announced = false;
		l->queued[i].expires_ms = now + l->claim_ms;
	}
	arm_expiry (l);
}

void
ab_req_egress_listen (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;
	struct listener_s *l = NULL;

	if (m->port > 65535)
		ab_error (&err, 0, AB_E_INVALID, "EGRESS_LISTEN port out of range");
	else if (ab_msg_has (m, AB_TAG_TIMEOUT_MS)
	         && (m->timeout_ms == 0 || m->timeout_ms > MAX_CLAIM_MS))
		ab_error (&err, 0, AB_E_INVALID, "EGRESS_LISTEN claim timeout out of range");
	else
		l = listener_for ((uint16_t)m->port, &err);
	if (!l) {
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	subscribe (l, s, m);
	ab_session_ok (s, m->req_id, NULL);
}

/* EGRESS_OPEN: the connection leaves the queue only once its channel is
 * open; a failed claim leaves it waiting (it expires on its own). */
void
ab_req_egress_open (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;

	for (size_t i = 0; i < n_listeners; i++) {
		struct listener_s *l = &listeners[i];
		for (size_t k = 0; k < l->n_queued; k++) {
			if (!l->stream || l->queued[k].id != m->conn)
				continue;
			if (ab_port_adopt (s, m->req_id, m->channel, l->queued[k].fd, l->port, &err)
			    < 0) {
				ab_session_fail (s, m->req_id, &err);
				return;
			}
			drop_at (l, k, false); /* the channel owns the fd now */
			if (k == 0)
				arm_expiry (l);
			ab_loop_set (&l->w, EPOLLIN);
			return;
		}
	}
	ab_error (&err, 0, AB_E_NOT_FOUND, "no egress connection %u waits (claimed or expired)",
	          m->conn);
	ab_session_fail (s, m->req_id, &err);
}
