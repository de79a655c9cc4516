/* The relay's request/response pump: the rewritten request head goes up,
 * then the request body as it arrives; the response head is parsed,
 * rewritten (hop-by-hop and framing fields regenerated, never copied: the
 * next hop reads exactly the message we read) and sent down, then the
 * response body as it arrives.  Neither body is ever held whole: each
 * direction holds at most one I/O chunk, and a slow reader stops the reads
 * on the other side (back-pressure).  Between plain sockets, the rest of a
 * big Content-Length (or until-close) body moves with splice(2) through a
 * pipe, without being copied through user space.  The client connection
 * stays open between requests (RFC 9112 9.3), and so does the upstream one
 * while the service says it may be reused.
 *
 * The byte relays at the bottom also carry the egress proxy's CONNECT
 * tunnels. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/http-relay.h"
#include "net/relay.h"

/* take_response_bytes: the head is not complete yet. */
#define NEED_MORE 3

/* RFC 9110 9.2.2 (CONNECT is never forwarded this way). */
static bool
idempotent_method (const char *s, size_t len)
{
	static const char *const names[] = { "get", "head", "options", "trace", "put", "delete" };

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (ab_http_token_eq (s, len, names[i]))
			return true;
	return false;
}

void
ab_relay_forward_begin (struct ab_relay_conn_s *c, const struct ab_http_head_s *h)
{
	struct ab_relay_msg_s *m = &c->m;

	m->req_body = h->body;
	m->req_remaining = h->content_length;
	m->req_done = h->body == AB_HTTP_BODY_NONE
	              || (h->body == AB_HTTP_BODY_LENGTH && h->content_length == 0);
	if (h->body == AB_HTTP_BODY_CHUNKED)
		ab_http_chunked_init (&m->req_chunked);
	m->resp_phase = AB_RELAY_RESP_HEAD;
	m->idempotent = m->req_done && idempotent_method (h->method, h->method_len);
	ab_iobuf_wipe (&c->replay);
}

void
ab_relay_forward_reused (struct ab_relay_conn_s *c)
{
	if (!c->m.idempotent || c->m.retried || c->relay->ops->redial == NULL)
		return;
	ab_iobuf_wipe (&c->replay);
	ab_iobuf_append (&c->replay, ab_iobuf_peek (&c->uout), ab_iobuf_len (&c->uout));
}

/* The reused upstream failed before any byte of an answer: send the head
 * again on a new one, once (*step: the redial's step result).  False
 * when this failure is not that case. */
static bool
retry_unanswered (struct ab_relay_conn_s *c, int *step)
{
	struct ab_relay_msg_s *m = &c->m;

	if (ab_iobuf_len (&c->replay) == 0 || m->retried || m->resp_started
	    || m->resp_phase != AB_RELAY_RESP_HEAD || ab_iobuf_len (&c->uin) > 0)
		return false;
	m->retried = true;
	c->relay->ops->close_upstream (c);
	ab_iobuf_wipe (&c->uout);
	c->uout = c->replay;
	memset (&c->replay, 0, sizeof c->replay);
	c->replay.secret = true;
	m->resp_scan = 0;
	*step = c->relay->ops->redial (c);
	return true;
}

/* Whether both ends are plain fds the service lets us splice between. */
static bool
splice_ok (const struct ab_relay_conn_s *c)
{
	return c->relay->ops->splice && !c->no_splice && c->us->ssl == NULL && c->cs.ssl == NULL;
}

/* writev our own bytes, then n payload bytes at p; returns how many
 * payload bytes went out, or -1 with errno. */
static ssize_t
send_pair (struct ab_relay_conn_s *c, struct ab_stream_s *s, struct ab_iobuf_s *ours, const char *p,
           size_t n)
{
	size_t pre = ab_iobuf_len (ours);
	ssize_t w = ab_relay_writev2 (c->relay, s, ours, p, n);
	size_t k;

	if (w < 0)
		return -1;
	k = (size_t)w < pre ? (size_t)w : pre;
	ab_iobuf_consume (ours, k);
	return w - (ssize_t)k;
}

static int
yield (struct ab_relay_conn_s *c)
{
	ab_relay_conn_yield (c);
	return AB_RELAY_WAIT;
}

/* ---- client -> upstream --------------------------------------------------- */

/* The rest of a Content-Length request body, spliced client -> upstream. */
static int
splice_request (struct ab_relay_conn_s *c)
{
	struct ab_relay_msg_s *m = &c->m;
	struct ab_relay_dir_s *d = &c->d_cu;
	uint64_t left = m->req_remaining;
	const struct ab_relay_io_s io = {
		"client->upstream", &c->cs, c->us, NULL, NULL, &m->bytes_up, &left,
	};
	int r;

	if (!ab_relay_body_pipe_open (c->relay, d))
		return AB_RELAY_NOSPLICE;
	r = ab_relay_io_step (c, d, &io);
	m->req_remaining = left;
	if (r == AB_RELAY_CLOSE)
		return ab_relay_fail (c, AB_RELAY_FAIL_LOST, 0, m->error);
	if (r == AB_RELAY_NOSPLICE)
		return r;
	if (d->in_pipe == 0 && left == 0)
		m->req_done = true;
	else if (d->in_pipe == 0 && d->eof)
		return ab_relay_fail (c, AB_RELAY_FAIL_LOST, 0,
		                      "client closed during the request body");
	return AB_RELAY_WAIT;
}

static bool
can_splice_request (const struct ab_relay_conn_s *c)
{
	const struct ab_relay_msg_s *m = &c->m;

	return splice_ok (c) && m->req_body == AB_HTTP_BODY_LENGTH && !m->req_done
	       && ab_iobuf_len (&c->uout) == 0 && ab_iobuf_len (&c->cin) == 0
	       && (c->d_cu.pipe[0] >= 0 || m->req_remaining >= AB_RELAY_SPLICE_MIN);
}

/* Client -> upstream: the rewritten head, then the body. */
static int
pump_request (struct ab_relay_conn_s *c)
{
	struct ab_relay_msg_s *m = &c->m;
	size_t chunk = c->relay->ops->io_chunk;
	struct ab_http_error_s e;
	int budget = AB_RELAY_BUDGET;

	for (;;) {
		ssize_t n;

		if (m->cin_ready == 0 && !m->req_done && ab_iobuf_len (&c->cin) > 0) {
			n = ab_http_frame_take (m->req_body, &m->req_remaining, &m->req_chunked,
			                        ab_iobuf_peek (&c->cin), ab_iobuf_len (&c->cin),
			                        &m->req_done, &e);
			if (n < 0)
				return ab_relay_fail (c, AB_RELAY_FAIL_CLIENT, 400, e.reason);
			m->cin_ready = (size_t)n;
		}
		if (ab_iobuf_len (&c->uout) > 0 || m->cin_ready > 0) {
			if (!ab_stream_can_write (c->us))
				return AB_RELAY_WAIT;
			n = send_pair (c, c->us, &c->uout, ab_iobuf_peek (&c->cin), m->cin_ready);
			if (n < 0 && errno == EAGAIN)
				return AB_RELAY_WAIT;
			if (n < 0) {
				int r;
				return retry_unanswered (c, &r)
				               ? r
				               : ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502,
				                                "upstream write failed");
			}
			ab_iobuf_consume (&c->cin, (size_t)n);
			m->cin_ready -= (size_t)n;
			m->bytes_up += (size_t)n;
			c->t_last = ab_relay_now_us ();
			if (--budget == 0)
				return yield (c);
			continue;
		}
		if (m->req_done)
			return AB_RELAY_WAIT;
		if (can_splice_request (c)) {
			int r = splice_request (c);
			if (r != AB_RELAY_NOSPLICE)
				return r;
			c->no_splice = true;
		}
		if (!c->cs.rd)
			return AB_RELAY_WAIT;
		n = ab_relay_read (c->relay, &c->cs, &c->cin, chunk, chunk, c->c_hup);
		if (n > 0) {
			c->t_last = ab_relay_now_us ();
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return AB_RELAY_WAIT;
		return ab_relay_fail (c, AB_RELAY_FAIL_LOST, 0,
		                      "client closed during the request body");
	}
}

/* ---- upstream -> client --------------------------------------------------- */

static int
bad_response (struct ab_relay_conn_s *c, const char *reason)
{
	char why[AB_RELAY_ERROR_MAX];

	snprintf (why, sizeof why, "bad response from upstream: %s", reason);
	return ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502, why);
}

static int
response_head (struct ab_relay_conn_s *c, size_t len)
{
	struct ab_relay_s *r = c->relay;
	struct ab_relay_msg_s *m = &c->m;
	struct ab_http_head_s h = { .fields = r->fields };
	struct ab_http_error_s e;

	if (ab_http_parse_response (ab_iobuf_peek (&c->uin), len, &r->http_limits, m->is_head, &h,
	                            &e)
	    < 0)
		return bad_response (c, e.reason);
	/* Upgrade was not forwarded, so a switch is a protocol error, and 1xx
	 * are not sent to HTTP/1.0 clients (RFC 9110 15.2). */
	if (h.status == 101)
		return ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502,
		                      "upstream switched protocols");
	if (h.status < 200) {
		if (m->version_minor >= 1) {
			ab_http_append_response_head (&c->cout, &h, m->client_close);
			m->resp_started = true;
		}
		ab_iobuf_consume (&c->uin, len);
		m->resp_scan = 0;
		return 0;
	}
	if (m->version_minor == 0 && h.body == AB_HTTP_BODY_CHUNKED)
		return ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502,
		                      "chunked response to an HTTP/1.0 request");
	if (h.body == AB_HTTP_BODY_UNTIL_CLOSE)
		m->client_close = true;
	m->upstream_close = h.conn_close || (h.version_minor == 0 && !h.conn_keep_alive)
	                    || h.body == AB_HTTP_BODY_UNTIL_CLOSE;
	m->status = h.status;
	ab_http_append_response_head (&c->cout, &h, m->client_close);
	ab_iobuf_consume (&c->uin, len);
	m->resp_scan = 0;
	m->resp_started = true;
	m->resp_body = h.body;
	m->resp_remaining = h.content_length;
	if (h.body == AB_HTTP_BODY_CHUNKED)
		ab_http_chunked_init (&m->resp_chunked);
	m->resp_phase = (h.body == AB_HTTP_BODY_NONE
	                 || (h.body == AB_HTTP_BODY_LENGTH && h.content_length == 0))
	                        ? AB_RELAY_RESP_DONE
	                        : AB_RELAY_RESP_BODY;
	return 0;
}

static int
upstream_eof (struct ab_relay_conn_s *c)
{
	struct ab_relay_msg_s *m = &c->m;

	if (m->resp_phase == AB_RELAY_RESP_HEAD) {
		int r;
		return retry_unanswered (c, &r) ? r
		                                : ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502,
		                                                 "upstream closed the connection");
	}
	if (m->resp_body == AB_HTTP_BODY_UNTIL_CLOSE) {
		m->resp_phase = AB_RELAY_RESP_DONE;
		m->upstream_close = true;
		return AB_RELAY_AGAIN;
	}
	return ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502,
	                      "upstream closed during the response");
}

/* Parse or frame what uin holds; 0 to go on, NEED_MORE, else a step result. */
static int
take_response_bytes (struct ab_relay_conn_s *c)
{
	struct ab_relay_msg_s *m = &c->m;
	struct ab_http_error_s e;
	bool done = false;
	ssize_t n;

	if (m->resp_phase == AB_RELAY_RESP_HEAD) {
		n = ab_http_head_end (ab_iobuf_peek (&c->uin), ab_iobuf_len (&c->uin),
		                      &m->resp_scan, &c->relay->http_limits, &e);
		if (n < 0)
			return bad_response (c, e.reason);
		if (n == 0)
			return NEED_MORE;
		return response_head (c, (size_t)n);
	}
	n = ab_http_frame_take (m->resp_body, &m->resp_remaining, &m->resp_chunked,
	                        ab_iobuf_peek (&c->uin), ab_iobuf_len (&c->uin), &done, &e);
	if (n < 0)
		return ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502, e.reason);
	m->uin_ready = (size_t)n;
	if (done) {
		m->resp_phase = AB_RELAY_RESP_DONE;
		/* Bytes after the response's end: the upstream is out of step. */
		if (ab_iobuf_len (&c->uin) > m->uin_ready)
			m->upstream_close = true;
	}
	return 0;
}

/* The rest of a Content-Length (or until-close) response body, spliced
 * upstream -> client. */
static int
splice_response (struct ab_relay_conn_s *c)
{
	struct ab_relay_msg_s *m = &c->m;
	struct ab_relay_dir_s *d = &c->d_uc;
	bool by_length = m->resp_body == AB_HTTP_BODY_LENGTH;
	uint64_t left = by_length ? m->resp_remaining : UINT64_MAX;
	const struct ab_relay_io_s io = {
		"upstream->client", c->us, &c->cs, NULL, NULL, &m->bytes_down, &left,
	};
	int r;

	if (!ab_relay_body_pipe_open (c->relay, d))
		return AB_RELAY_NOSPLICE;
	r = ab_relay_io_step (c, d, &io);
	if (by_length)
		m->resp_remaining = left;
	if (r == AB_RELAY_CLOSE)
		return ab_relay_fail (c, AB_RELAY_FAIL_LOST, 0, m->error);
	if (r == AB_RELAY_NOSPLICE)
		return r;
	if (d->in_pipe > 0)
		return AB_RELAY_WAIT;
	if (by_length && left == 0) {
		m->resp_phase = AB_RELAY_RESP_DONE;
		return AB_RELAY_AGAIN;
	}
	if (d->eof) {
		if (by_length)
			return ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502,
			                      "upstream closed during the response");
		m->resp_phase = AB_RELAY_RESP_DONE;
		m->upstream_close = true;
		return AB_RELAY_AGAIN;
	}
	return AB_RELAY_WAIT;
}

static bool
can_splice_response (const struct ab_relay_conn_s *c)
{
	const struct ab_relay_msg_s *m = &c->m;

	if (!splice_ok (c) || m->resp_phase != AB_RELAY_RESP_BODY || ab_iobuf_len (&c->uin) > 0)
		return false;
	if (c->d_uc.pipe[0] >= 0)
		return true;
	return (m->resp_body == AB_HTTP_BODY_LENGTH && m->resp_remaining >= AB_RELAY_SPLICE_MIN)
	       || m->resp_body == AB_HTTP_BODY_UNTIL_CLOSE;
}

/* Read from upstream into uin; a step result, or 0 to go on. */
static int
read_response (struct ab_relay_conn_s *c)
{
	const struct ab_relay_ops_s *ops = c->relay->ops;
	struct ab_relay_msg_s *m = &c->m;
	size_t max_in = c->relay->http_limits.max_head > ops->io_chunk
	                        ? c->relay->http_limits.max_head
	                        : ops->io_chunk;
	/* Where bodies are spliced, a small first read for the head: body
	 * bytes read with it are copied twice, the rest is spliced. */
	size_t want = ops->splice && m->resp_phase == AB_RELAY_RESP_HEAD ? 4096 : ops->io_chunk;
	ssize_t n = ab_relay_read (c->relay, c->us, &c->uin, want, max_in,
	                           ops->upstream_hup ? c->u_hup : true);
	char why[AB_RELAY_ERROR_MAX];
	int r;

	if (n > 0) {
		c->t_last = ab_relay_now_us ();
		return 0;
	}
	if (n < 0 && errno == EAGAIN)
		return AB_RELAY_WAIT;
	/* A plain socket's error ends the stream like its EOF; a TLS error
	 * is no end of anything (truncation). */
	if (n == 0 || c->us->ssl == NULL)
		return upstream_eof (c);
	snprintf (why, sizeof why, "upstream read failed: %s", strerror (errno));
	if (retry_unanswered (c, &r))
		return r;
	return ab_relay_fail (c, AB_RELAY_FAIL_UPSTREAM, 502, why);
}

/* Upstream -> client: the rewritten head, then the body. */
static int
pump_response (struct ab_relay_conn_s *c)
{
	struct ab_relay_msg_s *m = &c->m;
	int budget = AB_RELAY_BUDGET;

	for (;;) {
		ssize_t n;
		int r;

		/* Parse and frame what was read before writing anything, so a
		 * response head goes out with the body bytes read with it: one
		 * write and one segment, not two. */
		if (m->uin_ready == 0 && m->resp_phase != AB_RELAY_RESP_DONE
		    && ab_iobuf_len (&c->uin) > 0) {
			r = take_response_bytes (c);
			if (r == 0)
				continue;
			if (r != NEED_MORE)
				return r;
		}
		if (ab_iobuf_len (&c->cout) > 0 || m->uin_ready > 0) {
			if (!c->cs.wr)
				return AB_RELAY_WAIT;
			n = send_pair (c, &c->cs, &c->cout, ab_iobuf_peek (&c->uin), m->uin_ready);
			if (n < 0)
				return errno == EAGAIN ? AB_RELAY_WAIT
				                       : ab_relay_fail (c, AB_RELAY_FAIL_LOST, 0,
				                                        "client write failed");
			ab_iobuf_consume (&c->uin, (size_t)n);
			m->uin_ready -= (size_t)n;
			m->bytes_down += (size_t)n;
			c->t_last = ab_relay_now_us ();
			if (--budget == 0)
				return yield (c);
			continue;
		}
		if (m->resp_phase == AB_RELAY_RESP_DONE)
			return AB_RELAY_WAIT;
		if (can_splice_response (c)) {
			r = splice_response (c);
			if (r == AB_RELAY_AGAIN)
				continue;
			if (r != AB_RELAY_NOSPLICE)
				return r;
			c->no_splice = true;
		}
		if (!ab_stream_can_read (c->us))
			return AB_RELAY_WAIT;
		r = read_response (c);
		if (r != 0)
			return r;
	}
}

static int
complete (struct ab_relay_conn_s *c)
{
	const struct ab_relay_ops_s *ops = c->relay->ops;
	struct ab_relay_msg_s *m = &c->m;

	if (ops->done)
		ops->done (c);
	if (!m->req_done) {
		/* The response ended before the request body: the rest of the
		 * body would be read as the next request. */
		m->client_close = true;
		m->upstream_close = true;
	}
	if (m->upstream_close || ab_iobuf_len (&c->uin) > 0) {
		ops->close_upstream (c);
	} else {
		c->up_idle = true;
		ab_iobuf_free (&c->uin);
	}
	ab_iobuf_wipe (&c->uout);
	ab_iobuf_wipe (&c->replay);
	ab_iobuf_free (&c->cout);
	/* Pipes are per body, not per connection: an idle keep-alive client
	 * holds one descriptor, not five. */
	ab_relay_dirs_release (c);
	if (m->client_close) {
		if (c->us != NULL)
			ops->close_upstream (c);
		ab_iobuf_free (&c->cin);
		c->state = AB_RELAY_ST_CLOSING;
		c->t_phase = ab_relay_now_us ();
		return AB_RELAY_AGAIN;
	}
	ab_iobuf_trim (&c->cin);
	c->state = AB_RELAY_ST_HEAD;
	c->t_last = ab_relay_now_us ();
	return AB_RELAY_AGAIN;
}

int
ab_relay_forward_step (struct ab_relay_conn_s *c)
{
	struct ab_relay_msg_s *m = &c->m;
	int r = pump_request (c);

	if (r != AB_RELAY_WAIT || c->state != AB_RELAY_ST_FORWARD)
		return r;
	r = pump_response (c);
	if (r != AB_RELAY_WAIT || c->state != AB_RELAY_ST_FORWARD)
		return r;
	if (m->resp_phase == AB_RELAY_RESP_DONE && ab_iobuf_len (&c->cout) == 0
	    && m->uin_ready == 0)
		return complete (c);
	return AB_RELAY_WAIT;
}

/* ---- byte relays ---------------------------------------------------------- */

bool
ab_relay_dir_open (struct ab_relay_dir_s *d)
{
	if (d->pipe[0] >= 0)
		return true;
	d->body = false;
	d->splice = pipe2 (d->pipe, O_NONBLOCK | O_CLOEXEC) == 0;
	if (!d->splice)
		d->pipe[0] = d->pipe[1] = -1;
	return d->splice;
}

bool
ab_relay_body_pipe_open (struct ab_relay_s *r, struct ab_relay_dir_s *d)
{
	if (d->pipe[0] >= 0)
		return true;
	if (r->n_pipe_pool > 0) {
		r->n_pipe_pool--;
		d->pipe[0] = r->pipe_pool[r->n_pipe_pool].fd[0];
		d->pipe[1] = r->pipe_pool[r->n_pipe_pool].fd[1];
		d->splice = true;
	} else if (!ab_relay_dir_open (d)) {
		return false;
	}
	d->body = true;
	return true;
}

void
ab_relay_dir_close (struct ab_relay_dir_s *d)
{
	for (int i = 0; i < 2; i++) {
		if (d->pipe[i] >= 0)
			close (d->pipe[i]);
		d->pipe[i] = -1;
	}
	d->in_pipe = 0;
	d->body = false;
	d->eof = d->shut = false;
}

/* Keep d's pipe for another body if it is a body pipe and provably empty:
 * a byte left in it would reach another connection's peer. */
static void
dir_release (struct ab_relay_s *r, struct ab_relay_dir_s *d)
{
	int queued = -1;

	if (d->pipe[0] >= 0 && d->body && d->splice && d->in_pipe == 0
	    && r->n_pipe_pool < AB_RELAY_PIPE_POOL && ioctl (d->pipe[0], FIONREAD, &queued) == 0
	    && queued == 0) {
		r->pipe_pool[r->n_pipe_pool].fd[0] = d->pipe[0];
		r->pipe_pool[r->n_pipe_pool].fd[1] = d->pipe[1];
		r->n_pipe_pool++;
		d->pipe[0] = d->pipe[1] = -1;
	}
	ab_relay_dir_close (d);
}

void
ab_relay_dirs_release (struct ab_relay_conn_s *c)
{
	dir_release (c->relay, &c->d_cu);
	dir_release (c->relay, &c->d_uc);
}

void
ab_relay_pipe_pool_drain (struct ab_relay_s *r)
{
	while (r->n_pipe_pool > 0) {
		r->n_pipe_pool--;
		close (r->pipe_pool[r->n_pipe_pool].fd[0]);
		close (r->pipe_pool[r->n_pipe_pool].fd[1]);
	}
}

static int
io_fail (struct ab_relay_conn_s *c, const struct ab_relay_io_s *io, const char *what)
{
	snprintf (c->m.error, sizeof c->m.error, "%s %s: %s", io->name, what, strerror (errno));
	return AB_RELAY_CLOSE;
}

/* Write what is buffered (our prefix, then payload). */
static int
io_flush (struct ab_relay_conn_s *c, const struct ab_relay_io_s *io)
{
	size_t pre = io->pre ? ab_iobuf_len (io->pre) : 0;
	ssize_t n = ab_relay_writev2 (c->relay, io->dst, io->pre, ab_iobuf_peek (io->buf),
	                              ab_iobuf_len (io->buf));

	if (n < 0 && errno == EAGAIN)
		return AB_RELAY_WAIT;
	if (n < 0)
		return io_fail (c, io, "write");
	if (pre > 0) {
		size_t k = (size_t)n < pre ? (size_t)n : pre;
		ab_iobuf_consume (io->pre, k);
		n -= (ssize_t)k;
	}
	ab_iobuf_consume (io->buf, (size_t)n);
	*io->count += (uint64_t)n;
	return AB_RELAY_AGAIN;
}

/* Pipe -> dst. */
static int
io_drain_pipe (struct ab_relay_conn_s *c, struct ab_relay_dir_s *d, const struct ab_relay_io_s *io)
{
	ssize_t n;

	ab_relay_sigpipe_guard (c->relay);
	n = splice (d->pipe[0], NULL, io->dst->fd, NULL, d->in_pipe,
	            SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

	if (n < 0 && errno == EAGAIN) {
		io->dst->wr = false;
		return AB_RELAY_WAIT;
	}
	if (n <= 0) {
		c->relay->epipe = true;
		return io_fail (c, io, "splice out");
	}
	d->in_pipe -= (size_t)n;
	*io->count += (uint64_t)n;
	return AB_RELAY_AGAIN;
}

/* src -> pipe (or buffer).  Called with the pipe empty, so EAGAIN can only
 * mean src has nothing: a partly full pipe could also say EAGAIN and hide
 * a readable socket from us, and with edge-triggered events that socket
 * would never be looked at again. */
static int
io_fill (struct ab_relay_conn_s *c, struct ab_relay_dir_s *d, const struct ab_relay_io_s *io)
{
	size_t chunk = c->relay->ops->io_chunk;
	size_t want = chunk;
	ssize_t n;

	if (io->left && *io->left < want)
		want = (size_t)*io->left;
	if (d->splice) {
		n = splice (io->src->fd, NULL, d->pipe[1], NULL, want,
		            SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0 && (errno == EINVAL || errno == ENOSYS)) {
			/* Not spliceable: copy instead, if this relay can. */
			d->splice = false;
			return io->buf ? AB_RELAY_AGAIN : AB_RELAY_NOSPLICE;
		}
		if (n > 0)
			d->in_pipe += (size_t)n;
	} else {
		n = ab_iobuf_read (io->buf, io->src->fd, want, chunk);
	}
	if (n < 0 && errno == EAGAIN) {
		io->src->rd = false;
		return AB_RELAY_WAIT;
	}
	if (n < 0)
		return io_fail (c, io, "read");
	if (n == 0)
		d->eof = true;
	else if (io->left)
		*io->left -= (uint64_t)n;
	return AB_RELAY_AGAIN;
}

int
ab_relay_io_step (struct ab_relay_conn_s *c, struct ab_relay_dir_s *d,
                  const struct ab_relay_io_s *io)
{
	for (int budget = AB_RELAY_BUDGET;; budget--) {
		bool buffered = (io->pre && ab_iobuf_len (io->pre) > 0)
		                || (io->buf && ab_iobuf_len (io->buf) > 0);
		int r;

		if (budget == 0)
			return yield (c);
		if (buffered || d->in_pipe > 0) {
			if (!io->dst->wr)
				return AB_RELAY_WAIT;
			r = buffered ? io_flush (c, io) : io_drain_pipe (c, d, io);
		} else if (d->eof || (io->left && *io->left == 0)) {
			return AB_RELAY_WAIT; /* all moved; the caller decides what is next */
		} else if (!io->src->rd) {
			return AB_RELAY_WAIT;
		} else {
			r = io_fill (c, d, io);
		}
		if (r != AB_RELAY_AGAIN)
			return r;
		c->t_last = ab_relay_now_us ();
	}
}
