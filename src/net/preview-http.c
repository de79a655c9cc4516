#include "net/preview-http.h"

#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/preview-buf.h"
#include "net/preview-dial.h"

/* A response head larger than this is a broken or hostile server. */
#define MAX_HEAD   (64 * 1024)
#define MAX_FIELDS 256
/* Interim (1xx) responses skipped before the final one (RFC 9110 15.2). */
#define MAX_INTERIM 16

static bool
method_has_body (const char *m)
{
	return strcmp (m, "POST") == 0 || strcmp (m, "PUT") == 0 || strcmp (m, "PATCH") == 0;
}

void
ab_preview_http_format_request (const struct ab_preview_http_req_s *req, struct ab_iobuf_s *out)
{
	ab_iobuf_printf (out, "%s %s HTTP/1.1\r\nHost: %s\r\n", req->method, req->path,
	                 req->host_header);
	for (size_t i = 0; req->headers != NULL && i < req->headers->n; i++)
		ab_iobuf_printf (out, "%s: %s\r\n", req->headers->v[i].name,
		                 req->headers->v[i].value);
	/* One request per connection: the response may then end at EOF, and
	 * nothing of a second response can be mistaken for this one's body. */
	ab_iobuf_printf (out, "Connection: close\r\n");
	if (req->body_len > 0 || method_has_body (req->method))
		ab_iobuf_printf (out, "Content-Length: %zu\r\n", req->body_len);
	ab_iobuf_append (out, "\r\n", 2);
}

ssize_t
ab_preview_dechunk (struct ab_http_chunked_s *c, const char *in, size_t len, struct ab_iobuf_s *out,
                    size_t max, struct ab_http_error_s *e)
{
	size_t i = 0;

	while (i < len && !c->done) {
		uint64_t want = ab_http_chunked_data_left (c);
		size_t n = 1; /* framing goes through a byte at a time: it is short */
		ssize_t r;

		if (want > 0) {
			n = len - i < want ? len - i : (size_t)want;
			if (n > max - ab_iobuf_len (out))
				return -2;
		}
		r = ab_http_chunked_advance (c, in + i, n, e);
		if (r < 0)
			return -1;
		if (want > 0)
			ab_preview_append (out, in + i, (size_t)r);
		i += (size_t)r;
		if (r == 0)
			break;
	}
	return (ssize_t)i;
}

json_t *
ab_preview_http_headers_json (const struct ab_http_head_s *h)
{
	json_t *o = json_object ();

	for (unsigned i = 0; i < h->n_fields; i++) {
		const struct ab_http_field_s *f = &h->fields[i];
		char name[AB_PREVIEW_HEADER_NAME_MAX + 1];
		const json_t *prev;

		if ((f->flags & AB_HTTP_F_HOP) != 0 || f->name_len > AB_PREVIEW_HEADER_NAME_MAX
		    || ab_preview_char_count (f->value, f->value_len) > AB_PREVIEW_HEADER_VALUE_MAX)
			continue;
		for (uint32_t k = 0; k < f->name_len; k++)
			name[k] = (char)tolower ((unsigned char)f->name[k]);
		name[f->name_len] = '\0';
		prev = json_object_get (o, name);
		if (prev == NULL) {
			json_object_set_new (o, name, json_stringn (f->value, f->value_len));
		} else {
			cleanup_free char *joined = xasprintf ("%s, %.*s", json_string_value (prev),
			                                       (int)f->value_len, f->value);
			json_object_set_new (o, name, json_string (joined));
		}
	}
	return o;
}

struct reader_s {
	int fd;
	struct ab_iobuf_s in;
	uint64_t deadline_ms;
	size_t max_body;
	struct ab_http_field_s fields[MAX_FIELDS];
	struct ab_http_head_s head;
};

static ab_preview_outcome
recv_more (struct reader_s *r, size_t max_cap)
{
	ab_error_t err = AB_ERROR_INIT;
	ssize_t n = ab_preview_recv (r->fd, &r->in, max_cap, r->deadline_ms, &err);

	if (n > 0)
		return AB_PREVIEW_OK;
	if (n < 0 && ab_preview_timed_out (&err))
		return AB_PREVIEW_TIMED_OUT;
	return AB_PREVIEW_READ_FAILED; /* EOF or an error before the message ended */
}

/* Read and parse the final response head; its bytes stay in r->in. */
static ab_preview_outcome
read_head (struct reader_s *r, bool is_head)
{
	const struct ab_http_limits_s lim = { .max_head = MAX_HEAD, .max_fields = MAX_FIELDS };

	for (int interim = 0;; interim++) {
		struct ab_http_error_s e;
		size_t scan = 0;
		ssize_t end;

		while ((end = ab_http_head_end (ab_preview_bytes (&r->in), ab_iobuf_len (&r->in),
		                                &scan, &lim, &e))
		       == 0) {
			ab_preview_outcome o = recv_more (r, MAX_HEAD + 1);
			if (o != AB_PREVIEW_OK)
				return o;
		}
		if (end < 0)
			return AB_PREVIEW_READ_FAILED;
		r->head.fields = r->fields;
		if (ab_http_parse_response (ab_preview_bytes (&r->in), (size_t)end, &lim, is_head,
		                            &r->head, &e)
		    < 0)
			return AB_PREVIEW_READ_FAILED;
		if (r->head.status >= 200 || r->head.status == 101)
			return AB_PREVIEW_OK;
		if (interim >= MAX_INTERIM)
			return AB_PREVIEW_READ_FAILED;
		ab_iobuf_consume (&r->in, (size_t)end);
	}
}

static ab_preview_outcome
read_chunked (struct reader_s *r, struct ab_iobuf_s *body)
{
	struct ab_http_chunked_s c;
	struct ab_http_error_s e;

	ab_http_chunked_init (&c);
	for (;;) {
		ssize_t n = ab_preview_dechunk (&c, ab_preview_bytes (&r->in),
		                                ab_iobuf_len (&r->in), body, r->max_body, &e);
		ab_preview_outcome o;

		if (n == -2)
			return AB_PREVIEW_TOO_BIG;
		if (n < 0)
			return AB_PREVIEW_READ_FAILED;
		ab_iobuf_consume (&r->in, (size_t)n);
		if (c.done)
			return AB_PREVIEW_OK;
		if ((o = recv_more (r, 64 * 1024)) != AB_PREVIEW_OK)
			return o;
	}
}

/* Content-Length or until-close bodies: move what arrived into body. */
static ab_preview_outcome
read_plain (struct reader_s *r, struct ab_iobuf_s *body, bool until_close, uint64_t length)
{
	ab_error_t err = AB_ERROR_INIT;

	if (!until_close && length > r->max_body)
		return AB_PREVIEW_TOO_BIG; /* known from the head: read nothing more */
	for (;;) {
		size_t have = ab_iobuf_len (&r->in);
		ssize_t n;

		if (!until_close && have > length - ab_iobuf_len (body))
			have = (size_t)(length - ab_iobuf_len (body));
		if (have > r->max_body - ab_iobuf_len (body))
			return AB_PREVIEW_TOO_BIG;
		ab_preview_append (body, ab_preview_bytes (&r->in), have);
		ab_iobuf_consume (&r->in, ab_iobuf_len (&r->in));
		if (!until_close && ab_iobuf_len (body) == length)
			return AB_PREVIEW_OK;
		n = ab_preview_recv (r->fd, &r->in, 64 * 1024, r->deadline_ms, &err);
		if (n == 0)
			return until_close ? AB_PREVIEW_OK : AB_PREVIEW_READ_FAILED;
		if (n < 0)
			return ab_preview_timed_out (&err) ? AB_PREVIEW_TIMED_OUT
			                                   : AB_PREVIEW_READ_FAILED;
	}
}

static ab_preview_outcome
read_response (struct reader_s *r, bool is_head, struct ab_preview_http_resp_s *resp)
{
	ab_preview_outcome o = read_head (r, is_head);

	if (o != AB_PREVIEW_OK)
		return o;
	resp->status = r->head.status;
	resp->headers = ab_preview_http_headers_json (&r->head);
	ab_iobuf_consume (&r->in, r->head.head_len);
	switch (r->head.body) {
	case AB_HTTP_BODY_NONE: return AB_PREVIEW_OK;
	case AB_HTTP_BODY_CHUNKED: return read_chunked (r, &resp->body);
	case AB_HTTP_BODY_LENGTH: return read_plain (r, &resp->body, false, r->head.content_length);
	case AB_HTTP_BODY_UNTIL_CLOSE: break;
	}
	return read_plain (r, &resp->body, true, 0);
}

ab_preview_outcome
ab_preview_http_exchange (const char *dial_host, uint16_t port,
                          const struct ab_preview_http_req_s *req, size_t max_body,
                          uint64_t deadline_ms, struct ab_preview_http_resp_s *resp)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_close int fd = -1;
	struct ab_iobuf_s out = { 0 };
	struct reader_s *r;
	ab_preview_outcome o;

	memset (resp, 0, sizeof *resp);
	fd = ab_preview_dial (dial_host, port, deadline_ms, &err);
	if (fd < 0)
		return ab_preview_timed_out (&err) ? AB_PREVIEW_TIMED_OUT
		                                   : AB_PREVIEW_CONNECT_FAILED;
	ab_preview_http_format_request (req, &out);
	if (req->body_len > 0)
		ab_iobuf_append (&out, req->body, req->body_len);
	if (ab_preview_send_all (fd, ab_preview_bytes (&out), ab_iobuf_len (&out), deadline_ms,
	                         &err)
	    < 0) {
		ab_iobuf_free (&out);
		/* A server may answer and close before reading the whole body
		 * (a 413, say): its answer is still worth reading. */
		if (ab_preview_timed_out (&err))
			return AB_PREVIEW_TIMED_OUT;
	}
	ab_iobuf_free (&out);
	r = xcalloc (1, sizeof *r);
	r->fd = fd;
	r->deadline_ms = deadline_ms;
	r->max_body = max_body;
	o = read_response (r, strcmp (req->method, "HEAD") == 0, resp);
	ab_iobuf_free (&r->in);
	free (r);
	return o;
}

void
ab_preview_http_resp_free (struct ab_preview_http_resp_s *resp)
{
	json_decref (resp->headers);
	resp->headers = NULL;
	ab_iobuf_free (&resp->body);
}
