/* http/request: an HTTP request made for the sandbox, under its egress
 * policy (docs/exec-server.md).  Nothing here decides what may be reached:
 * the request goes through the sandbox's own egress proxy, on a connection
 * handed to its relay like one from inside the sandbox
 * (ab_box_egress_connect), in the proxy's protocol: an absolute-form
 * request for http://, CONNECT and then TLS (verified against the system
 * roots, SNI) for https://.  So a denied target is refused by the proxy,
 * audited there, and never dialed.
 *
 * As the reference: an HTTP answer is a result whatever its status (the
 * proxy's 403 for a denied http:// target included); a failed transport
 * (a refused CONNECT, TLS, a timeout, a malformed answer) is a -32603
 * error "http/request failed: ...".  Each request runs on a thread of its
 * own, counted with the connection's long polls (n_readers), so the
 * connection keeps serving; the thread gives up when the connection
 * closes. */
#include "daemon/exec-server.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <openssl/err.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "net/http-client.h"
#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/preview-http.h"

#define HTTP_DEFAULT_TIMEOUT_MS 30000
#define HTTP_MAX_TIMEOUT_MS     600000
#define HTTP_MAX_BODY           (64U << 20) /* a buffered response */
#define HTTP_MAX_HEADERS        100         /* request fields, as the proxy's limit */
#define HTTP_MAX_HEAD           (64U << 10) /* request or response head */
#define HTTP_DELTA_BYTES        (64U << 10) /* one bodyDelta at most */
#define HTTP_POLL_SLICE_MS      250         /* how often a wait looks at closing */

struct hreq {
	struct ab_xs_conn_s *x;
	json_t *id;
	bool stream, is_head;
	char *request_id;
	struct ab_hostport_s hp;
	bool tls;
	char *head; /* the request head, ready to send */
	uint8_t *body;
	size_t body_len;
	uint64_t deadline;
	struct ab_stream_s s;
	struct ab_iobuf_s in; /* bytes read, not yet used */
};

static void
hreq_free (struct hreq *h)
{
	if (h->s.fd >= 0)
		ab_stream_close (&h->s);
	ab_iobuf_free (&h->in);
	json_decref (h->id);
	free (h->request_id);
	free (h->head);
	free (h->body);
	free (h);
}

/* ---- params ---------------------------------------------------------- */

/* A -32602 refusal, then -1: the parsers' answer. */
static int __attribute__ ((format (printf, 2, 3)))
bad (struct ab_xs_reply_s *out, const char *fmt, ...)
{
	char msg[AB_ERROR_MSG_MAX];
	va_list ap;

	va_start (ap, fmt);
	vsnprintf (msg, sizeof msg, fmt, ap);
	va_end (ap);
	ab_xs_fail (out, AB_XS_BAD_PARAMS, "%s", msg);
	return -1;
}

/* A string member without an embedded NUL (jansson allows \u0000; a C
 * string would silently end there). */
static const char *
str_member (const json_t *o, const char *key)
{
	const json_t *v = json_object_get (o, key);
	const char *s = json_string_value (v);

	return s && strlen (s) == json_string_length (v) ? s : NULL;
}

static bool
is_token (const char *s, size_t n)
{
	if (n == 0)
		return false;
	for (size_t i = 0; i < n; i++)
		if (!strchr ("!#$%&'*+-.^_`|~", s[i]) && !(s[i] >= '0' && s[i] <= '9')
		    && !(s[i] >= 'a' && s[i] <= 'z') && !(s[i] >= 'A' && s[i] <= 'Z'))
			return false;
	return true;
}

static bool
is_field_value (const char *s)
{
	for (; *s; s++)
		if (((unsigned char)*s < 0x20 && *s != '\t') || *s == 0x7f)
			return false;
	return true;
}

/* Fields the request's framing owns: regenerated here, never copied (the
 * proxy would refuse a second Host or a conflicting length anyway). */
static bool
is_framing (const char *name)
{
	static const char *const own[] = { "host",
		                           "content-length",
		                           "transfer-encoding",
		                           "connection",
		                           "proxy-authorization",
		                           "proxy-connection",
		                           "keep-alive",
		                           "te",
		                           "upgrade" };

	for (size_t i = 0; i < sizeof own / sizeof *own; i++)
		if (ab_http_token_eq (name, strlen (name), own[i]))
			return true;
	return false;
}

static int
add_headers (struct ab_iobuf_s *b, const json_t *headers, struct ab_xs_reply_s *out)
{
	size_t i;
	json_t *hd;

	if (headers && !json_is_null (headers) && !json_is_array (headers))
		return bad (out, "http/request 'headers' must be an array");
	if (json_array_size (headers) > HTTP_MAX_HEADERS)
		return bad (out, "http/request has more than %d headers", HTTP_MAX_HEADERS);
	json_array_foreach (headers, i, hd)
	{
		const char *name = str_member (hd, "name");
		const char *value = str_member (hd, "value");
		if (!name || !value)
			return bad (out,
			            "http/request headers[%zu] needs string 'name' and 'value'", i);
		if (!is_token (name, strlen (name)))
			return bad (out, "http/request header name is invalid: %s", name);
		if (!is_field_value (value))
			return bad (out, "http/request header value is invalid for %s", name);
		if (!is_framing (name))
			ab_iobuf_printf (b, "%s: %s\r\n", name, value);
	}
	return 0;
}

static int
parse_url (struct hreq *h, const char *url, struct ab_iobuf_s *target, struct ab_xs_reply_s *out)
{
	struct ab_http_uri_s u;
	ab_http_uri_kind k = ab_http_split_uri (url, strlen (url), &u);
	ab_error_t err = AB_ERROR_INIT;
	char authority[AB_HOST_MAX + 16];

	if (k == AB_URI_OTHER_SCHEME)
		return bad (out, "http/request only supports http and https URLs");
	if (k != AB_URI_HTTP && k != AB_URI_HTTPS)
		return bad (out, "http/request url is invalid: %s", url);
	h->tls = k == AB_URI_HTTPS;
	if (u.authority_len >= sizeof authority)
		return bad (out, "http/request url has an invalid host");
	memcpy (authority, u.authority, u.authority_len);
	authority[u.authority_len] = 0;
	if (ab_hostport_parse (authority, h->tls ? 443 : 80, &h->hp, &err) < 0 || h->hp.port == 0)
		return bad (out, "http/request url is invalid: %s",
		            err.msg[0] ? err.msg : "bad port");
	for (size_t i = 0; i < u.path_len; i++)
		if ((unsigned char)u.path[i] <= 0x20 || (unsigned char)u.path[i] >= 0x7f)
			return bad (out, "http/request url path has an invalid character");
	/* Through the proxy: the absolute form for http, the origin form
	 * inside the CONNECT tunnel for https. */
	if (!h->tls)
		ab_iobuf_printf (target, "http://%s", authority);
	if (u.path_len == 0 || u.path[0] == '?')
		ab_iobuf_append (target, "/", 1);
	ab_iobuf_append (target, u.path, u.path_len);
	return 0;
}

static int
parse_timeout (struct hreq *h, const json_t *t, struct ab_xs_reply_s *out)
{
	json_int_t ms = HTTP_DEFAULT_TIMEOUT_MS;

	if (t && !json_is_null (t)) {
		if (!json_is_integer (t) || json_integer_value (t) < 0)
			return bad (out, "http/request 'timeoutMs' must be a non-negative integer");
		ms = json_integer_value (t);
		if (ms == 0 || ms > HTTP_MAX_TIMEOUT_MS)
			ms = HTTP_MAX_TIMEOUT_MS; /* "no timeout": ours is bounded */
	}
	h->deadline = ab_mono_ms () + (uint64_t)ms;
	return 0;
}

static int
parse_params (struct hreq *h, const json_t *p, struct ab_xs_reply_s *out)
{
	const char *method = str_member (p, "method");
	const char *url = str_member (p, "url");
	const json_t *body = json_object_get (p, "bodyBase64");
	const json_t *rid = json_object_get (p, "requestId");
	const json_t *stream = json_object_get (p, "streamResponse");
	struct ab_iobuf_s b = { 0 };
	int rc = -1;

	if (!json_is_object (p) || !method || !url)
		return bad (out, "http/request needs string 'method' and 'url'");
	if (!is_token (method, strlen (method)) || strcmp (method, "CONNECT") == 0)
		return bad (out, "http/request method is invalid: %s", method);
	if (stream && !json_is_null (stream) && !json_is_boolean (stream))
		return bad (out, "http/request 'streamResponse' must be a boolean");
	/* requestId is a required string in the reference (0.171), streamed
	 * or not. */
	if (!json_is_string (rid))
		return bad (out, "http/request 'requestId' must be a string");
	h->stream = json_is_true (stream);
	h->request_id = xstrdup (json_string_value (rid));
	h->is_head = strcmp (method, "HEAD") == 0;
	if (body && !json_is_null (body)
	    && (!json_is_string (body)
	        || ab_base64_decode (json_string_value (body), json_string_length (body), &h->body,
	                             &h->body_len)
	                   < 0))
		return bad (out, "http/request 'bodyBase64' is not base64");
	if (parse_timeout (h, json_object_get (p, "timeoutMs"), out) < 0)
		return -1;
	ab_iobuf_printf (&b, "%s ", method);
	if (parse_url (h, url, &b, out) < 0)
		goto done;
	{
		/* Host: the port only when not the default (RFC 9110 7.2). */
		char host[AB_HOST_MAX + 16];
		struct ab_url_s uu = { .tls = h->tls, .hp = h->hp };
		ab_url_host_field (&uu, host, sizeof host);
		ab_iobuf_printf (&b, " HTTP/1.1\r\nHost: %s\r\n", host);
	}
	if (add_headers (&b, json_object_get (p, "headers"), out) < 0)
		goto done;
	/* One request per connection: the answer may end at EOF. */
	ab_iobuf_printf (&b, "Connection: close\r\n");
	if (h->body)
		ab_iobuf_printf (&b, "Content-Length: %zu\r\n", h->body_len);
	ab_iobuf_append (&b, "\r\n", 2);
	if (ab_iobuf_len (&b) > HTTP_MAX_HEAD) {
		ab_xs_fail (out, AB_XS_BAD_PARAMS, "http/request head exceeds %u bytes",
		            HTTP_MAX_HEAD);
		goto done;
	}
	h->head = xstrndup (ab_iobuf_peek (&b), ab_iobuf_len (&b));
	rc = 0;
done:
	ab_iobuf_free (&b);
	return rc;
}

/* ---- I/O with a deadline ----------------------------------------------- */

static bool
conn_closing (struct ab_xs_conn_s *x)
{
	bool c;

	pthread_mutex_lock (&x->lock);
	c = x->closing;
	pthread_mutex_unlock (&x->lock);
	return c;
}

static int
wait_io (struct hreq *h, int want, ab_error_t *err)
{
	for (;;) {
		struct pollfd pfd = { .fd = h->s.fd,
			              .events = (short)(want == AB_WANT_WRITE ? POLLOUT : POLLIN) };
		uint64_t now = ab_mono_ms ();
		int n;
		if (now >= h->deadline)
			return ab_error (err, 0, AB_E_LIMIT, "operation timed out");
		if (conn_closing (h->x))
			return ab_error (err, 0, AB_E_SYSTEM, "the connection closed");
		n = poll (&pfd, 1,
		          (int)(h->deadline - now < HTTP_POLL_SLICE_MS ? h->deadline - now
		                                                       : HTTP_POLL_SLICE_MS));
		if (n > 0)
			return 0;
		if (n < 0 && errno != EINTR)
			return ab_error (err, errno, AB_E_SYSTEM, "poll");
	}
}

static int
write_all (struct hreq *h, const void *p, size_t n, ab_error_t *err)
{
	const char *c = p;

	while (n > 0) {
		ssize_t w = ab_stream_write (&h->s, c, n);
		if (w > 0) {
			c += w;
			n -= (size_t)w;
		} else if (w < 0 && errno == EAGAIN) {
			if (wait_io (h, h->s.w_want, err) < 0)
				return -1;
		} else
			return ab_error (err, errno, AB_E_SYSTEM, "send");
	}
	return 0;
}

/* Read more into h->in: > 0, 0 at the end, -1. */
static ssize_t
read_more (struct hreq *h, size_t max_cap, ab_error_t *err)
{
	for (;;) {
		ssize_t n = ab_stream_read_buf (&h->s, &h->in, 16384, max_cap);
		if (n >= 0)
			return n;
		if (errno != EAGAIN)
			return ab_error (err, errno, AB_E_SYSTEM, "receive"), -1;
		if (wait_io (h, h->s.r_want, err) < 0)
			return -1;
	}
}

/* A complete head in h->in: its length, or -1. */
static ssize_t
read_head (struct hreq *h, const char *what, ab_error_t *err)
{
	const struct ab_http_limits_s lim = { HTTP_MAX_HEAD, AB_HTTP_MAX_FIELDS_DEFAULT };
	struct ab_http_error_s e;
	size_t scan = 0;

	for (;;) {
		ssize_t end = ab_http_head_end (ab_iobuf_peek (&h->in), ab_iobuf_len (&h->in),
		                                &scan, &lim, &e);
		if (end < 0)
			return ab_error (err, 0, AB_E_SYSTEM, "bad %s: %s", what, e.reason), -1;
		if (end > 0)
			return end;
		ssize_t n = read_more (h, HTTP_MAX_HEAD + 1, err);
		if (n < 0)
			return -1;
		if (n == 0)
			return ab_error (err, 0, AB_E_SYSTEM, "closed before the %s", what), -1;
	}
}

static int
tls_handshake (struct hreq *h, ab_error_t *err)
{
	static SSL_CTX *ctx;
	static pthread_mutex_t ctx_lock = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock (&ctx_lock);
	if (!ctx)
		ctx = ab_tls_client_ctx_new (NULL, err); /* kept for the daemon's life */
	pthread_mutex_unlock (&ctx_lock);
	if (!ctx || !(h->s.ssl = ab_tls_client_session (ctx, h->s.fd, &h->hp, err)))
		return -1;
	for (;;) {
		int r;
		ERR_clear_error ();
		r = SSL_do_handshake (h->s.ssl);
		if (r == 1)
			return 0;
		switch (SSL_get_error (h->s.ssl, r)) {
		case SSL_ERROR_WANT_READ:
			if (wait_io (h, AB_WANT_READ, err) < 0)
				return -1;
			break;
		case SSL_ERROR_WANT_WRITE:
			if (wait_io (h, AB_WANT_WRITE, err) < 0)
				return -1;
			break;
		default:
			h->s.fatal = true;
			if (SSL_get_verify_result (h->s.ssl) != X509_V_OK)
				return ab_error (err, 0, AB_E_DENIED,
				                 "TLS: certificate verification failed: %s",
				                 X509_verify_cert_error_string (
				                         SSL_get_verify_result (h->s.ssl)));
			return ab_error (err, 0, AB_E_SYSTEM, "TLS handshake failed");
		}
	}
}

struct body_s;
static int read_body (struct hreq *h, struct body_s *bd, ab_error_t *err);
static int refused_body (struct hreq *h, const struct ab_http_head_s *hd, char *buf, size_t len);

/* The proxy's answer to CONNECT was not 2xx: its status and the first
 * line of its body (the egress proxy's "egress denied: REASON"). */
static int
tunnel_refused (struct hreq *h, const struct ab_http_head_s *hd, size_t end, const char *hostport,
                ab_error_t *err)
{
	char body[512] = "";
	int status = hd->status;
	char reason[128];

	snprintf (reason, sizeof reason, "%.*s", (int)hd->reason_len, hd->reason);
	ab_iobuf_consume (&h->in, end);
	refused_body (h, hd, body, sizeof body);
	return ab_error (err, 0, AB_E_DENIED, "proxy refused CONNECT %s: %d %s%s%s", hostport,
	                 status, reason, body[0] ? ": " : "", body);
}

/* The tunnel for https: CONNECT host:port, a 2xx, then TLS.  The proxy's
 * refusal of the target is a transport failure here, as for reqwest
 * ("unsuccessful tunnel"): its status and reason go into the message. */
static int
open_tunnel (struct hreq *h, ab_error_t *err)
{
	const struct ab_http_limits_s lim = { HTTP_MAX_HEAD, AB_HTTP_MAX_FIELDS_DEFAULT };
	struct ab_http_field_s fields[AB_HTTP_MAX_FIELDS_DEFAULT];
	struct ab_http_head_s hd = { .fields = fields };
	struct ab_http_error_s e;
	char hostport[AB_HOST_MAX + 16];
	cleanup_free char *req = NULL;
	ssize_t end;

	snprintf (hostport, sizeof hostport, strchr (h->hp.host, ':') ? "[%s]:%u" : "%s:%u",
	          h->hp.host, h->hp.port);
	req = xasprintf ("CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", hostport, hostport);
	if (write_all (h, req, strlen (req), err) < 0
	    || (end = read_head (h, "CONNECT answer", err)) < 0)
		return -1;
	if (ab_http_parse_response (ab_iobuf_peek (&h->in), (size_t)end, &lim, true, &hd, &e) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "bad CONNECT answer: %s", e.reason);
	/* A refusal has a body (the reason): read as an ordinary answer. */
	if (hd.status / 100 != 2
	    && ab_http_parse_response (ab_iobuf_peek (&h->in), (size_t)end, &lim, false, &hd, &e)
	               < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "bad CONNECT answer: %s", e.reason);
	if (hd.status / 100 != 2)
		return tunnel_refused (h, &hd, (size_t)end, hostport, err);
	ab_iobuf_consume (&h->in, (size_t)end);
	return tls_handshake (h, err);
}

static int
open_conn (struct hreq *h, ab_error_t *err)
{
	int fd = ab_box_egress_connect (h->x->r->d, h->x->b, err);

	if (fd < 0)
		return -1;
	fcntl (fd, F_SETFL, fcntl (fd, F_GETFL) | O_NONBLOCK);
	ab_stream_init (&h->s, fd);
	h->s.rd = h->s.wr = true;
	if (h->tls && open_tunnel (h, err) < 0)
		return -1;
	if (write_all (h, h->head, strlen (h->head), err) < 0)
		return -1;
	return h->body_len ? write_all (h, h->body, h->body_len, err) : 0;
}

/* ---- the answer ------------------------------------------------------ */

/* Response headers, names in lower case as the reference's (the http
 * crate's), values that are not UTF-8 left out as it does. */
static json_t *
headers_json (const struct ab_http_head_s *hd)
{
	json_t *a = json_array ();

	for (unsigned i = 0; i < hd->n_fields; i++) {
		const struct ab_http_field_s *f = &hd->fields[i];
		cleanup_free char *name = xstrndup (f->name, f->name_len);
		json_t *v = json_stringn (f->value, f->value_len);
		for (char *c = name; *c; c++)
			if (*c >= 'A' && *c <= 'Z')
				*c = (char)(*c - 'A' + 'a');
		if (v)
			json_array_append_new (a,
			                       json_pack ("{s:s, s:o}", "name", name, "value", v));
	}
	return a;
}

/* Body bytes as they come: buffered into *buf (at most HTTP_MAX_BODY), or
 * sent as bodyDelta notifications.  The state of one response body. */
struct body_s {
	ab_http_body_kind kind;
	uint64_t left; /* of a Content-Length body */
	struct ab_http_chunked_s ch;
	struct ab_iobuf_s data; /* decoded, not yet delivered */
	uint64_t seq;
	bool done;
};

static int
deliver (struct hreq *h, struct body_s *bd, ab_error_t *err)
{
	if (!h->stream) {
		if (ab_iobuf_len (&bd->data) > HTTP_MAX_BODY)
			return ab_error (err, 0, AB_E_LIMIT, "response body exceeds %u MiB",
			                 HTTP_MAX_BODY >> 20);
		return 0;
	}
	while (ab_iobuf_len (&bd->data) > 0) {
		size_t n = ab_iobuf_len (&bd->data) < HTTP_DELTA_BYTES ? ab_iobuf_len (&bd->data)
		                                                       : HTTP_DELTA_BYTES;
		cleanup_free char *b64 = ab_base64_encode (ab_iobuf_peek (&bd->data), n);
		if (ab_xs_notify (h->x, "http/request/bodyDelta",
		                  json_pack ("{s:s, s:I, s:s, s:b, s:n}", "requestId",
		                             h->request_id, "seq", (json_int_t)bd->seq++,
		                             "deltaBase64", b64, "done", 0, "error"))
		    < 0)
			return ab_error (err, 0, AB_E_SYSTEM, "the connection closed");
		ab_iobuf_consume (&bd->data, n);
	}
	return 0;
}

/* Take what h->in holds of the body into bd->data. */
static int
take_body (struct hreq *h, struct body_s *bd, ab_error_t *err)
{
	const char *p = ab_iobuf_peek (&h->in);
	size_t len = ab_iobuf_len (&h->in), used = len;

	if (bd->kind == AB_HTTP_BODY_LENGTH) {
		used = len < bd->left ? len : (size_t)bd->left;
		ab_iobuf_append (&bd->data, p, used);
		bd->left -= used;
		bd->done = bd->left == 0;
	} else if (bd->kind == AB_HTTP_BODY_CHUNKED) {
		struct ab_http_error_s e;
		ssize_t r = ab_preview_dechunk (&bd->ch, p, len, &bd->data, HTTP_MAX_BODY + 1, &e);
		if (r == -1)
			return ab_error (err, 0, AB_E_SYSTEM, "bad chunked body: %s", e.reason);
		if (r == -2)
			return ab_error (err, 0, AB_E_LIMIT, "response body exceeds %u MiB",
			                 HTTP_MAX_BODY >> 20);
		used = (size_t)r;
		bd->done = bd->ch.done;
	} else
		ab_iobuf_append (&bd->data, p, len);
	ab_iobuf_consume (&h->in, used);
	return 0;
}

static int
read_body (struct hreq *h, struct body_s *bd, ab_error_t *err)
{
	if (bd->kind == AB_HTTP_BODY_NONE)
		bd->done = true;
	for (;;) {
		ssize_t n;
		if (!bd->done && take_body (h, bd, err) < 0)
			return -1;
		if (deliver (h, bd, err) < 0)
			return -1;
		if (bd->done)
			return 0;
		n = read_more (h, HTTP_DELTA_BYTES, err);
		if (n < 0)
			return -1;
		if (n == 0) {
			if (bd->kind != AB_HTTP_BODY_UNTIL_CLOSE)
				return ab_error (err, 0, AB_E_SYSTEM,
				                 "connection closed before the body's end");
			bd->done = true;
		}
	}
}

/* A refusal's body, its first line at most len - 1 bytes, into buf. */
static int
refused_body (struct hreq *h, const struct ab_http_head_s *hd, char *buf, size_t len)
{
	struct body_s bd = { .kind = hd->body, .left = hd->content_length };
	ab_error_t err = AB_ERROR_INIT;
	bool stream = h->stream;
	int rc;

	if (bd.kind == AB_HTTP_BODY_UNTIL_CLOSE)
		bd.kind = AB_HTTP_BODY_NONE; /* a proxy's answer has a length */
	ab_http_chunked_init (&bd.ch);
	h->stream = false;
	rc = read_body (h, &bd, &err);
	h->stream = stream;
	if (rc == 0) {
		ab_iobuf_append (&bd.data, "", 1); /* a C string now */
		snprintf (buf, len, "%.*s", (int)strcspn (ab_iobuf_peek (&bd.data), "\r\n"),
		          ab_iobuf_peek (&bd.data));
	}
	ab_iobuf_free (&bd.data);
	return rc;
}

static void
send_error (struct hreq *h, const char *what, const ab_error_t *err)
{
	struct ab_xs_reply_s rep = { 0 };

	ab_xs_fail (&rep, AB_XS_INTERNAL, "http/request failed: %s%s", what, err->msg);
	ab_xs_answer (h->x, h->id, &rep);
}

static void
run (struct hreq *h)
{
	const struct ab_http_limits_s lim = { HTTP_MAX_HEAD, AB_HTTP_MAX_FIELDS_DEFAULT };
	struct ab_http_field_s fields[AB_HTTP_MAX_FIELDS_DEFAULT];
	struct ab_http_head_s hd = { .fields = fields };
	struct ab_http_error_s e;
	struct ab_xs_reply_s rep = { 0 };
	struct body_s bd = { .seq = 1 };
	ab_error_t err = AB_ERROR_INIT;
	ssize_t end;

	if (open_conn (h, &err) < 0)
		return send_error (h, "", &err);
	for (;;) { /* interim 1xx answers are skipped */
		if ((end = read_head (h, "response head", &err)) < 0)
			return send_error (h, "", &err);
		memset (&hd, 0, sizeof hd);
		hd.fields = fields;
		if (ab_http_parse_response (ab_iobuf_peek (&h->in), (size_t)end, &lim, h->is_head,
		                            &hd, &e)
		    < 0) {
			ab_error (&err, 0, AB_E_SYSTEM, "bad response head: %s", e.reason);
			return send_error (h, "", &err);
		}
		if (hd.status >= 200 || hd.status == 101)
			break;
		ab_iobuf_consume (&h->in, (size_t)end);
	}
	rep.result = json_pack ("{s:i, s:o}", "status", hd.status, "headers", headers_json (&hd));
	bd.kind = hd.body;
	bd.left = hd.content_length;
	ab_http_chunked_init (&bd.ch);
	ab_iobuf_consume (&h->in, (size_t)end); /* the head's fields are used above only */
	if (h->stream) {
		json_object_set_new (rep.result, "bodyBase64", json_string (""));
		ab_xs_answer (h->x, h->id, &rep);
		{
			const char *msg = NULL;
			if (read_body (h, &bd, &err) < 0)
				msg = err.msg;
			ab_xs_notify (h->x, "http/request/bodyDelta",
			              json_pack ("{s:s, s:I, s:s, s:b, s:s?}", "requestId",
			                         h->request_id, "seq", (json_int_t)bd.seq,
			                         "deltaBase64", "", "done", 1, "error", msg));
		}
	} else if (read_body (h, &bd, &err) < 0) {
		json_decref (rep.result);
		ab_iobuf_free (&bd.data);
		return send_error (h, "failed to read the response body: ", &err);
	} else {
		rep.b64_key = "bodyBase64";
		rep.b64 = ab_base64_encode (ab_iobuf_peek (&bd.data), ab_iobuf_len (&bd.data));
		ab_xs_answer (h->x, h->id, &rep);
	}
	ab_iobuf_free (&bd.data);
}

static void *
thread_main (void *arg)
{
	struct hreq *h = arg;
	struct ab_xs_conn_s *x = h->x;

	run (h);
	hreq_free (h);
	pthread_mutex_lock (&x->lock);
	x->n_readers--;
	pthread_cond_broadcast (&x->cond);
	pthread_mutex_unlock (&x->lock);
	return NULL;
}

void
ab_xs_http_request (struct ab_xs_conn_s *x, json_t *id, json_t *params)
{
	struct ab_xs_reply_s rep = { 0 };
	struct hreq *h = xcalloc (1, sizeof *h);
	pthread_t t;
	bool busy;

	h->x = x;
	h->id = json_incref (id);
	h->s.fd = -1;
	if (x->b->spec.network != AB_NETWORK_PROXY) {
		ab_xs_fail (&rep, AB_XS_INTERNAL,
		            "http/request failed: sandbox %s has no network (network none)",
		            x->b->id);
		goto answer;
	}
	if (parse_params (h, params, &rep) < 0)
		goto answer;
	pthread_mutex_lock (&x->lock);
	busy = x->n_readers >= AB_XS_MAX_READERS;
	if (!busy)
		x->n_readers++;
	pthread_mutex_unlock (&x->lock);
	if (busy) {
		ab_xs_fail (&rep, AB_XS_INTERNAL, "too many requests in flight (at most %d)",
		            AB_XS_MAX_READERS);
		goto answer;
	}
	if (pthread_create (&t, NULL, thread_main, h) != 0) {
		pthread_mutex_lock (&x->lock);
		x->n_readers--;
		pthread_mutex_unlock (&x->lock);
		ab_xs_fail (&rep, AB_XS_INTERNAL, "cannot start a thread");
		goto answer;
	}
	pthread_detach (t);
	return;
answer:
	ab_xs_answer (x, id, &rep);
	hreq_free (h);
}
