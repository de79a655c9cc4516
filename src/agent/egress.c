/* The egress listener on the sandbox's loopback (--network proxy): every
 * connection made to it is handed to the host as an fd (SCM_RIGHTS), where
 * the egress policy decides what it may reach.  One-shot mode hands them
 * over its one door; service mode to the session that last sent
 * EGRESS_LISTEN (the daemon's egress relay).  Until such a session is
 * there, up to MAX_QUEUED accepted connections wait, then the kernel's
 * backlog. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "agent/service.h"

#define MAX_QUEUED 64

static int listen_fd = -1;
static uint16_t listen_port;
static struct ab_watch_s listen_w = { .fd = -1 };
static struct ab_session_s *subscriber;
static int queued[MAX_QUEUED];
static size_t n_queued;

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
	while (n_queued < MAX_QUEUED) {
		int c = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC);
		if (c < 0)
			break;
		queued[n_queued++] = c;
	}
	ab_egress_kick ();
}

void
ab_egress_kick (void)
{
	while (subscriber && n_queued) {
		int r = ab_session_send_fd (subscriber, AB_MSG_EGRESS_CONN, queued[0]);
		if (r == 0)
			break; /* its output is busy: next batch */
		if (r < 0) {
			subscriber = NULL; /* broken; the session ends on its own */
			break;
		}
		close (queued[0]); /* the host holds it now */
		for (size_t i = 1; i < n_queued; i++)
			queued[i - 1] = queued[i];
		n_queued--;
	}
	ab_loop_set (&listen_w, n_queued < MAX_QUEUED ? EPOLLIN : 0);
}

void
ab_egress_forget_session (struct ab_session_s *s)
{
	if (subscriber == s)
		subscriber = NULL;
}

void
ab_req_egress_listen (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;

	if (listen_fd >= 0 && listen_port != m->port) {
		ab_error (&err, 0, AB_E_CONFLICT, "the egress listener is on port %u", listen_port);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	if (listen_fd < 0) {
		listen_fd = ab_egress_listen ((uint16_t)m->port, &err);
		if (listen_fd < 0
		    || ab_loop_add (&listen_w, listen_fd, EPOLLIN, on_listen, NULL) < 0) {
			if (err.kind == AB_E_NONE)
				ab_error (&err, errno, AB_E_SYSTEM, "epoll");
			if (listen_fd >= 0)
				close (listen_fd);
			listen_fd = -1;
			ab_session_fail (s, m->req_id, &err);
			return;
		}
		listen_port = (uint16_t)m->port;
	}
	subscriber = s;
	ab_session_ok (s, m->req_id, NULL);
}
