/* The proxies' listening socket: see listener.h. */
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "net/lazy-timer.h"
#include "net/listener.h"

/* Accepts per wakeup, so a flood of connections cannot starve the ones we
 * already have. */
#define ACCEPT_BATCH 64

void
ab_listener_init (struct ab_listener_s *l, bool (*full) (void *owner),
                  void (*take) (void *owner, int fd), void *owner, unsigned retry_ms)
{
	*l = (struct ab_listener_s){
		.fd = -1, .full = full, .take = take, .owner = owner, .retry_ms = retry_ms
	};
}

static void
pause_accept (struct ab_listener_s *l, unsigned ms)
{
	event_del (l->ev);
	l->paused = true;
	if (ms > 0 && l->retry_ev != NULL) {
		struct timeval tv = ab_tv_from_us ((uint64_t)ms * 1000u);
		evtimer_add (l->retry_ev, &tv);
	}
}

void
ab_listener_resume (struct ab_listener_s *l)
{
	if (l->paused && !l->full (l->owner)) {
		l->paused = false;
		event_add (l->ev, NULL);
	}
}

static void
on_retry (evutil_socket_t fd, short what, void *arg)
{
	ab_listener_resume (arg);
}

static bool
out_of_fds (int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

static void
on_accept (evutil_socket_t lfd, short what, void *arg)
{
	struct ab_listener_s *l = arg;

	for (int i = 0; i < ACCEPT_BATCH; i++) {
		int fd;

		/* At the limit, leave new clients in the kernel's backlog until a
		 * connection ends (the owner calls ab_listener_resume). */
		if (l->full (l->owner)) {
			pause_accept (l, 0);
			return;
		}
		fd = accept4 (lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0) {
			if (l->retry_ms > 0 && out_of_fds (errno))
				pause_accept (l, l->retry_ms);
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			return;
		}
		l->take (l->owner, fd);
	}
}

void
ab_sockaddr_format (const struct sockaddr *sa, char *buf, size_t len)
{
	char host[NI_MAXHOST];
	char port[NI_MAXSERV];
	socklen_t sl = sa->sa_family == AF_INET6 ? sizeof (struct sockaddr_in6)
	                                         : sizeof (struct sockaddr_in);

	if (getnameinfo (sa, sl, host, sizeof host, port, sizeof port,
	                 NI_NUMERICHOST | NI_NUMERICSERV)
	    != 0) {
		snprintf (buf, len, "?");
		return;
	}
	snprintf (buf, len, sa->sa_family == AF_INET6 ? "[%s]:%s" : "%s:%s", host, port);
}

static int
bind_listener (const struct addrinfo *ai, ab_error_t *err)
{
	cleanup_close int fd = socket (
	        ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	int one = 1;

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socket");
	/* A restarted proxy must rebind while old connections sit in TIME_WAIT. */
	setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	if (bind (fd, ai->ai_addr, ai->ai_addrlen) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "bind");
	if (listen (fd, SOMAXCONN) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "listen");
	return steal_fd (&fd);
}

int
ab_tcp_listen (const char *host, const char *port, char *bound, size_t bound_len, ab_error_t *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
		                  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	cleanup_close int fd = -1;
	int e;

	e = getaddrinfo (host && *host ? host : NULL, port, &hints, &ai);
	if (e != 0)
		return ab_error (err, 0, AB_E_INVALID, "listen address %s:%s: %s", host, port,
		                 gai_strerror (e));
	fd = bind_listener (ai, err);
	freeaddrinfo (ai);
	if (fd < 0)
		return ab_error_wrap (err, "listen on %s:%s", host, port);
	if (getsockname (fd, (struct sockaddr *)&ss, &sl) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "getsockname");
	if (bound != NULL)
		ab_sockaddr_format ((struct sockaddr *)&ss, bound, bound_len);
	return steal_fd (&fd);
}

int
ab_listener_open (struct ab_listener_s *l, struct event_base *base, const char *host,
                  const char *port, char *bound, size_t bound_len, ab_error_t *err)
{
	l->fd = ab_tcp_listen (host, port, bound, bound_len, err);
	if (l->fd < 0)
		return -1;
	l->ev = event_new (base, l->fd, EV_READ | EV_PERSIST, on_accept, l);
	if (l->retry_ms > 0)
		l->retry_ev = evtimer_new (base, on_retry, l);
	if (l->ev == NULL || (l->retry_ms > 0 && l->retry_ev == NULL)
	    || event_add (l->ev, NULL) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "register listener");
	return 0;
}

void
ab_listener_close (struct ab_listener_s *l)
{
	if (l->ev != NULL)
		event_free (l->ev);
	if (l->retry_ev != NULL)
		event_free (l->retry_ev);
	if (l->fd >= 0)
		close (l->fd);
	l->ev = l->retry_ev = NULL;
	l->fd = -1;
	l->paused = false;
}
