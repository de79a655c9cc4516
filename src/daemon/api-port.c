/* Ports of a sandbox, reached from the host (docs/daemon.md, "Ports"):
 *
 *   POST /v1/sandboxes/{id}/tcp/{port}  with Connection: Upgrade, Upgrade: tcp
 *       -> 101, then raw bytes both ways (`agentbox port` uses it).  Like
 *       every call on the daemon's socket, authorised by who may connect.
 *   ANY  /v1/sandboxes/{id}/ports/{port}/<path>
 *       -> the request, its path rewritten to /<path>, sent to
 *       127.0.0.1:{port} inside the sandbox and the answer relayed back
 *       (WebSocket and other upgrades included: after the head, bytes flow
 *       both ways).  Authorised by the sandbox's own port token (header
 *       `Authorization: Bearer T` or `?token=T`), also on the TCP listener,
 *       so a preview link never carries the daemon's master token.
 *
 * Each stream is one agent connection (PORT_OPEN) on this request's
 * thread; the connection to the client is closed when the stream ends. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "daemon/relay.h"

#define PROXY_HEAD_MAX      (32 * 1024)
#define PORT_SEND_TIMEOUT_S 600

void
ab_port_token_new (char tok[AB_PORT_TOKEN_LEN + 1])
{
	unsigned char raw[AB_PORT_TOKEN_LEN / 2];

	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		abort (); /* a guessable token would open every port */
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (tok + 2 * i, 3, "%02x", raw[i]);
}

/* Compared as SHA-256 digests in constant time: neither the token's
 * length nor a matching prefix shows in the timing. */
static bool
token_ok (const struct ab_box_s *b, const char *tok, size_t len)
{
	uint8_t want[32], got[32];

	if (!b->port_token[0])
		return false;
	SHA256 ((const unsigned char *)b->port_token, strlen (b->port_token), want);
	SHA256 ((const unsigned char *)tok, len, got);
	return CRYPTO_memcmp (want, got, sizeof want) == 0;
}

/* A port number without sign, spaces or leading zeros: 1..65535. */
static int
parse_port (const char *s, size_t len, uint16_t *out)
{
	unsigned long v = 0;

	if (len == 0 || len > 5 || s[0] == '0')
		return -1;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		v = v * 10 + (unsigned long)(s[i] - '0');
	}
	if (v > 65535)
		return -1;
	*out = (uint16_t)v;
	return 0;
}

struct target_s {
	char id[AB_BOX_ID_LEN + 1];
	uint16_t port;
	const char *rest; /* the path after the port ("" or "/..."), then the query */
	size_t rest_len;
	const char *query; /* after '?', NULL without */
	size_t query_len;
};

static int
parse_target (const char *t, size_t len, struct target_s *x)
{
	static const char pre[] = "/v1/sandboxes/", mid[] = "/ports/";
	const char *end = t + len, *p = t + sizeof pre - 1, *q;
	size_t n;

	memset (x, 0, sizeof *x);
	if (len < sizeof pre - 1 || memcmp (t, pre, sizeof pre - 1) != 0)
		return -1;
	n = strcspn (p, "/?");
	if (n == 0 || n > AB_BOX_ID_LEN || p + n > end)
		return -1;
	memcpy (x->id, p, n);
	p += n;
	if ((size_t)(end - p) < sizeof mid - 1 || memcmp (p, mid, sizeof mid - 1) != 0)
		return -1;
	p += sizeof mid - 1;
	n = 0;
	while (p + n < end && p[n] != '/' && p[n] != '?')
		n++;
	if (parse_port (p, n, &x->port) < 0)
		return -1;
	p += n;
	q = memchr (p, '?', (size_t)(end - p));
	x->rest = p;
	x->rest_len = (size_t)((q ? q : end) - p);
	if (q) {
		x->query = q + 1;
		x->query_len = (size_t)(end - q - 1);
	}
	return 0;
}

bool
ab_port_proxy_target (const struct ab_http_io_s *io)
{
	struct target_s x;
	return parse_target (io->head.target, io->head.target_len, &x) == 0;
}

/* The token from ?token=, if any (not percent-decoded: ours is hex). */
static const char *
query_token (const struct target_s *x, size_t *len)
{
	const char *p = x->query, *end = x->query ? x->query + x->query_len : NULL;

	while (p && p < end) {
		const char *amp = memchr (p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		if ((size_t)(e - p) >= 6 && memcmp (p, "token=", 6) == 0) {
			*len = (size_t)(e - p - 6);
			return p + 6;
		}
		p = amp ? amp + 1 : NULL;
	}
	return NULL;
}

/* Which credential let the request in: 1 the Authorization header (it is
 * then not forwarded), 2 the query (token= is then not forwarded), 0 none. */
static int
authorize (const struct ab_box_s *b, const struct ab_http_io_s *io, const struct target_s *x)
{
	static const char scheme[] = "bearer ";
	size_t len = 0;
	const char *v = ab_http_io_field (io, "authorization", &len);

	if (v && len > sizeof scheme - 1 && strncasecmp (v, scheme, sizeof scheme - 1) == 0
	    && token_ok (b, v + sizeof scheme - 1, len - (sizeof scheme - 1)))
		return 1;
	v = query_token (x, &len);
	return v && token_ok (b, v, len) ? 2 : 0;
}

/* The query without its token= parameters. */
static void
put_query (FILE *f, const struct target_s *x)
{
	const char *p = x->query, *end = x->query + x->query_len;
	bool first = true;

	while (p < end) {
		const char *amp = memchr (p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		if (!((size_t)(e - p) >= 6 && memcmp (p, "token=", 6) == 0) && e > p) {
			fprintf (f, "%s%.*s", first ? "?" : "&", (int)(e - p), p);
			first = false;
		}
		p = e + 1;
	}
}

/* Hop-by-hop fields (RFC 9110 7.6.1) end at this proxy; Connection and
 * Upgrade are written again below for an upgrade. */
static bool
hop_by_hop (const struct ab_http_field_s *f)
{
	static const char *const names[] = { "connection", "keep-alive", "proxy-connection",   "te",
		                             "trailer",    "upgrade",    "proxy-authorization" };

	for (size_t i = 0; i < sizeof names / sizeof *names; i++)
		if (ab_http_token_eq (f->name, f->name_len, names[i]))
			return true;
	return false;
}

/* Connection: ... upgrade ... with an Upgrade field (RFC 9110 7.8). */
static bool
wants_upgrade (const struct ab_http_io_s *io, const char **proto, size_t *proto_len)
{
	bool conn = false;

	for (unsigned i = 0; i < io->head.n_fields; i++) {
		const struct ab_http_field_s *f = &io->fields[i];
		if (ab_http_token_eq (f->name, f->name_len, "connection")) {
			cleanup_free char *v = xstrndup (f->value, f->value_len);
			conn |= strcasestr (v, "upgrade") != NULL;
		}
	}
	*proto = ab_http_io_field (io, "upgrade", proto_len);
	return conn && *proto && *proto_len > 0;
}

/* The head sent into the sandbox: path rewritten, Host kept as the client
 * sent it, hop-by-hop fields and the credential that let it in dropped.
 * Without an upgrade, "Connection: close": one request per stream, so the
 * answer ends where the server's bytes end. */
static char *
proxy_head (const struct ab_http_io_s *io, const struct target_s *x, int auth_by, size_t *len)
{
	char *buf = NULL;
	const char *proto;
	size_t plen;
	bool up = wants_upgrade (io, &proto, &plen);
	FILE *f = open_memstream (&buf, len);

	fprintf (f, "%.*s %s%.*s", (int)io->head.method_len, io->head.method,
	         x->rest_len ? "" : "/", (int)x->rest_len, x->rest);
	if (x->query)
		put_query (f, x);
	fprintf (f, " HTTP/1.1\r\n");
	for (unsigned i = 0; i < io->head.n_fields; i++) {
		const struct ab_http_field_s *fl = &io->fields[i];
		if (hop_by_hop (fl)
		    || (auth_by == 1 && ab_http_token_eq (fl->name, fl->name_len, "authorization")))
			continue;
		fprintf (f, "%.*s: %.*s\r\n", (int)fl->name_len, fl->name, (int)fl->value_len,
		         fl->value);
	}
	if (up)
		fprintf (f, "Connection: Upgrade\r\nUpgrade: %.*s\r\n", (int)plen, proto);
	else
		fprintf (f, "Connection: close\r\n");
	fprintf (f, "\r\n");
	fclose (f);
	return buf;
}

/* A stream to 127.0.0.1:port in the sandbox, or -1 with an answer sent:
 * nothing listening is 502 (the gateway could not reach its upstream). */
static int
open_port (struct ab_req_s *r, struct ab_box_s *b, uint16_t port)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_box_connect (r->d, b, &err);
	int fd = c ? ab_agent_port_open (&c, port, &err) : -1;

	ab_agent_close (c);
	if (fd >= 0) {
		/* As for clients (server.c): a server inside that never reads
		 * does not hold this thread forever. */
		struct timeval snd = { .tv_sec = PORT_SEND_TIMEOUT_S };
		setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
		return fd;
	}
	if (err.kind == AB_E_NOT_FOUND)
		ab_resp_fail (r, 502, "bad_gateway",
		              "nothing is listening on port %u in sandbox %s", (unsigned)port,
		              b->id);
	else
		ab_resp_error (r, &err);
	return -1;
}

/* Bytes the client sent after the head and we already buffered go first. */
static int
forward_buffered (struct ab_http_io_s *io, int fd)
{
	size_t n = io->len - io->off;
	int rc = n ? ab_http_write (fd, io->buf + io->off, n) : 0;

	io->off = io->len;
	return rc;
}

static void
relay (struct ab_req_s *r, int fd)
{
	ab_relay_fds (r->fd, fd, NULL, NULL);
	close (fd);
}

void
ab_api_port_proxy (struct ab_req_s *r)
{
	struct target_s x;
	struct ab_box_s *b;
	cleanup_free char *head = NULL;
	size_t head_len = 0;
	int auth_by, fd;

	r->close = true; /* the stream owns the connection from here on */
	if (parse_target (r->io->head.target, r->io->head.target_len, &x) < 0) {
		ab_resp_fail (r, 404, "not_found", "no such endpoint");
		return;
	}
	r->params[0] = xstrdup (x.id);
	b = ab_api_box (r, true);
	free (r->params[0]);
	r->params[0] = NULL;
	if (!b)
		return;
	if (!(auth_by = authorize (b, r->io, &x))) {
		ab_resp_fail (r, 401, "unauthorized", "missing or wrong port token");
	} else if ((head = proxy_head (r->io, &x, auth_by, &head_len)), head_len > PROXY_HEAD_MAX) {
		ab_resp_fail (r, 431, "head_too_large", "request head too large");
	} else if ((fd = open_port (r, b, x.port)) >= 0) {
		r->responded = true;
		r->status = 200; /* the answer is the sandbox's own, relayed */
		if (ab_http_write (fd, head, head_len) == 0 && forward_buffered (r->io, fd) == 0)
			relay (r, fd);
		else
			close (fd);
	}
	ab_box_unref (r->d, b);
}

void
ab_api_port_connect (struct ab_req_s *r)
{
	static const char ok[] = "HTTP/1.1 101 Switching Protocols\r\nServer: agentbox\r\n"
	                         "Connection: Upgrade\r\nUpgrade: tcp\r\n\r\n";
	struct ab_box_s *b = ab_api_box (r, true);
	const char *proto;
	size_t plen;
	uint16_t port;
	int fd;

	r->close = true;
	if (!b)
		return;
	if (parse_port (r->params[1], strlen (r->params[1]), &port) < 0)
		ab_resp_fail (r, 400, "invalid", "port must be 1..65535");
	else if (!wants_upgrade (r->io, &proto, &plen) || !ab_http_token_eq (proto, plen, "tcp"))
		ab_resp_fail (r, 400, "invalid", "needs Connection: Upgrade and Upgrade: tcp");
	else if ((fd = open_port (r, b, port)) >= 0) {
		r->responded = true;
		r->status = 101;
		ab_metrics_request (101);
		if (ab_http_write (r->fd, ok, sizeof ok - 1) == 0
		    && forward_buffered (r->io, fd) == 0)
			relay (r, fd);
		else
			close (fd);
	}
	ab_box_unref (r->d, b);
}
