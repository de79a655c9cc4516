/* Forwarding one request: set up (or reuse) the upstream connection, send
 * the rewritten head and stream the request body up as it arrives, parse
 * the response head, rewrite it, and stream the response body down as it
 * arrives.  Neither body is ever held whole: each direction holds at most
 * one I/O chunk, and a slow reader stops the reads on the other side
 * (back-pressure), so a server-sent-events stream reaches the client event
 * by event and an upload reaches the upstream chunk by chunk. */
#include <errno.h>
#include <string.h>

#include "net/credential-internal.h"
#include "net/http-relay.h"

/* take_response_bytes: the head is not complete yet. */
#define NEED_MORE 2

int
ab_cp_upstream_failed (struct ab_cp_conn_s *c)
{
	ab_cred_proxy_t *p = c->proxy;

	if (c->rq.resp_started)
		return AB_CP_CLOSE; /* all the client can learn now is an early end */
	if (p->cfg.log != NULL && c->ups != NULL) {
		fprintf (p->cfg.log, "upstream %s request failed\n", c->ups->name);
		fflush (p->cfg.log);
	}
	return ab_cp_answer (c, 502, "upstream request failed\n");
}

static bool
can_reuse (const struct ab_cp_conn_s *c)
{
	return c->up != NULL && c->up_idle && c->up_cfg == c->cfg && c->up_ups == c->ups;
}

int
ab_cp_forward_start (struct ab_cp_conn_s *c, const struct ab_http_head_s *h,
                     const struct ab_cp_target_s *t)
{
	struct ab_cp_req_s *rq = &c->rq;
	ab_error_t err = AB_ERROR_INIT;
	const char *proxy_auth = NULL;
	bool absolute;
	bool reuse = can_reuse (c);

	if (!reuse) {
		ab_cp_close_upstream (c);
		c->up = ab_http_client_new (&c->proxy->client_cfg, &c->ups->url,
		                            ab_cp_upstream_notify, c, &err);
		if (c->up == NULL)
			return ab_cp_upstream_failed (c);
		c->up_cfg = ab_cred_config_ref (c->cfg);
		c->up_ups = c->ups;
	}
	c->up_idle = false;
	absolute = ab_http_client_absolute_form (c->up, &proxy_auth);
	ab_iobuf_free (&c->uout);
	ab_cp_build_request (&c->uout, h, c->cfg, c->ups, t, absolute, proxy_auth);

	rq->req_body = h->body;
	rq->req_remaining = h->content_length;
	rq->req_done = h->body == AB_HTTP_BODY_NONE
	               || (h->body == AB_HTTP_BODY_LENGTH && h->content_length == 0);
	if (h->body == AB_HTTP_BODY_CHUNKED)
		ab_http_chunked_init (&rq->req_chunked);
	rq->resp_phase = AB_CP_RESP_HEAD;
	c->state = reuse ? AB_CP_ST_FORWARD : AB_CP_ST_CONNECT;
	c->t_phase = c->t_last = ab_cp_now_us ();
	return AB_CP_AGAIN;
}

int
ab_cp_connect_step (struct ab_cp_conn_s *c)
{
	ab_error_t err = AB_ERROR_INIT;
	int r = ab_http_client_connect_step (c->up, &err);

	if (r < 0)
		return ab_cp_upstream_failed (c);
	if (r == 0)
		return AB_CP_WAIT;
	c->us = ab_http_client_stream (c->up);
	c->state = AB_CP_ST_FORWARD;
	c->t_last = ab_cp_now_us ();
	return AB_CP_AGAIN;
}

/* Client -> upstream: the rewritten head, then the body as it comes. */
static int
pump_request (struct ab_cp_conn_s *c)
{
	struct ab_cp_req_s *rq = &c->rq;
	struct ab_http_error_s e;
	int budget = AB_CP_BUDGET;

	for (;;) {
		ssize_t n;

		if (rq->cin_ready == 0 && !rq->req_done && ab_iobuf_len (&c->cin) > 0) {
			n = ab_http_frame_take (rq->req_body, &rq->req_remaining, &rq->req_chunked,
			                        ab_iobuf_peek (&c->cin), ab_iobuf_len (&c->cin),
			                        &rq->req_done, &e);
			if (n < 0)
				return rq->resp_started
				               ? AB_CP_CLOSE
				               : ab_cp_answer (c, 400, "bad request body\n");
			rq->cin_ready = (size_t)n;
		}
		if (ab_iobuf_len (&c->uout) > 0 || rq->cin_ready > 0) {
			size_t head;
			if (!ab_stream_can_write (c->us))
				return AB_CP_WAIT;
			n = ab_stream_writev2 (c->us, &c->uout, ab_iobuf_peek (&c->cin),
			                       rq->cin_ready);
			if (n < 0 && errno == EAGAIN)
				return AB_CP_WAIT;
			if (n < 0)
				return ab_cp_upstream_failed (c);
			head = (size_t)n < ab_iobuf_len (&c->uout) ? (size_t)n
			                                           : ab_iobuf_len (&c->uout);
			ab_iobuf_consume (&c->uout, head);
			ab_iobuf_consume (&c->cin, (size_t)n - head);
			rq->cin_ready -= (size_t)n - head;
			c->t_last = ab_cp_now_us ();
			if (--budget == 0) {
				ab_cp_conn_yield (c);
				return AB_CP_WAIT;
			}
			continue;
		}
		if (rq->req_done || !c->cs.rd)
			return AB_CP_WAIT;
		n = ab_stream_read_buf (&c->cs, &c->cin, AB_CP_IO_CHUNK, AB_CP_IO_CHUNK);
		if (n > 0) {
			c->t_last = ab_cp_now_us ();
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return AB_CP_WAIT;
		return AB_CP_CLOSE; /* the client left in the middle of its body */
	}
}

static int
response_head (struct ab_cp_conn_s *c, size_t len)
{
	struct ab_cp_req_s *rq = &c->rq;
	struct ab_http_head_s h = { .fields = c->proxy->fields };
	struct ab_http_error_s e;

	if (ab_http_parse_response (ab_iobuf_peek (&c->uin), len, &c->proxy->http_limits,
	                            rq->is_head, &h, &e)
	    < 0)
		return ab_cp_upstream_failed (c);
	/* Upgrade was not forwarded, so a switch is a protocol error; 1xx are
	 * not sent to HTTP/1.0 clients (RFC 9110 15.2). */
	if (h.status == 101)
		return ab_cp_upstream_failed (c);
	if (h.status < 200) {
		if (rq->version_minor >= 1)
			ab_http_append_response_head (&c->cout, &h, rq->client_close);
		ab_iobuf_consume (&c->uin, len);
		rq->resp_scan = 0;
		return 0;
	}
	if (rq->version_minor == 0 && h.body == AB_HTTP_BODY_CHUNKED)
		return ab_cp_upstream_failed (c);
	if (h.body == AB_HTTP_BODY_UNTIL_CLOSE)
		rq->client_close = true;
	rq->upstream_close = h.conn_close || (h.version_minor == 0 && !h.conn_keep_alive)
	                     || h.body == AB_HTTP_BODY_UNTIL_CLOSE;
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
	                         ? AB_CP_RESP_DONE
	                         : AB_CP_RESP_BODY;
	return 0;
}

/* Parse or frame what uin holds: 0 to go on, NEED_MORE, else a step result. */
static int
take_response_bytes (struct ab_cp_conn_s *c)
{
	struct ab_cp_req_s *rq = &c->rq;
	struct ab_http_error_s e;
	bool done = false;
	ssize_t n;

	if (rq->resp_phase == AB_CP_RESP_HEAD) {
		n = ab_http_head_end (ab_iobuf_peek (&c->uin), ab_iobuf_len (&c->uin),
		                      &rq->resp_scan, &c->proxy->http_limits, &e);
		if (n < 0)
			return ab_cp_upstream_failed (c);
		if (n == 0)
			return NEED_MORE;
		return response_head (c, (size_t)n);
	}
	n = ab_http_frame_take (rq->resp_body, &rq->resp_remaining, &rq->resp_chunked,
	                        ab_iobuf_peek (&c->uin), ab_iobuf_len (&c->uin), &done, &e);
	if (n < 0)
		return AB_CP_CLOSE;
	rq->uin_ready = (size_t)n;
	if (done) {
		rq->resp_phase = AB_CP_RESP_DONE;
		/* Bytes after the response's end: the upstream is out of step. */
		if (ab_iobuf_len (&c->uin) > rq->uin_ready)
			rq->upstream_close = true;
	}
	return 0;
}

static int
upstream_eof (struct ab_cp_conn_s *c)
{
	struct ab_cp_req_s *rq = &c->rq;

	if (rq->resp_phase == AB_CP_RESP_BODY && rq->resp_body == AB_HTTP_BODY_UNTIL_CLOSE) {
		rq->resp_phase = AB_CP_RESP_DONE;
		rq->upstream_close = true;
		return AB_CP_AGAIN;
	}
	return ab_cp_upstream_failed (c);
}

/* Upstream -> client: the rewritten head, then the body as it comes. */
static int
pump_response (struct ab_cp_conn_s *c)
{
	struct ab_cp_req_s *rq = &c->rq;
	size_t max_in = c->proxy->http_limits.max_head > AB_CP_IO_CHUNK
	                        ? c->proxy->http_limits.max_head
	                        : AB_CP_IO_CHUNK;
	int budget = AB_CP_BUDGET;

	for (;;) {
		ssize_t n;

		if (ab_iobuf_len (&c->cout) > 0 || rq->uin_ready > 0) {
			size_t head;
			if (!c->cs.wr)
				return AB_CP_WAIT;
			n = ab_stream_writev2 (&c->cs, &c->cout, ab_iobuf_peek (&c->uin),
			                       rq->uin_ready);
			if (n < 0 && errno == EAGAIN)
				return AB_CP_WAIT;
			if (n < 0)
				return AB_CP_CLOSE; /* the client left */
			head = (size_t)n < ab_iobuf_len (&c->cout) ? (size_t)n
			                                           : ab_iobuf_len (&c->cout);
			ab_iobuf_consume (&c->cout, head);
			ab_iobuf_consume (&c->uin, (size_t)n - head);
			rq->uin_ready -= (size_t)n - head;
			c->t_last = ab_cp_now_us ();
			if (--budget == 0) {
				ab_cp_conn_yield (c);
				return AB_CP_WAIT;
			}
			continue;
		}
		if (rq->resp_phase == AB_CP_RESP_DONE)
			return AB_CP_WAIT;
		if (ab_iobuf_len (&c->uin) > 0) {
			int r = take_response_bytes (c);
			if (r == 0)
				continue;
			if (r != NEED_MORE)
				return r;
		}
		if (!ab_stream_can_read (c->us))
			return AB_CP_WAIT;
		n = ab_stream_read_buf (c->us, &c->uin, AB_CP_IO_CHUNK, max_in);
		if (n > 0) {
			c->t_last = ab_cp_now_us ();
			continue;
		}
		if (n < 0 && errno == EAGAIN)
			return AB_CP_WAIT;
		if (n == 0)
			return upstream_eof (c);
		return ab_cp_upstream_failed (c);
	}
}

static int
complete (struct ab_cp_conn_s *c)
{
	struct ab_cp_req_s *rq = &c->rq;

	if (!rq->req_done) {
		/* The response ended before the request body: the rest of the
		 * body would be read as the next request. */
		rq->client_close = true;
		rq->upstream_close = true;
	}
	if (rq->upstream_close || ab_iobuf_len (&c->uin) > 0) {
		ab_cp_close_upstream (c);
	} else {
		c->up_idle = true;
		ab_iobuf_free (&c->uin);
	}
	ab_iobuf_free (&c->uout);
	ab_iobuf_free (&c->cout);
	ab_cp_req_release (c);
	if (rq->client_close) {
		ab_cp_close_upstream (c);
		ab_iobuf_free (&c->cin);
		c->state = AB_CP_ST_CLOSING;
		c->t_phase = ab_cp_now_us ();
		return AB_CP_AGAIN;
	}
	ab_iobuf_trim (&c->cin);
	c->state = AB_CP_ST_HEAD;
	c->t_last = ab_cp_now_us ();
	return AB_CP_AGAIN;
}

int
ab_cp_forward_step (struct ab_cp_conn_s *c)
{
	struct ab_cp_req_s *rq = &c->rq;
	int r = pump_request (c);

	if (r != AB_CP_WAIT || c->state != AB_CP_ST_FORWARD)
		return r;
	r = pump_response (c);
	if (r != AB_CP_WAIT || c->state != AB_CP_ST_FORWARD)
		return r;
	if (rq->resp_phase == AB_CP_RESP_DONE && ab_iobuf_len (&c->cout) == 0 && rq->uin_ready == 0)
		return complete (c);
	return AB_CP_WAIT;
}

void
ab_cp_check_idle (struct ab_cp_conn_s *c)
{
	char b[512];
	ssize_t n;

	if (!c->up_idle || c->us == NULL || !ab_stream_can_read (c->us))
		return;
	/* An idle upstream that speaks (or closes) is no longer usable. */
	n = ab_stream_read (c->us, b, sizeof b);
	if (n < 0 && errno == EAGAIN)
		return;
	ab_cp_close_upstream (c);
}

int
ab_cp_timeout (struct ab_cp_conn_s *c)
{
	switch (c->state) {
	case AB_CP_ST_HEAD:
		if (c->t_head_start == 0)
			return AB_CP_CLOSE; /* an idle keep-alive client */
		return ab_cp_answer (c, 408, "request head timeout\n");
	case AB_CP_ST_CONNECT: return ab_cp_upstream_failed (c);
	case AB_CP_ST_FORWARD:
		if (!c->rq.req_done)
			return AB_CP_CLOSE; /* the client stalled in its own body */
		return ab_cp_upstream_failed (c);
	case AB_CP_ST_CLOSING: return AB_CP_CLOSE;
	}
	return AB_CP_CLOSE;
}
