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
 *       `Authorization: Bearer T`, `?token=T`, or the cookie an answer to
 *       `?token=` sets), also on the TCP listener, so a preview link never
 *       carries the daemon's master token.
 *
 * Each stream is one agent connection (PORT_OPEN) on this request's
 * thread; the connection to the client is closed when the stream ends, or
 * when no byte moved either way for the idle timeout. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <poll.h>
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
#include "base/log.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "daemon/relay.h"

#define PROXY_HEAD_MAX      (32 * 1024)
#define PORT_SEND_TIMEOUT_S 600
/* A stream with no byte either way for this long is closed (a browser's
 * abandoned tab, a dead peer TCP has not noticed); AGENTBOX_PORT_IDLE_TIMEOUT
 * (a duration) in the daemon's environment changes it. */
#define PORT_IDLE_DEFAULT_MS (300 * 1000)
#define PORT_IDLE_ENV        "AGENTBOX_PORT_IDLE_TIMEOUT"
/* The cookie an answer to ?token= sets: this name plus the sandbox's id. */
#define COOKIE_PREFIX "agentbox_port_"
/* How much of the server's answer is read to find its status line. */
#define STATUS_LINE_MAX 8192

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
bool
ab_port_token_ok (const struct ab_box_s *b, const char *tok, size_t len)
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

/* One "name=value" of a Cookie field (RFC 6265 5.4: pairs joined by "; ";
 * optional whitespace is tolerated); returns the end of the pair. */
static const char *
cookie_pair (const char *p, const char *end, const char **name, size_t *name_len, const char **val,
             size_t *val_len)
{
	const char *e, *eq;

	while (p < end && (*p == ' ' || *p == '\t'))
		p++;
	e = memchr (p, ';', (size_t)(end - p));
	e = e ? e : end;
	eq = memchr (p, '=', (size_t)(e - p));
	*name = p;
	*name_len = (size_t)((eq ? eq : e) - p);
	*val = eq ? eq + 1 : e;
	*val_len = (size_t)(e - *val);
	while (*val_len && ((*val)[*val_len - 1] == ' ' || (*val)[*val_len - 1] == '\t'))
		(*val_len)--;
	return e;
}

static bool
is_ours (const char *name, size_t len)
{
	return len >= sizeof COOKIE_PREFIX - 1
	       && memcmp (name, COOKIE_PREFIX, sizeof COOKIE_PREFIX - 1) == 0;
}

/* Whether a Cookie field carries this sandbox's cookie with its token.
 * Only the cookie named for this sandbox counts: another sandbox's cookie
 * (a browser sends only the one its Path scopes here, but a client may
 * send anything) is checked against nothing and opens nothing. */
static bool
cookie_ok (const struct ab_box_s *b, const struct ab_http_io_s *io)
{
	cleanup_free char *want = xasprintf (COOKIE_PREFIX "%s", b->id);
	size_t want_len = strlen (want);

	for (unsigned i = 0; i < io->head.n_fields; i++) {
		const struct ab_http_field_s *f = &io->fields[i];
		const char *p = f->value, *end = f->value + f->value_len;
		if (!ab_http_token_eq (f->name, f->name_len, "cookie"))
			continue;
		while (p < end) {
			const char *n, *v;
			size_t nl, vl;
			p = cookie_pair (p, end, &n, &nl, &v, &vl) + 1;
			if (nl == want_len && memcmp (n, want, nl) == 0
			    && ab_port_token_ok (b, v, vl))
				return true;
		}
	}
	return false;
}

enum auth_by { AUTH_NONE, AUTH_HEADER, AUTH_QUERY, AUTH_COOKIE, AUTH_E2B };

/* Which credential let the request in: the Authorization header (it is
 * then not forwarded), the query (token= is then not forwarded, and the
 * answer sets the cookie), the cookie (never forwarded), or none. */
static enum auth_by
authorize (const struct ab_box_s *b, const struct ab_http_io_s *io, const struct target_s *x)
{
	static const char scheme[] = "bearer ";
	size_t len = 0;
	const char *v = ab_http_io_field (io, "authorization", &len);

	if (v && len > sizeof scheme - 1 && strncasecmp (v, scheme, sizeof scheme - 1) == 0
	    && ab_port_token_ok (b, v + sizeof scheme - 1, len - (sizeof scheme - 1)))
		return AUTH_HEADER;
	v = query_token (x, &len);
	if (v && ab_port_token_ok (b, v, len))
		return AUTH_QUERY;
	return cookie_ok (b, io) ? AUTH_COOKIE : AUTH_NONE;
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

/* A Cookie field without our cookies (every sandbox's: none is the
 * server's business); dropped when nothing else is left. */
static void
put_cookies (FILE *f, const struct ab_http_field_s *fl)
{
	const char *p = fl->value, *end = fl->value + fl->value_len;
	bool first = true;

	while (p < end) {
		const char *n, *v, *e;
		size_t nl, vl;
		e = cookie_pair (p, end, &n, &nl, &v, &vl);
		if (nl > 0 && !is_ours (n, nl)) {
			fprintf (f, "%s%.*s", first ? "Cookie: " : "; ", (int)(v + vl - n), n);
			first = false;
		}
		p = e + 1;
	}
	if (!first)
		fprintf (f, "\r\n");
}

/* The head sent into the sandbox: path rewritten, Host kept as the client
 * sent it, hop-by-hop fields, our cookies, a Referer naming a token and the
 * credential that let it in dropped.
 * Without an upgrade, "Connection: close": one request per stream, so the
 * answer ends where the server's bytes end. */
static char *
proxy_head (const struct ab_http_io_s *io, const struct target_s *x, enum auth_by auth_by,
            size_t *len)
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
		    || (auth_by == AUTH_HEADER
		        && ab_http_token_eq (fl->name, fl->name_len, "authorization")))
			continue;
		/* An E2B preview's token fields (e2b-preview.c) stop here too. */
		if (auth_by == AUTH_E2B
		    && (ab_http_token_eq (fl->name, fl->name_len, "x-access-token")
		        || ab_http_token_eq (fl->name, fl->name_len, "e2b-traffic-access-token")))
			continue;
		/* A page opened with ?token= names it in its Referer. */
		if (ab_http_token_eq (fl->name, fl->name_len, "referer")
		    && memmem (fl->value, fl->value_len, "token=", 6))
			continue;
		if (ab_http_token_eq (fl->name, fl->name_len, "cookie")) {
			put_cookies (f, fl);
			continue;
		}
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

static int
idle_ms (void)
{
	const char *v = getenv (PORT_IDLE_ENV);
	ab_error_t ignored = AB_ERROR_INIT;
	uint64_t ms;

	if (!v || ab_parse_duration (v, &ms, &ignored) < 0 || ms == 0 || ms > INT32_MAX)
		return PORT_IDLE_DEFAULT_MS;
	return (int)ms;
}

static void
relay (struct ab_req_s *r, int fd)
{
	if (ab_relay_fds_idle (r->fd, fd, idle_ms (), NULL, NULL) == 1)
		ab_log (AB_LOG_DEBUG, "port stream of %s idle: closed", r->path);
	close (fd);
}

/* The Set-Cookie field that lets a browser leave ?token= out of every
 * later URL: HttpOnly (no script reads it), SameSite=Strict (no other
 * site's page makes the browser send it), its Path this sandbox's
 * /ports/ (never sent for another sandbox), no Max-Age (gone with the
 * browser's session).  Not Secure: the daemon speaks plain HTTP (a
 * unix socket, or TCP on loopback). */
static char *
set_cookie (const struct ab_box_s *b)
{
	return xasprintf ("Set-Cookie: " COOKIE_PREFIX "%s=%s; Path=/v1/sandboxes/%s/ports; "
	                  "HttpOnly; SameSite=Strict\r\n",
	                  b->id, b->port_token, b->id);
}

/* Until the server's status line has come: the client's bytes (a body)
 * go on to the server, and the status line reaches the client with
 * `field` after it.  0, then the relay takes over; -1 when either side
 * ended or failed first or nothing moved for idle ms (the stream is
 * dropped, as the relay would). */
static int
relay_status_line (int client, int server, const char *field, int idle)
{
	char buf[STATUS_LINE_MAX];
	size_t have = 0;
	bool client_open = true;

	while (have < sizeof buf) {
		struct pollfd p[2] = { { .fd = client_open ? client : -1, .events = POLLIN },
			               { .fd = server, .events = POLLIN } };
		char *nl;
		ssize_t n;
		int r = poll (p, 2, idle);

		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		if (p[0].revents) {
			char tmp[16 * 1024];
			n = recv (client, tmp, sizeof tmp, MSG_DONTWAIT);
			if (n == 0) {
				shutdown (server, SHUT_WR);
				client_open = false;
			} else if ((n < 0 && errno != EAGAIN && errno != EINTR)
			           || (n > 0 && ab_http_write (server, tmp, (size_t)n) < 0))
				return -1;
		}
		if (!p[1].revents)
			continue;
		n = recv (server, buf + have, sizeof buf - have, MSG_DONTWAIT);
		if (n <= 0 && !(n < 0 && (errno == EAGAIN || errno == EINTR)))
			return -1;
		have += n > 0 ? (size_t)n : 0;
		if (!(nl = memchr (buf, '\n', have)))
			continue;
		nl++;
		/* Not an HTTP/1 answer: passed on as it came, without the field. */
		if (have < 5 || memcmp (buf, "HTTP/", 5) != 0)
			return ab_http_write (client, buf, have);
		return ab_http_write (client, buf, (size_t)(nl - buf)) < 0
		                       || ab_http_write (client, field, strlen (field)) < 0
		                       || ab_http_write (client, nl, have - (size_t)(nl - buf)) < 0
		               ? -1
		               : 0;
	}
	return ab_http_write (client, buf, have); /* no line end: no field */
}

void
ab_api_port_proxy (struct ab_req_s *r)
{
	struct target_s x;
	struct ab_box_s *b;
	cleanup_free char *head = NULL, *cookie = NULL;
	size_t head_len = 0;
	enum auth_by auth_by;
	int fd;

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
		if (auth_by == AUTH_QUERY)
			cookie = set_cookie (b);
		if (ab_http_write (fd, head, head_len) == 0 && forward_buffered (r->io, fd) == 0
		    && (!cookie || relay_status_line (r->fd, fd, cookie, idle_ms ()) == 0))
			relay (r, fd);
		else
			close (fd);
	}
	ab_box_unref (r->d, b);
}

void
ab_port_proxy_raw (struct ab_req_s *r, struct ab_box_s *b, uint16_t port)
{
	const char *t = r->io->head.target, *q;
	size_t len = r->io->head.target_len, head_len = 0;
	struct target_s x = { .rest = t, .rest_len = len };
	cleanup_free char *head = NULL;
	int fd;

	r->close = true;
	if ((q = memchr (t, '?', len))) {
		x.rest_len = (size_t)(q - t);
		x.query = q + 1;
		x.query_len = len - x.rest_len - 1;
	}
	head = proxy_head (r->io, &x, AUTH_E2B, &head_len);
	if (head_len > PROXY_HEAD_MAX)
		ab_resp_fail (r, 431, "head_too_large", "request head too large");
	else if ((fd = open_port (r, b, port)) >= 0) {
		r->responded = true;
		r->status = 200;
		if (ab_http_write (fd, head, head_len) == 0 && forward_buffered (r->io, fd) == 0)
			relay (r, fd);
		else
			close (fd);
	}
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
		/* No idle timeout: the caller's own authority, any protocol
		 * (a quiet ssh or database session stays up). */
		if (ab_http_write (r->fd, ok, sizeof ok - 1) == 0
		    && forward_buffered (r->io, fd) == 0)
			ab_relay_fds (r->fd, fd, NULL, NULL);
		close (fd);
	}
	ab_box_unref (r->d, b);
}
