/* One HTTP/1.1 exchange for the preview bridge's clients (`request` and
 * `signal`): dial, send one request with "Connection: close", read one
 * response through the strict head parser (http-head.h), decode its body
 * (Content-Length, chunked, or until close) into memory up to a limit, all
 * before one deadline.  Plain http only: the bridge talks to servers on
 * the sandbox's loopback. */
#ifndef AB_NET_PREVIEW_HTTP_H
#define AB_NET_PREVIEW_HTTP_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/preview-doc.h"

typedef enum {
	AB_PREVIEW_OK = 0,
	AB_PREVIEW_CONNECT_FAILED, /* resolve or connect failed */
	AB_PREVIEW_TIMED_OUT,      /* the deadline passed, in any phase */
	AB_PREVIEW_READ_FAILED,    /* send or receive failed, or a malformed response */
	AB_PREVIEW_TOO_BIG,        /* the body is over the limit */
} ab_preview_outcome;

struct ab_preview_http_req_s {
	const char *method;
	const char *path;        /* origin-form, already validated */
	const char *host_header; /* "hostname:port" */
	const struct ab_preview_headers_s *headers;
	const uint8_t *body;
	size_t body_len;
};

struct ab_preview_http_resp_s {
	int status;
	json_t *headers; /* lower-case names; repeats joined with ", " */
	struct ab_iobuf_s body;
};

/* dial_host: what to connect to (the target's hostname); the Host field
 * is req->host_header.  On AB_PREVIEW_OK resp is filled; free it with
 * ab_preview_http_resp_free in every case. */
ab_preview_outcome ab_preview_http_exchange (const char *dial_host, uint16_t port,
                                             const struct ab_preview_http_req_s *req,
                                             size_t max_body, uint64_t deadline_ms,
                                             struct ab_preview_http_resp_s *resp);
void ab_preview_http_resp_free (struct ab_preview_http_resp_s *resp);

/* The request head ab_preview_http_exchange sends, appended to out. */
void ab_preview_http_format_request (const struct ab_preview_http_req_s *req,
                                     struct ab_iobuf_s *out);

/* The response's fields as the JSON object `request` answers with: field
 * names lower-cased, hop-by-hop fields left out (the body is already
 * decoded), names over 128 or values over 8192 characters dropped, and a
 * repeated name's values joined with ", " in order. */
json_t *ab_preview_http_headers_json (const struct ab_http_head_s *h);

/* Decode chunked bytes from in[0..len), appending the data to out.
 * Returns the bytes of in that belong to the message (c->done tells the
 * end), -1 when the coding is malformed (*e filled), or -2 when out would
 * grow past max. */
ssize_t ab_preview_dechunk (struct ab_http_chunked_s *c, const char *in, size_t len,
                            struct ab_iobuf_s *out, size_t max, struct ab_http_error_s *e);

#endif
