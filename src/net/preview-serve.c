#include "net/preview-serve.h"

#include <errno.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <netdb.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/http-head.h"
#include "net/http-status.h"
#include "net/iobuf.h"
#include "net/listener.h"
#include "net/preview-buf.h"
#include "net/preview-http.h"

#define MAX_HEAD   (16 * 1024)
#define MAX_FIELDS 64

typedef enum { ROUTE_NOT_FOUND = 0, ROUTE_HEALTHZ, ROUTE_SIGNAL } route_t;
typedef enum { ST_HEAD = 0, ST_BODY, ST_LINGER } conn_state;

struct conn_s {
	ab_preview_server_t *srv;
	struct bufferevent *bev;
	struct event *timer;
	conn_state state;
	bool closing; /* close once the answer is out */
	bool keep_alive;
	route_t route;
	ab_http_body_kind body_kind;
	uint64_t content_length;
	struct ab_http_chunked_s chunked;
	struct ab_iobuf_s body;
	size_t scan;
	struct conn_s *prev, *next;
};

struct ab_preview_server_s {
	struct ab_preview_serve_config_s cfg;
	struct event_base *base;
	struct evconnlistener *listener;
	struct event *sig_ev[2];
	struct ab_signal_store_s *store;
	struct ab_http_field_s fields[MAX_FIELDS];
	struct conn_s *conns;
	unsigned n_conns;
};

void
ab_preview_serve_config_default (struct ab_preview_serve_config_s *c)
{
	ab_signal_limits_default (&c->signal);
	c->max_body = AB_PREVIEW_SIGNAL_MAX_BODY;
	c->max_conns = 512;
	c->request_timeout_ms = 30 * 1000;
	c->linger_ms = 2000;
}

static void process (struct conn_s *c);

static void
arm_timer (struct conn_s *c, unsigned ms)
{
	struct timeval tv = { .tv_sec = ms / 1000, .tv_usec = (suseconds_t)(ms % 1000) * 1000 };
	evtimer_add (c->timer, &tv);
}

static void
conn_free (struct conn_s *c)
{
	ab_preview_server_t *s = c->srv;

	bufferevent_free (c->bev);
	event_free (c->timer);
	ab_iobuf_free (&c->body);
	if (c->prev)
		c->prev->next = c->next;
	else
		s->conns = c->next;
	if (c->next)
		c->next->prev = c->prev;
	s->n_conns--;
	free (c);
}

/* ---- answers -------------------------------------------------------------- */

static void
respond (struct conn_s *c, int status, const char *type, const char *body, size_t len)
{
	struct evbuffer *out = bufferevent_get_output (c->bev);

	if (!c->keep_alive)
		c->closing = true;
	evbuffer_add_printf (out,
	                     "HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	                     "Cache-Control: no-store\r\n%s\r\n",
	                     status, ab_http_status_text (status), type, len,
	                     c->closing ? "Connection: close\r\n" : "");
	evbuffer_add (out, body, len);
}

static void
respond_text (struct conn_s *c, int status, const char *text)
{
	respond (c, status, "text/plain; charset=utf-8", text, strlen (text));
}

static void
respond_json (struct conn_s *c, int status, json_t *doc)
{
	cleanup_free char *text = json_dumps (doc, JSON_COMPACT);

	respond (c, status, "application/json", text, strlen (text));
	json_decref (doc);
}

/* A request the connection cannot recover from: answer and close. */
static void
respond_fatal (struct conn_s *c, int status, const char *text)
{
	c->keep_alive = false;
	respond_text (c, status, text);
}

static void
answer_signal (struct conn_s *c)
{
	/* Any JSON text is JSON (RFC 8259 2), even a bare string: the store
	 * calls that an invalid signal document, not bad JSON. */
	json_t *doc = json_loadb (ab_preview_bytes (&c->body), ab_iobuf_len (&c->body),
	                          JSON_DECODE_ANY, NULL);
	json_t *answer = NULL;
	int status;

	if (doc == NULL) {
		respond_json (c, 400, json_pack ("{s:s}", "error", "bad json"));
		return;
	}
	status = ab_signal_store_handle (c->srv->store, doc, ab_iobuf_len (&c->body), &answer);
	json_decref (doc);
	respond_json (c, status, answer);
}

static void
answer_request (struct conn_s *c)
{
	switch (c->route) {
	case ROUTE_HEALTHZ: respond_text (c, 200, "ok"); break;
	case ROUTE_SIGNAL: answer_signal (c); break;
	case ROUTE_NOT_FOUND: respond_text (c, 404, "not found"); break;
	}
	ab_iobuf_free (&c->body);
	c->state = ST_HEAD;
	c->scan = 0;
	if (!c->closing)
		arm_timer (c, c->srv->cfg.request_timeout_ms);
}

static void
answer_too_large (struct conn_s *c)
{
	c->keep_alive = false;
	respond_json (c, 413, json_pack ("{s:s}", "error", "payload too large"));
}

/* ---- reading requests ------------------------------------------------------ */

static route_t
route_of (const struct ab_http_head_s *h)
{
	const char *q = memchr (h->target, '?', h->target_len);
	size_t plen = q ? (size_t)(q - h->target) : h->target_len;
	/* Methods are case-sensitive (RFC 9110 9.1). */
	bool get = h->method_len == 3 && memcmp (h->method, "GET", 3) == 0;
	bool post = h->method_len == 4 && memcmp (h->method, "POST", 4) == 0;

	if (get && plen == 8 && memcmp (h->target, "/healthz", 8) == 0)
		return ROUTE_HEALTHZ;
	if (post && plen == 7 && memcmp (h->target, "/signal", 7) == 0)
		return ROUTE_SIGNAL;
	return ROUTE_NOT_FOUND;
}

/* What the head says about the body; false when the answer is already
 * written (413, or a body we will not read). */
static bool
start_body (struct conn_s *c, const struct ab_http_head_s *h)
{
	bool has_body = h->body == AB_HTTP_BODY_CHUNKED
	                || (h->body == AB_HTTP_BODY_LENGTH && h->content_length > 0);

	c->body_kind = h->body;
	c->content_length = h->content_length;
	ab_http_chunked_init (&c->chunked);
	if (c->route != ROUTE_SIGNAL && has_body) {
		/* Not worth reading: answer, then close, so the unread body can
		 * never be taken for the next request. */
		c->keep_alive = false;
		answer_request (c);
		return false;
	}
	if (h->body == AB_HTTP_BODY_LENGTH && h->content_length > c->srv->cfg.max_body) {
		answer_too_large (c);
		return false;
	}
	if (h->expect_continue && has_body)
		evbuffer_add_printf (bufferevent_get_output (c->bev),
		                     "HTTP/1.1 100 Continue\r\n\r\n");
	c->state = ST_BODY;
	return true;
}

/* 1 = a head was parsed, 0 = need more, -1 = answered with an error. */
static int
take_head (struct conn_s *c)
{
	struct evbuffer *in = bufferevent_get_input (c->bev);
	const struct ab_http_limits_s lim = { .max_head = MAX_HEAD, .max_fields = MAX_FIELDS };
	struct ab_http_head_s h = { .fields = c->srv->fields };
	struct ab_http_error_s e;
	size_t len = evbuffer_get_length (in);
	size_t n = len < MAX_HEAD ? len : MAX_HEAD;
	const char *p = (const char *)evbuffer_pullup (in, (ssize_t)n);
	ssize_t end;

	if (n == 0)
		return 0;
	end = ab_http_head_end (p, n, &c->scan, &lim, &e);
	if (end == 0)
		return 0;
	if (end < 0 || ab_http_parse_request (p, (size_t)end, &lim, &h, &e) < 0) {
		respond_fatal (c, e.status, e.reason);
		return -1;
	}
	c->route = route_of (&h);
	c->keep_alive = h.version_minor == 1 ? !h.conn_close : h.conn_keep_alive;
	evbuffer_drain (in, (size_t)end);
	if (!start_body (c, &h))
		return -1;
	return 1;
}

/* 1 = the whole body is in c->body, 0 = need more, -1 = answered. */
static int
take_body (struct conn_s *c)
{
	struct evbuffer *in = bufferevent_get_input (c->bev);
	size_t len = evbuffer_get_length (in);
	struct ab_http_error_s e;
	ssize_t n;

	if (c->body_kind == AB_HTTP_BODY_NONE)
		return 1;
	if (c->body_kind == AB_HTTP_BODY_LENGTH) {
		size_t want = (size_t)c->content_length - ab_iobuf_len (&c->body);
		size_t take = len < want ? len : want;
		if (take > 0) {
			ab_iobuf_reserve (&c->body, take, c->srv->cfg.max_body + 1);
			evbuffer_remove (in, c->body.data + c->body.end, take);
			c->body.end += take;
		}
		return ab_iobuf_len (&c->body) == c->content_length ? 1 : 0;
	}
	n = ab_preview_dechunk (&c->chunked, (const char *)evbuffer_pullup (in, (ssize_t)len), len,
	                        &c->body, c->srv->cfg.max_body, &e);
	if (n == -2) {
		answer_too_large (c);
		return -1;
	}
	if (n < 0) {
		respond_fatal (c, 400, e.reason);
		return -1;
	}
	evbuffer_drain (in, (size_t)n);
	return c->chunked.done ? 1 : 0;
}

/* Shut our side after a closing answer and discard the rest for a while
 * (RFC 9112 9.6: closing at once with unread input makes the kernel send a
 * reset that can destroy the answer before the client reads it). */
static void
start_linger (struct conn_s *c)
{
	c->state = ST_LINGER;
	shutdown (bufferevent_getfd (c->bev), SHUT_WR);
	bufferevent_disable (c->bev, EV_WRITE);
	bufferevent_setwatermark (c->bev, EV_READ, 0, 0);
	arm_timer (c, c->srv->cfg.linger_ms);
}

static void
process (struct conn_s *c)
{
	struct evbuffer *in = bufferevent_get_input (c->bev);
	struct evbuffer *out = bufferevent_get_output (c->bev);

	if (c->state == ST_LINGER) {
		evbuffer_drain (in, evbuffer_get_length (in));
		return;
	}
	/* One answer at a time: pipelined requests wait in the input buffer
	 * (bounded by its watermark) until the previous answer is out. */
	while (!c->closing && evbuffer_get_length (out) == 0) {
		if (c->state == ST_HEAD && take_head (c) <= 0)
			break;
		if (c->state == ST_BODY) {
			if (take_body (c) <= 0)
				break;
			answer_request (c);
		}
	}
	if (c->closing && evbuffer_get_length (out) == 0)
		start_linger (c);
}

/* ---- libevent callbacks ------------------------------------------------------ */

static void
on_read (struct bufferevent *bev, void *arg)
{
	process (arg);
}

static void
on_write (struct bufferevent *bev, void *arg)
{
	/* The output drained: the next pipelined request may go. */
	process (arg);
}

static void
on_event (struct bufferevent *bev, short what, void *arg)
{
	conn_free (arg);
}

static void
on_timeout (evutil_socket_t fd, short what, void *arg)
{
	conn_free (arg);
}

static void
on_accept (struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa, int salen, void *arg)
{
	ab_preview_server_t *s = arg;
	struct conn_s *c;

	if (s->n_conns >= s->cfg.max_conns) {
		close (fd);
		return;
	}
	c = xcalloc (1, sizeof *c);
	c->srv = s;
	c->bev = bufferevent_socket_new (s->base, fd, BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new (s->base, on_timeout, c);
	if (c->bev == NULL || c->timer == NULL)
		abort (); /* libevent allocation failure: out of memory */
	c->next = s->conns;
	if (s->conns)
		s->conns->prev = c;
	s->conns = c;
	s->n_conns++;
	bufferevent_setcb (c->bev, on_read, on_write, on_event, c);
	/* A request may be a head and a body; more than that waits in the
	 * socket, not in our memory. */
	bufferevent_setwatermark (c->bev, EV_READ, 0, MAX_HEAD + s->cfg.max_body + 4096);
	bufferevent_enable (c->bev, EV_READ | EV_WRITE);
	arm_timer (c, s->cfg.request_timeout_ms);
}

static void
on_signal (evutil_socket_t sig, short what, void *arg)
{
	ab_preview_server_t *s = arg;
	event_base_loopexit (s->base, NULL);
}

/* ---- the server object ---------------------------------------------------------- */

static const int stop_signals[2] = { SIGINT, SIGTERM };

ab_preview_server_t *
ab_preview_server_new (const struct ab_preview_serve_config_s *cfg, ab_error_t *err)
{
	ab_preview_server_t *s = xcalloc (1, sizeof *s);

	s->cfg = *cfg;
	s->base = event_base_new ();
	if (s->base == NULL) {
		free (s);
		ab_error (err, 0, AB_E_SYSTEM, "cannot create the event loop");
		return NULL;
	}
	s->store = ab_signal_store_new (&cfg->signal);
	/* Handlers before the listener exists: whoever saw us listening may
	 * already send SIGTERM, and it must mean "stop cleanly". */
	for (int i = 0; i < 2; i++) {
		s->sig_ev[i] = evsignal_new (s->base, stop_signals[i], on_signal, s);
		if (s->sig_ev[i] == NULL || event_add (s->sig_ev[i], NULL) < 0) {
			ab_preview_server_free (s);
			ab_error (err, 0, AB_E_SYSTEM, "register signal handler");
			return NULL;
		}
	}
	return s;
}

int
ab_preview_server_listen (ab_preview_server_t *s, const char *host, const char *port, char *bound,
                          size_t bound_len, ab_error_t *err)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM,
		                  .ai_flags = AI_PASSIVE | AI_NUMERICSERV };
	struct addrinfo *ai = NULL;
	struct sockaddr_storage ss;
	socklen_t sl = sizeof ss;
	int e;

	e = getaddrinfo (host && *host ? host : NULL, port, &hints, &ai);
	if (e != 0)
		return ab_error (err, 0, AB_E_INVALID, "listen address %s:%s: %s", host, port,
		                 gai_strerror (e));
	s->listener = evconnlistener_new_bind (s->base, on_accept, s,
	                                       LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC
	                                               | LEV_OPT_REUSEABLE,
	                                       SOMAXCONN, ai->ai_addr, (int)ai->ai_addrlen);
	freeaddrinfo (ai);
	if (s->listener == NULL)
		return ab_error (err, errno, AB_E_SYSTEM, "listen on %s:%s", host, port);
	if (getsockname (evconnlistener_get_fd (s->listener), (struct sockaddr *)&ss, &sl) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "getsockname");
	ab_sockaddr_format ((struct sockaddr *)&ss, bound, bound_len);
	return 0;
}

int
ab_preview_server_run (ab_preview_server_t *s, ab_error_t *err)
{
	if (event_base_dispatch (s->base) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "event loop failed");
	return 0;
}

void
ab_preview_server_free (ab_preview_server_t *s)
{
	if (s == NULL)
		return;
	while (s->conns)
		conn_free (s->conns);
	for (int i = 0; i < 2; i++)
		if (s->sig_ev[i])
			event_free (s->sig_ev[i]);
	if (s->listener)
		evconnlistener_free (s->listener);
	ab_signal_store_free (s->store);
	event_base_free (s->base);
	free (s);
}
