/* The egress listener on the sandbox's loopback (--network proxy): every
 * connection made to it is handed to the host as an fd (SCM_RIGHTS), where
 * the egress policy decides what it may reach.  One-shot mode hands them
 * over its one door; service mode to the session that last sent
 * EGRESS_LISTEN for that port (the daemon's forwarded-ports thread), each
 * tagged with its port (TAG_PORT): the egress proxy's and the credential
 * proxy's listeners live side by side.  Until such a session is there, up
 * to MAX_QUEUED accepted connections per port wait, then the kernel's
 * backlog. */
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

struct listener_s {
	int fd;
	uint16_t port;
	struct ab_watch_s w;
	struct ab_session_s *subscriber; /* the session that last asked for port */
	int queued[MAX_QUEUED];
	size_t n_queued;
};

static struct listener_s listeners[MAX_LISTENERS];
static size_t n_listeners;

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

static void
on_listen (struct ab_watch_s *w, uint32_t events)
{
	struct listener_s *l = w->ctx;

	while (l->n_queued < MAX_QUEUED) {
		int c = accept4 (l->fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			break;
		l->queued[l->n_queued++] = c;
	}
	ab_egress_kick ();
}

/* Hand what one listener queued to its subscriber, each fd with the port
 * (TAG_PORT) so a session that asked for several tells them apart. */
static void
kick_one (struct listener_s *l)
{
	struct ab_tlv_writer_s tw = { 0 };

	ab_tlv_put_u32 (&tw, AB_TAG_PORT, l->port);
	while (l->subscriber && l->n_queued) {
		int r = ab_session_send_fd (l->subscriber, AB_MSG_EGRESS_CONN, tw.buf, tw.len,
		                            l->queued[0]);
		if (r == 0)
			break; /* its output is busy: next batch */
		if (r < 0) {
			l->subscriber = NULL; /* broken; the session ends on its own */
			break;
		}
		close (l->queued[0]); /* the host holds it now */
		for (size_t i = 1; i < l->n_queued; i++)
			l->queued[i - 1] = l->queued[i];
		l->n_queued--;
	}
	ab_tlv_writer_free (&tw);
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

void
ab_req_egress_listen (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;
	struct listener_s *l = NULL;

	if (m->port > 65535)
		ab_error (&err, 0, AB_E_INVALID, "EGRESS_LISTEN port out of range");
	else
		l = listener_for ((uint16_t)m->port, &err);
	if (!l) {
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	l->subscriber = s;
	ab_session_ok (s, m->req_id, NULL);
}
