/* `agentbox exec-server --listen ws://HOST:PORT`: a WebSocket listener, a
 * user of the one HTTP server (net/http-server.h: a thread per
 * connection, the connection limit, timeouts, linger).  Its request hook
 * checks the credential, a random path segment (printed once, in the URL)
 * or, with --token-file, `Authorization: Bearer TOKEN`, both compared as
 * SHA-256 digests in constant time; then the Origin; then it answers the
 * upgrade and relays the connection, message by message, to the daemon's
 * exec-server endpoint. */
#include <errno.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/exec-server-cli.h"
#include "net/ws-io.h"
#include "net/http-server.h"
#include "net/http-status.h"
#include "net/listener.h"
#include "policy/hostname.h"

#define MAX_CONNS    64
#define MAX_HEAD     (16U << 10)
#define MAX_TOKEN    4096
#define CLIENT_FRAME (100U << 20)
/* A request head must have arrived this long after the connection. */
#define HEAD_TIMEOUT_MS (30 * 1000)
/* One read (of a head, or of a frame begun) waiting longer ends the
 * connection; a quiet session between messages waits in poll, unbounded. */
#define IDLE_TIMEOUT_MS (120 * 1000)
#define SEND_TIMEOUT_MS (600 * 1000) /* a client that reads nothing this long */
#define LINGER_MS       2000         /* after a closing answer (net/http-server.h) */

struct listener_s {
	const struct ab_xs_cli_s *o;
	char secret[65];
	uint8_t secret_digest[32];
	bool has_token;
	uint8_t token_digest[32];
};

static void
digest (const void *p, size_t n, uint8_t out[32])
{
	SHA256 (p, n, out);
}

static bool
same (const void *p, size_t n, const uint8_t want[32])
{
	uint8_t d[32];

	digest (p, n, d);
	return CRYPTO_memcmp (d, want, 32) == 0;
}

/* A refusal: an empty answer, then the server lingers and closes. */
static void
answer (int fd, int status)
{
	char head[256];
	int n = snprintf (head, sizeof head,
	                  "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	                  status, ab_http_status_text (status));
	ab_http_write (fd, head, (size_t)n);
}

/* The path secret or the bearer token (either opens it). */
static bool
authorised (struct listener_s *l, struct ab_http_io_s *io)
{
	const char *t = io->head.target, *auth;
	size_t tl = io->head.target_len, al = 0;

	if (tl == 65 && t[0] == '/' && same (t + 1, 64, l->secret_digest))
		return true;
	auth = ab_http_io_field (io, "authorization", &al);
	if (l->has_token && auth && al > 7 && strncasecmp (auth, "Bearer ", 7) == 0)
		return same (auth + 7, al - 7, l->token_digest);
	return false;
}

/* Browsers are hostile: an Origin, if sent, must be a loopback one. */
static bool
origin_ok (struct ab_http_io_s *io)
{
	static const char *const ok[] = { "http://127.0.0.1", "http://localhost", "http://[::1]" };
	size_t n = 0;
	const char *o = ab_http_io_field (io, "origin", &n);

	if (!o)
		return true;
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		size_t k = strlen (ok[i]);
		if (n >= k && strncasecmp (o, ok[i], k) == 0 && (n == k || o[k] == ':'))
			return true;
	}
	return false;
}

/* A WebSocket upgrade request (RFC 6455 4.2.1), without a body. */
static bool
is_upgrade (struct ab_http_io_s *io)
{
	size_t kl = 0, vl = 0;
	const char *key = ab_http_io_field (io, "sec-websocket-key", &kl);
	const char *ver = ab_http_io_field (io, "sec-websocket-version", &vl);

	return key && kl == AB_WS_KEY_LEN && ver && vl == 2 && memcmp (ver, "13", 2) == 0
	       && io->head.method_len == 3 && memcmp (io->head.method, "GET", 3) == 0
	       && io->head.body == AB_HTTP_BODY_NONE;
}

static int
answer_upgrade (struct ab_http_io_s *io)
{
	size_t kl = 0;
	const char *key = ab_http_io_field (io, "sec-websocket-key", &kl);
	char accept[AB_WS_ACCEPT_LEN + 1], head[256];

	ab_ws_accept_key (key, kl, accept);
	snprintf (
	        head, sizeof head,
	        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Accept: %s\r\n\r\n",
	        accept);
	return ab_http_write (io->fd, head, strlen (head));
}

/* Our close frame sent: linger for the client's (CLOSE). */
static ab_http_next
close_client (int fd, uint16_t code)
{
	uint8_t p[2] = { (uint8_t)(code >> 8), (uint8_t)code };

	return ab_ws_send (fd, AB_WS_OP_CLOSE, p, 2, false) < 0 ? AB_HTTP_DROP : AB_HTTP_CLOSE;
}

/* Whole messages both ways until either side ends: CLOSE once our close
 * frame is out, DROP when the client went away. */
static ab_http_next
relay (struct ab_http_io_s *cio, struct ab_client_s *d)
{
	ab_error_t err = AB_ERROR_INIT;

	for (;;) {
		struct pollfd p[2] = { { .fd = cio->fd, .events = POLLIN },
			               { .fd = d->fd, .events = POLLIN } };
		bool cready = cio->off < cio->len, dready = d->io.off < d->io.len;
		if (!cready && !dready) {
			if (poll (p, 2, -1) < 0) {
				if (errno == EINTR)
					continue;
				return AB_HTTP_DROP;
			}
			cready = p[0].revents != 0;
			dready = p[1].revents != 0;
		}
		if (dready) {
			char *text;
			size_t n;
			int r = ab_xs_cli_daemon_recv (d, &text, &n, &err);
			if (r <= 0)
				return close_client (cio->fd, AB_WS_CLOSE_NORMAL);
			r = ab_ws_send (cio->fd, AB_WS_OP_TEXT, text, n, false);
			free (text);
			if (r < 0)
				return AB_HTTP_DROP;
		}
		if (cready) {
			struct ab_ws_msg_s m;
			int r = ab_ws_recv (cio, true, &m, &err);
			if (r == 0)
				return AB_HTTP_DROP;
			if (r < 0)
				return close_client (cio->fd, err.kind == AB_E_LIMIT
				                                      ? AB_WS_CLOSE_TOO_BIG
				                                      : AB_WS_CLOSE_PROTOCOL);
			if (m.opcode == AB_WS_OP_PING)
				r = ab_ws_send (cio->fd, AB_WS_OP_PONG, m.data, m.len, false);
			else if (m.opcode == AB_WS_OP_TEXT || m.opcode == AB_WS_OP_BINARY)
				r = ab_ws_send (d->fd, AB_WS_OP_TEXT, m.data, m.len, true);
			free (m.data);
			if (m.opcode == AB_WS_OP_CLOSE)
				return close_client (cio->fd, AB_WS_CLOSE_NORMAL);
			if (r < 0)
				return AB_HTTP_DROP;
		}
	}
}

/* The upgraded connection: its sandbox (--sandbox's or a new one), the
 * daemon's endpoint, the relay between them. */
static ab_http_next
session (struct listener_s *l, struct ab_http_io_s *io)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_client_s d = { .fd = -1 };
	ab_http_next next;
	bool made;
	cleanup_free char *id = ab_xs_cli_begin (l->o, &made, &err);
	cleanup_free char *path = id ? xasprintf ("/v1/sandboxes/%s/exec-server", id) : NULL;

	ab_ws_assembler_init (&io->ws, CLIENT_FRAME);
	if (id && ab_client_ws_open (&d, l->o->host, path, AB_XS_CLI_MAX_MESSAGE, &err) == 0)
		next = relay (io, &d);
	else {
		fprintf (stderr, "agentbox exec-server: %s\n", err.msg);
		next = close_client (io->fd, 1011); /* internal error */
	}
	ab_client_close (&d);
	ab_xs_cli_end (l->o, id, made);
	return next;
}

/* ---- the hooks on net/http-server.h ------------------------------------- */

static void
on_refuse (void *ctx, int fd, const char *why)
{
	answer (fd, 503);
}

static void
on_head_error (void *ctx, struct ab_http_conn_s *c, const struct ab_http_error_s *e)
{
	answer (c->fd, e->status);
}

/* One request per connection: refused (CLOSE), or upgraded and relayed. */
static ab_http_next
on_request (void *ctx, struct ab_http_conn_s *c)
{
	struct listener_s *l = ctx;
	struct ab_http_io_s *io = &c->io;

	if (!authorised (l, io))
		answer (c->fd, 401);
	else if (!origin_ok (io))
		answer (c->fd, 403);
	else if (!is_upgrade (io))
		answer (c->fd, 400);
	else if (answer_upgrade (io) < 0)
		return AB_HTTP_DROP;
	else
		return session (l, io);
	return AB_HTTP_CLOSE;
}

static const struct ab_http_server_ops_s listen_ops = {
	.refuse = on_refuse,
	.head_error = on_head_error,
	.request = on_request,
};

static int
load_token (struct listener_s *l, const char *path, ab_error_t *err)
{
	char buf[MAX_TOKEN + 2];
	cleanup_file FILE *f = fopen (path, "re");
	size_t n;

	if (!f)
		return ab_error (err, errno, AB_E_SYSTEM, "--token-file %s", path);
	n = fread (buf, 1, sizeof buf - 1, f);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r'))
		n--;
	if (n == 0 || n > MAX_TOKEN)
		return ab_error (err, 0, AB_E_INVALID,
		                 "--token-file %s: one token of 1 to %d bytes", path, MAX_TOKEN);
	digest (buf, n, l->token_digest);
	l->has_token = true;
	explicit_bzero (buf, sizeof buf);
	return 0;
}

/* ws://HOST:PORT[/] with an IP literal host, loopback unless
 * --listen-non-loopback; bound is the address as bound (port 0 chosen). */
static int
bind_listen (const struct ab_xs_cli_s *o, char *bound, size_t bound_len, ab_error_t *err)
{
	static const uint8_t v6_loopback[16] = { [15] = 1 };
	struct ab_hostport_s hp;
	cleanup_free char *hostport = NULL;
	char port[8];
	bool loopback;
	int fd;

	if (strncmp (o->listen, "ws://", 5) != 0)
		return ab_error (err, 0, AB_E_INVALID, "--listen %s: expected ws://HOST:PORT",
		                 o->listen);
	hostport = xstrndup (o->listen + 5, strcspn (o->listen + 5, "/"));
	if (ab_listen_parse (hostport, NULL, &hp, err) < 0)
		return ab_error_wrap (err, "--listen %s", o->listen);
	if (hp.kind == AB_HOST_IPV4)
		loopback = hp.addr.bytes[0] == 127;
	else if (hp.kind == AB_HOST_IPV6)
		loopback = memcmp (hp.addr.bytes, v6_loopback, 16) == 0;
	else
		return ab_error (err, 0, AB_E_INVALID, "--listen %s: an IPv4 or [IPv6] literal",
		                 o->listen);
	if (!loopback && !o->non_loopback)
		return ab_error (err, 0, AB_E_DENIED,
		                 "--listen %s is not a loopback address; the exec-server runs "
		                 "commands in the sandbox: add --listen-non-loopback only behind a "
		                 "firewall and TLS terminator",
		                 o->listen);
	if (!loopback)
		fprintf (stderr, "agentbox exec-server: warning: listening on %s, not loopback\n",
		         o->listen);
	snprintf (port, sizeof port, "%u", (unsigned)hp.port);
	fd = ab_tcp_listen (hp.host, port, bound, bound_len, err);
	if (fd < 0)
		return ab_error_wrap (err, "--listen %s", o->listen);
	return fd;
}

/* SIGINT and SIGTERM blocked (before any connection thread starts, so in
 * all of them) and read from a signalfd: the server's stop. */
static int
stop_signals (sigset_t *set, ab_error_t *err)
{
	int fd;

	sigemptyset (set);
	sigaddset (set, SIGINT);
	sigaddset (set, SIGTERM);
	if (pthread_sigmask (SIG_BLOCK, set, NULL) != 0)
		return ab_error (err, errno, AB_E_SYSTEM, "block signals");
	fd = signalfd (-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "signalfd");
	return fd;
}

int
ab_xs_cli_listen (const struct ab_xs_cli_s *o, ab_error_t *err)
{
	const struct ab_http_server_config_s hc = {
		.max_conns = MAX_CONNS,
		.max_head = MAX_HEAD,
		.idle_timeout_ms = IDLE_TIMEOUT_MS,
		.head_timeout_ms = HEAD_TIMEOUT_MS,
		.send_timeout_ms = SEND_TIMEOUT_MS,
		.linger_ms = LINGER_MS,
	};
	struct listener_s l = { .o = o };
	struct signalfd_siginfo si;
	ab_http_server_t *http;
	char bound[80];
	uint8_t raw[32];
	sigset_t set;
	int fd, sfd, rc;

	if (o->token_file && load_token (&l, o->token_file, err) < 0)
		return -1;
	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (l.secret + 2 * i, 3, "%02x", raw[i]);
	digest (l.secret, 64, l.secret_digest);
	if ((fd = bind_listen (o, bound, sizeof bound, err)) < 0)
		return -1;
	if ((sfd = stop_signals (&set, err)) < 0) {
		close (fd);
		return -1;
	}
	http = ab_http_server_new (&hc, &listen_ops, &l);
	if (ab_http_server_add_listener (http, fd, 0, err) < 0)
		rc = -1;
	else {
		printf ("ws://%s/%s\n", bound, l.secret);
		fflush (stdout);
		rc = ab_http_server_run (http, sfd, err);
	}
	/* Stopped: a second signal kills at once, while every connection is
	 * shut down so its sandbox made by --create is removed (l is theirs
	 * until they have ended). */
	while (read (sfd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	close (sfd);
	pthread_sigmask (SIG_UNBLOCK, &set, NULL);
	ab_http_server_stop_conns (http);
	ab_http_server_free (http);
	explicit_bzero (&l, sizeof l);
	return rc;
}
