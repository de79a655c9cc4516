/* Unit tests for the microVM multiplexer: the frame codec (src/proto/mux.c)
 * accepts exactly the documented forms and refuses every other one, from
 * the header alone where it can; and two relays (src/proto/mux-relay.c)
 * joined by a socketpair carry connections end to end with half-close, a
 * stalled connection does not hold up another one, and a peer that breaks
 * the credit rules is cut off. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/mux-relay.h"
#include "proto/mux.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

/* ---- codec --------------------------------------------------------------- */

struct frame_case_s {
	const char *name;
	uint8_t bytes[32];
	size_t n;
	int want; /* 1 decoded, 0 need more, -1 refused */
	uint8_t type;
	uint32_t id, value;
};

#define HDR(t, id, len)                                                                            \
	t, (uint8_t)((id) >> 24), (uint8_t)((id) >> 16), (uint8_t)((id) >> 8), (uint8_t)(id),      \
	        (uint8_t)((len) >> 24), (uint8_t)((len) >> 16), (uint8_t)((len) >> 8),             \
	        (uint8_t)(len)

static const struct frame_case_s frame_cases[] = {
	{ "hello", { HDR (1, 0, 8), 'A', 'B', 'M', 'X', 0, 0, 0, 1 }, 17, 1, AB_MUX_HELLO, 0, 1 },
	{ "hello bad magic", { HDR (1, 0, 8), 'A', 'B', 'M', 'Y', 0, 0, 0, 1 }, 17, -1, 0, 0, 0 },
	{ "hello version 2", { HDR (1, 0, 8), 'A', 'B', 'M', 'X', 0, 0, 0, 2 }, 17, -1, 0, 0, 0 },
	{ "hello on a connection", { HDR (1, 3, 8), 'A', 'B', 'M', 'X', 0, 0, 0, 1 }, 17, -1 },
	{ "hello short", { HDR (1, 0, 4), 'A', 'B', 'M', 'X' }, 13, -1 },
	{ "open", { HDR (2, 7, 0) }, 9, 1, AB_MUX_OPEN, 7, 0 },
	{ "open id 0", { HDR (2, 0, 0) }, 9, -1 },
	{ "open with payload", { HDR (2, 7, 1), 'x' }, 10, -1 },
	{ "data", { HDR (3, 7, 3), 'a', 'b', 'c' }, 12, 1, AB_MUX_DATA, 7, 0 },
	{ "data partial", { HDR (3, 7, 3), 'a', 'b' }, 11, 0 },
	{ "data empty", { HDR (3, 7, 0) }, 9, -1 },
	{ "data id 0", { HDR (3, 0, 1), 'a' }, 10, -1 },
	{ "data too long (header only)", { HDR (3, 7, AB_MUX_MAX_DATA + 1) }, 9, -1 },
	{ "data huge (header only)", { HDR (3, 7, 0xffffffffU) }, 9, -1 },
	{ "eof", { HDR (4, 9, 0) }, 9, 1, AB_MUX_EOF, 9, 0 },
	{ "close", { HDR (5, 0xffffffffU, 0) }, 9, 1, AB_MUX_CLOSE, 0xffffffffU, 0 },
	{ "close with payload", { HDR (5, 1, 2), 0, 0 }, 11, -1 },
	{ "credit", { HDR (6, 2, 4), 0, 0, 0x10, 0 }, 13, 1, AB_MUX_CREDIT, 2, 4096 },
	{ "credit 0", { HDR (6, 2, 4), 0, 0, 0, 0 }, 13, -1 },
	{ "credit past the window", { HDR (6, 2, 4), 0, 0x04, 0, 1 }, 13, -1 },
	{ "credit 3 bytes", { HDR (6, 2, 3), 0, 0, 1 }, 12, -1 },
	{ "type 0", { HDR (0, 1, 0) }, 9, -1 },
	{ "type 7", { HDR (7, 1, 0) }, 9, -1 },
	{ "type 255", { HDR (255, 1, 0) }, 9, -1 },
	{ "short header", { 3, 0, 0, 0, 7, 0, 0 }, 7, 0 },
	{ "nothing", { 0 }, 0, 0 },
};

static void
test_decode_table (void **state)
{
	for (size_t i = 0; i < N (frame_cases); i++) {
		const struct frame_case_s *c = &frame_cases[i];
		ab_error_t err = AB_ERROR_INIT;
		struct ab_mux_frame_s f;
		size_t used = 0;
		int r = ab_mux_decode (c->bytes, c->n, &f, &used, &err);

		if (r != c->want)
			fail_msg ("%s: got %d, want %d (%s)", c->name, r, c->want, err.msg);
		if (r < 0)
			assert_true (err.msg[0] != '\0');
		if (r == 1) {
			assert_int_equal (used, c->n);
			assert_int_equal (f.type, c->type);
			assert_int_equal (f.id, c->id);
			assert_int_equal (f.value, c->value);
			assert_int_equal (f.len, c->n - AB_MUX_HEADER);
		}
		if (r == 0)
			assert_int_equal (used, 0);
	}
}

/* Every prefix of a valid frame asks for more; the whole frame decodes. */
static void
test_decode_prefixes (void **state)
{
	uint8_t buf[AB_MUX_HEADER + 100];
	struct ab_mux_frame_s f;
	size_t used, n;

	n = ab_mux_put_header (buf, AB_MUX_DATA, 42, 100);
	for (size_t i = 0; i < 100; i++)
		buf[n + i] = (uint8_t)i;
	for (size_t k = 0; k < sizeof buf; k++)
		assert_int_equal (ab_mux_decode (buf, k, &f, &used, NULL), 0);
	assert_int_equal (ab_mux_decode (buf, sizeof buf, &f, &used, NULL), 1);
	assert_int_equal (used, sizeof buf);
	assert_int_equal (f.payload[99], 99);
}

static void
test_encoders (void **state)
{
	uint8_t buf[AB_MUX_HEADER + 8];
	struct ab_mux_frame_s f;
	size_t used;

	assert_int_equal (ab_mux_put_hello (buf), AB_MUX_HEADER + 8);
	assert_int_equal (ab_mux_decode (buf, sizeof buf, &f, &used, NULL), 1);
	assert_int_equal (f.type, AB_MUX_HELLO);
	assert_int_equal (f.value, AB_MUX_VERSION);
	assert_int_equal (ab_mux_put_credit (buf, 5, AB_MUX_WINDOW), AB_MUX_HEADER + 4);
	assert_int_equal (ab_mux_decode (buf, AB_MUX_HEADER + 4, &f, &used, NULL), 1);
	assert_int_equal (f.value, AB_MUX_WINDOW);
	assert_string_equal (ab_mux_type_name (AB_MUX_CREDIT), "CREDIT");
	assert_string_equal (ab_mux_type_name (99), "unknown");
}

/* ---- two relays over a socketpair ------------------------------------------ */

#define MAX_FD 256

struct side_s {
	ab_mux_relay_t *r;
	unsigned events[MAX_FD]; /* interest per fd, 0 = not watched */
	int peers[8];            /* guest: the far ends of opened connections */
	size_t n_peers;
	bool hello;
};

static void
watch_cb (void *ctx, int fd, unsigned events)
{
	struct side_s *s = ctx;
	assert_true (fd >= 0 && fd < MAX_FD);
	s->events[fd] = events;
}

static void
forget_cb (void *ctx, int fd)
{
	struct side_s *s = ctx;
	s->events[fd] = 0;
}

/* Guest: each OPEN becomes a socketpair; the test holds the far end. */
static int
open_cb (void *ctx, uint32_t id)
{
	struct side_s *s = ctx;
	int sv[2];

	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv),
	                  0);
	assert_true (s->n_peers < N (s->peers));
	s->peers[s->n_peers++] = sv[1];
	return sv[0];
}

static void
hello_cb (void *ctx)
{
	((struct side_s *)ctx)->hello = true;
}

static const struct ab_mux_relay_ops_s host_ops = { watch_cb, forget_cb, NULL, hello_cb };
static const struct ab_mux_relay_ops_s guest_ops = { watch_cb, forget_cb, open_cb, hello_cb };

static struct side_s host, guest;
static int stream[2];

static int
setup_pair (void **state)
{
	memset (&host, 0, sizeof host);
	memset (&guest, 0, sizeof guest);
	assert_int_equal (
	        socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, stream), 0);
	host.r = ab_mux_relay_new (stream[0], &host_ops, &host);
	guest.r = ab_mux_relay_new (stream[1], &guest_ops, &guest);
	return 0;
}

static int
teardown_pair (void **state)
{
	ab_mux_relay_free (host.r);
	ab_mux_relay_free (guest.r);
	for (size_t i = 0; i < guest.n_peers; i++)
		close (guest.peers[i]);
	close (stream[0]);
	close (stream[1]);
	return 0;
}

static short
to_poll (unsigned ev)
{
	return (short)((ev & AB_MUX_EV_IN ? POLLIN : 0) | (ev & AB_MUX_EV_OUT ? POLLOUT : 0));
}

static unsigned
from_poll (short rev)
{
	return (rev & POLLIN ? AB_MUX_EV_IN : 0U) | (rev & POLLOUT ? AB_MUX_EV_OUT : 0U)
	       | (rev & (POLLHUP | POLLERR) ? AB_MUX_EV_HUP : 0U);
}

/* One round of both relays' events (10 ms at most). */
static void
pump (void)
{
	struct pollfd p[2 * MAX_FD];
	struct side_s *owner[2 * MAX_FD];
	nfds_t n = 0;

	for (int fd = 0; fd < MAX_FD; fd++) {
		if (host.events[fd])
			owner[n] = &host,
			p[n++] = (struct pollfd){ fd, to_poll (host.events[fd]), 0 };
		if (guest.events[fd])
			owner[n] = &guest,
			p[n++] = (struct pollfd){ fd, to_poll (guest.events[fd]), 0 };
	}
	if (poll (p, n, 10) <= 0)
		return;
	for (nfds_t i = 0; i < n; i++)
		if (p[i].revents)
			ab_mux_relay_event (owner[i]->r, p[i].fd, from_poll (p[i].revents));
}

/* A host connection: returns the client end; the relay holds the other. */
static int
host_connect (void)
{
	int sv[2];

	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0, sv),
	                  0);
	assert_int_equal (ab_mux_relay_add (host.r, sv[0], NULL), 0);
	return sv[1];
}

/* Read up to cap bytes from fd within ~2 s of pumping; returns the count
 * (stops early at EOF, reported through *eof). */
static size_t
read_some (int fd, char *buf, size_t cap, size_t want, bool *eof)
{
	size_t n = 0;

	*eof = false;
	for (int round = 0; round < 200 && n < want && !*eof; round++) {
		ssize_t r = -1;
		pump ();
		while (n < cap && (r = read (fd, buf + n, cap - n)) > 0)
			n += (size_t)r;
		if (r == 0)
			*eof = true;
	}
	return n;
}

static void
test_relay_echo_and_half_close (void **state)
{
	char buf[64];
	bool eof;
	int client = host_connect ();

	ab_mux_relay_send_hello (guest.r);
	assert_int_equal (write (client, "ping", 4), 4);
	assert_int_equal (shutdown (client, SHUT_WR), 0);
	for (int i = 0; i < 100 && guest.n_peers == 0; i++)
		pump ();
	assert_true (host.hello);
	assert_int_equal (guest.n_peers, 1);
	/* The guest's end sees the bytes, then EOF (the client's half-close). */
	assert_int_equal (read_some (guest.peers[0], buf, sizeof buf, 5, &eof), 4);
	assert_memory_equal (buf, "ping", 4);
	assert_true (eof);
	/* It can still answer. */
	assert_int_equal (write (guest.peers[0], "pong", 4), 4);
	close (guest.peers[0]);
	guest.n_peers = 0;
	assert_int_equal (read_some (client, buf, sizeof buf, 5, &eof), 4);
	assert_memory_equal (buf, "pong", 4);
	assert_true (eof);
	close (client);
	for (int i = 0; i < 50 && (ab_mux_relay_conns (host.r) || ab_mux_relay_conns (guest.r));
	     i++)
		pump ();
	assert_int_equal (ab_mux_relay_conns (host.r), 0);
	assert_int_equal (ab_mux_relay_conns (guest.r), 0);
	assert_null (ab_mux_relay_failed (host.r));
	assert_null (ab_mux_relay_failed (guest.r));
}

/* Connection A's reader never reads; B still gets through, and A holds
 * no more than its window in the relays. */
static void
test_relay_stalled_connection (void **state)
{
	static char big[4 << 20];
	char buf[64];
	size_t sent = 0;
	bool eof;
	int a = host_connect (), b;

	for (int i = 0; i < 400; i++) {
		ssize_t r = write (a, big + sent, sizeof big - sent);
		if (r > 0)
			sent += (size_t)r;
		pump ();
	}
	/* Socket buffers plus one window, far from all of it. */
	assert_true (sent < sizeof big);
	b = host_connect ();
	assert_int_equal (write (b, "hello b", 7), 7);
	for (int i = 0; i < 100 && guest.n_peers < 2; i++)
		pump ();
	assert_int_equal (guest.n_peers, 2);
	assert_int_equal (read_some (guest.peers[1], buf, sizeof buf, 7, &eof), 7);
	assert_memory_equal (buf, "hello b", 7);
	assert_null (ab_mux_relay_failed (host.r));
	assert_null (ab_mux_relay_failed (guest.r));
	close (a);
	close (b);
}

/* Bulk data through, in order, both ways at once. */
static void
test_relay_bulk (void **state)
{
	static unsigned char out[1 << 20], back[1 << 20];
	size_t sent = 0, got = 0, echoed = 0;
	int client = host_connect ();

	for (size_t i = 0; i < sizeof out; i++)
		out[i] = (unsigned char)(i * 7 + i / 251);
	for (int round = 0; round < 5000 && got < sizeof out; round++) {
		ssize_t r;
		if (sent < sizeof out && (r = write (client, out + sent, sizeof out - sent)) > 0)
			sent += (size_t)r;
		pump ();
		/* The guest end echoes everything back. */
		if (guest.n_peers == 1) {
			unsigned char tmp[65536];
			while (echoed == got && (r = read (guest.peers[0], tmp, sizeof tmp)) > 0) {
				ssize_t w = 0;
				while (w < r) {
					ssize_t k =
					        write (guest.peers[0], tmp + w, (size_t)(r - w));
					if (k > 0)
						w += k;
					else
						pump ();
				}
				echoed += (size_t)r;
			}
		}
		while ((r = read (client, back + got, sizeof back - got)) > 0)
			got += (size_t)r;
	}
	assert_int_equal (got, sizeof out);
	assert_memory_equal (back, out, sizeof out);
	close (client);
}

/* A peer that sends more than its credit breaks the stream. */
static void
test_relay_credit_violation (void **state)
{
	static uint8_t frame[AB_MUX_FRAME_MAX];
	size_t n;

	/* Play the host by hand: OPEN 1, then 64 KiB frames without reading
	 * any CREDIT back, until the guest's socket buffer and the window
	 * are full. */
	n = ab_mux_put_header (frame, AB_MUX_OPEN, 1, 0);
	assert_int_equal (write (stream[0], frame, n), (ssize_t)n);
	pump ();
	assert_int_equal (guest.n_peers, 1);
	n = ab_mux_put_header (frame, AB_MUX_DATA, 1, AB_MUX_MAX_DATA) + AB_MUX_MAX_DATA;
	for (int i = 0; i < 64 && !ab_mux_relay_failed (guest.r); i++) {
		size_t off = 0;
		while (off < n && !ab_mux_relay_failed (guest.r)) {
			ssize_t w = write (stream[0], frame + off, n - off);
			if (w > 0)
				off += (size_t)w;
			ab_mux_relay_event (guest.r, stream[1], AB_MUX_EV_IN);
		}
	}
	for (int i = 0; i < 10; i++)
		ab_mux_relay_event (guest.r, stream[1], AB_MUX_EV_IN);
	assert_non_null (ab_mux_relay_failed (guest.r));
	assert_non_null (strstr (ab_mux_relay_failed (guest.r), "credit"));
}

/* A guest may not open connections towards the host. */
static void
test_relay_open_refused (void **state)
{
	uint8_t frame[AB_MUX_HEADER];
	size_t n = ab_mux_put_header (frame, AB_MUX_OPEN, 1, 0);

	assert_int_equal (write (stream[1], frame, n), (ssize_t)n);
	ab_mux_relay_event (host.r, stream[0], AB_MUX_EV_IN);
	assert_non_null (ab_mux_relay_failed (host.r));
}

/* Ids only grow: an OPEN that reuses one is refused. */
static void
test_relay_id_reuse (void **state)
{
	uint8_t frame[2 * AB_MUX_HEADER];
	size_t n = ab_mux_put_header (frame, AB_MUX_OPEN, 5, 0);

	n += ab_mux_put_header (frame + n, AB_MUX_OPEN, 5, 0);
	assert_int_equal (write (stream[0], frame, n), (ssize_t)n);
	ab_mux_relay_event (guest.r, stream[1], AB_MUX_EV_IN);
	assert_non_null (ab_mux_relay_failed (guest.r));
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_decode_table),
		cmocka_unit_test (test_decode_prefixes),
		cmocka_unit_test (test_encoders),
		cmocka_unit_test_setup_teardown (test_relay_echo_and_half_close, setup_pair,
		                                 teardown_pair),
		cmocka_unit_test_setup_teardown (test_relay_stalled_connection, setup_pair,
		                                 teardown_pair),
		cmocka_unit_test_setup_teardown (test_relay_bulk, setup_pair, teardown_pair),
		cmocka_unit_test_setup_teardown (test_relay_credit_violation, setup_pair,
		                                 teardown_pair),
		cmocka_unit_test_setup_teardown (test_relay_open_refused, setup_pair,
		                                 teardown_pair),
		cmocka_unit_test_setup_teardown (test_relay_id_reuse, setup_pair, teardown_pair),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
