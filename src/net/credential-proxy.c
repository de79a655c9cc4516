/* The credential proxy object: configuration (load, watch, reload),
 * connection lifetime, events, timers and the driver loop.  The listener,
 * the stop and the lazy timers are shared with the egress proxy
 * (listener.c, loop-stop.c, lazy-timer.c); the request states live in
 * credential-request.c and credential-forward.c (credential-internal.h). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "net/credential-internal.h"
#include "net/lazy-timer.h"
#include "net/resolve.h"

#define RESOLVER_THREADS 2
#define RESOLVER_QUEUE   256

void
ab_cred_limits_default (struct ab_cred_limits_s *l)
{
	l->max_head = AB_HTTP_MAX_HEAD_DEFAULT;
	l->max_fields = AB_HTTP_MAX_FIELDS_DEFAULT;
	l->max_conns = 4096;
	l->head_timeout_ms = 30 * 1000;
	l->connect_timeout_ms = 30 * 1000;
	l->idle_timeout_ms = 600 * 1000;
}

uint64_t
ab_cp_now_us (void)
{
	return ab_mono_now_us ();
}

/* ---- configuration -------------------------------------------------------- */

void
ab_cred_proxy_set_config (ab_cred_proxy_t *p, struct ab_cred_config_s *c)
{
	ab_cred_config_unref (p->config);
	p->config = c;
}

static void log_line (ab_cred_proxy_t *p, const char *fmt, ...)
        __attribute__ ((format (printf, 2, 3)));

static void
log_line (ab_cred_proxy_t *p, const char *fmt, ...)
{
	va_list ap;

	if (p->cfg.log == NULL)
		return;
	va_start (ap, fmt);
	vfprintf (p->cfg.log, fmt, ap);
	va_end (ap);
	fflush (p->cfg.log);
}

/* (Re)load the file.  A missing file is not an error: at start the
 * configuration may arrive later, and later a vanished file keeps the
 * current one (like a malformed one, but it says nothing: a rename in
 * progress is not a mistake).  Messages never name a secret. */
static void
reload (ab_cred_proxy_t *p)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cred_config_s *c = ab_cred_config_load (p->config_path, &err);
	cleanup_free char *names = NULL;

	if (c == NULL) {
		if (err.kind == AB_E_NOT_FOUND)
			return;
		log_line (p, "%s\n",
		          "credential config is malformed; keeping previous configuration");
		return;
	}
	names = ab_cred_config_names (c);
	ab_cred_proxy_set_config (p, c);
	log_line (p, "credential config loaded with upstreams [%s]\n", names);
}

/* The directory's events: our file written and closed, or renamed into
 * place; our file created as a symbolic link, or (Kubernetes-style secret
 * volumes) the "..data" link swapped.  A plain file's IN_CREATE is not
 * enough: its content is still to come (IN_CLOSE_WRITE follows). */
static bool
concerns_us (const ab_cred_proxy_t *p, const struct inotify_event *ev)
{
	struct stat st;

	if (ev->len == 0)
		return false;
	if (strcmp (ev->name, p->config_base) == 0) {
		if (ev->mask & (IN_CLOSE_WRITE | IN_MOVED_TO))
			return true;
		return (ev->mask & IN_CREATE) && lstat (p->config_path, &st) == 0
		       && S_ISLNK (st.st_mode);
	}
	return strncmp (ev->name, "..", 2) == 0 && (ev->mask & (IN_MOVED_TO | IN_CREATE)) != 0;
}

static void
on_inotify (evutil_socket_t fd, short what, void *arg)
{
	ab_cred_proxy_t *p = arg;
	char buf[16 * (sizeof (struct inotify_event) + NAME_MAX + 1)]
	        __attribute__ ((aligned (__alignof__(struct inotify_event))));
	bool changed = false;
	ssize_t n;

	/* Drain everything queued, then reload once: an editor's burst of
	 * events is one change. */
	while ((n = read (fd, buf, sizeof buf)) > 0) {
		for (char *q = buf; q < buf + n;) {
			const struct inotify_event *ev = (const struct inotify_event *)q;
			if (concerns_us (p, ev))
				changed = true;
			q += sizeof *ev + ev->len;
		}
	}
	if (changed)
		reload (p);
}

static int
watch_config (ab_cred_proxy_t *p, ab_error_t *err)
{
	cleanup_free char *d1 = xstrdup (p->config_path);
	cleanup_free char *d2 = xstrdup (p->config_path);

	p->config_dir = xstrdup (dirname (d1));
	p->config_base = xstrdup (basename (d2));
	p->inotify_fd = inotify_init1 (IN_NONBLOCK | IN_CLOEXEC);
	if (p->inotify_fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "inotify_init1");
	if (inotify_add_watch (p->inotify_fd, p->config_dir,
	                       IN_CLOSE_WRITE | IN_MOVED_TO | IN_CREATE | IN_ONLYDIR)
	    < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "watch the configuration directory %s", p->config_dir);
	p->inotify_ev = event_new (p->base, p->inotify_fd, EV_READ | EV_PERSIST, on_inotify, p);
	if (p->inotify_ev == NULL || event_add (p->inotify_ev, NULL) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "register the configuration watch");
	return 0;
}

/* ---- connections ---------------------------------------------------------- */

static uint64_t
conn_deadline (const struct ab_cp_conn_s *c)
{
	const struct ab_cred_limits_s *l = &c->proxy->cfg.limits;
	uint64_t idle = c->t_last + (uint64_t)l->idle_timeout_ms * 1000u;
	uint64_t head;

	switch (c->state) {
	case AB_CP_ST_HEAD:
		/* Slowloris: a head must arrive whole within head_timeout. */
		if (c->t_head_start == 0)
			return idle;
		head = c->t_head_start + (uint64_t)l->head_timeout_ms * 1000u;
		return head < idle ? head : idle;
	case AB_CP_ST_CONNECT: return c->t_phase + (uint64_t)l->connect_timeout_ms * 1000u;
	case AB_CP_ST_CLOSING: return c->t_phase + AB_CP_LINGER_MS * 1000u;
	case AB_CP_ST_FORWARD: break;
	}
	return idle;
}

/* Lazy timers, as in the egress proxy: only ever moved earlier; an early
 * firing re-arms for the real deadline. */
static void
conn_update_timer (struct ab_cp_conn_s *c)
{
	ab_lazy_timer_arm (c->tev, &c->timer_at, conn_deadline (c));
}

void
ab_cp_close_upstream (struct ab_cp_conn_s *c)
{
	ab_http_client_free (c->up);
	c->up = NULL;
	c->us = NULL;
	c->up_idle = false;
	c->up_ups = NULL;
	ab_cred_config_unref (c->up_cfg);
	c->up_cfg = NULL;
	ab_iobuf_free (&c->uin);
}

void
ab_cp_req_release (struct ab_cp_conn_s *c)
{
	ab_cred_config_unref (c->cfg);
	c->cfg = NULL;
	c->ups = NULL;
}

static void
conn_free (struct ab_cp_conn_s *c)
{
	ab_cred_proxy_t *p = c->proxy;

	ab_cp_close_upstream (c);
	ab_cp_req_release (c);
	if (c->cev)
		event_free (c->cev);
	if (c->tev)
		event_free (c->tev);
	ab_stream_close (&c->cs);
	ab_iobuf_free (&c->cin);
	ab_iobuf_free (&c->cout);
	ab_iobuf_free (&c->uout);
	if (c->prev)
		c->prev->next = c->next;
	else
		p->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	p->n_conns--;
	ab_listener_resume (&p->listener);
	free (c);
}

static int
conn_step (struct ab_cp_conn_s *c)
{
	switch (c->state) {
	case AB_CP_ST_HEAD: return ab_cp_head_step (c);
	case AB_CP_ST_CONNECT: return ab_cp_connect_step (c);
	case AB_CP_ST_FORWARD: return ab_cp_forward_step (c);
	case AB_CP_ST_CLOSING: return ab_cp_closing_step (c);
	}
	return AB_CP_CLOSE;
}

void
ab_cp_conn_run (struct ab_cp_conn_s *c)
{
	int r;

	while ((r = conn_step (c)) == AB_CP_AGAIN)
		;
	if (r == AB_CP_CLOSE) {
		conn_free (c);
		return;
	}
	conn_update_timer (c);
}

void
ab_cp_conn_yield (struct ab_cp_conn_s *c)
{
	event_active (c->cev, EV_TIMEOUT, 0);
}

void
ab_cp_upstream_notify (void *arg)
{
	ab_cp_conn_run (arg);
}

static void
on_client (evutil_socket_t fd, short what, void *arg)
{
	struct ab_cp_conn_s *c = arg;

	if (what & EV_READ)
		c->cs.rd = true;
	if (what & EV_WRITE)
		c->cs.wr = true;
	ab_cp_conn_run (c);
}

static void
on_timer (evutil_socket_t fd, short what, void *arg)
{
	struct ab_cp_conn_s *c = arg;
	int r;

	c->timer_at = 0;
	if (ab_cp_now_us () < conn_deadline (c)) {
		conn_update_timer (c);
		return;
	}
	r = ab_cp_timeout (c);
	if (r == AB_CP_CLOSE)
		conn_free (c);
	else
		ab_cp_conn_run (c);
}

static int
conn_new (ab_cred_proxy_t *p, int fd, ab_error_t *err)
{
	struct ab_cp_conn_s *c = xcalloc (1, sizeof *c);
	int one = 1;

	c->proxy = p;
	ab_stream_init (&c->cs, fd);
	c->t_last = ab_cp_now_us ();
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->n_conns++;
	setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	c->cev = event_new (p->base, fd, EV_READ | EV_WRITE | EV_PERSIST | EV_ET, on_client, c);
	c->tev = evtimer_new (p->base, on_timer, c);
	if (c->cev == NULL || c->tev == NULL || event_add (c->cev, NULL) < 0) {
		conn_free (c);
		return ab_error (err, 0, AB_E_SYSTEM, "register connection with the event loop");
	}
	conn_update_timer (c);
	return 0;
}

int
ab_cred_proxy_serve_fd (ab_cred_proxy_t *p, int fd, ab_error_t *err)
{
	cleanup_close int owned = fd;

	if (p->n_conns >= p->cfg.limits.max_conns)
		return ab_error (err, 0, AB_E_LIMIT, "credential proxy: %u connections already",
		                 p->n_conns);
	if (ab_set_nonblock (fd, 1) < 0 || ab_set_cloexec (fd, 1) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "credential proxy: configure fd %d", fd);
	return conn_new (p, steal_fd (&owned), err);
}

static bool
listener_full (void *owner)
{
	ab_cred_proxy_t *p = owner;

	return p->n_conns >= p->cfg.limits.max_conns;
}

static void
listener_take (void *owner, int fd)
{
	ab_error_t err = AB_ERROR_INIT;

	conn_new (owner, fd, &err);
}

/* ---- the proxy object ----------------------------------------------------- */

static int
proxy_init (ab_cred_proxy_t *p, ab_error_t *err)
{
	if (ab_loop_stop_open (&p->stop, p->base) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "set up the credential proxy's events");
	p->resolver = ab_resolver_new (p->base, RESOLVER_THREADS, RESOLVER_QUEUE, err);
	if (p->resolver == NULL)
		return -1;
	p->tls = ab_tls_client_ctx_new (p->cfg.log, err);
	if (p->tls == NULL)
		return -1;
	ab_proxy_env_load (&p->proxy_env, NULL, NULL);
	p->client_cfg = (struct ab_http_client_config_s){
		.base = p->base,
		.resolver = p->resolver,
		.tls = p->tls,
		.proxy_env = &p->proxy_env,
		.max_head = p->cfg.limits.max_head,
	};
	if (p->config_path != NULL) {
		reload (p);
		if (watch_config (p, err) < 0)
			return -1;
	}
	return 0;
}

ab_cred_proxy_t *
ab_cred_proxy_new (struct event_base *base, const struct ab_cred_proxy_config_s *cfg,
                   ab_error_t *err)
{
	ab_cred_proxy_t *p = xcalloc (1, sizeof *p);

	signal (SIGPIPE, SIG_IGN);
	p->cfg = *cfg;
	p->config_path = cfg->config_path ? xstrdup (cfg->config_path) : NULL;
	p->cfg.config_path = p->config_path;
	p->inotify_fd = -1;
	/* No pause on fd exhaustion (retry 0): the listener stays armed. */
	ab_listener_init (&p->listener, listener_full, listener_take, p, 0);
	ab_loop_stop_init (&p->stop);
	p->http_limits.max_head = cfg->limits.max_head;
	p->http_limits.max_fields = cfg->limits.max_fields;
	p->fields =
	        xcalloc (cfg->limits.max_fields ? cfg->limits.max_fields : 1, sizeof *p->fields);
	p->base = base;
	if (p->base == NULL) {
		p->base = event_base_new ();
		p->own_base = true;
	}
	if (p->base == NULL) {
		ab_error (err, 0, AB_E_SYSTEM, "create event loop");
		ab_cred_proxy_free (p);
		return NULL;
	}
	if (proxy_init (p, err) < 0) {
		ab_cred_proxy_free (p);
		return NULL;
	}
	return p;
}

static void
free_event (struct event **ev)
{
	if (*ev != NULL)
		event_free (*ev);
	*ev = NULL;
}

void
ab_cred_proxy_free (ab_cred_proxy_t *p)
{
	if (p == NULL)
		return;
	while (p->conns)
		conn_free (p->conns);
	ab_resolver_free (p->resolver);
	ab_loop_stop_close (&p->stop);
	ab_listener_close (&p->listener);
	free_event (&p->inotify_ev);
	if (p->inotify_fd >= 0)
		close (p->inotify_fd);
	if (p->own_base && p->base)
		event_base_free (p->base);
	SSL_CTX_free (p->tls);
	ab_proxy_env_clear (&p->proxy_env);
	ab_cred_config_unref (p->config);
	free (p->config_path);
	free (p->config_dir);
	free (p->config_base);
	free (p->fields);
	free (p);
}

int
ab_cred_proxy_listen (ab_cred_proxy_t *p, const char *host, const char *port, char *bound,
                      size_t bound_len, ab_error_t *err)
{
	if (p->listener.fd >= 0)
		return ab_error (err, 0, AB_E_CONFLICT, "credential proxy already listening");
	return ab_listener_open (&p->listener, p->base, host, port, bound, bound_len, err);
}

int
ab_cred_proxy_run (ab_cred_proxy_t *p, ab_error_t *err)
{
	return ab_loop_stop_run (&p->stop, err);
}

void
ab_cred_proxy_stop (ab_cred_proxy_t *p)
{
	ab_loop_stop_request (&p->stop);
}
