/* The egress proxy object: its handler table for the relay core (relay.h
 * runs the connections), the upstream socket's events and the decision
 * log.  The requests' states live in egress-request.c and egress-tunnel.c
 * (see egress-internal.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "net/egress-internal.h"

/* The pause after running out of file descriptors. */
#define ACCEPT_RETRY_MS 100

void
ab_egress_limits_default (struct ab_egress_limits_s *l)
{
	l->max_head = AB_HTTP_MAX_HEAD_DEFAULT;
	l->max_fields = AB_HTTP_MAX_FIELDS_DEFAULT;
	l->max_conns = 16384;
	l->head_timeout_ms = 30 * 1000;
	l->idle_timeout_ms = 300 * 1000;
	l->dial_timeout_ms = 15 * 1000;
	l->resolve_timeout_ms = 5 * 1000;
	l->resolver_threads = 4;
	l->resolver_queue = 1024;
}

/* ---- the decision log ----------------------------------------------------- */

static void
flush_log (ab_egress_proxy_t *p)
{
	if (ab_iobuf_len (&p->logbuf) == 0 || p->cfg.log == NULL)
		return;
	fwrite (ab_iobuf_peek (&p->logbuf), 1, ab_iobuf_len (&p->logbuf), p->cfg.log);
	fflush (p->cfg.log);
	ab_iobuf_free (&p->logbuf);
}

static void
on_log_flush (evutil_socket_t fd, short what, void *arg)
{
	flush_log (arg);
}

void
ab_egress_log (ab_egress_proxy_t *p, const char *line, size_t len)
{
	if (p->cfg.log == NULL)
		return;
	ab_iobuf_append (&p->logbuf, line, len);
	/* Activated events run after the ones already queued for this turn,
	 * so the flush comes once every callback of the turn has logged. */
	if (ab_iobuf_len (&p->logbuf) >= 64 * 1024)
		flush_log (p);
	else
		event_active (p->log_ev, EV_TIMEOUT, 0);
}

/* ---- the upstream socket -------------------------------------------------- */

static void
on_upstream (evutil_socket_t fd, short what, void *arg)
{
	struct ab_egress_conn_s *c = arg;

	if (what & EV_CLOSED)
		c->r.u_hup = true;
	if (what & EV_READ)
		c->ustream.rd = true;
	if (what & EV_WRITE)
		c->ustream.wr = true;
	ab_relay_conn_run (&c->r);
}

int
ab_egress_conn_watch_upstream (struct ab_egress_conn_s *c)
{
	c->ustream.rd = c->ustream.wr = c->r.u_hup = false;
	c->r.us = &c->ustream;
	c->uev = event_new (c->r.relay->base, c->ustream.fd,
	                    EV_READ | EV_WRITE | EV_CLOSED | EV_PERSIST | EV_ET, on_upstream, c);
	if (c->uev == NULL || event_add (c->uev, NULL) < 0)
		return -1;
	return 0;
}

void
ab_egress_conn_close_upstream (struct ab_egress_conn_s *c)
{
	if (c->uev) {
		event_free (c->uev);
		c->uev = NULL;
	}
	ab_stream_close (&c->ustream);
	c->r.us = NULL;
	c->r.u_hup = false;
	c->r.up_idle = false;
	/* uout is left alone: it may hold the next request's head already. */
	ab_iobuf_free (&c->r.uin);
}

/* ---- the relay's handlers ------------------------------------------------- */

static void
conn_init (struct ab_relay_conn_s *rc)
{
	struct ab_egress_conn_s *c = ab_egress_conn (rc);

	c->policy = ab_egress_conn_proxy (c)->cfg.policy;
	ab_stream_init (&c->ustream, -1);
}

static void
conn_release (struct ab_relay_conn_s *rc)
{
	struct ab_egress_conn_s *c = ab_egress_conn (rc);

	if (c->rjob != NULL)
		ab_resolve_cancel (ab_egress_conn_proxy (c)->resolver, c->rjob);
	c->rjob = NULL;
	ab_egress_conn_close_upstream (c);
	free (c->rq.cands);
	c->rq.cands = NULL;
	free (c->sandbox_id);
	c->sandbox_id = NULL;
}

static void
close_upstream (struct ab_relay_conn_s *rc)
{
	ab_egress_conn_close_upstream (ab_egress_conn (rc));
}

static uint64_t
connect_deadline (const struct ab_relay_conn_s *rc)
{
	const struct ab_egress_conn_s *c = (const struct ab_egress_conn_s *)rc;
	const struct ab_egress_limits_s *l = &ab_egress_conn_proxy (c)->cfg.limits;

	return rc->t_phase
	       + (uint64_t)(c->resolving ? l->resolve_timeout_ms : l->dial_timeout_ms) * 1000u;
}

static void
done (struct ab_relay_conn_s *rc)
{
	ab_egress_audit_done (ab_egress_conn (rc));
}

static void
report (struct ab_relay_s *r, const ab_error_t *err)
{
	ab_egress_proxy_t *p = r->owner;
	char line[sizeof err->msg + 32];
	int n;

	n = snprintf (line, sizeof line, "%s\n", err->msg);
	if (n > 0)
		ab_egress_log (p, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1);
}

static const struct ab_relay_ops_s egress_ops = {
	.conn_size = sizeof (struct ab_egress_conn_s),
	.io_chunk = AB_EG_IO_CHUNK,
	.splice = true,
	.upstream_hup = true,
	.answer_type = "text/plain; charset=utf-8",
	.init = conn_init,
	.request = ab_egress_request,
	.connect = ab_egress_connect_step,
	.tunnel = ab_egress_tunnel_step,
	.connect_deadline = connect_deadline,
	.timeout = ab_egress_timeout,
	.fail = ab_egress_fail,
	.done = done,
	.redial = ab_egress_redial,
	.close_upstream = close_upstream,
	.release = conn_release,
	.report = report,
};

/* ---- the proxy object ----------------------------------------------------- */

int
ab_egress_proxy_serve_fd (ab_egress_proxy_t *p, int fd, const char *sandbox_id,
                          const struct ab_egress_policy_s *policy, ab_error_t *err)
{
	struct ab_relay_conn_s *rc;
	struct ab_egress_conn_s *c;

	if (ab_relay_serve_fd (&p->relay, fd, &rc, err) < 0)
		return -1;
	c = ab_egress_conn (rc);
	if (policy != NULL)
		c->policy = policy;
	c->sandbox_id = sandbox_id ? xstrdup (sandbox_id) : NULL;
	return 0;
}

ab_egress_proxy_t *
ab_egress_proxy_new (struct event_base *base, const struct ab_egress_proxy_config_s *cfg,
                     ab_error_t *err)
{
	ab_egress_proxy_t *p = xcalloc (1, sizeof *p);
	const struct ab_relay_limits_s rl = {
		.max_head = cfg->limits.max_head,
		.max_fields = cfg->limits.max_fields,
		.max_conns = cfg->limits.max_conns,
		.head_timeout_ms = cfg->limits.head_timeout_ms,
		.idle_timeout_ms = cfg->limits.idle_timeout_ms,
	};

	p->cfg = *cfg;
	if (ab_relay_init (&p->relay, base, "egress proxy", &egress_ops, p, &rl, ACCEPT_RETRY_MS,
	                   err)
	    < 0) {
		ab_egress_proxy_free (p);
		return NULL;
	}
	p->relay.report = cfg->report;
	p->relay.report_arg = cfg->report_arg;
	p->log_ev = event_new (p->relay.base, -1, 0, on_log_flush, p);
	if (p->log_ev == NULL) {
		ab_error (err, 0, AB_E_SYSTEM, "set up the egress proxy's events");
		ab_egress_proxy_free (p);
		return NULL;
	}
	p->resolver = ab_resolver_new (p->relay.base, cfg->limits.resolver_threads,
	                               cfg->limits.resolver_queue, err);
	if (p->resolver == NULL) {
		ab_egress_proxy_free (p);
		return NULL;
	}
	return p;
}

void
ab_egress_proxy_free (ab_egress_proxy_t *p)
{
	if (p == NULL)
		return;
	/* Connections first: they cancel their lookups. */
	if (p->relay.ops != NULL)
		ab_relay_drop_conns (&p->relay);
	flush_log (p);
	ab_iobuf_free (&p->logbuf);
	if (p->log_ev)
		event_free (p->log_ev);
	ab_resolver_free (p->resolver);
	ab_relay_fini (&p->relay);
	free (p);
}

int
ab_egress_proxy_listen (ab_egress_proxy_t *p, const char *host, const char *port, char *bound,
                        size_t bound_len, ab_error_t *err)
{
	return ab_relay_listen (&p->relay, host, port, bound, bound_len, err);
}

int
ab_egress_proxy_run (ab_egress_proxy_t *p, ab_error_t *err)
{
	return ab_relay_run (&p->relay, err);
}

void
ab_egress_proxy_stop (ab_egress_proxy_t *p)
{
	ab_relay_stop (&p->relay);
}

unsigned
ab_egress_proxy_connections (const ab_egress_proxy_t *p)
{
	return p->relay.n_conns;
}
