#include "net/preview-dial.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"

int
ab_preview_ms_left (uint64_t deadline_ms)
{
	uint64_t now = ab_mono_ms ();

	if (now >= deadline_ms)
		return 0;
	return deadline_ms - now > INT_MAX ? INT_MAX : (int)(deadline_ms - now);
}

bool
ab_preview_timed_out (const ab_error_t *err)
{
	return err->kind == AB_E_LIMIT && err->errnum == ETIMEDOUT;
}

static int
timed_out (ab_error_t *err, const char *what)
{
	return ab_error (err, ETIMEDOUT, AB_E_LIMIT, "%s", what);
}

/* Wait for events on fd; 1 ready, or -1 (timeout or poll error). */
static int
wait_fd (int fd, short events, uint64_t deadline_ms, const char *what, ab_error_t *err)
{
	for (;;) {
		struct pollfd pfd = { .fd = fd, .events = events };
		int left = ab_preview_ms_left (deadline_ms);
		int r;

		if (left == 0)
			return timed_out (err, what);
		r = poll (&pfd, 1, left);
		if (r > 0)
			return 1;
		if (r < 0 && errno != EINTR)
			return ab_error (err, errno, AB_E_SYSTEM, "poll");
	}
}

static int
connect_one (const struct addrinfo *ai, uint64_t deadline_ms, ab_error_t *err)
{
	cleanup_close int fd = socket (
	        ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, ai->ai_protocol);
	int one = 1;
	int soerr = 0;
	socklen_t len = sizeof soerr;

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socket");
	if (connect (fd, ai->ai_addr, ai->ai_addrlen) < 0) {
		if (errno != EINPROGRESS)
			return ab_error (err, errno, AB_E_SYSTEM, "connect");
		if (wait_fd (fd, POLLOUT, deadline_ms, "connect timed out", err) < 0)
			return -1;
		if (getsockopt (fd, SOL_SOCKET, SO_ERROR, &soerr, &len) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "getsockopt");
		if (soerr != 0)
			return ab_error (err, soerr, AB_E_SYSTEM, "connect");
	}
	setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return steal_fd (&fd);
}

int
ab_preview_dial (const char *host, uint16_t port, uint64_t deadline_ms, ab_error_t *err)
{
	struct addrinfo hints = { .ai_family = AF_UNSPEC,
		                  .ai_socktype = SOCK_STREAM,
		                  .ai_flags = AI_NUMERICSERV };
	struct addrinfo *res = NULL;
	char service[8];
	int fd = -1;
	int r;

	snprintf (service, sizeof service, "%u", port);
	/* getaddrinfo itself is not bounded by the deadline; preview targets
	 * are loopback names from /etc/hosts or literals, resolved at once. */
	r = getaddrinfo (host, service, &hints, &res);
	if (r != 0)
		return ab_error (err, 0, AB_E_SYSTEM, "cannot resolve %s: %s", host,
		                 gai_strerror (r));
	for (const struct addrinfo *ai = res; ai != NULL; ai = ai->ai_next) {
		ab_error_clear (err);
		fd = connect_one (ai, deadline_ms, err);
		if (fd >= 0 || ab_preview_timed_out (err))
			break;
	}
	freeaddrinfo (res);
	return fd;
}

int
ab_preview_send_all (int fd, const void *p, size_t n, uint64_t deadline_ms, ab_error_t *err)
{
	const char *s = p;

	while (n > 0) {
		ssize_t w = send (fd, s, n, MSG_NOSIGNAL);

		if (w > 0) {
			s += w;
			n -= (size_t)w;
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno != EAGAIN)
			return ab_error (err, errno, AB_E_SYSTEM, "send");
		if (wait_fd (fd, POLLOUT, deadline_ms, "send timed out", err) < 0)
			return -1;
	}
	return 0;
}

ssize_t
ab_preview_recv (int fd, struct ab_iobuf_s *b, size_t max_cap, uint64_t deadline_ms,
                 ab_error_t *err)
{
	for (;;) {
		ssize_t n = ab_iobuf_read (b, fd, 64 * 1024, max_cap);

		if (n >= 0)
			return n;
		if (errno != EAGAIN)
			return ab_error (err, errno, AB_E_SYSTEM, "recv");
		if (wait_fd (fd, POLLIN, deadline_ms, "receive timed out", err) < 0)
			return -1;
	}
}
