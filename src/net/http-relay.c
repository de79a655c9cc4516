/* Relaying HTTP/1.1 messages: see http-relay.h. */
#include <inttypes.h>

#include "net/http-relay.h"

void
ab_http_append_field (struct ab_iobuf_s *b, const struct ab_http_field_s *f)
{
	ab_iobuf_append (b, f->name, f->name_len);
	ab_iobuf_append (b, ": ", 2);
	ab_iobuf_append (b, f->value, f->value_len);
	ab_iobuf_append (b, "\r\n", 2);
}

void
ab_http_append_fields (struct ab_iobuf_s *b, const struct ab_http_head_s *h, unsigned drop)
{
	for (unsigned i = 0; i < h->n_fields; i++)
		if ((h->fields[i].flags & drop) == 0)
			ab_http_append_field (b, &h->fields[i]);
}

void
ab_http_append_framing (struct ab_iobuf_s *b, ab_http_body_kind body, bool has_cl, uint64_t cl)
{
	if (body == AB_HTTP_BODY_CHUNKED)
		ab_iobuf_append (b, "Transfer-Encoding: chunked\r\n", 28);
	else if (has_cl)
		ab_iobuf_printf (b, "Content-Length: %" PRIu64 "\r\n", cl);
}

void
ab_http_append_response_head (struct ab_iobuf_s *b, const struct ab_http_head_s *h, bool conn_close)
{
	ab_iobuf_printf (b, "HTTP/1.1 %d %.*s\r\n", h->status, (int)h->reason_len, h->reason);
	ab_http_append_fields (b, h, AB_HTTP_F_HOP | AB_HTTP_F_FRAMING);
	/* 1xx and 204 have no body to frame (RFC 9110 8.6).  A HEAD or 304
	 * response keeps its Content-Length: it describes the representation,
	 * not this message. */
	if (h->status >= 200 && h->status != 204)
		ab_http_append_framing (b, h->body, h->has_content_length, h->content_length);
	if (h->status >= 200 && conn_close)
		ab_iobuf_append (b, "Connection: close\r\n", 19);
	ab_iobuf_append (b, "\r\n", 2);
}

ssize_t
ab_http_frame_take (ab_http_body_kind kind, uint64_t *remaining, struct ab_http_chunked_s *ch,
                    const char *p, size_t n, bool *done, struct ab_http_error_s *e)
{
	ssize_t r;

	switch (kind) {
	case AB_HTTP_BODY_NONE: *done = true; return 0;
	case AB_HTTP_BODY_LENGTH:
		if ((uint64_t)n > *remaining)
			n = (size_t)*remaining;
		*remaining -= n;
		*done = *remaining == 0;
		return (ssize_t)n;
	case AB_HTTP_BODY_CHUNKED:
		r = ab_http_chunked_advance (ch, p, n, e);
		*done = r >= 0 && ch->done;
		return r;
	case AB_HTTP_BODY_UNTIL_CLOSE: return (ssize_t)n;
	}
	return -1;
}
