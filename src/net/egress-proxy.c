/* The egress proxy object: listener, connection lifetime, events, timers
 * and the driver loop that runs one connection's state machine.  The
 * states themselves live in egress-request.c, egress-forward.c and
 * egress-tunnel.c (see egress-internal.h). */
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "net/egress-internal.h"
#include "net/lazy-timer.h"

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

uint64_t
ab_egress_now_us (void)
{
	return ab_mono_now_us ();
}

ssize_t
ab_egress_writev2 (int fd, struct ab_iobuf_s *b, const char *p, size_t n)
{
	struct iovec iov[2];
	struct msghdr msg = { .msg_iov = iov };
	ssize_t r;

	if (b != NULL && ab_iobuf_len (b) > 0) {
		iov[msg.msg_iovlen].iov_base = (void *)ab_iobuf_peek (b);
		iov[msg.msg_iovlen++].iov_len = ab_iobuf_len (b);
	}
	if (n > 0) {
		iov[msg.msg_iovlen].iov_base = (void *)p;
		iov[msg.msg_iovlen++].iov_len = n;
	}
	if (msg.msg_iovlen == 0)
		return 0;
	do
		r = sendmsg (fd, &msg, MSG_NOSIGNAL);
	while (r < 0 && errno == EINTR);
	/* serve_fd may hand us a pipe-like fd that is not a socket. */
	if (r < 0 && errno == ENOTSOCK) {
		do
			r = writev (fd, iov, (int)msg.msg_iovlen);
		while (r < 0 && errno == EINTR);
	}
	return r;
}

/* The deadline of the connection's current state (microseconds, monotonic). */
static uint64_t
conn_deadline (const struct ab_egress_conn_s *c)
{
	const struct ab_egress_limits_s *l = &c->proxy->cfg.limits;
	uint64_t idle = c->t_last + (uint64_t)l->idle_timeout_ms * 1000u;
	uint64_t head;

	switch (c->state) {
	case AB_EG_ST_HEAD:
		/* Slowloris: a head must arrive whole within head_timeout of its
		 * first byte, however slowly the bytes trickle in. */
		if (c->t_head_start == 0)
			return idle;
		head = c->t_head_start + (uint64_t)l->head_timeout_ms * 1000u;
		return head < idle ? head : idle;
	case AB_EG_ST_RESOLVE: return c->t_phase + (uint64_t)l->resolve_timeout_ms * 1000u;
	case AB_EG_ST_DIAL: return c->t_phase + (uint64_t)l->dial_timeout_ms * 1000u;
	case AB_EG_ST_CLOSING: return c->t_phase + AB_EG_LINGER_MS * 1000u;
	case AB_EG_ST_FORWARD:
	case AB_EG_ST_TUNNEL: break;
	}
	return idle;
}

/* Timers are lazy: the armed timer is only moved earlier, never later.  A
 * connection that keeps moving bytes pushes its idle deadline forward
 * without touching the timer heap; when the timer fires early it re-arms
 * for the real deadline. */
static void
conn_update_timer (struct ab_egress_conn_s *c)
{
	ab_lazy_timer_arm (c->tev, &c->timer_at, conn_deadline (c));
}

static void
conn_free (struct ab_egress_conn_s *c)
{
	ab_egress_proxy_t *p = c->proxy;

	if (c->rjob != NULL)
		ab_resolve_cancel (p->resolver, c->rjob);
	ab_egress_tunnel_release (c);
	ab_egress_conn_close_upstream (c);
	if (c->cev)
		event_free (c->cev);
	if (c->tev)
		event_free (c->tev);
	if (c->cfd >= 0)
		close (c->cfd);
	ab_iobuf_free (&c->cin);
	ab_iobuf_free (&c->cout);
	ab_iobuf_free (&c->uin);
	ab_iobuf_free (&c->uout);
	free (c->rq.cands);
	free (c->sandbox_id);
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
conn_step (struct ab_egress_conn_s *c)
{
	switch (c->state) {
	case AB_EG_ST_HEAD: return ab_egress_head_step (c);
	case AB_EG_ST_RESOLVE: return AB_EG_WAIT; /* the resolver's callback moves on */
	case AB_EG_ST_DIAL: return ab_egress_dial_step (c);
	case AB_EG_ST_FORWARD: return ab_egress_forward_step (c);
	case AB_EG_ST_TUNNEL: return ab_egress_tunnel_step (c);
	case AB_EG_ST_CLOSING: return ab_egress_closing_step (c);
	}
	return AB_EG_CLOSE;
}

void
ab_egress_conn_run (struct ab_egress_conn_s *c)
{
	int r;

	while ((r = conn_step (c)) == AB_EG_AGAIN)
		;
	if (r == AB_EG_CLOSE) {
		conn_free (c);
		return;
	}
	conn_update_timer (c);
}

void
ab_egress_conn_continue (struct ab_egress_conn_s *c, int r)
{
	if (r == AB_EG_CLOSE)
		conn_free (c);
	else if (r == AB_EG_AGAIN)
		ab_egress_conn_run (c);
	else
		conn_update_timer (c);
}

void
ab_egress_conn_yield (struct ab_egress_conn_s *c)
{
	/* EV_TIMEOUT as the "why": the callback sets no readiness flag. */
	event_active (c->cev, EV_TIMEOUT, 0);
}

ssize_t
ab_egress_read (struct ab_iobuf_s *b, int fd, size_t chunk, size_t max_cap, bool *rd, bool hup)
{
	size_t room = ab_iobuf_reserve (b, chunk, max_cap);
	ssize_t n = ab_iobuf_read (b, fd, chunk, max_cap);

	if ((n < 0 && errno == EAGAIN) || (n > 0 && (size_t)n < room && !hup))
		*rd = false;
	return n;
}

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

static void
on_client (evutil_socket_t fd, short what, void *arg)
{
	struct ab_egress_conn_s *c = arg;

	if (what & EV_CLOSED)
		c->c_hup = true;
	if (what & EV_READ)
		c->c_rd = true;
	if (what & EV_WRITE)
		c->c_wr = true;
	ab_egress_conn_run (c);
}

static void
on_upstream (evutil_socket_t fd, short what, void *arg)
{
	struct ab_egress_conn_s *c = arg;

	if (what & EV_CLOSED)
		c->u_hup = true;
	if (what & EV_READ)
		c->u_rd = true;
	if (what & EV_WRITE)
		c->u_wr = true;
	ab_egress_conn_run (c);
}

static void
on_timer (evutil_socket_t fd, short what, void *arg)
{
	struct ab_egress_conn_s *c = arg;
	uint64_t now = ab_egress_now_us ();

	c->timer_at = 0;
	if (now < conn_deadline (c)) {
		conn_update_timer (c);
		return;
	}
	ab_egress_conn_continue (c, ab_egress_timeout (c));
}

int
ab_egress_conn_watch_upstream (struct ab_egress_conn_s *c)
{
	c->u_rd = c->u_wr = c->u_hup = false;
	c->uev = event_new (c->proxy->base, c->ufd,
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
	if (c->ufd >= 0) {
		close (c->ufd);
		c->ufd = -1;
	}
	c->u_rd = c->u_wr = c->u_hup = false;
	c->up_reusable = false;
	/* uout is left alone: it may hold the next request's head already. */
	ab_iobuf_free (&c->uin);
}

void
ab_egress_set_nodelay (int fd)
{
	int one = 1;

	/* Heads and small bodies go out at once (fails harmlessly on AF_UNIX). */
	setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

static struct ab_egress_conn_s *
conn_new (ab_egress_proxy_t *p, int fd, const char *sandbox_id,
          const struct ab_egress_policy_s *policy, ab_error_t *err)
{
	struct ab_egress_conn_s *c = xcalloc (1, sizeof *c);

	c->proxy = p;
	c->policy = policy ? policy : p->cfg.policy;
	c->sandbox_id = sandbox_id ? xstrdup (sandbox_id) : NULL;
	c->cfd = fd;
	c->ufd = -1;
	c->t_cu.pipe[0] = c->t_cu.pipe[1] = -1;
	c->t_uc.pipe[0] = c->t_uc.pipe[1] = -1;
	c->t_last = ab_egress_now_us ();
	c->next = p->conns;
	if (p->conns)
		p->conns->prev = c;
	p->conns = c;
	p->n_conns++;
	ab_egress_set_nodelay (fd);
	c->cev = event_new (p->base, fd, EV_READ | EV_WRITE | EV_CLOSED | EV_PERSIST | EV_ET,
	                    on_client, c);
	c->tev = evtimer_new (p->base, on_timer, c);
	if (c->cev == NULL || c->tev == NULL || event_add (c->cev, NULL) < 0) {
		conn_free (c);
		ab_error (err, 0, AB_E_SYSTEM, "register connection with the event loop");
		return NULL;
	}
	conn_update_timer (c);
	return c;
}

int
ab_egress_proxy_serve_fd (ab_egress_proxy_t *p, int fd, const char *sandbox_id,
                          const struct ab_egress_policy_s *policy, ab_error_t *err)
{
	cleanup_close int owned = fd;

	if (p->n_conns >= p->cfg.limits.max_conns)
		return ab_error (err, 0, AB_E_LIMIT, "egress proxy: %u connections already",
		                 p->n_conns);
	if (ab_set_nonblock (fd, 1) < 0 || ab_set_cloexec (fd, 1) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "egress proxy: configure fd %d", fd);
	if (conn_new (p, steal_fd (&owned), sandbox_id, policy, err) == NULL)
		return -1;
	return 0;
}

static bool
listener_full (void *owner)
{
	ab_egress_proxy_t *p = owner;

	return p->n_conns >= p->cfg.limits.max_conns;
}

static void
listener_take (void *owner, int fd)
{
	ab_error_t err = AB_ERROR_INIT;

	conn_new (owner, fd, NULL, NULL, &err);
}

ab_egress_proxy_t *
ab_egress_proxy_new (struct event_base *base, const struct ab_egress_proxy_config_s *cfg,
                     ab_error_t *err)
{
	ab_egress_proxy_t *p = xcalloc (1, sizeof *p);

	signal (SIGPIPE, SIG_IGN);
	p->cfg = *cfg;
	ab_listener_init (&p->listener, listener_full, listener_take, p, ACCEPT_RETRY_MS);
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
		ab_egress_proxy_free (p);
		return NULL;
	}
	p->log_ev = event_new (p->base, -1, 0, on_log_flush, p);
	if (ab_loop_stop_open (&p->stop, p->base) < 0 || p->log_ev == NULL) {
		ab_error (err, errno, AB_E_SYSTEM, "set up the egress proxy's events");
		ab_egress_proxy_free (p);
		return NULL;
	}
	p->resolver = ab_resolver_new (p->base, cfg->limits.resolver_threads,
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
	while (p->conns)
		conn_free (p->conns);
	flush_log (p);
	ab_iobuf_free (&p->logbuf);
	if (p->log_ev)
		event_free (p->log_ev);
	ab_resolver_free (p->resolver);
	ab_loop_stop_close (&p->stop);
	ab_listener_close (&p->listener);
	if (p->own_base && p->base)
		event_base_free (p->base);
	free (p->fields);
	free (p);
}

int
ab_egress_proxy_listen (ab_egress_proxy_t *p, const char *host, const char *port, char *bound,
                        size_t bound_len, ab_error_t *err)
{
	if (p->listener.fd >= 0)
		return ab_error (err, 0, AB_E_CONFLICT, "egress proxy already listening");
	return ab_listener_open (&p->listener, p->base, host, port, bound, bound_len, err);
}

int
ab_egress_proxy_run (ab_egress_proxy_t *p, ab_error_t *err)
{
	return ab_loop_stop_run (&p->stop, err);
}

void
ab_egress_proxy_stop (ab_egress_proxy_t *p)
{
	ab_loop_stop_request (&p->stop);
}

unsigned
ab_egress_proxy_connections (const ab_egress_proxy_t *p)
{
	return p->n_conns;
}
