/* `agentbox exec-server --listen ws://HOST:PORT`: a WebSocket listener
 * (blocking, a thread per connection, the daemon's server model) whose
 * credential is a random path segment (printed once, in the URL) or,
 * with --token-file, `Authorization: Bearer TOKEN`, both compared as
 * SHA-256 digests in constant time.  Each accepted connection is relayed,
 * message by message, to the daemon's exec-server endpoint. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/exec-server-cli.h"
#include "daemon/websocket.h"
#include "policy/hostname.h"

#define MAX_CONNS    64
#define MAX_HEAD     (16U << 10)
#define MAX_TOKEN    4096
#define CLIENT_FRAME (100U << 20)

struct listener_s {
	const struct ab_xs_cli_s *o;
	char secret[65];
	uint8_t secret_digest[32];
	bool has_token;
	uint8_t token_digest[32];
	pthread_mutex_t lock;
	unsigned n_conns;
};

struct conn_s {
	struct listener_s *l;
	int fd;
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

static void
refuse (int fd, int status, const char *reason)
{
	char head[256];
	int n = snprintf (head, sizeof head,
	                  "HTTP/1.1 %d %s\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	                  status, reason);
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

static int
upgrade (struct ab_http_io_s *io)
{
	size_t kl = 0, vl = 0;
	const char *key = ab_http_io_field (io, "sec-websocket-key", &kl);
	const char *ver = ab_http_io_field (io, "sec-websocket-version", &vl);
	char accept[AB_WS_ACCEPT_LEN + 1], head[256];

	if (!key || kl != AB_WS_KEY_LEN || !ver || vl != 2 || memcmp (ver, "13", 2) != 0
	    || io->head.method_len != 3 || memcmp (io->head.method, "GET", 3) != 0) {
		refuse (io->fd, 400, "Bad Request");
		return -1;
	}
	ab_ws_accept_key (key, kl, accept);
	snprintf (
	        head, sizeof head,
	        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Accept: %s\r\n\r\n",
	        accept);
	return ab_http_write (io->fd, head, strlen (head));
}

static void
close_client (int fd, uint16_t code)
{
	uint8_t p[2] = { (uint8_t)(code >> 8), (uint8_t)code };
	ab_ws_send (fd, AB_WS_OP_CLOSE, p, 2, false);
}

/* Whole messages both ways until either side ends. */
static void
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
				return;
			}
			cready = p[0].revents != 0;
			dready = p[1].revents != 0;
		}
		if (dready) {
			char *text;
			size_t n;
			int r = ab_xs_cli_daemon_recv (d, &text, &n, &err);
			if (r <= 0) {
				close_client (cio->fd, AB_WS_CLOSE_NORMAL);
				return;
			}
			r = ab_ws_send (cio->fd, AB_WS_OP_TEXT, text, n, false);
			free (text);
			if (r < 0)
				return;
		}
		if (cready) {
			struct ab_ws_msg_s m;
			int r = ab_ws_recv (cio, true, &m, &err);
			if (r <= 0) {
				if (r < 0)
					close_client (cio->fd, err.kind == AB_E_LIMIT
					                               ? AB_WS_CLOSE_TOO_BIG
					                               : AB_WS_CLOSE_PROTOCOL);
				return;
			}
			if (m.opcode == AB_WS_OP_PING)
				ab_ws_send (cio->fd, AB_WS_OP_PONG, m.data, m.len, false);
			else if (m.opcode == AB_WS_OP_TEXT || m.opcode == AB_WS_OP_BINARY)
				r = ab_ws_send (d->fd, AB_WS_OP_TEXT, m.data, m.len, true);
			free (m.data);
			if (m.opcode == AB_WS_OP_CLOSE) {
				close_client (cio->fd, AB_WS_CLOSE_NORMAL);
				return;
			}
			if (r < 0)
				return;
		}
	}
}

static void
serve_conn (struct listener_s *l, int fd)
{
	struct ab_http_io_s io;
	struct ab_http_error_s he = { 0 };
	ab_error_t err = AB_ERROR_INIT;

	ab_http_io_init (&io, fd, MAX_HEAD);
	if (ab_http_io_read_request (&io, &he) <= 0)
		;
	else if (!authorised (l, &io))
		refuse (fd, 401, "Unauthorized");
	else if (!origin_ok (&io))
		refuse (fd, 403, "Forbidden");
	else if (upgrade (&io) == 0) {
		struct ab_client_s d = { .fd = -1 };
		bool made;
		cleanup_free char *id = ab_xs_cli_begin (l->o, &made, &err);
		cleanup_free char *path =
		        id ? xasprintf ("/v1/sandboxes/%s/exec-server", id) : NULL;
		ab_ws_assembler_init (&io.ws, CLIENT_FRAME);
		if (id && ab_client_ws_open (&d, l->o->host, path, &err) == 0)
			relay (&io, &d);
		else {
			fprintf (stderr, "agentbox exec-server: %s\n", err.msg);
			close_client (fd, 1011); /* internal error */
		}
		ab_client_close (&d);
		ab_xs_cli_end (l->o, id, made);
	}
	ab_http_io_free (&io);
}

static void *
conn_main (void *arg)
{
	struct conn_s *c = arg;
	struct listener_s *l = c->l;

	serve_conn (l, c->fd);
	close (c->fd);
	free (c);
	pthread_mutex_lock (&l->lock);
	l->n_conns--;
	pthread_mutex_unlock (&l->lock);
	return NULL;
}

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

/* ws://HOST:PORT[/] with an IP literal host. */
static int
bind_listen (const struct ab_xs_cli_s *o, struct sockaddr_storage *ss, socklen_t *len,
             ab_error_t *err)
{
	struct ab_hostport_s hp;
	cleanup_free char *hostport = NULL;
	bool loopback;
	int fd;

	if (strncmp (o->listen, "ws://", 5) != 0)
		return ab_error (err, 0, AB_E_INVALID, "--listen %s: expected ws://HOST:PORT",
		                 o->listen);
	hostport = xstrndup (o->listen + 5, strcspn (o->listen + 5, "/"));
	if (ab_listen_parse (hostport, NULL, &hp, err) < 0)
		return ab_error_wrap (err, "--listen %s", o->listen);
	memset (ss, 0, sizeof *ss);
	if (hp.kind == AB_HOST_IPV4) {
		struct sockaddr_in *s4 = (struct sockaddr_in *)ss;
		s4->sin_family = AF_INET;
		s4->sin_port = htons (hp.port);
		memcpy (&s4->sin_addr, hp.addr.bytes, 4);
		*len = sizeof *s4;
		loopback = hp.addr.bytes[0] == 127;
	} else if (hp.kind == AB_HOST_IPV6) {
		struct sockaddr_in6 *s6 = (struct sockaddr_in6 *)ss;
		s6->sin6_family = AF_INET6;
		s6->sin6_port = htons (hp.port);
		memcpy (&s6->sin6_addr, hp.addr.bytes, 16);
		*len = sizeof *s6;
		loopback = IN6_IS_ADDR_LOOPBACK (&s6->sin6_addr);
	} else
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
	fd = socket (ss->ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &(int){ 1 }, sizeof (int)) < 0
	    || bind (fd, (struct sockaddr *)ss, *len) < 0 || listen (fd, 64) < 0) {
		int e = errno;
		if (fd >= 0)
			close (fd);
		return ab_error (err, e, AB_E_SYSTEM, "--listen %s", o->listen);
	}
	*len = sizeof *ss;
	getsockname (fd, (struct sockaddr *)ss, len);
	return fd;
}

static void
print_url (const struct sockaddr_storage *ss, const char *secret)
{
	char host[INET6_ADDRSTRLEN];
	unsigned port;

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *s4 = (const struct sockaddr_in *)ss;
		inet_ntop (AF_INET, &s4->sin_addr, host, sizeof host);
		port = ntohs (s4->sin_port);
		printf ("ws://%s:%u/%s\n", host, port, secret);
	} else {
		const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)ss;
		inet_ntop (AF_INET6, &s6->sin6_addr, host, sizeof host);
		port = ntohs (s6->sin6_port);
		printf ("ws://[%s]:%u/%s\n", host, port, secret);
	}
	fflush (stdout);
}

int
ab_xs_cli_listen (const struct ab_xs_cli_s *o, ab_error_t *err)
{
	struct listener_s l = { .o = o };
	struct sockaddr_storage ss;
	socklen_t len = sizeof ss;
	uint8_t raw[32];
	int fd;

	if (o->token_file && load_token (&l, o->token_file, err) < 0)
		return -1;
	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (l.secret + 2 * i, 3, "%02x", raw[i]);
	digest (l.secret, 64, l.secret_digest);
	if ((fd = bind_listen (o, &ss, &len, err)) < 0)
		return -1;
	pthread_mutex_init (&l.lock, NULL);
	print_url (&ss, l.secret);
	for (;;) {
		int c = accept4 (fd, NULL, NULL, SOCK_CLOEXEC);
		struct conn_s *cs;
		pthread_t t;
		bool full;
		if (c < 0) {
			if (errno == EINTR || errno == ECONNABORTED || errno == EMFILE)
				continue;
			close (fd);
			return ab_error (err, errno, AB_E_SYSTEM, "accept");
		}
		pthread_mutex_lock (&l.lock);
		full = l.n_conns >= MAX_CONNS;
		if (!full)
			l.n_conns++;
		pthread_mutex_unlock (&l.lock);
		if (full) {
			refuse (c, 503, "Service Unavailable");
			close (c);
			continue;
		}
		cs = xmalloc (sizeof *cs);
		cs->l = &l;
		cs->fd = c;
		if (pthread_create (&t, NULL, conn_main, cs) != 0) {
			close (c);
			free (cs);
			pthread_mutex_lock (&l.lock);
			l.n_conns--;
			pthread_mutex_unlock (&l.lock);
			continue;
		}
		pthread_detach (t);
	}
}
