/* MCP over the daemon's HTTP server: the Streamable HTTP transport of the
 * MCP specification (2025-11-25, "Transports"), answering every request
 * with one application/json response (no SSE stream), and the JSON-RPC
 * 2.0 lifecycle (initialize, notifications/initialized, ping, tools/list,
 * tools/call).
 *
 *   POST   /v1/mcp, /v1/sandboxes/{id}/mcp   one message or a batch
 *   DELETE the same                          ends the session (Mcp-Session-Id)
 *   GET    the same                          405: no server-initiated stream
 *
 * The daemon's own authorisation has run before (the socket's mode, or
 * the bearer token on --listen).  On top, as the specification asks
 * against DNS rebinding, a request whose Origin is not a loopback origin
 * is 403: a web page the user visits cannot drive sandboxes through a
 * browser that reaches 127.0.0.1. */
#include "daemon/mcp-internal.h"

#include <arpa/inet.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define RPC_PARSE_ERROR      -32700
#define RPC_INVALID_REQUEST  -32600
#define RPC_METHOD_NOT_FOUND -32601
#define RPC_INVALID_PARAMS   -32602
#define RPC_INTERNAL_ERROR   -32603
#define RPC_NO_SESSION       -32001 /* as the SDK servers answer an unknown session */

/* Newest first: the answer to a version we do not speak. */
static const char *const versions[] = { "2025-11-25", "2025-06-18", "2025-03-26" };

static const char instructions[] =
        "Tools that run commands and edit files inside an agentbox sandbox (an isolated "
        "Linux environment). Paths are paths inside the sandbox; commands run there, never "
        "on the host. Long commands return a session_id after yield_ms: follow them with "
        "sandbox_process.";

static bool
version_known (const char *v, size_t len)
{
	for (size_t i = 0; i < sizeof versions / sizeof *versions; i++)
		if (strlen (versions[i]) == len && memcmp (versions[i], v, len) == 0)
			return true;
	return false;
}

/* scheme://host[:port] with host localhost, 127.0.0.0/8 or [::1]. */
static bool
origin_loopback (const char *v, size_t len)
{
	char host[64];
	const char *p = memmem (v, len, "://", 3), *end = v + len, *h;
	size_t n;

	if (!p)
		return false;
	h = p + 3;
	if (h < end && *h == '[') {
		const char *close = memchr (h, ']', (size_t)(end - h));
		if (!close)
			return false;
		n = (size_t)(close - h - 1);
		h++;
	} else {
		n = 0;
		while (h + n < end && h[n] != ':' && h[n] != '/')
			n++;
	}
	if (n == 0 || n >= sizeof host)
		return false;
	memcpy (host, h, n);
	host[n] = '\0';
	if (strcasecmp (host, "localhost") == 0)
		return true;
	unsigned char a[16];
	if (inet_pton (AF_INET, host, a) == 1)
		return a[0] == 127;
	return inet_pton (AF_INET6, host, a) == 1 && IN6_IS_ADDR_LOOPBACK ((struct in6_addr *)a);
}

static json_t *
rpc_error (const json_t *id, int code, const char *msg)
{
	return json_pack ("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
	                  id ? id : json_null (), "error", "code", code, "message", msg);
}

static json_t *
rpc_result (const json_t *id, json_t *result)
{
	return json_pack ("{s:s, s:O, s:o}", "jsonrpc", "2.0", "id", id, "result", result);
}

/* An answer carrying only a JSON-RPC error (no id): an HTTP-level refusal. */
static void
refuse (struct ab_req_s *r, int status, int code, const char *msg)
{
	ab_resp_json (r, status, rpc_error (NULL, code, msg));
}

struct rpc_ctx_s {
	struct ab_daemon_s *d;
	const char *box_id; /* NULL on /v1/mcp */
	struct ab_mcp_session_s *s;
	bool created; /* initialize made s */
};

static json_t *
do_initialize (struct rpc_ctx_s *x, const json_t *id, const json_t *params)
{
	ab_error_t err = AB_ERROR_INIT;
	const char *want = json_string_value (json_object_get (params, "protocolVersion"));
	const char *v = versions[0];

	if (!json_is_object (params) || !want)
		return rpc_error (id, RPC_INVALID_PARAMS,
		                  "initialize needs params.protocolVersion (a string)");
	if (version_known (want, strlen (want)))
		v = want;
	x->s = ab_mcp_session_new (x->d, x->box_id, v, &err);
	if (!x->s)
		return rpc_error (id, RPC_INTERNAL_ERROR, err.msg);
	x->created = true;
	return rpc_result (id, json_pack ("{s:s, s:{s:{s:b}}, s:{s:s, s:s, s:s}, s:s}",
	                                  "protocolVersion", v, "capabilities", "tools",
	                                  "listChanged", false, "serverInfo", "name", "agentbox",
	                                  "title", "agentbox sandboxes", "version", "0.1.0",
	                                  "instructions", instructions));
}

static json_t *
do_request (struct rpc_ctx_s *x, const char *method, const json_t *id, const json_t *params)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *res;

	if (params && !json_is_object (params))
		return rpc_error (id, RPC_INVALID_PARAMS, "params must be an object");
	if (strcmp (method, "initialize") == 0)
		return rpc_error (id, RPC_INVALID_REQUEST, "the session is already initialized");
	if (strcmp (method, "ping") == 0)
		return rpc_result (id, json_object ());
	if (strcmp (method, "tools/list") == 0)
		return rpc_result (id, ab_mcp_tools_list (x->box_id != NULL));
	if (strcmp (method, "tools/call") == 0) {
		res = ab_mcp_tools_call (x->d, x->s, id, params, &err);
		return res ? rpc_result (id, res) : rpc_error (id, RPC_INVALID_PARAMS, err.msg);
	}
	cleanup_free char *msg = xasprintf ("method not found: %s", method);
	return rpc_error (id, RPC_METHOD_NOT_FOUND, msg);
}

/* One message: its response, or NULL for a notification or a response. */
static json_t *
handle (struct rpc_ctx_s *x, const json_t *m)
{
	const json_t *id = json_object_get (m, "id");
	const char *method = json_string_value (json_object_get (m, "method"));
	const char *jv = json_string_value (json_object_get (m, "jsonrpc"));

	if (!json_is_object (m) || !jv || strcmp (jv, "2.0") != 0)
		return rpc_error (NULL, RPC_INVALID_REQUEST, "not a JSON-RPC 2.0 message");
	if (!json_object_get (m, "method")) {
		/* A response to a request of ours: we send none, so nothing to do. */
		if (json_object_get (m, "result") || json_object_get (m, "error"))
			return NULL;
		return rpc_error (id, RPC_INVALID_REQUEST, "a message needs a method");
	}
	if (!method)
		return rpc_error (id, RPC_INVALID_REQUEST, "method must be a string");
	if (!id) {
		/* Notifications need no answer; a cancelled foreground run is killed
		 * (an SDK client sends this when its request timeout fires). */
		if (strcmp (method, "notifications/cancelled") == 0 && x->s)
			ab_mcp_cancel (
			        x->s, json_object_get (json_object_get (m, "params"), "requestId"));
		return NULL;
	}
	if (!json_is_string (id) && !json_is_integer (id))
		return rpc_error (NULL, RPC_INVALID_REQUEST, "id must be a string or an integer");
	if (strcmp (method, "initialize") == 0 && !x->s)
		return do_initialize (x, id, json_object_get (m, "params"));
	return do_request (x, method, id, json_object_get (m, "params"));
}

static bool
is_initialize (const json_t *m)
{
	const char *method = json_string_value (json_object_get (m, "method"));
	return json_is_object (m) && method && strcmp (method, "initialize") == 0;
}

static json_t *
handle_batch (struct rpc_ctx_s *x, const json_t *batch)
{
	json_t *out = json_array (), *m;
	size_t i;

	if (json_array_size (batch) == 0) {
		json_decref (out);
		return rpc_error (NULL, RPC_INVALID_REQUEST, "an empty batch");
	}
	json_array_foreach (batch, i, m)
	{
		json_t *res = is_initialize (m)
		                      ? rpc_error (json_object_get (m, "id"), RPC_INVALID_REQUEST,
		                                   "initialize must not be in a batch")
		                      : handle (x, m);
		if (res)
			json_array_append_new (out, res);
	}
	if (json_array_size (out) == 0) {
		json_decref (out);
		return NULL;
	}
	return out;
}

/* The field's value as a string of at most cap-1 bytes, or NULL. */
static const char *
field (struct ab_req_s *r, const char *name, char *buf, size_t cap, bool *too_long)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, name, &len);

	*too_long = false;
	if (!v)
		return NULL;
	if (len >= cap) {
		*too_long = true;
		return NULL;
	}
	memcpy (buf, v, len);
	buf[len] = '\0';
	return buf;
}

/* The checks every method shares; false when a refusal was sent.  DELETE
 * skips the sandbox's: a session outlives the sandbox it was bound to
 * and must still be ended. */
static bool
check_common (struct ab_req_s *r, bool need_box)
{
	ab_error_t err = AB_ERROR_INIT;
	size_t len;
	const char *v = ab_http_io_field (r->io, "origin", &len);

	if (v && !origin_loopback (v, len)) {
		refuse (r, 403, RPC_INVALID_REQUEST,
		        "Origin is not a loopback origin (refused against DNS rebinding)");
		return false;
	}
	v = ab_http_io_field (r->io, "mcp-protocol-version", &len);
	if (v && !version_known (v, len)) {
		refuse (r, 400, RPC_INVALID_REQUEST,
		        "unsupported MCP-Protocol-Version (2025-11-25, 2025-06-18, 2025-03-26)");
		return false;
	}
	if (r->params[0] && need_box) {
		struct ab_box_s *b = ab_registry_get (r->d, r->params[0], &err);
		if (!b) {
			refuse (r, 404, RPC_INVALID_REQUEST, err.msg);
			return false;
		}
		ab_box_unref (r->d, b);
	}
	return true;
}

/* The session named by Mcp-Session-Id, or a refusal sent (NULL). */
static struct ab_mcp_session_s *
session_of (struct ab_req_s *r)
{
	char id[AB_MCP_SESSION_ID_LEN + 1];
	bool too_long;
	const char *v = field (r, "mcp-session-id", id, sizeof id, &too_long);
	struct ab_mcp_session_s *s;

	if (!v && !too_long) {
		refuse (r, 400, RPC_INVALID_REQUEST,
		        "Mcp-Session-Id header is required (send initialize first)");
		return NULL;
	}
	s = v ? ab_mcp_session_get (v, r->params[0]) : NULL;
	if (!s)
		refuse (r, 404, RPC_NO_SESSION, "session not found");
	return s;
}

static void
respond (struct ab_req_s *r, struct rpc_ctx_s *x, json_t *out)
{
	char head[128];

	if (x->created) {
		snprintf (head, sizeof head, "Mcp-Session-Id: %s\r\n", x->s->id);
		r->resp_headers = head;
	}
	if (out)
		ab_resp_json (r, 200, out);
	else
		ab_resp_empty (r, 202);
	r->resp_headers = NULL;
}

void
ab_api_mcp_post (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct rpc_ctx_s x = { .d = r->d, .box_id = r->params[0] };
	cleanup_free char *body = NULL;
	json_error_t je;
	json_t *msg, *out;
	size_t len;

	if (!check_common (r, true))
		return;
	/* Refused before "100 Continue": a client that waits for it never
	 * sends the body, and the answer is not lost to a reset. */
	if (r->io->body == AB_HTTP_BODY_LENGTH && r->io->head.content_length > AB_MCP_MAX_BODY) {
		refuse (r, 413, RPC_INVALID_REQUEST,
		        "request body larger than 8 MiB (the MCP endpoint's limit)");
		return;
	}
	if (ab_req_continue (r) < 0
	    || ab_http_io_body_all (r->io, AB_MCP_MAX_BODY, &body, &len, &err) < 0) {
		if (err.kind == AB_E_LIMIT)
			refuse (r, 413, RPC_INVALID_REQUEST,
			        "request body larger than 8 MiB (the MCP endpoint's limit)");
		else
			refuse (r, 400, RPC_PARSE_ERROR,
			        err.kind ? err.msg : "cannot read the body");
		return;
	}
	msg = json_loadb (body, len, JSON_REJECT_DUPLICATES, &je);
	if (!msg) {
		cleanup_free char *m = xasprintf ("parse error at line %d column %d: %s", je.line,
		                                  je.column, je.text);
		refuse (r, 400, RPC_PARSE_ERROR, m);
		return;
	}
	if (!is_initialize (msg) && !(x.s = session_of (r))) {
		json_decref (msg);
		return;
	}
	if (is_initialize (msg) && ab_http_io_field (r->io, "mcp-session-id", &len)) {
		json_decref (msg);
		refuse (r, 400, RPC_INVALID_REQUEST,
		        "initialize starts a session: send it without Mcp-Session-Id");
		return;
	}
	out = json_is_array (msg) ? handle_batch (&x, msg) : handle (&x, msg);
	respond (r, &x, out);
	json_decref (msg);
	ab_mcp_session_put (x.s);
}

void
ab_api_mcp_delete (struct ab_req_s *r)
{
	struct ab_mcp_session_s *s;

	if (!check_common (r, false) || !(s = session_of (r)))
		return;
	ab_mcp_session_end (r->d, s);
	ab_mcp_session_put (s);
	ab_resp_empty (r, 204);
}

void
ab_api_mcp_get (struct ab_req_s *r)
{

	if (!check_common (r, true))
		return;
	r->resp_headers = "Allow: POST, DELETE\r\n";
	ab_resp_fail (r, 405, NULL,
	              "no server-initiated stream: every response comes with its POST");
	r->resp_headers = NULL;
}
