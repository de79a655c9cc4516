/* Connect protocol v1 with the JSON codec, as envd speaks it to the SDK:
 * a unary call is a JSON body answered by JSON (an error is a non-2xx
 * status with {"code","message"}); a server-streaming call
 * (application/connect+json) sends one envelope (flags byte, 4-byte
 * big-endian length, JSON) and is answered by a chunked stream of
 * envelopes ending with an end-stream envelope (flags 0x02).  Each
 * envelope is written as one chunk as it is produced, but the head goes
 * out with the first envelope, and the last message with the end-stream
 * envelope and the last chunk: one write each, so a short call wakes the
 * client twice, not five times. */
#include "daemon/e2b-internal.h"
#include "daemon/e2b-wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "base/xalloc.h"

#define ENVELOPE_HEAD       AB_E2B_ENVELOPE_HEAD
#define FLAG_END_STREAM     AB_E2B_FLAG_END_STREAM
#define KEEPALIVE_DEFAULT_S 90

static const struct {
	const char *code;
	int status;
} codes[] = {
	{ "canceled", 499 },
	{ "unknown", 500 },
	{ "invalid_argument", 400 },
	{ "deadline_exceeded", 504 },
	{ "not_found", 404 },
	{ "already_exists", 409 },
	{ "permission_denied", 403 },
	{ "resource_exhausted", 429 },
	{ "failed_precondition", 400 },
	{ "aborted", 409 },
	{ "out_of_range", 400 },
	{ "unimplemented", 501 },
	{ "internal", 500 },
	{ "unavailable", 503 },
	{ "unauthenticated", 401 },
};

static int
status_of (const char *code)
{
	for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
		if (strcmp (codes[i].code, code) == 0)
			return codes[i].status;
	return 500;
}

const char *
ab_e2b_code_of (const ab_error_t *err)
{
	switch (err->kind) {
	case AB_E_INVALID: return "invalid_argument";
	case AB_E_DENIED: return "permission_denied";
	case AB_E_NOT_FOUND: return "not_found";
	case AB_E_CONFLICT: return "failed_precondition";
	case AB_E_LIMIT: return "resource_exhausted";
	default: return err->errnum == ETIMEDOUT ? "deadline_exceeded" : "internal";
	}
}

static bool
is_envelope (struct ab_req_s *r)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, "content-type", &len);
	static const char ct[] = "application/connect+json";

	return v && len >= sizeof ct - 1 && strncasecmp (v, ct, sizeof ct - 1) == 0;
}

int
ab_e2b_call_read (struct ab_e2b_call_s *call, ab_error_t *err)
{
	struct ab_req_s *r = call->r;
	cleanup_free char *body = NULL;
	size_t len;

	call->streaming = is_envelope (r);
	if (ab_req_continue (r) < 0
	    || ab_http_io_body_all (r->io, r->d->cfg->max_body, &body, &len, err) < 0)
		return err->kind ? -1 : ab_error (err, errno, AB_E_SYSTEM, "read request body");
	if (call->streaming)
		return ab_e2b_envelope_unary ((const uint8_t *)body, len, &call->msg, err);
	return ab_e2b_envelope_json (body, len, &call->msg, err);
}

/* Exactly n bytes of the body: 1, or 0 when it ended before the first. */
static int
body_exact (struct ab_req_s *r, uint8_t *buf, size_t n, ab_error_t *err)
{
	size_t have = 0;

	while (have < n) {
		ssize_t k = ab_http_io_body_read (r->io, buf + have, n - have, err);
		if (k < 0)
			return err->kind ? -1
			                 : ab_error (err, errno, AB_E_SYSTEM, "read request body");
		if (k == 0)
			return have == 0 ? 0
			                 : ab_error (err, 0, AB_E_INVALID, "a truncated envelope");
		have += (size_t)k;
	}
	return 1;
}

int
ab_e2b_envelope_next (struct ab_e2b_call_s *call, json_t **msg, ab_error_t *err)
{
	uint8_t h[ENVELOPE_HEAD];
	cleanup_free uint8_t *body = NULL;
	size_t len;
	bool end;
	int r;

	*msg = NULL;
	if ((r = body_exact (call->r, h, sizeof h, err)) <= 0)
		return r;
	if (ab_e2b_envelope_head (h, call->r->d->cfg->max_body, &len, &end, err) < 0)
		return -1;
	body = xmalloc (len + 1);
	if (len && body_exact (call->r, body, len, err) != 1)
		return err->kind ? -1 : ab_error (err, 0, AB_E_INVALID, "a truncated envelope");
	if (end)
		return 0;
	return ab_e2b_envelope_json ((const char *)body, len, msg, err) < 0 ? -1 : 1;
}

int
ab_e2b_unary (struct ab_e2b_call_s *call, json_t *msg)
{
	return ab_resp_json (call->r, 200, msg);
}

static json_t *
error_json (const char *code, const char *msg)
{
	return json_pack ("{s:s, s:s}", "code", code, "message", msg);
}

static int
fail_msg (struct ab_e2b_call_s *call, const char *code, const char *msg)
{
	struct ab_req_s *r = call->r;

	if (r->responded)
		return r->streaming ? ab_e2b_stream_end (call, code, msg) : -1;
	if (call->streaming && strcmp (code, "unauthenticated") != 0) {
		/* A streaming call's error is its end-stream envelope on a 200. */
		if (ab_e2b_stream_begin (call) < 0)
			return -1;
		return ab_e2b_stream_end (call, code, msg);
	}
	return ab_resp_json (r, status_of (code), error_json (code, msg));
}

int
ab_e2b_fail (struct ab_e2b_call_s *call, const char *code, const char *fmt, ...)
{
	char msg[AB_ERROR_MSG_MAX];
	va_list ap;

	va_start (ap, fmt);
	vsnprintf (msg, sizeof msg, fmt, ap);
	va_end (ap);
	return fail_msg (call, code, msg);
}

int
ab_e2b_fail_err (struct ab_e2b_call_s *call, const ab_error_t *err)
{
	if (err->kind == AB_E_LIMIT && err->errnum == E2BIG)
		return fail_msg (call, "resource_exhausted", err->msg);
	return fail_msg (call, ab_e2b_code_of (err), err->msg);
}

int
ab_e2b_stream_begin (struct ab_e2b_call_s *call)
{
	return ab_resp_stream_begin (call->r, 200, "application/connect+json");
}

/* msg (stolen) as an envelope appended to *buf. */
static void
envelope_append (uint8_t **buf, size_t *len, uint8_t flags, json_t *msg)
{
	char *text = json_dumps (msg, JSON_COMPACT);
	size_t n = strlen (text);
	uint8_t *e;

	json_decref (msg);
	*buf = xrealloc (*buf, *len + n + ENVELOPE_HEAD);
	e = *buf + *len;
	e[0] = flags;
	e[1] = (uint8_t)(n >> 24);
	e[2] = (uint8_t)(n >> 16);
	e[3] = (uint8_t)(n >> 8);
	e[4] = (uint8_t)n;
	memcpy (e + ENVELOPE_HEAD, text, n);
	*len += n + ENVELOPE_HEAD;
	free (text);
}

static json_t *
end_stream_json (const char *code, const char *msg)
{
	return code ? json_pack ("{s:o}", "error", error_json (code, msg)) : json_object ();
}

int
ab_e2b_stream_begin_msg (struct ab_e2b_call_s *call, json_t *msg)
{
	cleanup_free uint8_t *buf = NULL;
	size_t len = 0;

	envelope_append (&buf, &len, 0, msg);
	return ab_resp_stream_begin_with (call->r, 200, "application/connect+json", buf, len);
}

int
ab_e2b_stream_msg (struct ab_e2b_call_s *call, json_t *msg)
{
	cleanup_free uint8_t *buf = NULL;
	size_t len = 0;

	envelope_append (&buf, &len, 0, msg);
	return ab_resp_stream (call->r, buf, len);
}

int
ab_e2b_stream_last (struct ab_e2b_call_s *call, json_t *msg)
{
	cleanup_free uint8_t *buf = NULL;
	size_t len = 0;

	envelope_append (&buf, &len, 0, msg);
	envelope_append (&buf, &len, FLAG_END_STREAM, json_object ());
	return ab_resp_stream_last (call->r, buf, len);
}

int
ab_e2b_stream_end (struct ab_e2b_call_s *call, const char *code, const char *msg)
{
	cleanup_free uint8_t *buf = NULL;
	size_t len = 0;

	envelope_append (&buf, &len, FLAG_END_STREAM, end_stream_json (code, msg));
	return ab_resp_stream_last (call->r, buf, len);
}

static uint64_t
field_uint (const struct ab_e2b_call_s *call, const char *name, uint64_t dflt)
{
	size_t len;
	const char *v = ab_http_io_field (call->r->io, name, &len);
	cleanup_free char *s = v ? xstrndup (v, len) : NULL;
	ab_error_t ignored = AB_ERROR_INIT;
	uint64_t n;

	if (!s || ab_parse_uint (s, 0, UINT32_MAX, &n, &ignored) < 0)
		return dflt;
	return n;
}

uint64_t
ab_e2b_timeout_ms (const struct ab_e2b_call_s *call)
{
	return field_uint (call, "connect-timeout-ms", 0);
}

unsigned
ab_e2b_keepalive_s (const struct ab_e2b_call_s *call)
{
	uint64_t s = field_uint (call, "keepalive-ping-interval", KEEPALIVE_DEFAULT_S);
	return s == 0 || s > 3600 ? KEEPALIVE_DEFAULT_S : (unsigned)s;
}
