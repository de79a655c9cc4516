/* Outbound connections: URL parsing, the TLS trust store, TLS-or-plain
 * streams, and the set-up state machine (resolve, dial each answer, proxy
 * CONNECT, TLS handshake with verification).  See http-client.h. */
#include "net/http-client.h"

#include <errno.h>
#include <event2/event.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <openssl/err.h>
#include <openssl/x509v3.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "net/http-head.h"
#include "net/resolve.h"

/* ---- TLS context ---------------------------------------------------------- */

/* Extra CA files operators set for curl/OpenSSL and for Node, in addition
 * to the system roots (Node's NODE_EXTRA_CA_CERTS semantics for both). */
static const char *const extra_ca_vars[] = { "SSL_CERT_FILE", "NODE_EXTRA_CA_CERTS" };

static void
load_extra_ca (SSL_CTX *ctx, const char *var, FILE *warn)
{
	const char *file = getenv (var);

	if (file == NULL || file[0] == '\0')
		return;
	if (SSL_CTX_load_verify_file (ctx, file) != 1 && warn != NULL)
		fprintf (warn,
		         "warning: %s=%s could not be loaded; its certificates are not trusted\n",
		         var, file);
	ERR_clear_error ();
}

SSL_CTX *
ab_tls_client_ctx_new (FILE *warn, ab_error_t *err)
{
	SSL_CTX *ctx = SSL_CTX_new (TLS_client_method ());
	const char *sys_file = X509_get_default_cert_file ();
	const char *sys_dir = X509_get_default_cert_dir ();
	static const unsigned char alpn[] = "\x08http/1.1";
	struct stat st;

	if (ctx == NULL) {
		ab_error (err, 0, AB_E_SYSTEM, "TLS: cannot create a client context");
		return NULL;
	}
	SSL_CTX_set_min_proto_version (ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify (ctx, SSL_VERIFY_PEER, NULL);
	/* write(2)-like semantics for a non-blocking owner. */
	SSL_CTX_set_mode (ctx, SSL_MODE_ENABLE_PARTIAL_WRITE | SSL_MODE_ACCEPT_MOVING_WRITE_BUFFER);
	/* Many servers close without close_notify; message framing (length or
	 * chunked) is what detects truncation, as in every HTTP client. */
	SSL_CTX_set_options (ctx, SSL_OP_IGNORE_UNEXPECTED_EOF | SSL_OP_NO_RENEGOTIATION);
	SSL_CTX_set_alpn_protos (ctx, alpn, sizeof alpn - 1);
	/* Read what the socket holds in one system call, not a record header
	 * and then its body. */
	SSL_CTX_set_read_ahead (ctx, 1);
	/* The system roots, explicitly: SSL_CTX_set_default_verify_paths would
	 * let SSL_CERT_FILE replace them rather than add to them. */
	if (stat (sys_file, &st) == 0)
		SSL_CTX_load_verify_file (ctx, sys_file);
	if (stat (sys_dir, &st) == 0)
		SSL_CTX_load_verify_dir (ctx, sys_dir);
	ERR_clear_error ();
	for (size_t i = 0; i < sizeof extra_ca_vars / sizeof extra_ca_vars[0]; i++)
		load_extra_ca (ctx, extra_ca_vars[i], warn);
	return ctx;
}

/* ---- URLs ----------------------------------------------------------------- */

int
ab_url_parse (const char *text, struct ab_url_s *out, ab_error_t *err)
{
	const char *p;
	const char *path;
	char authority[AB_HOST_MAX + 16];
	size_t alen, plen;

	memset (out, 0, sizeof *out);
	if (strncasecmp (text, "https://", 8) == 0) {
		out->tls = true;
		p = text + 8;
	} else if (strncasecmp (text, "http://", 7) == 0) {
		p = text + 7;
	} else {
		return ab_error (err, 0, AB_E_INVALID, "URL must start with http:// or https://");
	}
	if (strpbrk (p, "?#") != NULL)
		return ab_error (err, 0, AB_E_INVALID, "URL must not have a query or fragment");
	path = p + strcspn (p, "/");
	alen = (size_t)(path - p);
	if (memchr (p, '@', alen) != NULL)
		return ab_error (err, 0, AB_E_INVALID, "URL must not have userinfo");
	if (alen == 0 || alen >= sizeof authority)
		return ab_error (err, 0, AB_E_INVALID, "URL has an invalid host");
	memcpy (authority, p, alen);
	authority[alen] = '\0';
	if (ab_hostport_parse (authority, out->tls ? 443 : 80, &out->hp, err) < 0)
		return ab_error_wrap (err, "URL");
	if (out->hp.port == 0)
		return ab_error (err, 0, AB_E_INVALID, "URL has an invalid port");
	for (const char *q = path; *q; q++)
		if ((unsigned char)*q <= 0x20 || (unsigned char)*q >= 0x7f)
			return ab_error (err, 0, AB_E_INVALID, "URL path has an invalid character");
	plen = strlen (path);
	while (plen > 0 && path[plen - 1] == '/')
		plen--;
	out->path = xstrndup (path, plen);
	return 0;
}

void
ab_url_clear (struct ab_url_s *u)
{
	free (u->path);
	u->path = NULL;
}

void
ab_url_host_field (const struct ab_url_s *u, char *buf, size_t len)
{
	int n = snprintf (buf, len, u->hp.kind == AB_HOST_IPV6 ? "[%s]" : "%s", u->hp.host);

	if (u->hp.port != (u->tls ? 443 : 80) && n >= 0 && (size_t)n < len)
		snprintf (buf + n, len - (size_t)n, ":%u", (unsigned)u->hp.port);
}

/* ---- streams -------------------------------------------------------------- */

void
ab_stream_init (struct ab_stream_s *s, int fd)
{
	memset (s, 0, sizeof *s);
	s->fd = fd;
	s->r_want = AB_WANT_READ;
	s->w_want = AB_WANT_WRITE;
}

static bool
want_ready (const struct ab_stream_s *s, int want)
{
	return want == AB_WANT_WRITE ? s->wr : s->rd;
}

bool
ab_stream_can_read (const struct ab_stream_s *s)
{
	return want_ready (s, s->r_want);
}

bool
ab_stream_can_write (const struct ab_stream_s *s)
{
	return want_ready (s, s->w_want);
}

/* A TLS call returned n <= 0: translate into the read(2) contract and
 * remember what to wait for in *want. */
static ssize_t
tls_result (struct ab_stream_s *s, int n, int *want)
{
	int e = SSL_get_error (s->ssl, n);

	switch (e) {
	case SSL_ERROR_WANT_READ:
		s->rd = false;
		*want = AB_WANT_READ;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_WANT_WRITE:
		s->wr = false;
		*want = AB_WANT_WRITE;
		errno = EAGAIN;
		return -1;
	case SSL_ERROR_ZERO_RETURN: return 0;
	case SSL_ERROR_SYSCALL:
		if (errno == 0)
			errno = ECONNRESET;
		ERR_clear_error ();
		s->fatal = true;
		return -1;
	default:
		ERR_clear_error ();
		errno = EPROTO;
		s->fatal = true;
		return -1;
	}
}

ssize_t
ab_stream_read (struct ab_stream_s *s, void *buf, size_t len)
{
	ssize_t n;

	if (s->ssl != NULL) {
		int r;
		ERR_clear_error ();
		errno = 0;
		r = SSL_read (s->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
		if (r > 0) {
			s->r_want = AB_WANT_READ;
			return r;
		}
		return tls_result (s, r, &s->r_want);
	}
	do
		n = read (s->fd, buf, len);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		s->rd = false;
	return n;
}

ssize_t
ab_stream_write (struct ab_stream_s *s, const void *buf, size_t len)
{
	ssize_t n;

	if (len == 0)
		return 0;
	if (s->ssl != NULL) {
		int r;
		ERR_clear_error ();
		errno = 0;
		r = SSL_write (s->ssl, buf, len > INT32_MAX ? INT32_MAX : (int)len);
		if (r > 0) {
			s->w_want = AB_WANT_WRITE;
			return r;
		}
		n = tls_result (s, r, &s->w_want);
		if (n == 0) {
			errno = EPIPE;
			n = -1;
		}
		return n;
	}
	do
		n = send (s->fd, buf, len, MSG_NOSIGNAL);
	while (n < 0 && errno == EINTR);
	if (n < 0 && errno == EAGAIN)
		s->wr = false;
	return n;
}

ssize_t
ab_stream_writev2 (struct ab_stream_s *s, struct ab_iobuf_s *b, const char *p, size_t n)
{
	size_t blen = b ? ab_iobuf_len (b) : 0;
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov };
	ssize_t r;

	if (s->ssl != NULL) {
		/* TLS has no gather write: b's bytes, then p's if b drained. */
		ssize_t r2;
		if (blen > 0) {
			r = ab_stream_write (s, ab_iobuf_peek (b), blen);
			if (r < 0 || (size_t)r < blen || n == 0)
				return r;
		} else {
			r = 0;
		}
		r2 = ab_stream_write (s, p, n);
		if (r2 < 0)
			return r > 0 ? r : r2;
		return r + r2;
	}
	if (blen > 0) {
		iov[msg.msg_iovlen].iov_base = (void *)ab_iobuf_peek (b);
		iov[msg.msg_iovlen++].iov_len = blen;
	}
	if (n > 0) {
		iov[msg.msg_iovlen].iov_base = (void *)p;
		iov[msg.msg_iovlen++].iov_len = n;
	}
	if (msg.msg_iovlen == 0)
		return 0;
	do
		r = sendmsg (s->fd, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	if (r < 0 && errno == EAGAIN)
		s->wr = false;
	return r;
}

ssize_t
ab_stream_read_buf (struct ab_stream_s *s, struct ab_iobuf_s *b, size_t chunk, size_t max_cap)
{
	size_t room = ab_iobuf_reserve (b, chunk, max_cap);
	ssize_t total = 0;

	if (room == 0) {
		errno = ENOBUFS;
		return -1;
	}
	/* TLS hands out one record (at most 16 KiB) per call: fill the room
	 * with as many as are there, so the bytes go on in one write. */
	do {
		ssize_t n = ab_stream_read (s, b->data + b->end, room);
		if (n <= 0)
			return total > 0 ? total : n;
		b->end += (size_t)n;
		room -= (size_t)n;
		total += n;
	} while (s->ssl != NULL && room > 0);
	return total;
}

void
ab_stream_close (struct ab_stream_s *s)
{
	if (s->ssl != NULL) {
		/* Best effort close_notify, never after a fatal error or before
		 * the handshake finished; never wait for the peer's. */
		if (!s->fatal && SSL_is_init_finished (s->ssl))
			SSL_shutdown (s->ssl);
		ERR_clear_error ();
		SSL_free (s->ssl);
		s->ssl = NULL;
	}
	if (s->fd >= 0)
		close (s->fd);
	s->fd = -1;
	s->rd = s->wr = false;
}

/* ---- connection set-up ---------------------------------------------------- */

typedef enum {
	HC_RESOLVE = 0, /* waiting for the resolver */
	HC_DIAL,        /* connect(2) to addrs[i_addr] */
	HC_CONNECTING,  /* connect in progress */
	HC_PROXY,       /* CONNECT sent (or being sent), reading the answer */
	HC_TLS,         /* handshake */
	HC_READY,
} hc_state;

struct ab_http_client_s {
	struct ab_http_client_config_s cfg;
	ab_http_client_notify_fn notify;
	void *arg;
	hc_state state;

	struct ab_hostport_s origin;
	bool tls;
	bool via_proxy;
	struct ab_proxy_s proxy;

	struct ab_resolve_job_s *job;
	int gai_error;
	struct ab_addr_s *addrs;
	size_t n_addrs;
	size_t i_addr;
	int last_errno;

	struct ab_stream_s s;
	struct event *ev;
	struct ab_iobuf_s pbuf; /* CONNECT request, then its answer */
	size_t pscan;
	bool connect_sent;
};

static const struct ab_hostport_s *
dial_target (const ab_http_client_t *c)
{
	return c->via_proxy ? &c->proxy.hp : &c->origin;
}

static void
on_socket (evutil_socket_t fd, short what, void *arg)
{
	ab_http_client_t *c = arg;

	if (what & EV_READ)
		c->s.rd = true;
	if (what & EV_WRITE)
		c->s.wr = true;
	c->notify (c->arg);
}

static void
on_resolved (void *arg, const struct ab_resolve_result_s *res)
{
	ab_http_client_t *c = arg;

	c->job = NULL;
	c->gai_error = res->gai_error;
	if (res->n > 0) {
		c->addrs = xcalloc (res->n, sizeof *c->addrs);
		memcpy (c->addrs, res->addrs, res->n * sizeof *c->addrs);
		c->n_addrs = res->n;
	}
	c->state = HC_DIAL;
	c->notify (c->arg);
}

ab_http_client_t *
ab_http_client_new (const struct ab_http_client_config_s *cfg, const struct ab_url_s *url,
                    ab_http_client_notify_fn notify, void *arg, ab_error_t *err)
{
	ab_http_client_t *c = xcalloc (1, sizeof *c);
	const struct ab_hostport_s *t;
	int r = 0;

	c->cfg = *cfg;
	c->notify = notify;
	c->arg = arg;
	c->origin = url->hp;
	c->tls = url->tls;
	ab_stream_init (&c->s, -1);
	if (cfg->proxy_env != NULL)
		r = ab_proxy_select (cfg->proxy_env, url->tls, &url->hp, &c->proxy, err);
	if (r < 0) {
		ab_http_client_free (c);
		return NULL;
	}
	c->via_proxy = r == 1;
	t = dial_target (c);
	if (t->kind != AB_HOST_NAME) {
		c->addrs = xmalloc (sizeof *c->addrs);
		c->addrs[0] = t->addr;
		c->n_addrs = 1;
		c->state = HC_DIAL;
		return c;
	}
	c->state = HC_RESOLVE;
	c->job = ab_resolver_submit (cfg->resolver, t->host, on_resolved, c, err);
	if (c->job == NULL) {
		ab_http_client_free (c);
		return NULL;
	}
	return c;
}

static void
drop_socket (ab_http_client_t *c)
{
	if (c->ev != NULL) {
		event_free (c->ev);
		c->ev = NULL;
	}
	ab_stream_close (&c->s);
}

void
ab_http_client_free (ab_http_client_t *c)
{
	if (c == NULL)
		return;
	if (c->job != NULL)
		ab_resolve_cancel (c->cfg.resolver, c->job);
	drop_socket (c);
	ab_iobuf_free (&c->pbuf);
	free (c->addrs);
	OPENSSL_cleanse (c->proxy.auth, sizeof c->proxy.auth);
	free (c);
}

/* Where we are dialing, for messages: "proxy 127.0.0.1:3128" or
 * "127.0.0.1:443"; never the proxy's credentials. */
static void
dial_label (const ab_http_client_t *c, char *buf, size_t len)
{
	const struct ab_hostport_s *t = dial_target (c);

	snprintf (buf, len, t->kind == AB_HOST_IPV6 ? "%s[%s]:%u" : "%s%s:%u",
	          c->via_proxy ? "proxy " : "", t->host, (unsigned)t->port);
}

static int
dial_next (ab_http_client_t *c, ab_error_t *err)
{
	char label[AB_HOST_MAX + 32];

	while (c->i_addr < c->n_addrs) {
		struct sockaddr_storage ss;
		socklen_t sl =
		        ab_addr_to_sockaddr (&c->addrs[c->i_addr++], dial_target (c)->port, &ss);
		int fd = socket (ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		int one = 1;

		if (fd < 0) {
			c->last_errno = errno;
			continue;
		}
		setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
		if (connect (fd, (struct sockaddr *)&ss, sl) < 0 && errno != EINPROGRESS) {
			c->last_errno = errno;
			close (fd);
			continue;
		}
		ab_stream_init (&c->s, fd);
		c->ev = event_new (c->cfg.base, fd, EV_READ | EV_WRITE | EV_PERSIST | EV_ET,
		                   on_socket, c);
		if (c->ev == NULL || event_add (c->ev, NULL) < 0) {
			drop_socket (c);
			return ab_error (err, 0, AB_E_SYSTEM,
			                 "register a socket with the event loop");
		}
		c->state = HC_CONNECTING;
		return 0;
	}
	dial_label (c, label, sizeof label);
	if (c->n_addrs == 0)
		return ab_error (err, 0, AB_E_NOT_FOUND, "resolve %s: %s", label,
		                 c->gai_error ? gai_strerror (c->gai_error) : "no address");
	return ab_error (err, c->last_errno, AB_E_SYSTEM, "connect to %s", label);
}

/* After connect(2): the CONNECT request for a tunnel, else TLS or ready. */
static void
after_connect (ab_http_client_t *c)
{
	if (c->via_proxy && c->tls) {
		const struct ab_hostport_s *o = &c->origin;
		char authority[AB_HOST_MAX + 16];

		snprintf (authority, sizeof authority,
		          o->kind == AB_HOST_IPV6 ? "[%s]:%u" : "%s:%u", o->host,
		          (unsigned)o->port);
		ab_iobuf_printf (&c->pbuf, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n", authority,
		                 authority);
		if (c->proxy.auth[0])
			ab_iobuf_printf (&c->pbuf, "Proxy-Authorization: %s\r\n", c->proxy.auth);
		ab_iobuf_append (&c->pbuf, "\r\n", 2);
		c->state = HC_PROXY;
	} else {
		c->state = c->tls ? HC_TLS : HC_READY;
	}
}

static int
connecting_step (ab_http_client_t *c, ab_error_t *err)
{
	int soerr = 0;
	socklen_t sl = sizeof soerr;

	if (!c->s.wr)
		return 0;
	if (getsockopt (c->s.fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) < 0)
		soerr = errno;
	if (soerr != 0) {
		c->last_errno = soerr;
		drop_socket (c);
		c->state = HC_DIAL;
		return dial_next (c, err);
	}
	after_connect (c);
	return 0;
}

/* The proxy's answer to CONNECT: a 2xx head and nothing after it (we speak
 * first inside the tunnel). */
static int
proxy_answer (ab_http_client_t *c, size_t len, ab_error_t *err)
{
	struct ab_http_limits_s lim = { .max_head = c->cfg.max_head, .max_fields = 100 };
	struct ab_http_field_s fields[100];
	struct ab_http_head_s h = { .fields = fields };
	struct ab_http_error_s e;

	if (ab_http_parse_response (ab_iobuf_peek (&c->pbuf), len, &lim, true, &h, &e) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "proxy: bad answer to CONNECT: %s", e.reason);
	if (h.status < 200 || h.status > 299)
		return ab_error (err, 0, AB_E_DENIED, "proxy answered CONNECT with %d", h.status);
	if (ab_iobuf_len (&c->pbuf) > len)
		return ab_error (err, 0, AB_E_SYSTEM, "proxy: data before the tunnel opened");
	ab_iobuf_free (&c->pbuf);
	c->state = HC_TLS;
	return 0;
}

static int
proxy_step (ab_http_client_t *c, ab_error_t *err)
{
	struct ab_http_limits_s lim = { .max_head = c->cfg.max_head, .max_fields = 100 };
	struct ab_http_error_s e;

	while (!c->connect_sent) {
		ssize_t n;
		if (!ab_stream_can_write (&c->s))
			return 0;
		n = ab_stream_write (&c->s, ab_iobuf_peek (&c->pbuf), ab_iobuf_len (&c->pbuf));
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "proxy: send CONNECT");
		ab_iobuf_consume (&c->pbuf, (size_t)n);
		c->connect_sent = ab_iobuf_len (&c->pbuf) == 0;
	}
	for (;;) {
		ssize_t n, end;
		if (!ab_stream_can_read (&c->s))
			return 0;
		n = ab_stream_read_buf (&c->s, &c->pbuf, 4096, c->cfg.max_head);
		if (n < 0 && errno == EAGAIN)
			return 0;
		if (n <= 0)
			return ab_error (err, n < 0 ? errno : 0, AB_E_SYSTEM,
			                 "proxy: closed before answering CONNECT");
		end = ab_http_head_end (ab_iobuf_peek (&c->pbuf), ab_iobuf_len (&c->pbuf),
		                        &c->pscan, &lim, &e);
		if (end < 0)
			return ab_error (err, 0, AB_E_SYSTEM, "proxy: bad answer to CONNECT: %s",
			                 e.reason);
		if (end > 0)
			return proxy_answer (c, (size_t)end, err);
	}
}

SSL *
ab_tls_client_session (SSL_CTX *ctx, int fd, const struct ab_hostport_s *origin, ab_error_t *err)
{
	SSL *ssl = SSL_new (ctx);
	X509_VERIFY_PARAM *param;

	if (ssl == NULL || SSL_set_fd (ssl, fd) != 1) {
		SSL_free (ssl);
		ab_error (err, 0, AB_E_SYSTEM, "TLS: cannot create a session");
		return NULL;
	}
	param = SSL_get0_param (ssl);
	X509_VERIFY_PARAM_set_hostflags (param, X509_CHECK_FLAG_NO_PARTIAL_WILDCARDS);
	if (origin->kind == AB_HOST_NAME) {
		/* SNI for DNS names only: RFC 6066 3 forbids literal addresses. */
		if (SSL_set_tlsext_host_name (ssl, origin->host) != 1
		    || X509_VERIFY_PARAM_set1_host (param, origin->host, 0) != 1) {
			SSL_free (ssl);
			ab_error (err, 0, AB_E_SYSTEM, "TLS: cannot set the server name");
			return NULL;
		}
	} else if (X509_VERIFY_PARAM_set1_ip_asc (param, origin->host) != 1) {
		SSL_free (ssl);
		ab_error (err, 0, AB_E_SYSTEM, "TLS: cannot set the server address");
		return NULL;
	}
	SSL_set_connect_state (ssl);
	return ssl;
}

static int
tls_start (ab_http_client_t *c, ab_error_t *err)
{
	if (!(c->s.ssl = ab_tls_client_session (c->cfg.tls, c->s.fd, &c->origin, err)))
		return -1;
	return 0;
}

static int
tls_step (ab_http_client_t *c, ab_error_t *err)
{
	int r;
	int dummy = 0;

	if (c->s.ssl == NULL && tls_start (c, err) < 0)
		return -1;
	if (!ab_stream_can_read (&c->s) && !ab_stream_can_write (&c->s))
		return 0;
	ERR_clear_error ();
	errno = 0;
	r = SSL_do_handshake (c->s.ssl);
	if (r == 1) {
		c->s.r_want = AB_WANT_READ;
		c->s.w_want = AB_WANT_WRITE;
		c->state = HC_READY;
		return 0;
	}
	if (SSL_get_error (c->s.ssl, r) == SSL_ERROR_WANT_READ
	    || SSL_get_error (c->s.ssl, r) == SSL_ERROR_WANT_WRITE) {
		tls_result (&c->s, r, &dummy);
		/* Both directions wait on the handshake's need. */
		c->s.r_want = c->s.w_want = dummy;
		return 0;
	}
	if (SSL_get_verify_result (c->s.ssl) != X509_V_OK)
		return ab_error (err, 0, AB_E_DENIED, "TLS: certificate verification failed: %s",
		                 X509_verify_cert_error_string (SSL_get_verify_result (c->s.ssl)));
	{
		unsigned long e = ERR_peek_error ();
		char buf[256];
		ERR_error_string_n (e, buf, sizeof buf);
		ERR_clear_error ();
		return ab_error (err, e ? 0 : errno, AB_E_SYSTEM, "TLS handshake failed%s%s",
		                 e ? ": " : "", e ? buf : "");
	}
}

int
ab_http_client_connect_step (ab_http_client_t *c, ab_error_t *err)
{
	for (;;) {
		hc_state before = c->state;
		int r = 0;

		switch (c->state) {
		case HC_RESOLVE: return 0;
		case HC_DIAL: r = dial_next (c, err); break;
		case HC_CONNECTING: r = connecting_step (c, err); break;
		case HC_PROXY: r = proxy_step (c, err); break;
		case HC_TLS: r = tls_step (c, err); break;
		case HC_READY: return 1;
		}
		if (r < 0)
			return r;
		if (c->state == before)
			return 0;
	}
}

struct ab_stream_s *
ab_http_client_stream (ab_http_client_t *c)
{
	return &c->s;
}

bool
ab_http_client_absolute_form (const ab_http_client_t *c, const char **auth)
{
	if (!c->via_proxy || c->tls)
		return false;
	if (auth != NULL)
		*auth = c->proxy.auth[0] ? c->proxy.auth : NULL;
	return true;
}
