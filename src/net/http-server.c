/* The HTTP server model: see http-server.h.  One accepting thread (the
 * caller's), one detached thread per connection, a list of connections
 * under a lock so they can be counted and shut down, and a reference count
 * so the server's memory outlives the caller's hold while connections
 * still run. */
#include "net/http-server.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define DEFAULT_STACK (1 << 20)
/* After the process runs out of fds, wait this long before accepting
 * again, instead of spinning on a listener that stays readable. */
#define OUT_OF_FDS_PAUSE_MS 100
#define LINGER_CHUNK        4096

struct conn_s {
	struct ab_http_conn_s pub;
	ab_http_server_t *s;
	struct conn_s *prev, *next;
};

struct ab_http_server_s {
	struct ab_http_server_config_s cfg;
	struct ab_http_server_ops_s ops;
	void *ctx;
	int lfd[AB_HTTP_SERVER_MAX_LISTENERS];
	unsigned tag[AB_HTTP_SERVER_MAX_LISTENERS];
	unsigned n_listeners;
	pthread_mutex_t lock;
	pthread_cond_t ended; /* a connection ended */
	struct conn_s *conns; /* under lock */
	unsigned n_conns;     /* under lock */
	unsigned refs;        /* under lock: the owner's, and one per connection */
};

ab_http_server_t *
ab_http_server_new (const struct ab_http_server_config_s *cfg,
                    const struct ab_http_server_ops_s *ops, void *ctx)
{
	ab_http_server_t *s = xcalloc (1, sizeof *s);

	s->cfg = *cfg;
	if (s->cfg.thread_stack == 0)
		s->cfg.thread_stack = DEFAULT_STACK;
	s->ops = *ops;
	s->ctx = ctx;
	s->refs = 1;
	pthread_mutex_init (&s->lock, NULL);
	pthread_cond_init (&s->ended, NULL);
	return s;
}

int
ab_http_server_add_listener (ab_http_server_t *s, int fd, unsigned tag, ab_error_t *err)
{
	if (s->n_listeners == AB_HTTP_SERVER_MAX_LISTENERS) {
		close (fd);
		return ab_error (err, 0, AB_E_LIMIT, "at most %d listeners",
		                 AB_HTTP_SERVER_MAX_LISTENERS);
	}
	/* Non-blocking: a client that resets between poll and accept must not
	 * hang the accepting thread (accepted sockets stay blocking). */
	if (ab_set_nonblock (fd, 1) < 0) {
		int e = errno;
		close (fd);
		return ab_error (err, e, AB_E_SYSTEM, "listener flags");
	}
	s->lfd[s->n_listeners] = fd;
	s->tag[s->n_listeners++] = tag;
	return 0;
}

unsigned
ab_http_server_conns (ab_http_server_t *s)
{
	unsigned n;

	pthread_mutex_lock (&s->lock);
	n = s->n_conns;
	pthread_mutex_unlock (&s->lock);
	return n;
}

static void
destroy (ab_http_server_t *s)
{
	pthread_cond_destroy (&s->ended);
	pthread_mutex_destroy (&s->lock);
	free (s);
}

/* ---- one connection ------------------------------------------------------- */

static void
set_timeout (int fd, int opt, unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };

	if (ms > 0)
		setsockopt (fd, SOL_SOCKET, opt, &tv, sizeof tv);
}

/* Shut our side, then discard what the client still sends until it closes
 * or linger_ms pass (http-server.h). */
static void
linger (ab_http_server_t *s, int fd)
{
	uint64_t deadline = ab_mono_ms () + s->cfg.linger_ms;
	char scratch[LINGER_CHUNK];

	if (s->cfg.linger_ms == 0)
		return;
	shutdown (fd, SHUT_WR);
	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		uint64_t now = ab_mono_ms ();
		ssize_t n;
		int r;

		if (now >= deadline)
			return;
		r = poll (&p, 1, deadline - now > INT_MAX ? INT_MAX : (int)(deadline - now));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return;
		n = recv (fd, scratch, sizeof scratch, MSG_DONTWAIT);
		if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
			return;
	}
}

/* The earlier of start + a and start + b, either 0 meaning none; 0 if both. */
static uint64_t
deadline (uint64_t start, unsigned a_ms, unsigned b_ms)
{
	unsigned ms = a_ms == 0 ? b_ms : b_ms == 0 ? a_ms : a_ms < b_ms ? a_ms : b_ms;

	return ms ? start + ms : 0;
}

/* One request after another until one of them ends the connection. */
static void
serve (struct conn_s *c)
{
	ab_http_server_t *s = c->s;
	struct ab_http_io_s *io = &c->pub.io;

	for (;;) {
		struct ab_http_error_s e;
		ab_http_next next;
		int rc;

		uint64_t start = ab_mono_ms ();

		io->deadline_ms =
		        deadline (start, s->cfg.head_timeout_ms, s->cfg.request_timeout_ms);
		rc = ab_http_io_read_request (io, &e);
		if (rc == 0)
			return; /* the client closed between requests */
		if (rc < 0) {
			if (e.status == 0)
				return; /* cut off, timed out or reset: nobody to answer */
			s->ops.head_error (s->ctx, &c->pub, &e);
			linger (s, c->pub.fd);
			return;
		}
		io->deadline_ms = deadline (start, 0, s->cfg.request_timeout_ms);
		next = s->ops.request (s->ctx, &c->pub);
		if (next == AB_HTTP_DROP)
			return;
		/* An unread body would be taken for the next request's head. */
		if (next == AB_HTTP_CLOSE || !io->body_done) {
			linger (s, c->pub.fd);
			return;
		}
	}
}

/* Unlink c and drop its hold; true when it was the server's last. */
static bool
conn_end (struct conn_s *c)
{
	ab_http_server_t *s = c->s;
	bool last;

	pthread_mutex_lock (&s->lock);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	last = --s->refs == 0;
	pthread_cond_broadcast (&s->ended);
	pthread_mutex_unlock (&s->lock);
	/* Closed only once unlinked: ab_http_server_stop_conns never shuts
	 * down a number that another thread may have reused. */
	close (c->pub.fd);
	return last;
}

static void *
conn_main (void *arg)
{
	struct conn_s *c = arg;
	ab_http_server_t *s = c->s;

	set_timeout (c->pub.fd, SO_RCVTIMEO, s->cfg.idle_timeout_ms);
	set_timeout (c->pub.fd, SO_SNDTIMEO, s->cfg.send_timeout_ms);
	ab_http_io_init (&c->pub.io, c->pub.fd, s->cfg.max_head);
	serve (c);
	ab_http_io_free (&c->pub.io);
	if (conn_end (c))
		destroy (s);
	free (c);
	return NULL;
}

/* ---- accepting --------------------------------------------------------------- */

static void
refuse (ab_http_server_t *s, int fd, const char *why)
{
	if (s->ops.refuse)
		s->ops.refuse (s->ctx, fd, why);
	close (fd);
}

/* Register a connection, or NULL when the server is full. */
static struct conn_s *
conn_new (ab_http_server_t *s, int fd, unsigned tag)
{
	struct conn_s *c = NULL;

	pthread_mutex_lock (&s->lock);
	if (s->n_conns < s->cfg.max_conns) {
		c = xcalloc (1, sizeof *c);
		c->pub.fd = fd;
		c->pub.tag = tag;
		c->s = s;
		c->next = s->conns;
		if (s->conns)
			s->conns->prev = c;
		s->conns = c;
		s->n_conns++;
		s->refs++;
	}
	pthread_mutex_unlock (&s->lock);
	return c;
}

static bool
out_of_fds (int e)
{
	return e == EMFILE || e == ENFILE || e == ENOBUFS || e == ENOMEM;
}

static void
accept_one (ab_http_server_t *s, int lfd, unsigned tag)
{
	int fd = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
	struct conn_s *c;
	pthread_attr_t attr;
	pthread_t t;
	int rc;

	if (fd < 0) {
		if (out_of_fds (errno))
			poll (NULL, 0, OUT_OF_FDS_PAUSE_MS);
		return;
	}
	if (s->ops.accept && !s->ops.accept (s->ctx, fd, tag)) {
		close (fd);
		return;
	}
	c = conn_new (s, fd, tag);
	if (c == NULL) {
		refuse (s, fd, "too many connections");
		return;
	}
	pthread_attr_init (&attr);
	pthread_attr_setstacksize (&attr, s->cfg.thread_stack);
	pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
	rc = pthread_create (&t, &attr, conn_main, c);
	pthread_attr_destroy (&attr);
	if (rc != 0) {
		/* Never served: answer on the fd, then let conn_end close it. */
		if (s->ops.refuse)
			s->ops.refuse (s->ctx, fd, "cannot start a thread");
		conn_end (c); /* the owner's hold remains: not the last */
		free (c);
	}
}

int
ab_http_server_run (ab_http_server_t *s, int stop_fd, ab_error_t *err)
{
	struct pollfd p[1 + AB_HTTP_SERVER_MAX_LISTENERS];
	nfds_t n = 1 + s->n_listeners;

	p[0] = (struct pollfd){ .fd = stop_fd, .events = POLLIN };
	for (unsigned i = 0; i < s->n_listeners; i++)
		p[1 + i] = (struct pollfd){ .fd = s->lfd[i], .events = POLLIN };
	for (;;) {
		if (poll (p, n, -1) < 0) {
			if (errno == EINTR)
				continue;
			return ab_error (err, errno, AB_E_SYSTEM, "poll");
		}
		if (p[0].revents)
			return 0;
		for (unsigned i = 0; i < s->n_listeners; i++)
			if (p[1 + i].revents)
				accept_one (s, s->lfd[i], s->tag[i]);
	}
}

void
ab_http_server_stop_conns (ab_http_server_t *s)
{
	pthread_mutex_lock (&s->lock);
	for (struct conn_s *c = s->conns; c; c = c->next)
		shutdown (c->pub.fd, SHUT_RDWR);
	while (s->n_conns > 0)
		pthread_cond_wait (&s->ended, &s->lock);
	pthread_mutex_unlock (&s->lock);
}

void
ab_http_server_free (ab_http_server_t *s)
{
	bool last;

	if (s == NULL)
		return;
	pthread_mutex_lock (&s->lock);
	for (unsigned i = 0; i < s->n_listeners; i++)
		close (s->lfd[i]);
	s->n_listeners = 0;
	last = --s->refs == 0;
	pthread_mutex_unlock (&s->lock);
	if (last)
		destroy (s);
}
