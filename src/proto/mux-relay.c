/* One side of the microVM multiplexer (see mux-relay.h, docs/microvm.md).
 *
 * Per connection: bytes from the peer wait in `in` until the local socket
 * takes them, and are granted back (CREDIT) only once written, so the peer
 * can never make us hold more than AB_MUX_WINDOW for one connection; we
 * read a local socket only while we hold credit for it, so a reader that
 * stops reading stalls its own connection and nothing else.  The stream's
 * own output queue is bounded too: past OUT_HIGH no local socket is read
 * until it drains below OUT_LOW. */
#include "proto/mux-relay.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "proto/mux.h"

#define OUT_HIGH (1U << 20)
#define OUT_LOW  (256U * 1024)
#define RBUF_CAP (2 * AB_MUX_FRAME_MAX)

struct conn_s {
	uint32_t id;
	int fd;
	uint64_t credit; /* bytes we may still send to the peer */
	uint8_t *in;     /* from the peer, not yet written to fd */
	size_t in_off, in_len, in_cap;
	uint64_t ungranted; /* written to fd, not yet granted back */
	bool peer_eof, local_eof, shut_wr;
	bool peer_closed; /* the peer released the id: deliver what is left, then go */
	unsigned events;  /* interest last reported */
	struct conn_s *next;
};

struct ab_mux_relay_s {
	int fd;
	const struct ab_mux_relay_ops_s *ops;
	void *ctx;
	struct conn_s *conns;
	size_t n_conns;
	struct conn_s **by_fd;
	size_t by_fd_cap;
	uint32_t last_id; /* highest id either side opened */
	uint8_t *rbuf;
	size_t rlen;
	uint8_t *out;
	size_t out_off, out_len, out_cap;
	bool blocked; /* the output queue is past OUT_HIGH */
	unsigned events;
	char failed[256];
};

static void
fail (ab_mux_relay_t *r, const char *why)
{
	if (!r->failed[0])
		snprintf (r->failed, sizeof r->failed, "%s", why);
}

/* ---- the stream's output queue -------------------------------------------- */

static uint8_t *
out_reserve (ab_mux_relay_t *r, size_t n)
{
	if (r->out_off > 0 && r->out_len + n > r->out_cap) {
		memmove (r->out, r->out + r->out_off, r->out_len - r->out_off);
		r->out_len -= r->out_off;
		r->out_off = 0;
	}
	if (r->out_len + n > r->out_cap) {
		r->out_cap = (r->out_len + n) * 2;
		r->out = xrealloc (r->out, r->out_cap);
	}
	return r->out + r->out_len;
}

static size_t
out_pending (const ab_mux_relay_t *r)
{
	return r->out_len - r->out_off;
}

static void
queue_control (ab_mux_relay_t *r, uint8_t type, uint32_t id)
{
	r->out_len += ab_mux_put_header (out_reserve (r, AB_MUX_HEADER), type, id, 0);
}

static void
flush_out (ab_mux_relay_t *r)
{
	while (out_pending (r) > 0 && !r->failed[0]) {
		ssize_t n = write (r->fd, r->out + r->out_off, out_pending (r));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			fail (r, n < 0 ? strerror (errno) : "the stream took no bytes");
			return;
		}
		r->out_off += (size_t)n;
	}
	if (out_pending (r) == 0)
		r->out_off = r->out_len = 0;
}

/* ---- connections ---------------------------------------------------------------- */

static struct conn_s *
find_id (ab_mux_relay_t *r, uint32_t id)
{
	for (struct conn_s *c = r->conns; c; c = c->next)
		if (c->id == id)
			return c;
	return NULL;
}

static struct conn_s *
new_conn (ab_mux_relay_t *r, uint32_t id, int fd)
{
	struct conn_s *c = xcalloc (1, sizeof *c);

	c->id = id;
	c->fd = fd;
	c->credit = AB_MUX_WINDOW;
	if ((size_t)fd >= r->by_fd_cap) {
		size_t cap = (size_t)fd * 2 + 16;
		r->by_fd = xrealloc (r->by_fd, cap * sizeof *r->by_fd);
		memset (r->by_fd + r->by_fd_cap, 0, (cap - r->by_fd_cap) * sizeof *r->by_fd);
		r->by_fd_cap = cap;
	}
	r->by_fd[fd] = c;
	c->next = r->conns;
	r->conns = c;
	r->n_conns++;
	return c;
}

static void
drop (ab_mux_relay_t *r, struct conn_s *c)
{
	struct conn_s **pp;

	r->ops->forget (r->ctx, c->fd);
	close (c->fd);
	r->by_fd[c->fd] = NULL;
	for (pp = &r->conns; *pp; pp = &(*pp)->next)
		if (*pp == c) {
			*pp = c->next;
			break;
		}
	r->n_conns--;
	free (c->in);
	free (c);
}

/* Release the id (the peer learns it unless it released it first). */
static void
abort_conn (ab_mux_relay_t *r, struct conn_s *c)
{
	if (!c->peer_closed)
		queue_control (r, AB_MUX_CLOSE, c->id);
	drop (r, c);
}

/* Both directions ended, or the peer is gone and has nothing left here. */
static bool
maybe_done (ab_mux_relay_t *r, struct conn_s *c)
{
	if (!c->shut_wr || (!c->local_eof && !c->peer_closed))
		return false;
	abort_conn (r, c);
	return true;
}

static bool
maybe_shut (ab_mux_relay_t *r, struct conn_s *c)
{
	if (c->peer_eof && c->in_len == c->in_off && !c->shut_wr) {
		shutdown (c->fd, SHUT_WR);
		c->shut_wr = true;
	}
	return maybe_done (r, c);
}

static void
grant (ab_mux_relay_t *r, struct conn_s *c, bool drained)
{
	if (c->ungranted == 0 || c->peer_closed || (!drained && c->ungranted < AB_MUX_WINDOW / 4))
		return;
	r->out_len += ab_mux_put_credit (out_reserve (r, AB_MUX_HEADER + 4), c->id,
	                                 (uint32_t)c->ungranted);
	c->ungranted = 0;
}

/* Write what the peer sent; false when the connection is gone. */
static bool
write_conn (ab_mux_relay_t *r, struct conn_s *c)
{
	while (c->in_off < c->in_len) {
		ssize_t n = write (c->fd, c->in + c->in_off, c->in_len - c->in_off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			break;
		if (n <= 0) {
			abort_conn (r, c); /* EPIPE, ECONNRESET: nobody reads it any more */
			return false;
		}
		c->in_off += (size_t)n;
		c->ungranted += (uint64_t)n;
	}
	if (c->in_off == c->in_len)
		c->in_off = c->in_len = 0;
	grant (r, c, c->in_len == 0);
	return !maybe_shut (r, c);
}

static void
read_conn (ab_mux_relay_t *r, struct conn_s *c)
{
	size_t want = c->credit < AB_MUX_MAX_DATA ? (size_t)c->credit : AB_MUX_MAX_DATA;
	uint8_t *p;
	ssize_t n;

	if (c->local_eof || c->peer_closed || want == 0 || r->blocked)
		return;
	p = out_reserve (r, AB_MUX_HEADER + want);
	do
		n = read (c->fd, p + AB_MUX_HEADER, want);
	while (n < 0 && errno == EINTR);
	if (n > 0) {
		r->out_len += ab_mux_put_header (p, AB_MUX_DATA, c->id, (uint32_t)n) + (size_t)n;
		c->credit -= (uint64_t)n;
	} else if (n == 0) {
		c->local_eof = true;
		queue_control (r, AB_MUX_EOF, c->id);
		maybe_done (r, c);
	} else if (errno != EAGAIN) {
		abort_conn (r, c);
	}
}

/* ---- frames from the peer ----------------------------------------------------- */

static void
on_open (ab_mux_relay_t *r, uint32_t id)
{
	int fd;

	if (!r->ops->open) {
		fail (r, "the peer opened a connection, which it may not");
		return;
	}
	if (id <= r->last_id) {
		fail (r, "the peer reused a connection id");
		return;
	}
	r->last_id = id;
	fd = r->n_conns < AB_MUX_MAX_CONNS ? r->ops->open (r->ctx, id) : -1;
	if (fd < 0)
		queue_control (r, AB_MUX_CLOSE, id);
	else
		new_conn (r, id, fd);
}

static void
on_data (ab_mux_relay_t *r, struct conn_s *c, const struct ab_mux_frame_s *f)
{
	if (c->peer_eof) {
		fail (r, "the peer sent DATA after EOF");
		return;
	}
	if (c->ungranted + (c->in_len - c->in_off) + f->len > AB_MUX_WINDOW) {
		fail (r, "the peer sent more than its credit");
		return;
	}
	if (c->in_len + f->len > c->in_cap) {
		if (c->in_off > 0) {
			memmove (c->in, c->in + c->in_off, c->in_len - c->in_off);
			c->in_len -= c->in_off;
			c->in_off = 0;
		}
		if (c->in_len + f->len > c->in_cap) {
			c->in_cap = c->in_len + f->len;
			c->in = xrealloc (c->in, c->in_cap);
		}
	}
	memcpy (c->in + c->in_len, f->payload, f->len);
	c->in_len += f->len;
	write_conn (r, c);
}

static void
on_conn_frame (ab_mux_relay_t *r, const struct ab_mux_frame_s *f)
{
	struct conn_s *c = find_id (r, f->id);

	if (!c) {
		/* Ids are never reused: a frame for a released id crossed our
		 * CLOSE and is dropped; one for an id never opened is a bug. */
		if (f->id > r->last_id)
			fail (r, "the peer used a connection id that was never opened");
		return;
	}
	switch (f->type) {
	case AB_MUX_DATA: on_data (r, c, f); break;
	case AB_MUX_EOF:
		if (c->peer_eof)
			fail (r, "the peer sent EOF twice");
		c->peer_eof = true;
		maybe_shut (r, c);
		break;
	case AB_MUX_CLOSE:
		/* What it sent before still reaches the local socket. */
		c->peer_closed = c->peer_eof = true;
		maybe_shut (r, c);
		break;
	case AB_MUX_CREDIT:
		if (c->credit + f->value > AB_MUX_WINDOW)
			fail (r, "the peer granted more than the window");
		c->credit += f->value;
		break;
	default: break;
	}
}

static void
on_frame (ab_mux_relay_t *r, const struct ab_mux_frame_s *f)
{
	if (f->type == AB_MUX_HELLO) {
		if (r->ops->hello)
			r->ops->hello (r->ctx);
	} else if (f->type == AB_MUX_OPEN) {
		on_open (r, f->id);
	} else {
		on_conn_frame (r, f);
	}
}

static void
read_stream (ab_mux_relay_t *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_mux_frame_s f;
	size_t off = 0, used;
	ssize_t n;
	int d = 0;

	do
		n = read (r->fd, r->rbuf + r->rlen, RBUF_CAP - r->rlen);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		return;
	if (n <= 0) {
		fail (r, n == 0 ? "the stream was closed" : strerror (errno));
		return;
	}
	r->rlen += (size_t)n;
	while (!r->failed[0]
	       && (d = ab_mux_decode (r->rbuf + off, r->rlen - off, &f, &used, &err)) == 1) {
		on_frame (r, &f);
		off += used;
	}
	if (d < 0)
		fail (r, err.msg);
	memmove (r->rbuf, r->rbuf + off, r->rlen - off);
	r->rlen -= off;
}

/* ---- interest ---------------------------------------------------------------- */

static void
sync_interest (ab_mux_relay_t *r)
{
	unsigned ev;

	if (out_pending (r) > OUT_HIGH)
		r->blocked = true;
	else if (out_pending (r) < OUT_LOW)
		r->blocked = false;
	for (struct conn_s *c = r->conns; c; c = c->next) {
		ev = 0;
		if (!c->local_eof && !c->peer_closed && c->credit > 0 && !r->blocked)
			ev |= AB_MUX_EV_IN;
		if (c->in_off < c->in_len)
			ev |= AB_MUX_EV_OUT;
		if (ev != c->events) {
			c->events = ev;
			r->ops->watch (r->ctx, c->fd, ev);
		}
	}
	ev = r->failed[0] ? 0 : AB_MUX_EV_IN | (out_pending (r) ? AB_MUX_EV_OUT : 0);
	if (ev != r->events) {
		r->events = ev;
		r->ops->watch (r->ctx, r->fd, ev);
	}
}

/* ---- public -------------------------------------------------------------------- */

ab_mux_relay_t *
ab_mux_relay_new (int stream_fd, const struct ab_mux_relay_ops_s *ops, void *ctx)
{
	ab_mux_relay_t *r = xcalloc (1, sizeof *r);

	r->fd = stream_fd;
	r->ops = ops;
	r->ctx = ctx;
	r->rbuf = xmalloc (RBUF_CAP);
	sync_interest (r);
	return r;
}

void
ab_mux_relay_free (ab_mux_relay_t *r)
{
	if (!r)
		return;
	while (r->conns)
		drop (r, r->conns);
	if (r->events)
		r->ops->watch (r->ctx, r->fd, 0);
	free (r->by_fd);
	free (r->rbuf);
	free (r->out);
	free (r);
}

void
ab_mux_relay_send_hello (ab_mux_relay_t *r)
{
	r->out_len += ab_mux_put_hello (out_reserve (r, AB_MUX_HEADER + 8));
	flush_out (r);
	sync_interest (r);
}

int
ab_mux_relay_add (ab_mux_relay_t *r, int fd, ab_error_t *err)
{
	if (r->n_conns >= AB_MUX_MAX_CONNS || r->last_id == UINT32_MAX) {
		close (fd);
		return ab_error (err, 0, AB_E_LIMIT, "too many connections to the agent");
	}
	new_conn (r, ++r->last_id, fd);
	queue_control (r, AB_MUX_OPEN, r->last_id);
	flush_out (r);
	sync_interest (r);
	return 0;
}

void
ab_mux_relay_event (ab_mux_relay_t *r, int fd, unsigned events)
{
	struct conn_s *c;

	if (r->failed[0])
		return;
	if (fd == r->fd) {
		if (events & (AB_MUX_EV_IN | AB_MUX_EV_HUP))
			read_stream (r);
	} else if ((size_t)fd < r->by_fd_cap && (c = r->by_fd[fd])) {
		if ((events & (AB_MUX_EV_OUT | AB_MUX_EV_HUP)) && !write_conn (r, c))
			c = NULL;
		if (c && (events & (AB_MUX_EV_IN | AB_MUX_EV_HUP)))
			read_conn (r, c);
		/* A hangup once its last bytes are read: nobody is left to
		 * take what the peer still sends. */
		if (c && (c = r->by_fd[fd]) && (events & AB_MUX_EV_HUP) && c->local_eof
		    && !c->shut_wr)
			abort_conn (r, c);
	}
	flush_out (r);
	sync_interest (r);
}

void
ab_mux_relay_flush (ab_mux_relay_t *r, int timeout_ms)
{
	struct pollfd p = { .fd = r->fd, .events = POLLOUT };

	flush_out (r);
	while (out_pending (r) > 0 && !r->failed[0] && poll (&p, 1, timeout_ms) == 1)
		flush_out (r);
}

const char *
ab_mux_relay_failed (const ab_mux_relay_t *r)
{
	return r->failed[0] ? r->failed : NULL;
}

size_t
ab_mux_relay_conns (const ab_mux_relay_t *r)
{
	return r->n_conns;
}
