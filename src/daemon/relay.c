/* The byte relay behind port forwarding (relay.h).  poll(2) for readable
 * input on both sides, then a blocking write of what was read: a side that
 * does not read makes us stop reading the other one (back-pressure, no
 * buffer grows), and the daemon's SO_SNDTIMEO bounds how long. */
#include "daemon/relay.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <sys/socket.h>

#include "net/http-io.h"

#define RELAY_CHUNK (64 * 1024)

/* One read from `from`, written whole to `to`: 1 data, 0 EOF (forwarded as
 * a half-close), -1 failure of either side. */
static int
pump (int from, int to, uint64_t *count)
{
	char buf[RELAY_CHUNK];
	ssize_t n = recv (from, buf, sizeof buf, MSG_DONTWAIT);

	if (n < 0)
		return errno == EAGAIN || errno == EINTR ? 1 : -1;
	if (n == 0) {
		shutdown (to, SHUT_WR);
		return 0;
	}
	if (ab_http_write (to, buf, (size_t)n) < 0)
		return -1;
	if (count)
		*count += (uint64_t)n;
	return 1;
}

void
ab_relay_fds (int a, int b, uint64_t *a_to_b, uint64_t *b_to_a)
{
	ab_relay_fds_idle (a, b, -1, a_to_b, b_to_a);
}

static int
relay (int a, int b, int idle_ms, bool first_eof, uint64_t *a_to_b, uint64_t *b_to_a)
{
	bool a_open = true, b_open = true;

	while (first_eof ? a_open && b_open : a_open || b_open) {
		/* An ended side is polled as -1: a socket at EOF stays readable
		 * (and POLLHUP is reported even for no events), which would spin. */
		struct pollfd p[2] = { { .fd = a_open ? a : -1, .events = POLLIN },
			               { .fd = b_open ? b : -1, .events = POLLIN } };
		int r;

		if ((r = poll (p, 2, idle_ms)) < 0) {
			if (errno == EINTR)
				continue;
			return 0;
		}
		if (r == 0)
			return 1; /* nothing either way for idle_ms */
		if (p[0].revents) {
			if ((r = pump (a, b, a_to_b)) < 0)
				return 0;
			a_open = r > 0;
		}
		if (p[1].revents) {
			if ((r = pump (b, a, b_to_a)) < 0)
				return 0;
			b_open = r > 0;
		}
	}
	return 0;
}

int
ab_relay_fds_idle (int a, int b, int idle_ms, uint64_t *a_to_b, uint64_t *b_to_a)
{
	return relay (a, b, idle_ms, false, a_to_b, b_to_a);
}

int
ab_relay_fds_first_eof (int a, int b, int idle_ms)
{
	return relay (a, b, idle_ms, true, NULL, NULL);
}
