/* The port relay: a socket inside the sandbox <-> a channel.  PORT_OPEN
 * connects to 127.0.0.1:PORT inside the sandbox; the connect is
 * non-blocking (a listener inside with a full backlog must not stall PID 1)
 * and the answer waits for it.  EGRESS_OPEN adopts a connection the egress
 * listener accepted (egress.c, backends without fd passing).  Socket to
 * host: read only as credit allows.  Host to socket: at most one window is
 * held, granted back as it is written.  EOF either way is a half-close;
 * the channel ends when both directions have. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/service.h"
#include "base/xalloc.h"

/* Socket to host: read only with at least this much credit (or none
 * left to wait for), so a window that comes back in odd pieces is not
 * answered with a stream of tiny frames (RFC 1122 4.2.3.4, the sender side
 * of silly window avoidance).  A host holds back less than a window minus
 * this (docs/protocol-v2.md), so the credit always gets there. */
#define PORT_MIN_CREDIT (16U * 1024)

struct port_s {
	int fd;
	struct ab_watch_s w;
	struct ab_channel_s *ch;
	uint32_t req_id;
	uint16_t port;
	bool connected, rd_eof, wr_eof_pending, wr_eof;
	uint8_t *q; /* host bytes waiting for the socket */
	size_t q_off, q_len;
};

static void port_update (struct port_s *p);

static bool
port_readable (const struct port_s *p)
{
	return p->connected && !p->rd_eof && p->ch->credit >= PORT_MIN_CREDIT
	       && ab_channel_writable (p->ch);
}

static void
port_end (struct port_s *p, const ab_error_t *e)
{
	ab_channel_finish (p->ch, e);
}

static void
maybe_done (struct port_s *p)
{
	if (p->rd_eof && p->wr_eof)
		port_end (p, NULL);
}

static void
port_pump (struct ab_channel_s *ch)
{
	static uint8_t buf[AB_PROTO_DATA_CHUNK];
	struct port_s *p = ch->ctx;
	ab_error_t err = AB_ERROR_INIT;

	while (port_readable (p)) {
		size_t want = ch->credit < sizeof buf ? (size_t)ch->credit : sizeof buf;
		ssize_t n = recv (p->fd, buf, want, MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n < 0) {
			ab_error (&err, errno, AB_E_SYSTEM, "port %u", p->port);
			port_end (p, &err);
			return;
		}
		if (n == 0) {
			p->rd_eof = true;
			ab_channel_send_eof (ch);
			maybe_done (p);
			return;
		}
		ab_channel_send_data (ch, AB_MSG_DATA, buf, (size_t)n);
	}
	port_update (p);
}

static void
flush_queue (struct port_s *p)
{
	ab_error_t err = AB_ERROR_INIT;

	while (p->q_len) {
		ssize_t n = send (p->fd, p->q + p->q_off, p->q_len, MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return;
		if (n < 0) {
			ab_error (&err, errno, AB_E_SYSTEM, "port %u", p->port);
			port_end (p, &err);
			return;
		}
		p->q_off += (size_t)n;
		p->q_len -= (size_t)n;
		ab_channel_grant (p->ch, (size_t)n);
	}
	p->q_off = 0;
	if (p->wr_eof_pending && !p->wr_eof) {
		shutdown (p->fd, SHUT_WR);
		p->wr_eof = true;
		maybe_done (p);
	}
}

static void
port_update (struct port_s *p)
{
	uint32_t ev = 0;

	if (p->ch->closed)
		return;
	if (!p->connected)
		ev = EPOLLOUT;
	else {
		if (port_readable (p))
			ev |= EPOLLIN;
		if (p->q_len)
			ev |= EPOLLOUT;
	}
	ab_loop_set (&p->w, ev);
}

static void
answer_connect (struct port_s *p)
{
	ab_error_t err = AB_ERROR_INIT;
	int soerr = 0;
	socklen_t len = sizeof soerr;

	getsockopt (p->fd, SOL_SOCKET, SO_ERROR, &soerr, &len);
	if (soerr) {
		ab_error (&err, soerr, soerr == ECONNREFUSED ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		          "connect to 127.0.0.1:%u", p->port);
		ab_session_fail (p->ch->s, p->req_id, &err);
		ab_channel_finish (p->ch, NULL);
		return;
	}
	p->connected = true;
	ab_session_ok (p->ch->s, p->req_id, NULL);
	flush_queue (p);
}

static void
on_port (struct ab_watch_s *w, uint32_t events)
{
	struct port_s *p = w->ctx;

	if (!p->connected) {
		answer_connect (p);
		if (p->ch->closed)
			return;
	}
	if (events & EPOLLOUT)
		flush_queue (p);
	if (!p->ch->closed && (events & (EPOLLIN | EPOLLHUP | EPOLLERR)))
		port_pump (p->ch);
	if (!p->ch->closed)
		port_update (p);
}

static void
port_data (struct ab_channel_s *ch, const uint8_t *data, size_t n)
{
	struct port_s *p = ch->ctx;

	if (p->wr_eof_pending) {
		ab_channel_grant (ch, n); /* after our half-close: dropped */
		return;
	}
	/* At most one window is held (channel.c enforces the host's side). */
	if (!p->q)
		p->q = xmalloc (AB_PROTO_WINDOW);
	if (p->q_off + p->q_len + n > AB_PROTO_WINDOW) {
		memmove (p->q, p->q + p->q_off, p->q_len);
		p->q_off = 0;
	}
	memcpy (p->q + p->q_off + p->q_len, data, n);
	p->q_len += n;
	if (p->connected)
		flush_queue (p);
	if (!ch->closed)
		port_update (p);
}

static void
port_eof (struct ab_channel_s *ch)
{
	struct port_s *p = ch->ctx;

	p->wr_eof_pending = true;
	if (p->connected)
		flush_queue (p);
}

static void
port_destroy (struct ab_channel_s *ch)
{
	struct port_s *p = ch->ctx;

	ab_loop_del (&p->w);
	if (p->fd >= 0)
		close (p->fd);
	free (p->q);
	ab_loop_defer_free (p); /* an event of this batch may still name p->w */
}

static const struct ab_channel_ops_s port_ops = {
	.pump = port_pump,
	.data = port_data,
	.eof = port_eof,
	.destroy = port_destroy,
};

/* The relay state and its channel for fd (not yet watched); NULL with
 * err when the channel cannot be opened (fd is left to the caller). */
static struct port_s *
port_new (struct ab_session_s *s, uint32_t channel, int fd, uint16_t port, ab_error_t *err)
{
	struct port_s *p = xcalloc (1, sizeof *p);

	p->fd = fd;
	p->port = port;
	p->w.fd = -1;
	if (!(p->ch = ab_channel_open (s, channel, &port_ops, p, err))) {
		free (p);
		return NULL;
	}
	return p;
}

void
ab_req_port_open (struct ab_session_s *s, struct ab_msg_s *m)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		                   .sin_port = htons ((uint16_t)m->port),
		                   .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
	ab_error_t err = AB_ERROR_INIT;
	struct port_s *p;
	int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0) {
		ab_error (&err, errno, AB_E_SYSTEM, "socket");
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	if (!(p = port_new (s, m->channel, fd, (uint16_t)m->port, &err))) {
		close (fd);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	p->req_id = m->req_id;
	if (connect (fd, (struct sockaddr *)&sin, sizeof sin) < 0 && errno != EINPROGRESS)
		ab_error (&err, errno, errno == ECONNREFUSED ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		          "connect to 127.0.0.1:%u", p->port);
	else if (ab_loop_add (&p->w, fd, EPOLLOUT, on_port, p) < 0)
		ab_error (&err, errno, AB_E_SYSTEM, "epoll");
	else
		return; /* answered when the connect completes */
	ab_session_fail (s, m->req_id, &err);
	ab_channel_finish (p->ch, NULL);
}

int
ab_port_adopt (struct ab_session_s *s, uint32_t req_id, uint32_t channel, int fd, uint16_t port,
               ab_error_t *err)
{
	struct ab_msg_s ok;
	struct port_s *p = port_new (s, channel, fd, port, err);

	if (!p)
		return -1;
	if (ab_loop_add (&p->w, fd, 0, on_port, p) < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "epoll");
		p->fd = -1; /* still the caller's */
		ab_channel_finish (p->ch, NULL);
		return -1;
	}
	p->connected = true;
	ab_msg_init (&ok, AB_MSG_OK);
	ab_msg_set (&ok, port, AB_TAG_PORT, port);
	ab_session_ok (s, req_id, &ok); /* before any DATA of the channel */
	port_update (p);
	return 0;
}
