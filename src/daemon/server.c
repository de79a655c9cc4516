/* The daemon's front: the unix socket (0600 in a private directory), the
 * optional loopback TCP listener with a bearer token, and the hooks that
 * put the API on the HTTP server (net/http-server.h: a thread per
 * connection, since the agent client is blocking; no thread ever forks a
 * sandbox, see spawn.c): peer check, auth, dispatch to the router. */
#include "daemon/daemon-internal.h"
#include "daemon/browser.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/epoll.h>
#include <sys/file.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"
#include "net/http-server.h"
#include "policy/hostname.h"

#define SEND_TIMEOUT_S 600  /* a client that reads nothing for this long is dropped */
#define LINGER_MS      2000 /* after a closing answer (net/http-server.h) */
#define THREAD_STACK   (1 << 20)
#define MIN_TOKEN_LEN  16

/* The listener a connection came in on. */
enum { TAG_UNIX, TAG_TCP, TAG_E2B };

void
ab_daemon_config_init (struct ab_daemon_config_s *c)
{
	memset (c, 0, sizeof *c);
	c->max_sandboxes = 1024;
	c->max_execs = 64;
	c->max_connections = 1024;
	c->max_head = 16 * 1024;
	c->max_body = 1 << 20;
	c->max_upload = 8ULL << 30;
	c->output_cap = 1 << 20;
	c->idle_timeout_ms = 120000;
}

void
ab_daemon_config_free (struct ab_daemon_config_s *c)
{
	free (c->socket_path);
	free (c->state_dir);
	free (c->listen);
	free (c->token_file);
	free (c->e2b_listen);
	free (c->e2b_key_file);
	free (c->e2b_domain);
	ab_cleanup_strvp (&c->e2b_templates);
	free (c->pool_file);
}

char *
ab_daemon_default_socket (void)
{
	const char *xdg = getenv ("XDG_RUNTIME_DIR");

	if (geteuid () == 0)
		return xstrdup ("/run/agentbox/agentbox.sock");
	if (xdg && xdg[0] == '/')
		return xasprintf ("%s/agentbox.sock", xdg);
	return xasprintf ("/tmp/agentbox-%u/agentbox.sock", (unsigned)geteuid ());
}

/* mkdir -p with `mode` for what is created; the last component must end
 * up ours and not writable by anyone else (else another user could swap
 * our socket or state for theirs). */
static int
private_dir (const char *path, mode_t mode, ab_error_t *err)
{
	cleanup_free char *p = xstrdup (path);
	struct stat st;

	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (mkdir (p, 0755) < 0 && errno != EEXIST)
				return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", p);
			*s = '/';
		}
	if (mkdir (p, mode) < 0 && errno != EEXIST)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", p);
	if (lstat (p, &st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "stat %s", p);
	if (!S_ISDIR (st.st_mode) || st.st_uid != geteuid () || (st.st_mode & 022))
		return ab_error (
		        err, 0, AB_E_DENIED,
		        "%s must be a directory owned by uid %u and writable by no one else", p,
		        (unsigned)geteuid ());
	return 0;
}

static int
listen_unix (const char *path, ab_error_t *err)
{
	cleanup_free char *dir = xstrdup (path);
	cleanup_close int fd = -1;
	char *slash = strrchr (dir, '/');
	struct sockaddr_un sun;
	socklen_t len;
	struct stat st;
	mode_t old;

	if (path[0] != '/' || ab_unix_addr (path, &sun, &len, err) < 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "--socket %s: an absolute path of at most %zu bytes", path,
		                 sizeof sun.sun_path - 1);
	*slash = '\0';
	if (slash != dir && private_dir (dir, 0700, err) < 0)
		return -1;
	if (lstat (path, &st) == 0) {
		ab_error_t probe = AB_ERROR_INIT;
		cleanup_close int live = -1;

		if (!S_ISSOCK (st.st_mode))
			return ab_error (err, EEXIST, AB_E_CONFLICT,
			                 "%s exists and is not a socket", path);
		live = ab_unix_connect (path, &probe);
		if (live >= 0)
			return ab_error (err, 0, AB_E_CONFLICT,
			                 "another agentbox serve is listening on %s", path);
		unlink (path); /* a daemon that was killed left it */
	}
	old = umask (0177); /* 0600 from the first instant, not after a chmod */
	fd = ab_unix_listen (path, 512, err);
	umask (old);
	if (fd < 0)
		return -1;
	if (chmod (path, 0600) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "listen on %s", path);
	return steal_fd (&fd);
}

/* HOST:PORT with an IPv4 literal or [IPv6] (policy/hostname.h's rules;
 * a name is refused: the API must bind where the operator said, not
 * wherever a resolver points). */
static int
parse_listen (const char *spec, struct sockaddr_storage *ss, socklen_t *len, bool *loopback,
              ab_error_t *err)
{
	struct ab_hostport_s hp;

	memset (ss, 0, sizeof *ss);
	if (ab_listen_parse (spec, NULL, &hp, err) < 0)
		return ab_error_wrap (err, "--listen %s", spec);
	if (hp.port == 0)
		return ab_error (err, 0, AB_E_INVALID, "--listen %s: invalid port", spec);
	if (hp.kind == AB_HOST_NAME)
		return ab_error (err, 0, AB_E_INVALID,
		                 "--listen %s: an IPv4 or [IPv6] address literal", spec);
	*len = ab_addr_to_sockaddr (&hp.addr, hp.port, ss);
	*loopback = hp.kind == AB_HOST_IPV4
	                    ? hp.addr.bytes[0] == 127
	                    : IN6_IS_ADDR_LOOPBACK ((const struct in6_addr *)hp.addr.bytes);
	return 0;
}

/* A TCP listener for `flag` (--listen, --e2b-listen) at addr. */
static int
listen_tcp (const struct ab_daemon_config_s *c, const char *addr, const char *flag,
            const char *key_file, ab_error_t *err)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	bool loopback = false;
	cleanup_close int fd = -1;
	int one = 1;

	if (parse_listen (addr, &ss, &len, &loopback, err) < 0)
		return -1;
	if (!loopback && !c->listen_any)
		return ab_error (
		        err, 0, AB_E_DENIED,
		        "%s %s is not a loopback address; the API controls every sandbox: "
		        "add --listen-non-loopback only behind a firewall and TLS terminator",
		        flag, addr);
	fd = socket (ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0
	    || bind (fd, (struct sockaddr *)&ss, len) < 0 || listen (fd, 512) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "%s %s", flag, addr);
	ab_log (AB_LOG_WARN, "%s: TCP %s%s; every request needs the key or token from %s", flag,
	        addr, loopback ? "" : " (NOT loopback: reachable from the network)", key_file);
	return steal_fd (&fd);
}

static int
load_token (struct ab_daemon_s *d, const char *path, ab_error_t *err)
{
	char buf[4096];
	cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	struct stat st;
	ssize_t n;

	if (fd < 0 || fstat (fd, &st) < 0 || (n = read (fd, buf, sizeof buf - 1)) < 0)
		return ab_error (err, errno, AB_E_INVALID, "--token-file %s", path);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	if (n < MIN_TOKEN_LEN)
		return ab_error (err, 0, AB_E_INVALID,
		                 "--token-file %s: the token needs at least %d characters", path,
		                 MIN_TOKEN_LEN);
	if (st.st_mode & 077)
		ab_log (AB_LOG_WARN, "%s is readable by other users (chmod 600 it)", path);
	SHA256 ((const unsigned char *)buf, (size_t)n, d->token_digest);
	explicit_bzero (buf, sizeof buf);
	d->has_token = true;
	return 0;
}

/* "Authorization: Bearer TOKEN", compared as SHA-256 digests in constant time. */
static bool
authorized (struct ab_daemon_s *d, struct ab_http_io_s *io)
{
	static const char scheme[] = "bearer ";
	uint8_t digest[32];
	size_t len;
	const char *v = ab_http_io_field (io, "authorization", &len);

	if (!d->has_token || !v || len <= sizeof scheme - 1
	    || strncasecmp (v, scheme, sizeof scheme - 1) != 0)
		return false;
	SHA256 ((const unsigned char *)v + sizeof scheme - 1, len - (sizeof scheme - 1), digest);
	return CRYPTO_memcmp (digest, d->token_digest, sizeof digest) == 0;
}

static bool
peer_allowed (int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	/* The socket's mode already says who may connect; this is the second lock. */
	if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	return cred.uid == 0 || cred.uid == geteuid ();
}

static void
error_and_close (int fd, int status, const char *code, const char *msg)
{
	char buf[512];
	char body[256];
	int n = snprintf (body, sizeof body, "{\"error\":{\"code\":\"%s\",\"message\":\"%s\"}}\n",
	                  code, msg);
	int m = snprintf (
	        buf, sizeof buf,
	        "HTTP/1.1 %d Error\r\nContent-Type: application/json\r\nContent-Length: %d\r\n"
	        "Connection: close\r\n\r\n%s",
	        status, n, body);
	ab_metrics_request (status);
	ab_http_write (fd, buf, (size_t)m);
}

static int
split_target (struct ab_req_s *r, struct ab_http_io_s *io)
{
	const char *t = io->head.target;
	size_t len = io->head.target_len;
	const char *q = memchr (t, '?', len);
	size_t plen = q ? (size_t)(q - t) : len;

	if (len == 0 || t[0] != '/' || memchr (t, '%', plen) || memchr (t, '#', len))
		return -1;
	r->path = xstrndup (t, plen);
	r->query = q ? xstrndup (q + 1, len - plen - 1) : NULL;
	return 0;
}

/* One request; returns false when the connection must close. */
static bool
serve_one (struct ab_daemon_s *d, struct ab_http_conn_s *c)
{
	struct ab_http_io_s *io = &c->io;
	struct ab_req_s r = { .d = d, .io = io, .fd = c->fd };
	cleanup_free char *method = xstrndup (io->head.method, io->head.method_len);
	uint64_t t0 = ab_mono_us ();

	r.method = method;
	r.close = io->head.conn_close || (io->head.version_minor == 0 && !io->head.conn_keep_alive);
	if (c->tag == TAG_E2B) {
		/* Its own keys and tokens (e2b-server.c), never the daemon's. */
		ab_e2b_serve (&r, split_target (&r, io) == 0);
	} else if (ab_port_proxy_target (io)) {
		/* Before the daemon's token: previews carry the sandbox's own port
		 * token instead (api-port.c), and their paths may hold '%'. */
		r.path = xstrndup (io->head.target, io->head.target_len);
		ab_api_port_proxy (&r);
	} else if (split_target (&r, io) < 0)
		ab_resp_fail (&r, 400, "invalid", "request target must be an origin-form path");
	else if (c->tag == TAG_TCP && !authorized (d, io)
	         && !(ab_browser_door_target (io) && ab_browser_door_token_ok (d, io)))
		ab_resp_fail (&r, 401, "unauthorized", "missing or wrong bearer token");
	else
		ab_route (&r);
	if (!r.responded)
		ab_resp_fail (&r, 500, "internal", "no response");
	ab_metrics_observe (AB_M_REQUEST, ab_mono_us () - t0);
	free (r.path);
	free (r.query);
	return !r.close;
}

/* ---- the hooks on net/http-server.h ------------------------------------- */

static bool
on_accept (void *ctx, int fd, unsigned tag)
{
	int one = 1;

	/* envd streams are many small chunks: Nagle and delayed ACKs would
	 * hold each one back for tens of ms. */
	if (tag == TAG_E2B)
		setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return tag != TAG_UNIX || peer_allowed (fd);
}

static void
on_refuse (void *ctx, int fd, const char *why)
{
	error_and_close (fd, 503, "unavailable", why);
}

static void
on_head_error (void *ctx, struct ab_http_conn_s *c, const struct ab_http_error_s *e)
{
	error_and_close (c->fd, e->status, e->status == 431 ? "head_too_large" : "invalid",
	                 e->reason);
}

static ab_http_next
on_request (void *ctx, struct ab_http_conn_s *c)
{
	return serve_one (ctx, c) ? AB_HTTP_KEEP : AB_HTTP_CLOSE;
}

static const struct ab_http_server_ops_s daemon_ops = {
	.accept = on_accept,
	.refuse = on_refuse,
	.head_error = on_head_error,
	.request = on_request,
};

static int
start_server (struct ab_daemon_s *d, int *ufd, int *tfd, int *efd, ab_error_t *err)
{
	const struct ab_http_server_config_s hc = {
		.max_conns = d->cfg->max_connections,
		.max_head = d->cfg->max_head,
		.idle_timeout_ms = d->cfg->idle_timeout_ms,
		.head_timeout_ms = d->cfg->idle_timeout_ms,
		.send_timeout_ms = SEND_TIMEOUT_S * 1000,
		.linger_ms = LINGER_MS,
		.thread_stack = THREAD_STACK,
	};

	d->http = ab_http_server_new (&hc, &daemon_ops, d);
	if (ab_http_server_add_listener (d->http, steal_fd (ufd), TAG_UNIX, err) < 0)
		return -1;
	if (*tfd >= 0 && ab_http_server_add_listener (d->http, steal_fd (tfd), TAG_TCP, err) < 0)
		return -1;
	if (*efd >= 0 && ab_http_server_add_listener (d->http, steal_fd (efd), TAG_E2B, err) < 0)
		return -1;
	return 0;
}

static int
lock_state (const char *dir, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("%s/daemon.lock", dir);
	cleanup_close int fd = open (path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	if (flock (fd, LOCK_EX | LOCK_NB) < 0)
		return ab_error (err, errno, AB_E_CONFLICT, "another agentbox serve uses %s", dir);
	return steal_fd (&fd);
}

static int
setup (struct ab_daemon_s *d, const struct ab_daemon_config_s *c, int *lock_fd, ab_error_t *err)
{
	memset (d, 0, sizeof *d);
	d->cfg = c;
	pthread_mutex_init (&d->lock, NULL);
	d->sandboxes_dir = xasprintf ("%s/sandboxes", c->state_dir);
	d->epfd = epoll_create1 (EPOLL_CLOEXEC);
	if (d->epfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "epoll_create1");
	if (c->state_dir[0] != '/')
		return ab_error (err, 0, AB_E_INVALID, "--state-dir must be an absolute path");
	if (private_dir (c->state_dir, 0700, err) < 0
	    || private_dir (d->sandboxes_dir, 0700, err) < 0)
		return -1;
	if ((*lock_fd = lock_state (c->state_dir, err)) < 0)
		return -1;
	if (c->listen && (!c->token_file || load_token (d, c->token_file, err) < 0))
		return err->kind ? -1
		                 : ab_error (err, 0, AB_E_INVALID, "--listen needs --token-file");
	return 0;
}

static int
signals (void)
{
	sigset_t set;

	sigemptyset (&set);
	sigaddset (&set, SIGTERM);
	sigaddset (&set, SIGINT);
	sigaddset (&set, SIGHUP);
	/* Blocked before any thread starts, so every thread inherits it. */
	pthread_sigmask (SIG_BLOCK, &set, NULL);
	return signalfd (-1, &set, SFD_CLOEXEC);
}

int
ab_daemon_run (const struct ab_daemon_config_s *c, ab_error_t *err)
{
	/* Static: connection threads may still use it while the process exits. */
	static struct ab_daemon_s d;
	cleanup_close int lock_fd = -1, ufd = -1, tfd = -1, efd = -1, sfd = -1;
	int rc;

	if (setup (&d, c, &lock_fd, err) < 0 || ab_e2b_setup (&d, err) < 0
	    || ab_daemon_adopt (&d, err) < 0)
		return -1;
	if ((ufd = listen_unix (c->socket_path, err)) < 0
	    || (c->listen && (tfd = listen_tcp (c, c->listen, "--listen", c->token_file, err)) < 0)
	    || (c->e2b_listen
	        && (efd = listen_tcp (c, c->e2b_listen, "--e2b-listen", c->e2b_key_file, err)) < 0))
		return -1;
	sfd = signals ();
	if (ab_housekeeping_start (&d, err) < 0 || ab_pools_start (&d, err) < 0
	    || start_server (&d, &ufd, &tfd, &efd, err) < 0)
		return -1;
	ab_log (AB_LOG_INFO, "listening on %s (state in %s, %u sandboxes adopted)", c->socket_path,
	        c->state_dir, d.n_boxes);
	rc = ab_http_server_run (d.http, sfd, err);
	/* Sandboxes live on; the next daemon adopts them from the state dir.
	 * Connections are left to the process's exit: their handlers may be
	 * waiting on a sandbox, and must not mistake the stop for a client
	 * that went away (net/http-server.h). */
	unlink (c->socket_path);
	ab_http_server_free (d.http);
	if (rc < 0)
		return -1;
	ab_log (AB_LOG_INFO, "stopped; %u sandboxes keep running", d.n_boxes);
	return 0;
}
