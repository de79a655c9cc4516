#include "net/preview-request.h"

#include <stdlib.h>
#include <string.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "net/preview-buf.h"
#include "net/preview-dial.h"
#include "net/preview-doc.h"
#include "net/preview-http.h"

#define MAX_METHOD 32

/* The answer for each way the exchange can end badly. */
static const struct {
	ab_preview_outcome outcome;
	int status;
	const char *message;
} outcome_errors[] = {
	{ AB_PREVIEW_CONNECT_FAILED, 502, "upstream connection failed" },
	{ AB_PREVIEW_READ_FAILED, 502, "upstream response failed" },
	{ AB_PREVIEW_TOO_BIG, 502, "upstream response exceeded limit" },
	{ AB_PREVIEW_TIMED_OUT, 504, "upstream timed out" },
};

static json_t *
answer (int status, json_t *headers, const void *body, size_t len)
{
	cleanup_free char *b64 = ab_base64_encode (body, len);

	return json_pack ("{s:i, s:o, s:s}", "status", status, "headers", headers, "bodyBase64",
	                  b64);
}

json_t *
ab_preview_error_document (int status, const char *message)
{
	json_t *h = json_pack ("{s:s}", "content-type", "text/plain; charset=utf-8");
	return answer (status, h, message, strlen (message));
}

struct request_s {
	struct ab_preview_target_s target;
	const char *method;
	const char *path;
	struct ab_preview_headers_s headers;
	uint8_t *body;
	size_t body_len;
	uint64_t max_response;
	uint64_t timeout_ms;
};

/* Every field but the target; -1 = malformed request document. */
static int
parse_fields (const json_t *doc, struct request_s *r)
{
	const char *b64;

	if (ab_preview_get_string (doc, "method", "GET", &r->method) < 0
	    || !ab_preview_token_valid (r->method, strlen (r->method), MAX_METHOD))
		return -1;
	if (ab_preview_get_string (doc, "path", "/", &r->path) < 0
	    || !ab_preview_path_valid (r->path))
		return -1;
	if (ab_preview_get_string (doc, "bodyBase64", "", &b64) < 0
	    || ab_base64_decode (b64, strlen (b64), &r->body, &r->body_len) < 0)
		return -1;
	if (ab_preview_get_uint (doc, "maxResponseBytes", 0, AB_PREVIEW_MAX_RESPONSE_LIMIT,
	                         AB_PREVIEW_DEFAULT_MAX_RESPONSE, &r->max_response)
	    < 0)
		return -1;
	if (ab_preview_get_uint (doc, "timeoutMs", 1, AB_PREVIEW_MAX_TIMEOUT_MS,
	                         AB_PREVIEW_DEFAULT_TIMEOUT_MS, &r->timeout_ms)
	    < 0)
		return -1;
	return ab_preview_parse_headers (json_object_get (doc, "headers"), AB_PREVIEW_HDRS_HTTP,
	                                 &r->headers);
}

static json_t *
perform (const struct request_s *r)
{
	struct ab_preview_http_req_s req = {
		.method = r->method,
		.path = r->path,
		.host_header = r->target.host_header,
		.headers = &r->headers,
		.body = r->body,
		.body_len = r->body_len,
	};
	struct ab_preview_http_resp_s resp;
	uint64_t deadline = ab_mono_ms () + r->timeout_ms;
	ab_preview_outcome o;
	json_t *doc = NULL;

	o = ab_preview_http_exchange (r->target.hostname, r->target.port, &req, r->max_response,
	                              deadline, &resp);
	if (o == AB_PREVIEW_OK) {
		doc = answer (resp.status, resp.headers, ab_preview_bytes (&resp.body),
		              ab_iobuf_len (&resp.body));
		resp.headers = NULL; /* the answer owns them now */
	}
	for (size_t i = 0; doc == NULL && i < sizeof outcome_errors / sizeof outcome_errors[0]; i++)
		if (outcome_errors[i].outcome == o)
			doc = ab_preview_error_document (outcome_errors[i].status,
			                                 outcome_errors[i].message);
	ab_preview_http_resp_free (&resp);
	return doc;
}

json_t *
ab_preview_request_run (const char *text, size_t len)
{
	json_t *doc = text ? json_loadb (text, len, 0, NULL) : NULL;
	struct request_s r = { 0 };
	json_t *out;

	if (!json_is_object (doc)) {
		json_decref (doc);
		return ab_preview_error_document (400, "malformed request document");
	}
	if (ab_preview_parse_target (json_object_get (doc, "target"), &r.target) < 0)
		out = ab_preview_error_document (400, "invalid preview target");
	else if (parse_fields (doc, &r) < 0)
		out = ab_preview_error_document (400, "malformed request document");
	else
		out = perform (&r);
	ab_preview_headers_free (&r.headers);
	free (r.body);
	json_decref (doc);
	return out;
}
