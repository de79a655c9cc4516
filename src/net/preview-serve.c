/* `preview-bridge serve` (preview-serve.h): a request handler on the HTTP
 * server (net/http-server.h), a thread per connection.  The signalling
 * store is shared by every connection's thread, so it is used under a
 * lock. */
#include "net/preview-serve.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/http-head.h"
#include "net/http-io.h"
#include "net/http-server.h"
#include "net/http-status.h"
#include "net/listener.h"

#define MAX_HEAD (16 * 1024)
/* jansson parses and dumps recursively, up to 2048 levels of nesting (a
 * poll answer holds every kept document): measured to need more than
 * 256 KiB; reserved, not touched, until used. */
#define THREAD_STACK (1 << 20)

typedef enum { ROUTE_NOT_FOUND = 0, ROUTE_HEALTHZ, ROUTE_SIGNAL } route_t;

struct ab_preview_server_s {
	struct ab_preview_serve_config_s cfg;
	ab_http_server_t *http;
	pthread_mutex_t store_lock;
	struct ab_signal_store_s *store; /* under store_lock */
	int sig_fd;                      /* SIGINT, SIGTERM */
	sigset_t old_mask;
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

/* ---- answers -------------------------------------------------------------- */

/* One answer on one connection; keep_alive false closes it afterwards. */
struct answer_s {
	int fd;
	bool keep_alive;
};

static void
respond (struct answer_s *a, int status, const char *type, const char *body, size_t len)
{
	cleanup_free char *head =
	        xasprintf ("HTTP/1.1 %d %s\r\nContent-Type: %s\r\nContent-Length: %zu\r\n"
	                   "Cache-Control: no-store\r\n%s\r\n",
	                   status, ab_http_status_text (status), type, len,
	                   a->keep_alive ? "" : "Connection: close\r\n");
	size_t hl = strlen (head);
	/* One write: a head and a body sent apart would wait on Nagle and the
	 * client's delayed ACK. */
	cleanup_free char *msg = xmalloc (hl + len);

	memcpy (msg, head, hl);
	memcpy (msg + hl, body, len);
	ab_http_write (a->fd, msg, hl + len);
}

static void
respond_text (struct answer_s *a, int status, const char *text)
{
	respond (a, status, "text/plain; charset=utf-8", text, strlen (text));
}

static void
respond_json (struct answer_s *a, int status, json_t *doc)
{
	cleanup_free char *text = json_dumps (doc, JSON_COMPACT);

	respond (a, status, "application/json", text, strlen (text));
	json_decref (doc);
}

/* A request the connection cannot recover from: answer and close. */
static void
respond_fatal (struct answer_s *a, int status, const char *text)
{
	a->keep_alive = false;
	respond_text (a, status, text);
}

static void
answer_too_large (struct answer_s *a)
{
	a->keep_alive = false;
	respond_json (a, 413, json_pack ("{s:s}", "error", "payload too large"));
}

static void
answer_document (ab_preview_server_t *s, struct answer_s *a, const char *body, size_t len)
{
	/* Any JSON text is JSON (RFC 8259 2), even a bare string: the store
	 * calls that an invalid signal document, not bad JSON. */
	json_t *doc = json_loadb (body, len, JSON_DECODE_ANY, NULL);
	json_t *answer = NULL;
	int status;

	if (doc == NULL) {
		respond_json (a, 400, json_pack ("{s:s}", "error", "bad json"));
		return;
	}
	pthread_mutex_lock (&s->store_lock);
	status = ab_signal_store_handle (s->store, doc, len, &answer);
	pthread_mutex_unlock (&s->store_lock);
	json_decref (doc);
	respond_json (a, status, answer);
}

/* POST /signal: read the body (bounded by max_body and the request's
 * deadline), then hand it to the store. */
static ab_http_next
answer_signal (ab_preview_server_t *s, struct ab_http_conn_s *c, struct answer_s *a, bool has_body)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *body = NULL;
	size_t len = 0;

	if (c->io.head.expect_continue && has_body)
		ab_http_write (c->fd, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	if (ab_http_io_body_all (&c->io, s->cfg.max_body, &body, &len, &err) < 0) {
		if (err.kind == AB_E_LIMIT)
			answer_too_large (a);
		else if (err.kind == AB_E_INVALID)
			respond_fatal (a, 400, c->io.body_error ? c->io.body_error : "bad chunk");
		else
			return AB_HTTP_DROP; /* cut off or timed out: nobody to answer */
		return AB_HTTP_CLOSE;
	}
	answer_document (s, a, body, len);
	return a->keep_alive ? AB_HTTP_KEEP : AB_HTTP_CLOSE;
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

static void
answer_simple (struct answer_s *a, route_t route)
{
	if (route == ROUTE_HEALTHZ)
		respond_text (a, 200, "ok");
	else
		respond_text (a, 404, "not found");
}

/* ---- the hooks on net/http-server.h ----------------------------------------- */

static ab_http_next
on_request (void *ctx, struct ab_http_conn_s *c)
{
	ab_preview_server_t *s = ctx;
	const struct ab_http_head_s *h = &c->io.head;
	struct answer_s a = { .fd = c->fd,
		              .keep_alive =
		                      h->version_minor == 1 ? !h->conn_close : h->conn_keep_alive };
	route_t route = route_of (h);
	bool has_body = h->body == AB_HTTP_BODY_CHUNKED
	                || (h->body == AB_HTTP_BODY_LENGTH && h->content_length > 0);

	if (route != ROUTE_SIGNAL && has_body) {
		/* Not worth reading: answer, then close, so the unread body can
		 * never be taken for the next request. */
		a.keep_alive = false;
		answer_simple (&a, route);
	} else if (h->body == AB_HTTP_BODY_LENGTH && h->content_length > s->cfg.max_body) {
		answer_too_large (&a);
	} else if (route == ROUTE_SIGNAL) {
		return answer_signal (s, c, &a, has_body);
	} else {
		answer_simple (&a, route);
	}
	return a.keep_alive ? AB_HTTP_KEEP : AB_HTTP_CLOSE;
}

static void
on_head_error (void *ctx, struct ab_http_conn_s *c, const struct ab_http_error_s *e)
{
	struct answer_s a = { .fd = c->fd };

	respond_fatal (&a, e->status, e->reason);
}

/* Over max_conns a connection is closed on accept (no refuse hook). */
static const struct ab_http_server_ops_s preview_ops = {
	.head_error = on_head_error,
	.request = on_request,
};

/* ---- the server object ---------------------------------------------------------- */

/* SIGINT and SIGTERM blocked in this thread (and so in every connection
 * thread it starts) and read from a signalfd: a per-thread mask, no
 * process-wide handler.  Before the listener exists: whoever saw us
 * listening may already send SIGTERM, and it must mean "stop cleanly". */
static int
block_stop_signals (ab_preview_server_t *s, ab_error_t *err)
{
	sigset_t set;

	sigemptyset (&set);
	sigaddset (&set, SIGINT);
	sigaddset (&set, SIGTERM);
	if (pthread_sigmask (SIG_BLOCK, &set, &s->old_mask) != 0)
		return ab_error (err, errno, AB_E_SYSTEM, "block signals");
	s->sig_fd = signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sig_fd < 0) {
		int e = errno;
		pthread_sigmask (SIG_SETMASK, &s->old_mask, NULL);
		return ab_error (err, e, AB_E_SYSTEM, "signalfd");
	}
	return 0;
}

ab_preview_server_t *
ab_preview_server_new (const struct ab_preview_serve_config_s *cfg, ab_error_t *err)
{
	ab_preview_server_t *s = xcalloc (1, sizeof *s);
	const struct ab_http_server_config_s hc = {
		.max_conns = cfg->max_conns,
		.max_head = MAX_HEAD,
		.idle_timeout_ms = cfg->request_timeout_ms,
		.send_timeout_ms = cfg->request_timeout_ms,
		.request_timeout_ms = cfg->request_timeout_ms,
		.linger_ms = cfg->linger_ms,
		.thread_stack = THREAD_STACK,
	};

	s->cfg = *cfg;
	if (block_stop_signals (s, err) < 0) {
		free (s);
		return NULL;
	}
	pthread_mutex_init (&s->store_lock, NULL);
	s->store = ab_signal_store_new (&cfg->signal);
	s->http = ab_http_server_new (&hc, &preview_ops, s);
	return s;
}

int
ab_preview_server_listen (ab_preview_server_t *s, const char *host, const char *port, char *bound,
                          size_t bound_len, ab_error_t *err)
{
	int fd = ab_tcp_listen (host, port, bound, bound_len, err);

	if (fd < 0)
		return -1;
	return ab_http_server_add_listener (s->http, fd, 0, err);
}

int
ab_preview_server_run (ab_preview_server_t *s, ab_error_t *err)
{
	int rc = ab_http_server_run (s->http, s->sig_fd, err);

	ab_http_server_stop_conns (s->http);
	return rc;
}

void
ab_preview_server_free (ab_preview_server_t *s)
{
	struct signalfd_siginfo si;

	if (s == NULL)
		return;
	/* The handlers use s: every connection ends first. */
	ab_http_server_stop_conns (s->http);
	ab_http_server_free (s->http);
	ab_signal_store_free (s->store);
	pthread_mutex_destroy (&s->store_lock);
	/* Consume the stop signal (and any repeat) before unblocking, or it
	 * would be delivered with its default action. */
	while (read (s->sig_fd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	close (s->sig_fd);
	pthread_sigmask (SIG_SETMASK, &s->old_mask, NULL);
	free (s);
}
