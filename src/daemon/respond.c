/* Requests (query parameters, JSON bodies) and responses (JSON, errors,
 * chunked streams) of the daemon's API. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/pct.h"
#include "base/xalloc.h"
#include "net/http-status.h"

/* STYLE.md's error kinds, as HTTP statuses. */
int
ab_status_of (const ab_error_t *err)
{
	switch (err->kind) {
	case AB_E_INVALID: return 400;
	case AB_E_DENIED: return 403;
	case AB_E_NOT_FOUND: return 404;
	case AB_E_CONFLICT: return 409;
	case AB_E_LIMIT: return err->errnum == E2BIG ? 413 : 429;
	default: return 500;
	}
}

/* The head, and a small body (at most SMALL_BODY bytes) in the same
 * write: one segment, so the client wakes once for the whole answer. */
#define SMALL_BODY 16384

static int
send_head_body (struct ab_req_s *r, int status, const char *ctype, long long length,
                const char *extra, const char *body, size_t body_len)
{
	char head[1024 + SMALL_BODY];
	int n = snprintf (head, sizeof head, "HTTP/1.1 %d %s\r\nServer: agentbox\r\n", status,
	                  ab_http_status_text (status));

	if (ctype)
		n += snprintf (head + n, sizeof head - (size_t)n, "Content-Type: %s\r\n", ctype);
	if (length >= 0)
		n += snprintf (head + n, sizeof head - (size_t)n, "Content-Length: %lld\r\n",
		               length);
	else if (length == -1)
		n += snprintf (head + n, sizeof head - (size_t)n, "Transfer-Encoding: chunked\r\n");
	if (extra)
		n += snprintf (head + n, sizeof head - (size_t)n, "%s", extra);
	if (r->resp_headers)
		n += snprintf (head + n, sizeof head - (size_t)n, "%s", r->resp_headers);
	if (r->close)
		n += snprintf (head + n, sizeof head - (size_t)n, "Connection: close\r\n");
	n += snprintf (head + n, sizeof head - (size_t)n, "\r\n");
	r->responded = true;
	r->status = status;
	ab_metrics_request (status);
	if (body_len && (size_t)n + body_len <= sizeof head) {
		memcpy (head + n, body, body_len);
		return ab_http_write (r->fd, head, (size_t)n + body_len);
	}
	if (ab_http_write (r->fd, head, (size_t)n) < 0)
		return -1;
	return body_len ? ab_http_write (r->fd, body, body_len) : 0;
}

static int
send_head (struct ab_req_s *r, int status, const char *ctype, long long length, const char *extra)
{
	return send_head_body (r, status, ctype, length, extra, NULL, 0);
}

static int
respond (struct ab_req_s *r, int status, const char *ctype, const char *body, size_t len)
{
	/* A body we did not read makes the connection unusable for another request. */
	if (!r->io->body_done)
		r->close = true;
	if (send_head_body (r, status, ctype, (long long)len, NULL, body,
	                    strcmp (r->method, "HEAD") != 0 ? len : 0)
	    < 0) {
		r->close = true;
		return -1;
	}
	return 0;
}

int
ab_resp_json (struct ab_req_s *r, int status, json_t *body)
{
	cleanup_free char *text = json_dumps (body, JSON_COMPACT);
	cleanup_free char *line = xasprintf ("%s\n", text);

	json_decref (body);
	return respond (r, status, "application/json", line, strlen (line));
}

static const char *
code_of (int status, const ab_error_t *err)
{
	switch (status) {
	case 401: return "unauthorized";
	case 405: return "method_not_allowed";
	case 413: return "too_large";
	case 431: return "head_too_large";
	case 503: return "unavailable";
	default: return err ? ab_error_kind_name (err->kind) : "invalid";
	}
}

int
ab_resp_error (struct ab_req_s *r, const ab_error_t *err)
{
	int status = ab_status_of (err);

	if (r->responded)
		return -1;
	return ab_resp_json (r, status,
	                     json_pack ("{s:{s:s, s:s}}", "error", "code", code_of (status, err),
	                                "message", err->msg));
}

int
ab_resp_fail (struct ab_req_s *r, int status, const char *code, const char *fmt, ...)
{
	char msg[AB_ERROR_MSG_MAX];
	va_list ap;

	va_start (ap, fmt);
	vsnprintf (msg, sizeof msg, fmt, ap);
	va_end (ap);
	if (r->responded)
		return -1;
	return ab_resp_json (r, status,
	                     json_pack ("{s:{s:s, s:s}}", "error", "code",
	                                code ? code : code_of (status, NULL), "message", msg));
}

int
ab_resp_empty (struct ab_req_s *r, int status)
{
	if (!r->io->body_done)
		r->close = true;
	return send_head (r, status, NULL, status == 204 ? -2 : 0, NULL);
}

int
ab_resp_stream_begin (struct ab_req_s *r, int status, const char *ctype)
{
	if (!r->io->body_done)
		r->close = true;
	r->streaming = true;
	return send_head (r, status, ctype, -1,
	                  "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n");
}

/* ab_resp_stream_begin and the first chunk in one write: the client wakes
 * once for both. */
int
ab_resp_stream_begin_with (struct ab_req_s *r, int status, const char *ctype, const void *buf,
                           size_t len)
{
	size_t flen = 0;
	cleanup_free char *f = len ? ab_http_chunk_frame (buf, len, &flen) : NULL;

	if (!r->io->body_done)
		r->close = true;
	r->streaming = true;
	if (send_head_body (r, status, ctype, -1,
	                    "Cache-Control: no-store\r\nX-Content-Type-Options: nosniff\r\n", f,
	                    flen)
	    < 0) {
		r->close = true;
		return -1;
	}
	return 0;
}

/* A last data chunk and the end of the stream in one write. */
int
ab_resp_stream_last (struct ab_req_s *r, const void *buf, size_t len)
{
	if (ab_http_write_chunk_last (r->fd, buf, len) < 0) {
		r->close = true;
		return -1;
	}
	return 0;
}

int
ab_resp_stream (struct ab_req_s *r, const void *buf, size_t len)
{
	if (ab_http_write_chunk (r->fd, buf, len) < 0) {
		r->close = true;
		return -1;
	}
	return 0;
}

int
ab_resp_stream_json (struct ab_req_s *r, json_t *line)
{
	char *text = json_dumps (line, JSON_COMPACT);
	size_t n = strlen (text);
	int rc;

	json_decref (line);
	text = xrealloc (text, n + 2);
	text[n++] = '\n';
	rc = ab_resp_stream (r, text, n);
	free (text);
	return rc;
}

int
ab_resp_stream_end (struct ab_req_s *r)
{
	if (ab_http_write_last_chunk (r->fd) < 0) {
		r->close = true;
		return -1;
	}
	return 0;
}

int
ab_req_continue (struct ab_req_s *r)
{
	static const char cont[] = "HTTP/1.1 100 Continue\r\n\r\n";

	if (!r->io->head.expect_continue || r->continue_sent || r->io->body_done)
		return 0;
	r->continue_sent = true;
	return ab_http_write (r->fd, cont, sizeof cont - 1);
}

int
ab_req_body_json (struct ab_req_s *r, json_t **out, ab_error_t *err)
{
	cleanup_free char *body = NULL;
	json_error_t je;
	size_t len;

	if (ab_req_continue (r) < 0
	    || ab_http_io_body_all (r->io, r->d->cfg->max_body, &body, &len, err) < 0)
		return err->kind ? -1 : ab_error (err, errno, AB_E_SYSTEM, "read request body");
	if (len == 0) {
		*out = json_object ();
		return 0;
	}
	/* Duplicate keys are refused: two readers could keep different ones. */
	*out = json_loadb (body, len, JSON_REJECT_DUPLICATES, &je);
	explicit_bzero (body, len); /* it may carry secrets (credentials on create) */
	if (!*out)
		return ab_error (err, 0, AB_E_INVALID, "malformed JSON at line %d column %d: %s",
		                 je.line, je.column, je.text);
	return 0;
}

/* Calls fn for each value of `name`; stops at the first non-zero return. */
static int
query_each (struct ab_req_s *r, const char *name, int (*fn) (char *v, void *ctx), void *ctx,
            ab_error_t *err)
{
	const char *p = r->query;
	size_t nlen = strlen (name);

	while (p && *p) {
		const char *end = strchrnul (p, '&');
		const char *eq = memchr (p, '=', (size_t)(end - p));
		size_t klen = eq ? (size_t)(eq - p) : (size_t)(end - p);
		if (klen == nlen && memcmp (p, name, nlen) == 0) {
			char *v = eq ? ab_pct_decode (eq + 1, (size_t)(end - eq - 1), true)
			             : xstrdup ("");
			if (!v)
				return ab_error (err, 0, AB_E_INVALID,
				                 "malformed query parameter '%s'", name);
			int rc = fn (v, ctx);
			if (rc)
				return rc;
		}
		p = *end ? end + 1 : end;
	}
	return 0;
}

static int
keep_last (char *v, void *ctx)
{
	char **slot = ctx;
	free (*slot);
	*slot = v;
	return 0;
}

char *
ab_req_query (struct ab_req_s *r, const char *name, ab_error_t *err)
{
	char *v = NULL;

	if (query_each (r, name, keep_last, &v, err) < 0) {
		free (v);
		return NULL;
	}
	return v;
}

static int
push (char *v, void *ctx)
{
	ab_strv_push (ctx, v);
	free (v);
	return 0;
}

char **
ab_req_query_all (struct ab_req_s *r, const char *name, ab_error_t *err)
{
	char **v = xcalloc (1, sizeof *v);

	if (query_each (r, name, push, &v, err) < 0) {
		ab_cleanup_strvp (&v);
		return NULL;
	}
	return v;
}

bool
ab_req_query_flag (struct ab_req_s *r, const char *name)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *v = ab_req_query (r, name, &err);

	return v && (strcmp (v, "1") == 0 || strcmp (v, "true") == 0 || strcmp (v, "") == 0);
}

/* The client hung up (a streaming handler checks this while the process is
 * silent, so a vanished client does not pin a thread until it exits). */
bool
ab_req_peer_gone (struct ab_req_s *r)
{
	struct pollfd p = { .fd = r->fd, .events = POLLRDHUP };
	return poll (&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}
