/* The relay's connection engine: connection lifetime, events, lazy timers,
 * the driver loop, the listener hooks, and the two states every service
 * shares: reading a request head and closing (relay.h). */
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "net/http-status.h"
#include "net/lazy-timer.h"
#include "net/relay.h"

uint64_t
ab_relay_now_us (void)
{
	return ab_mono_us ();
}

void
ab_relay_set_nodelay (int fd)
{
	int one = 1;

	/* Heads and small bodies go out at once (fails harmlessly on AF_UNIX). */
	setsockopt (fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
}

/* ---- SIGPIPE, per wakeup -------------------------------------------------- */

/* A write to a peer that closed raises SIGPIPE, and splice(2) and TLS
 * writes have no MSG_NOSIGNAL.  Library code must not change the process's
 * disposition, so a wakeup that is about to make such a call blocks
 * SIGPIPE in this thread (ab_relay_sigpipe_guard) and, when the wakeup
 * ends, takes back the signal its own failed writes left pending before
 * the mask is restored (a signal already pending when it was blocked is
 * left alone: it was not ours).  The mask is changed only on demand: the
 * plain-socket path (send with MSG_NOSIGNAL) is most wakeups, and two
 * rt_sigprocmask calls per wakeup were a third of its system calls.
 * Wakeups nest (a step run from a resolver's callback): only the
 * outermost restores. */
static void
pipe_guard_enter (struct ab_relay_s *r)
{
	if (r->guard_depth++ > 0)
		return;
	r->epipe = false;
	r->guard_blocked = r->guard_restore = false;
}

void
ab_relay_sigpipe_guard (struct ab_relay_s *r)
{
	sigset_t s;

	if (r->guard_blocked || r->guard_depth == 0)
		return;
	sigemptyset (&s);
	sigaddset (&s, SIGPIPE);
	if (pthread_sigmask (SIG_BLOCK, &s, &r->guard_old) != 0)
		return;
	r->guard_blocked = true;
	/* Blocked already by the caller: theirs to restore, and any pending
	 * SIGPIPE may be theirs too. */
	r->guard_restore = !sigismember (&r->guard_old, SIGPIPE);
}

static void
pipe_guard_leave (struct ab_relay_s *r)
{
	const struct timespec now = { 0, 0 };
	sigset_t s;

	if (r->guard_depth == 0 || --r->guard_depth > 0)
		return;
	if (!r->guard_restore) {
		r->guard_blocked = false;
		return;
	}
	if (r->epipe) {
		sigemptyset (&s);
		sigaddset (&s, SIGPIPE);
		while (sigtimedwait (&s, NULL, &now) == SIGPIPE)
			;
	}
	pthread_sigmask (SIG_SETMASK, &r->guard_old, NULL);
	r->guard_blocked = r->guard_restore = false;
}

/* ---- I/O ------------------------------------------------------------------ */

ssize_t
ab_relay_read (struct ab_relay_s *r, struct ab_stream_s *s, struct ab_iobuf_s *b, size_t chunk,
               size_t max_cap, bool hup)
{
	size_t room = ab_iobuf_reserve (b, chunk, max_cap);
	ssize_t n;

	/* TLS reads may write (a KeyUpdate's answer, an alert). */
	if (s->ssl != NULL)
		ab_relay_sigpipe_guard (r);
	n = ab_stream_read_buf (s, b, chunk, max_cap);
	if (s->ssl == NULL && n > 0 && (size_t)n < room && !hup)
		s->rd = false;
	if (s->ssl != NULL && n < 0 && errno != EAGAIN)
		r->epipe = true;
	return n;
}

ssize_t
ab_relay_writev2 (struct ab_relay_s *r, struct ab_stream_s *s, struct ab_iobuf_s *b, const char *p,
                  size_t n)
{
	ssize_t w;

	if (s->ssl != NULL)
		ab_relay_sigpipe_guard (r);
	w = ab_stream_writev2 (s, b, p, n);
	/* serve_fd may hand us a pipe-like fd that is not a socket. */
	if (w < 0 && errno == ENOTSOCK && s->ssl == NULL) {
		struct iovec iov[2];
		int k = 0;

		ab_relay_sigpipe_guard (r);
		if (b != NULL && ab_iobuf_len (b) > 0) {
			iov[k].iov_base = (void *)ab_iobuf_peek (b);
			iov[k++].iov_len = ab_iobuf_len (b);
		}
		if (n > 0) {
			iov[k].iov_base = (void *)p;
			iov[k++].iov_len = n;
		}
		do
			w = writev (s->fd, iov, k);
		while (w < 0 && errno == EINTR);
		if (w < 0 && errno == EAGAIN)
			s->wr = false;
	}
	if (w < 0 && errno != EAGAIN)
		r->epipe = true;
	return w;
}

/* ---- timers --------------------------------------------------------------- */

/* The deadline of the connection's current state (microseconds, monotonic). */
static uint64_t
conn_deadline (const struct ab_relay_conn_s *c)
{
	const struct ab_relay_limits_s *l = &c->relay->limits;
	uint64_t idle = c->t_last + (uint64_t)l->idle_timeout_ms * 1000u;
	uint64_t head;

	switch (c->state) {
	case AB_RELAY_ST_HEAD:
		/* Slowloris: a head must arrive whole within head_timeout of its
		 * first byte, however slowly the bytes trickle in. */
		if (c->t_head_start == 0)
			return idle;
		head = c->t_head_start + (uint64_t)l->head_timeout_ms * 1000u;
		return head < idle ? head : idle;
	case AB_RELAY_ST_CONNECT: return c->relay->ops->connect_deadline (c);
	case AB_RELAY_ST_CLOSING: return c->t_phase + AB_RELAY_LINGER_MS * 1000u;
	case AB_RELAY_ST_FORWARD:
	case AB_RELAY_ST_TUNNEL: break;
	}
	return idle;
}

/* Lazy: the armed timer is only moved earlier, never later (lazy-timer.h). */
static void
conn_update_timer (struct ab_relay_conn_s *c)
{
	ab_lazy_timer_arm (c->tev, &c->timer_at, conn_deadline (c));
}

/* ---- lifetime ------------------------------------------------------------- */

static void
conn_free (struct ab_relay_conn_s *c)
{
	struct ab_relay_s *r = c->relay;

	if (r->ops->release)
		r->ops->release (c);
	ab_relay_dirs_release (c);
	if (c->us != NULL)
		r->ops->close_upstream (c);
	if (c->cev)
		event_free (c->cev);
	if (c->tev)
		event_free (c->tev);
	ab_stream_close (&c->cs);
	ab_iobuf_free (&c->cin);
	ab_iobuf_free (&c->cout);
	ab_iobuf_free (&c->uin);
	ab_iobuf_wipe (&c->uout);
	ab_iobuf_wipe (&c->replay);
	if (c->prev)
		c->prev->next = c->next;
	else
		r->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	r->n_conns--;
	ab_listener_resume (&r->listener);
	free (c);
}

static int head_step (struct ab_relay_conn_s *c);
static int closing_step (struct ab_relay_conn_s *c);

static int
conn_step (struct ab_relay_conn_s *c)
{
	const struct ab_relay_ops_s *ops = c->relay->ops;

	switch (c->state) {
	case AB_RELAY_ST_HEAD: return head_step (c);
	case AB_RELAY_ST_CONNECT: return ops->connect (c);
	case AB_RELAY_ST_FORWARD: return ab_relay_forward_step (c);
	case AB_RELAY_ST_TUNNEL: return ops->tunnel ? ops->tunnel (c) : AB_RELAY_CLOSE;
	case AB_RELAY_ST_CLOSING: return closing_step (c);
	}
	return AB_RELAY_CLOSE;
}

void
ab_relay_conn_run (struct ab_relay_conn_s *c)
{
	struct ab_relay_s *r = c->relay;
	int st;

	pipe_guard_enter (r);
	while ((st = conn_step (c)) == AB_RELAY_AGAIN)
		;
	if (st == AB_RELAY_CLOSE)
		conn_free (c);
	else
		conn_update_timer (c);
	pipe_guard_leave (r);
}

void
ab_relay_conn_continue (struct ab_relay_conn_s *c, int r)
{
	struct ab_relay_s *relay = c->relay;

	/* A TLS stream freed here may write its close_notify (the service's
	 * close_upstream guards it). */
	pipe_guard_enter (relay);
	if (r == AB_RELAY_CLOSE)
		conn_free (c);
	else if (r == AB_RELAY_AGAIN)
		ab_relay_conn_run (c);
	else
		conn_update_timer (c);
	pipe_guard_leave (relay);
}

void
ab_relay_conn_yield (struct ab_relay_conn_s *c)
{
	/* EV_TIMEOUT as the "why": the callback sets no readiness flag. */
	event_active (c->cev, EV_TIMEOUT, 0);
}

static void
on_client (evutil_socket_t fd, short what, void *arg)
{
	struct ab_relay_conn_s *c = arg;

	if (what & EV_CLOSED)
		c->c_hup = true;
	if (what & EV_READ)
		c->cs.rd = true;
	if (what & EV_WRITE)
		c->cs.wr = true;
	ab_relay_conn_run (c);
}

static void
on_timer (evutil_socket_t fd, short what, void *arg)
{
	struct ab_relay_conn_s *c = arg;
	struct ab_relay_s *r = c->relay;

	c->timer_at = 0;
	if (ab_relay_now_us () < conn_deadline (c)) {
		conn_update_timer (c);
		return;
	}
	/* The timeout handler may free a TLS stream (its close_notify). */
	pipe_guard_enter (r);
	ab_relay_conn_continue (c, r->ops->timeout (c));
	pipe_guard_leave (r);
}

static struct ab_relay_conn_s *
conn_new (struct ab_relay_s *r, int fd, ab_error_t *err)
{
	struct ab_relay_conn_s *c = xcalloc (1, r->ops->conn_size);

	c->relay = r;
	ab_stream_init (&c->cs, fd);
	c->d_cu.pipe[0] = c->d_cu.pipe[1] = -1;
	c->d_uc.pipe[0] = c->d_uc.pipe[1] = -1;
	/* The head sent upstream may carry injected credentials. */
	c->uout.secret = c->replay.secret = true;
	c->t_last = ab_relay_now_us ();
	c->next = r->conns;
	if (r->conns)
		r->conns->prev = c;
	r->conns = c;
	r->n_conns++;
	if (r->ops->init)
		r->ops->init (c);
	ab_relay_set_nodelay (fd);
	c->cev = event_new (r->base, fd, EV_READ | EV_WRITE | EV_CLOSED | EV_PERSIST | EV_ET,
	                    on_client, c);
	c->tev = evtimer_new (r->base, on_timer, c);
	if (c->cev == NULL || c->tev == NULL || event_add (c->cev, NULL) < 0) {
		conn_free (c);
		ab_error (err, 0, AB_E_SYSTEM, "%s: register a connection with the event loop",
		          r->what);
		return NULL;
	}
	conn_update_timer (c);
	return c;
}

int
ab_relay_serve_fd (struct ab_relay_s *r, int fd, struct ab_relay_conn_s **out, ab_error_t *err)
{
	cleanup_close int owned = fd;
	struct ab_relay_conn_s *c;

	if (r->n_conns >= r->limits.max_conns)
		return ab_error (err, 0, AB_E_LIMIT, "%s: %u connections already", r->what,
		                 r->n_conns);
	if (ab_set_nonblock (fd, 1) < 0 || ab_set_cloexec (fd, 1) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "%s: configure fd %d", r->what, fd);
	c = conn_new (r, steal_fd (&owned), err);
	if (c == NULL)
		return -1;
	if (out != NULL)
		*out = c;
	return 0;
}

static bool
listener_full (void *owner)
{
	struct ab_relay_s *r = owner;

	return r->n_conns >= r->limits.max_conns;
}

static void
listener_take (void *owner, int fd)
{
	struct ab_relay_s *r = owner;
	ab_error_t err = AB_ERROR_INIT;

	if (conn_new (r, fd, &err) != NULL)
		return;
	if (r->report != NULL)
		r->report (r->report_arg, &err);
	else if (r->ops->report != NULL)
		r->ops->report (r, &err);
}

int
ab_relay_init (struct ab_relay_s *r, struct event_base *base, const char *what,
               const struct ab_relay_ops_s *ops, void *owner,
               const struct ab_relay_limits_s *limits, unsigned accept_retry_ms, ab_error_t *err)
{
	memset (r, 0, sizeof *r);
	r->what = what;
	r->ops = ops;
	r->owner = owner;
	r->limits = *limits;
	r->http_limits.max_head = limits->max_head;
	r->http_limits.max_fields = limits->max_fields;
	r->fields = xcalloc (limits->max_fields ? limits->max_fields : 1, sizeof *r->fields);
	ab_listener_init (&r->listener, listener_full, listener_take, r, accept_retry_ms);
	ab_loop_stop_init (&r->stop);
	r->base = base;
	if (r->base == NULL) {
		r->base = event_base_new ();
		r->own_base = true;
	}
	if (r->base == NULL)
		return ab_error (err, 0, AB_E_SYSTEM, "create event loop");
	if (ab_loop_stop_open (&r->stop, r->base) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "set up the %s's events", what);
	return 0;
}

void
ab_relay_drop_conns (struct ab_relay_s *r)
{
	/* Closing a TLS stream may write its close_notify to a gone peer
	 * (the service's close_upstream guards it). */
	pipe_guard_enter (r);
	while (r->conns)
		conn_free (r->conns);
	pipe_guard_leave (r);
}

void
ab_relay_fini (struct ab_relay_s *r)
{
	if (r->ops == NULL)
		return;
	ab_relay_drop_conns (r);
	ab_relay_pipe_pool_drain (r);
	ab_loop_stop_close (&r->stop);
	ab_listener_close (&r->listener);
	if (r->own_base && r->base)
		event_base_free (r->base);
	r->base = NULL;
	free (r->fields);
	r->fields = NULL;
	r->ops = NULL;
}

int
ab_relay_listen (struct ab_relay_s *r, const char *host, const char *port, char *bound,
                 size_t bound_len, ab_error_t *err)
{
	if (r->listener.fd >= 0)
		return ab_error (err, 0, AB_E_CONFLICT, "%s already listening", r->what);
	return ab_listener_open (&r->listener, r->base, host, port, bound, bound_len, err);
}

int
ab_relay_run (struct ab_relay_s *r, ab_error_t *err)
{
	return ab_loop_stop_run (&r->stop, err);
}

void
ab_relay_stop (struct ab_relay_s *r)
{
	ab_loop_stop_request (&r->stop);
}

/* ---- answers and failures ------------------------------------------------- */

int
ab_relay_fail (struct ab_relay_conn_s *c, ab_relay_fail_kind kind, int status, const char *reason)
{
	if (reason != c->m.error && kind != AB_RELAY_FAIL_CLIENT)
		snprintf (c->m.error, sizeof c->m.error, "%s", reason);
	return c->relay->ops->fail (c, kind, status, reason);
}

int
ab_relay_answer (struct ab_relay_conn_s *c, int status, const char *body)
{
	struct ab_relay_s *r = c->relay;

	c->m.status = status;
	ab_iobuf_free (&c->cout);
	ab_iobuf_printf (&c->cout,
	                 "HTTP/1.1 %d %s\r\n"
	                 "content-type: %s\r\n"
	                 "content-length: %zu\r\n"
	                 "connection: close\r\n\r\n%s",
	                 status, ab_http_status_text (status), r->ops->answer_type, strlen (body),
	                 body);
	ab_relay_dirs_release (c);
	if (c->us != NULL)
		r->ops->close_upstream (c);
	ab_iobuf_wipe (&c->uout);
	ab_iobuf_wipe (&c->replay);
	ab_iobuf_free (&c->cin);
	c->state = AB_RELAY_ST_CLOSING;
	c->t_phase = ab_relay_now_us ();
	return AB_RELAY_AGAIN;
}

/* ---- the shared states ---------------------------------------------------- */

/* An idle upstream that speaks (or closes) between requests is no longer
 * usable. */
static void
check_idle_upstream (struct ab_relay_conn_s *c)
{
	char b[512];
	ssize_t n;

	if (c->us == NULL || !c->up_idle || !ab_stream_can_read (c->us))
		return;
	if (c->us->ssl != NULL)
		ab_relay_sigpipe_guard (c->relay);
	n = ab_stream_read (c->us, b, sizeof b);
	if (n < 0 && errno == EAGAIN)
		return;
	c->relay->ops->close_upstream (c);
}

static int
handle_head (struct ab_relay_conn_s *c, size_t head_len)
{
	struct ab_relay_s *r = c->relay;
	struct ab_http_head_s h = { .fields = r->fields };
	struct ab_http_error_s e;

	memset (&c->m, 0, sizeof c->m);
	c->head_scan = 0;
	c->t_head_start = 0;
	if (ab_http_parse_request (ab_iobuf_peek (&c->cin), head_len, &r->http_limits, &h, &e) < 0)
		return ab_relay_fail (c, AB_RELAY_FAIL_CLIENT, e.status, e.reason);
	c->m.version_minor = h.version_minor;
	c->m.is_head = ab_http_token_eq (h.method, h.method_len, "head");
	/* HTTP/1.0 clients get one response per connection. */
	c->m.client_close = h.conn_close || h.version_minor == 0;
	return r->ops->request (c, &h, head_len);
}

static int
head_step (struct ab_relay_conn_s *c)
{
	struct ab_relay_s *r = c->relay;
	const struct ab_http_limits_s *lim = &r->http_limits;
	struct ab_http_error_s e;

	check_idle_upstream (c);
	for (;;) {
		ssize_t n;

		if (ab_iobuf_len (&c->cin) > 0) {
			n = ab_http_head_end (ab_iobuf_peek (&c->cin), ab_iobuf_len (&c->cin),
			                      &c->head_scan, lim, &e);
			if (n < 0) {
				memset (&c->m, 0, sizeof c->m);
				return ab_relay_fail (c, AB_RELAY_FAIL_CLIENT, e.status, e.reason);
			}
			if (n > 0)
				return handle_head (c, (size_t)n);
			if (c->t_head_start == 0)
				c->t_head_start = ab_relay_now_us ();
		}
		if (!c->cs.rd)
			return AB_RELAY_WAIT;
		n = ab_relay_read (r, &c->cs, &c->cin, 4096, lim->max_head, c->c_hup);
		if (n > 0) {
			c->t_last = ab_relay_now_us ();
			continue;
		}
		if (n < 0 && errno == EAGAIN) {
			ab_iobuf_trim (&c->cin);
			return AB_RELAY_WAIT;
		}
		if (n < 0 && errno == ENOBUFS) {
			memset (&c->m, 0, sizeof c->m);
			return ab_relay_fail (c, AB_RELAY_FAIL_CLIENT, 431,
			                      "request header fields too large");
		}
		return AB_RELAY_CLOSE; /* EOF or error between requests: nothing to answer */
	}
}

static int
closing_step (struct ab_relay_conn_s *c)
{
	char sink[4096];

	while (ab_iobuf_len (&c->cout) > 0) {
		ssize_t n;
		if (!c->cs.wr)
			return AB_RELAY_WAIT;
		n = ab_relay_writev2 (c->relay, &c->cs, &c->cout, NULL, 0);
		if (n < 0 && errno == EAGAIN)
			return AB_RELAY_WAIT;
		if (n < 0)
			return AB_RELAY_CLOSE;
		ab_iobuf_consume (&c->cout, (size_t)n);
	}
	ab_iobuf_free (&c->cout);
	/* Half-close, then read what the client still sends: closing with
	 * unread bytes would make the kernel answer RST, which can destroy our
	 * answer before the client reads it (RFC 9112 9.6). */
	if (!c->c_shut) {
		shutdown (c->cs.fd, SHUT_WR);
		c->c_shut = true;
	}
	for (;;) {
		ssize_t n;
		if (!c->cs.rd)
			return AB_RELAY_WAIT;
		n = ab_stream_read (&c->cs, sink, sizeof sink);
		if (n < 0 && errno == EAGAIN)
			return AB_RELAY_WAIT;
		if (n <= 0)
			return AB_RELAY_CLOSE;
		c->lingered += (size_t)n;
		if (c->lingered > AB_RELAY_LINGER_BYTES)
			return AB_RELAY_CLOSE;
	}
}
