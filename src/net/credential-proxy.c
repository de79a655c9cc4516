/* The credential proxy object: configuration (load, watch, reload) and
 * the handler table for the relay core (relay.h), which runs the
 * connections; the request's checks and upstream live in
 * credential-request.c and credential-forward.c (credential-internal.h). */
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/credential-internal.h"
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

/* ---- configuration -------------------------------------------------------- */

void
ab_cred_proxy_set_config (ab_cred_proxy_t *p, struct ab_cred_config_s *c)
{
	ab_cred_config_unref (p->config);
	p->config = c;
}

void
ab_cp_log (ab_cred_proxy_t *p, const char *fmt, ...)
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
		ab_cp_log (p, "%s\n",
		           "credential config is malformed; keeping previous configuration");
		return;
	}
	names = ab_cred_config_names (c);
	ab_cred_proxy_set_config (p, c);
	ab_cp_log (p, "credential config loaded with upstreams [%s]\n", names);
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
	p->inotify_ev =
	        event_new (p->relay.base, p->inotify_fd, EV_READ | EV_PERSIST, on_inotify, p);
	if (p->inotify_ev == NULL || event_add (p->inotify_ev, NULL) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "register the configuration watch");
	return 0;
}

/* ---- the relay's handlers ------------------------------------------------- */

void
ab_cp_req_release (struct ab_cp_conn_s *c)
{
	ab_cred_config_unref (c->cfg);
	c->cfg = NULL;
	c->ups = NULL;
}

static void
conn_release (struct ab_relay_conn_s *rc)
{
	ab_cp_close_upstream (rc);
	ab_cp_req_release (ab_cp_conn (rc));
}

static void
done (struct ab_relay_conn_s *rc)
{
	ab_cp_req_release (ab_cp_conn (rc));
}

static uint64_t
connect_deadline (const struct ab_relay_conn_s *rc)
{
	const ab_cred_proxy_t *p = rc->relay->owner;

	return rc->t_phase + (uint64_t)p->cfg.limits.connect_timeout_ms * 1000u;
}

static void
report (struct ab_relay_s *r, const ab_error_t *err)
{
	ab_cred_proxy_t *p = r->owner;

	ab_cp_log (p, "%s\n", err->msg);
}

static const struct ab_relay_ops_s cred_ops = {
	.conn_size = sizeof (struct ab_cp_conn_s),
	.io_chunk = AB_CP_IO_CHUNK,
	.splice = false,
	.upstream_hup = false,
	.answer_type = "text/plain",
	.request = ab_cp_request,
	.connect = ab_cp_connect_step,
	.connect_deadline = connect_deadline,
	.timeout = ab_cp_timeout,
	.fail = ab_cp_fail,
	.done = done,
	.redial = ab_cp_redial,
	.close_upstream = ab_cp_close_upstream,
	.release = conn_release,
	.report = report,
};

int
ab_cred_proxy_serve_fd (ab_cred_proxy_t *p, int fd, ab_error_t *err)
{
	return ab_relay_serve_fd (&p->relay, fd, NULL, err);
}

/* ---- the proxy object ----------------------------------------------------- */

static int
proxy_init (ab_cred_proxy_t *p, ab_error_t *err)
{
	struct event_base *base = p->relay.base;

	p->resolver = ab_resolver_new (base, RESOLVER_THREADS, RESOLVER_QUEUE, err);
	if (p->resolver == NULL)
		return -1;
	p->tls = ab_tls_client_ctx_new (p->cfg.log, err);
	if (p->tls == NULL)
		return -1;
	/* With read-ahead, OpenSSL reads as much as its buffer holds: one
	 * read(2) for a chunk's worth of records instead of one per 16 KiB
	 * record.  Released whenever it is empty, so a kept-alive upstream
	 * holds none between responses. */
	SSL_CTX_set_default_read_buffer_len (p->tls, AB_CP_TLS_READ_BUF);
	SSL_CTX_set_mode (p->tls, SSL_MODE_RELEASE_BUFFERS);
	ab_proxy_env_load (&p->proxy_env, NULL, NULL);
	p->client_cfg = (struct ab_http_client_config_s){
		.base = base,
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
	const struct ab_relay_limits_s rl = {
		.max_head = cfg->limits.max_head,
		.max_fields = cfg->limits.max_fields,
		.max_conns = cfg->limits.max_conns,
		.head_timeout_ms = cfg->limits.head_timeout_ms,
		.idle_timeout_ms = cfg->limits.idle_timeout_ms,
	};

	p->cfg = *cfg;
	p->config_path = cfg->config_path ? xstrdup (cfg->config_path) : NULL;
	p->cfg.config_path = p->config_path;
	p->inotify_fd = -1;
	/* No pause on fd exhaustion (retry 0): the listener stays armed. */
	if (ab_relay_init (&p->relay, base, "credential proxy", &cred_ops, p, &rl, 0, err) < 0) {
		ab_cred_proxy_free (p);
		return NULL;
	}
	p->relay.report = cfg->report;
	p->relay.report_arg = cfg->report_arg;
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
	if (p->relay.ops != NULL)
		ab_relay_drop_conns (&p->relay);
	ab_resolver_free (p->resolver);
	free_event (&p->inotify_ev);
	if (p->inotify_fd >= 0)
		close (p->inotify_fd);
	ab_relay_fini (&p->relay);
	SSL_CTX_free (p->tls);
	ab_proxy_env_clear (&p->proxy_env);
	ab_cred_config_unref (p->config);
	free (p->config_path);
	free (p->config_dir);
	free (p->config_base);
	free (p);
}

int
ab_cred_proxy_listen (ab_cred_proxy_t *p, const char *host, const char *port, char *bound,
                      size_t bound_len, ab_error_t *err)
{
	return ab_relay_listen (&p->relay, host, port, bound, bound_len, err);
}

int
ab_cred_proxy_run (ab_cred_proxy_t *p, ab_error_t *err)
{
	return ab_relay_run (&p->relay, err);
}

void
ab_cred_proxy_stop (ab_cred_proxy_t *p)
{
	ab_relay_stop (&p->relay);
}
