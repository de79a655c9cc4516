/* Absolute-URI requests ("GET http://host/path HTTP/1.1"): the request goes
 * upstream in origin form with Host from the URL and hop-by-hop fields
 * removed; the response comes back with hop-by-hop fields removed; both
 * bodies stream through with their framing checked byte by byte
 * (http-head.h), and the framing fields are regenerated from what the
 * parser understood, never copied, so the next hop reads exactly the
 * message we read.  The client connection stays open between requests
 * (RFC 9112 9.3), and so does the upstream one while the client keeps
 * asking the same host and port. */
#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/egress-internal.h"
#include "net/http-relay.h"

int
ab_egress_forward_prepare (struct ab_egress_conn_s *c, const struct ab_http_head_s *h,
                           const char *path, size_t path_len)
{
	struct ab_egress_req_s *rq = &c->rq;
	const struct ab_hostport_s *hp = &rq->hp;
	struct ab_iobuf_s *b = &c->uout;

	ab_iobuf_free (b);
	ab_iobuf_printf (b, "%s %s%.*s HTTP/1.%d\r\n", rq->method,
	                 path_len == 0 || path[0] == '?' ? "/" : "", (int)path_len, path,
	                 h->version_minor);
	/* RFC 9112 3.2.2: a proxy replaces Host with the target URI's authority. */
	ab_iobuf_printf (b, hp->kind == AB_HOST_IPV6 ? "Host: [%s]" : "Host: %s", hp->host);
	if (hp->port != 80)
		ab_iobuf_printf (b, ":%u", (unsigned)hp->port);
	ab_iobuf_append (b, "\r\n", 2);
	ab_http_append_fields (b, h, AB_HTTP_F_HOP | AB_HTTP_F_HOST | AB_HTTP_F_FRAMING);
	ab_http_append_framing (b, h->body, h->has_content_length, h->content_length);
	ab_iobuf_append (b, "\r\n", 2);

	rq->req_body = h->body;
	rq->req_remaining = h->content_length;
	rq->req_done = h->body == AB_HTTP_BODY_NONE
	               || (h->body == AB_HTTP_BODY_LENGTH && h->content_length == 0);
	if (h->body == AB_HTTP_BODY_CHUNKED)
		ab_http_chunked_init (&rq->req_chunked);
	/* HTTP/1.0 clients get one response per connection. */
	rq->client_close = h->conn_close || h->version_minor == 0;
	rq->resp_phase = AB_EG_RESP_HEAD;
	return 0;
}

/* writev our own bytes, then n payload bytes at p; returns how many
 * payload bytes went out, or -1 with errno (EAGAIN clears *wr). */
static ssize_t
send_pair (int fd, struct ab_iobuf_s *ours, const char *p, size_t n, bool *wr)
{
	size_t pre = ab_iobuf_len (ours);
	ssize_t w = ab_egress_writev2 (fd, ours, p, n);
	size_t k;

	if (w < 0) {
		if (errno == EAGAIN)
			*wr = false;
		return -1;
	}
	k = (size_t)w < pre ? (size_t)w : pre;
	ab_iobuf_consume (ours, k);
	return w - (ssize_t)k;
}

static int
abort_request (struct ab_egress_conn_s *c, const char *why)
{
	if (why != c->rq.error)
		snprintf (c->rq.error, sizeof c->rq.error, "%s", why);
	ab_egress_audit_done (c);
	return AB_EG_CLOSE;
}

/* The rest of a Content-Length request body, spliced client -> upstream. */
static int
splice_request (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;
	struct ab_egress_dir_s *d = &c->t_cu;
	uint64_t left = rq->req_remaining;
	const struct ab_egress_relay_s io = {
		"client->upstream", c->cfd, c->ufd, &c->c_rd, &c->u_wr, NULL, NULL,
		&rq->bytes_up,      &left
	};
	int r;

	if (!ab_egress_dir_open (d))
		return AB_EG_NOSPLICE;
	r = ab_egress_relay_step (c, d, &io);
	rq->req_remaining = left;
	if (r == AB_EG_NOSPLICE || r == AB_EG_CLOSE)
		return r == AB_EG_CLOSE ? abort_request (c, c->rq.error) : r;
	if (d->in_pipe == 0 && left == 0)
		rq->req_done = true;
	else if (d->in_pipe == 0 && d->eof)
		return abort_request (c, "client closed during the request body");
	return AB_EG_WAIT;
}

static bool
can_splice_request (const struct ab_egress_conn_s *c)
{
	const struct ab_egress_req_s *rq = &c->rq;

	return !c->no_splice && rq->req_body == AB_HTTP_BODY_LENGTH && !rq->req_done
	       && ab_iobuf_len (&c->uout) == 0 && ab_iobuf_len (&c->cin) == 0
	       && (c->t_cu.pipe[0] >= 0 || rq->req_remaining >= AB_EG_SPLICE_MIN);
}

/* Client -> upstream: the rewritten head, then the body. */
static int
pump_request (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;
	struct ab_http_error_s e;
	int budget = AB_EG_BUDGET;

	for (;;) {
		ssize_t n;

		if (rq->cin_ready == 0 && !rq->req_done && ab_iobuf_len (&c->cin) > 0) {
			n = ab_http_frame_take (rq->req_body, &rq->req_remaining, &rq->req_chunked,
			                        ab_iobuf_peek (&c->cin), ab_iobuf_len (&c->cin),
			                        &rq->req_done, &e);
			if (n < 0)
				return ab_egress_refuse (c, 400, true, e.reason);
			rq->cin_ready = (size_t)n;
		}
		if (ab_iobuf_len (&c->uout) > 0 || rq->cin_ready > 0) {
			if (!c->u_wr)
				return AB_EG_WAIT;
			n = send_pair (c->ufd, &c->uout, ab_iobuf_peek (&c->cin), rq->cin_ready,
			               &c->u_wr);
			if (n < 0)
				return errno == EAGAIN ? AB_EG_WAIT
				                       : ab_egress_refuse (c, 502, false,
				                                           "upstream write failed");
			ab_iobuf_consume (&c->cin, (size_t)n);
			rq->cin_ready -= (size_t)n;
			rq->bytes_up += (size_t)n;
			c->t_last = ab_egress_now_us ();
			if (--budget == 0) {
				ab_egress_conn_yield (c);
				return AB_EG_WAIT;
			}
			continue;
		}
		if (rq->req_done)
			return AB_EG_WAIT;
		if (can_splice_request (c)) {
			int r = splice_request (c);
			if (r != AB_EG_NOSPLICE)
				return r;
			c->no_splice = true;
		}
		if (!c->c_rd)
			return AB_EG_WAIT;
		n = ab_egress_read (&c->cin, c->cfd, AB_EG_IO_CHUNK, AB_EG_IO_CHUNK, &c->c_rd,
		                    c->c_hup);
		if (n > 0) {
			c->t_last = ab_egress_now_us ();
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return AB_EG_WAIT;
		return abort_request (c, "client closed during the request body");
	}
}

static int
response_head (struct ab_egress_conn_s *c, size_t len)
{
	struct ab_egress_req_s *rq = &c->rq;
	struct ab_http_head_s h = { .fields = c->proxy->fields };
	struct ab_http_error_s e;
	char why[160];

	if (ab_http_parse_response (ab_iobuf_peek (&c->uin), len, &c->proxy->http_limits,
	                            rq->is_head, &h, &e)
	    < 0) {
		snprintf (why, sizeof why, "bad response from upstream: %s", e.reason);
		return ab_egress_refuse (c, 502, false, why);
	}
	/* Upgrade was stripped from the request, so a switch is a protocol
	 * error, and 1xx are not sent to HTTP/1.0 clients (RFC 9110 15.2). */
	if (h.status == 101)
		return ab_egress_refuse (c, 502, false, "upstream switched protocols");
	if (h.status < 200) {
		if (rq->version_minor >= 1) {
			ab_http_append_response_head (&c->cout, &h, rq->client_close);
			rq->resp_started = true;
		}
		ab_iobuf_consume (&c->uin, len);
		rq->resp_scan = 0;
		return 0;
	}
	if (rq->version_minor == 0 && h.body == AB_HTTP_BODY_CHUNKED)
		return ab_egress_refuse (c, 502, false, "chunked response to an HTTP/1.0 request");
	if (h.body == AB_HTTP_BODY_UNTIL_CLOSE)
		rq->client_close = true;
	rq->upstream_close = h.conn_close || (h.version_minor == 0 && !h.conn_keep_alive)
	                     || h.body == AB_HTTP_BODY_UNTIL_CLOSE;
	rq->status = h.status;
	ab_http_append_response_head (&c->cout, &h, rq->client_close);
	ab_iobuf_consume (&c->uin, len);
	rq->resp_scan = 0;
	rq->resp_started = true;
	rq->resp_body = h.body;
	rq->resp_remaining = h.content_length;
	if (h.body == AB_HTTP_BODY_CHUNKED)
		ab_http_chunked_init (&rq->resp_chunked);
	rq->resp_phase = (h.body == AB_HTTP_BODY_NONE
	                  || (h.body == AB_HTTP_BODY_LENGTH && h.content_length == 0))
	                         ? AB_EG_RESP_DONE
	                         : AB_EG_RESP_BODY;
	return 0;
}

static int
upstream_eof (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;

	if (rq->resp_phase == AB_EG_RESP_HEAD)
		return ab_egress_refuse (c, 502, false, "upstream closed the connection");
	if (rq->resp_body == AB_HTTP_BODY_UNTIL_CLOSE) {
		rq->resp_phase = AB_EG_RESP_DONE;
		rq->upstream_close = true;
		return AB_EG_AGAIN;
	}
	return abort_request (c, "upstream closed during the response");
}

/* take_response_bytes: the head is not complete yet. */
#define NEED_MORE 2

/* Parse or frame what uin holds; 0 to go on, NEED_MORE, else a step result. */
static int
take_response_bytes (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;
	struct ab_http_error_s e;
	bool done = false;
	ssize_t n;

	if (rq->resp_phase == AB_EG_RESP_HEAD) {
		n = ab_http_head_end (ab_iobuf_peek (&c->uin), ab_iobuf_len (&c->uin),
		                      &rq->resp_scan, &c->proxy->http_limits, &e);
		if (n < 0) {
			char why[160];
			snprintf (why, sizeof why, "bad response from upstream: %s", e.reason);
			return ab_egress_refuse (c, 502, false, why);
		}
		if (n == 0)
			return NEED_MORE;
		return response_head (c, (size_t)n);
	}
	n = ab_http_frame_take (rq->resp_body, &rq->resp_remaining, &rq->resp_chunked,
	                        ab_iobuf_peek (&c->uin), ab_iobuf_len (&c->uin), &done, &e);
	if (n < 0)
		return abort_request (c, e.reason);
	rq->uin_ready = (size_t)n;
	if (done) {
		rq->resp_phase = AB_EG_RESP_DONE;
		/* Bytes after the response's end: the upstream is out of step. */
		if (ab_iobuf_len (&c->uin) > rq->uin_ready)
			rq->upstream_close = true;
	}
	return 0;
}

/* The rest of a Content-Length (or until-close) response body, spliced
 * upstream -> client. */
static int
splice_response (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;
	struct ab_egress_dir_s *d = &c->t_uc;
	bool by_length = rq->resp_body == AB_HTTP_BODY_LENGTH;
	uint64_t left = by_length ? rq->resp_remaining : UINT64_MAX;
	const struct ab_egress_relay_s io = {
		"upstream->client", c->ufd, c->cfd, &c->u_rd, &c->c_wr, NULL, NULL,
		&rq->bytes_down,    &left
	};
	int r;

	if (!ab_egress_dir_open (d))
		return AB_EG_NOSPLICE;
	r = ab_egress_relay_step (c, d, &io);
	if (by_length)
		rq->resp_remaining = left;
	if (r == AB_EG_NOSPLICE || r == AB_EG_CLOSE)
		return r == AB_EG_CLOSE ? abort_request (c, c->rq.error) : r;
	if (d->in_pipe > 0)
		return AB_EG_WAIT;
	if (by_length && left == 0) {
		rq->resp_phase = AB_EG_RESP_DONE;
		return AB_EG_AGAIN;
	}
	if (d->eof) {
		if (by_length)
			return abort_request (c, "upstream closed during the response");
		rq->resp_phase = AB_EG_RESP_DONE;
		rq->upstream_close = true;
		return AB_EG_AGAIN;
	}
	return AB_EG_WAIT;
}

static bool
can_splice_response (const struct ab_egress_conn_s *c)
{
	const struct ab_egress_req_s *rq = &c->rq;

	if (c->no_splice || rq->resp_phase != AB_EG_RESP_BODY || ab_iobuf_len (&c->uin) > 0)
		return false;
	if (c->t_uc.pipe[0] >= 0)
		return true;
	return (rq->resp_body == AB_HTTP_BODY_LENGTH && rq->resp_remaining >= AB_EG_SPLICE_MIN)
	       || rq->resp_body == AB_HTTP_BODY_UNTIL_CLOSE;
}

/* Upstream -> client: the rewritten head, then the body. */
static int
pump_response (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;
	size_t max_in = c->proxy->http_limits.max_head > AB_EG_IO_CHUNK
	                        ? c->proxy->http_limits.max_head
	                        : AB_EG_IO_CHUNK;
	int budget = AB_EG_BUDGET;

	for (;;) {
		ssize_t n;

		if (ab_iobuf_len (&c->cout) > 0 || rq->uin_ready > 0) {
			if (!c->c_wr)
				return AB_EG_WAIT;
			n = send_pair (c->cfd, &c->cout, ab_iobuf_peek (&c->uin), rq->uin_ready,
			               &c->c_wr);
			if (n < 0)
				return errno == EAGAIN ? AB_EG_WAIT
				                       : abort_request (c, "client write failed");
			ab_iobuf_consume (&c->uin, (size_t)n);
			rq->uin_ready -= (size_t)n;
			rq->bytes_down += (size_t)n;
			c->t_last = ab_egress_now_us ();
			if (--budget == 0) {
				ab_egress_conn_yield (c);
				return AB_EG_WAIT;
			}
			continue;
		}
		if (rq->resp_phase == AB_EG_RESP_DONE)
			return AB_EG_WAIT;
		if (can_splice_response (c)) {
			int r = splice_response (c);
			if (r == AB_EG_AGAIN)
				continue;
			if (r != AB_EG_NOSPLICE)
				return r;
			c->no_splice = true;
		}
		if (ab_iobuf_len (&c->uin) > 0) {
			int r = take_response_bytes (c);
			if (r == 0)
				continue;
			if (r != NEED_MORE)
				return r;
		}
		if (!c->u_rd)
			return AB_EG_WAIT;
		/* A small first read for the head: body bytes read with it are
		 * copied twice, the rest of a large body is spliced. */
		n = ab_egress_read (&c->uin, c->ufd,
		                    rq->resp_phase == AB_EG_RESP_HEAD ? 4096 : AB_EG_IO_CHUNK,
		                    max_in, &c->u_rd, c->u_hup);
		if (n > 0) {
			c->t_last = ab_egress_now_us ();
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return AB_EG_WAIT;
		return upstream_eof (c);
	}
}

static int
complete (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;

	ab_egress_audit_done (c);
	if (!rq->req_done) {
		/* The response ended before the request body: the rest of the
		 * body would be read as the next request. */
		rq->client_close = true;
		rq->upstream_close = true;
	}
	if (rq->upstream_close || ab_iobuf_len (&c->uin) > 0) {
		ab_egress_conn_close_upstream (c);
	} else {
		c->up_reusable = true;
		ab_iobuf_free (&c->uin);
	}
	ab_iobuf_free (&c->uout);
	ab_iobuf_free (&c->cout);
	/* Pipes are per body, not per connection: an idle keep-alive client
	 * holds one descriptor, not five. */
	ab_egress_tunnel_release (c);
	if (rq->client_close) {
		ab_egress_conn_close_upstream (c);
		ab_iobuf_free (&c->cin);
		c->state = AB_EG_ST_CLOSING;
		c->t_phase = ab_egress_now_us ();
		return AB_EG_AGAIN;
	}
	ab_iobuf_trim (&c->cin);
	c->state = AB_EG_ST_HEAD;
	c->t_last = ab_egress_now_us ();
	return AB_EG_AGAIN;
}

int
ab_egress_forward_step (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;
	int r = pump_request (c);

	if (r != AB_EG_WAIT || c->state != AB_EG_ST_FORWARD)
		return r;
	r = pump_response (c);
	if (r != AB_EG_WAIT || c->state != AB_EG_ST_FORWARD)
		return r;
	if (rq->resp_phase == AB_EG_RESP_DONE && ab_iobuf_len (&c->cout) == 0 && rq->uin_ready == 0)
		return complete (c);
	return AB_EG_WAIT;
}

void
ab_egress_forward_check_idle (struct ab_egress_conn_s *c)
{
	char b[512];
	ssize_t n;

	if (!c->u_rd)
		return;
	/* An idle upstream that speaks (or closes) is no longer usable. */
	n = read (c->ufd, b, sizeof b);
	if (n < 0 && errno == EAGAIN) {
		c->u_rd = false;
		return;
	}
	ab_egress_conn_close_upstream (c);
}
