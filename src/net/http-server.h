/* The one HTTP/1.1 server model: every program part that serves HTTP (the
 * daemon's API, the preview bridge, the E2B, MCP and exec-server
 * endpoints) is a table of hooks on it.
 *
 * A thread per connection over blocking sockets: the server accepts on
 * the listening fds it is given (unix or TCP), refuses connections past
 * max_conns, and on each connection reads one request head after another
 * with net/http-io.h (the strict parser of net/http-head.h), handing each
 * to the `request` hook, which answers it and reads its body through the
 * same io.  Requests on a connection are answered in order, one at a time
 * (pipelined ones wait in io's buffer).  A closing answer is followed by a
 * linger: our side is shut and what the client still sends is discarded
 * for up to linger_ms (RFC 9112 9.6: closing with unread input makes the
 * kernel send a reset that can destroy the answer before it is read).
 *
 * Threads: `accept` and `refuse` run on the thread that called
 * ab_http_server_run; `head_error` and `request` on the connection's own
 * thread, so a handler may block (on the client, a sandbox, an upstream)
 * without holding anyone else up.  Signals are not the server's business:
 * the caller hands ab_http_server_run an fd that becomes readable when it
 * must stop (a signalfd in the daemon and the bridge).  Writes never raise
 * SIGPIPE (net/http-io.h writes with MSG_NOSIGNAL). */
#ifndef AB_NET_HTTP_SERVER_H
#define AB_NET_HTTP_SERVER_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "net/http-io.h"

struct ab_http_server_config_s {
	unsigned max_conns;          /* connections served at once; more are refused */
	size_t max_head;             /* request head bytes; more is 431 (head_error) */
	unsigned idle_timeout_ms;    /* one read waiting longer ends the connection (0: none) */
	unsigned send_timeout_ms;    /* one write waiting longer fails (0: none) */
	unsigned head_timeout_ms;    /* 0, or: each request's head must have arrived
	                              * within this of the connection's start or of the
	                              * previous request's end (a head trickled in a
	                              * byte at a time is not an idle read) */
	unsigned request_timeout_ms; /* 0, or: the same for the head and the body */
	unsigned linger_ms;          /* after a closing answer (0: close at once) */
	size_t thread_stack;         /* bytes per connection thread (0: 1 MiB) */
};

/* One connection, as a hook sees it. */
struct ab_http_conn_s {
	int fd;                 /* the client's socket; the server closes it */
	unsigned tag;           /* the tag of the listener that accepted it */
	struct ab_http_io_s io; /* the current request's head (io.head) and body */
};

typedef enum {
	AB_HTTP_KEEP,  /* answered; read the next request (if the body was read whole) */
	AB_HTTP_CLOSE, /* answered; linger, then close */
	AB_HTTP_DROP,  /* close now, without a linger (the client went away, timed out) */
} ab_http_next;

struct ab_http_server_ops_s {
	/* Optional: before the limit is checked; false closes fd at once.  On
	 * the accepting thread, so only a cheap check (SO_PEERCRED). */
	bool (*accept) (void *ctx, int fd, unsigned tag);
	/* Optional: fd cannot be served (max_conns reached, no thread): write
	 * an answer if wanted; the server closes it.  NULL: closed silently. */
	void (*refuse) (void *ctx, int fd, const char *why);
	/* A head the parser refused (e->status 400, 431, 501, 505; e->reason):
	 * write the answer; the connection then lingers and closes.  A head
	 * cut off or timed out (e->status 0) is closed without this hook. */
	void (*head_error) (void *ctx, struct ab_http_conn_s *c, const struct ab_http_error_s *e);
	/* Answer the request in c->io.head.  Its body, if the handler wants it,
	 * is read with ab_http_io_body_read/_all (bounded by the request
	 * deadline); a body left unread closes the connection after the
	 * answer whatever this returns. */
	ab_http_next (*request) (void *ctx, struct ab_http_conn_s *c);
};

typedef struct ab_http_server_s ab_http_server_t;

/* cfg and ops are copied; ctx is the caller's and must outlive every
 * connection (see ab_http_server_free). */
ab_http_server_t *ab_http_server_new (const struct ab_http_server_config_s *cfg,
                                      const struct ab_http_server_ops_s *ops, void *ctx);
/* Serve the listening socket fd (taken: closed by ab_http_server_free, or
 * at once on failure);
 * tag is handed to the hooks (which listener a client came in on).  At
 * most AB_HTTP_SERVER_MAX_LISTENERS. */
#define AB_HTTP_SERVER_MAX_LISTENERS 4
int ab_http_server_add_listener (ab_http_server_t *s, int fd, unsigned tag, ab_error_t *err);
/* Accept until stop_fd becomes readable (it is not read), then return 0;
 * connections already accepted carry on. */
int ab_http_server_run (ab_http_server_t *s, int stop_fd, ab_error_t *err);
/* Shut every connection's socket down and wait until their threads have
 * ended.  Only for users whose handlers block on nothing but their client
 * (the preview bridge); the daemon's may wait on a sandbox, so it leaves
 * them to the process's exit. */
void ab_http_server_stop_conns (ab_http_server_t *s);
/* Connections being served now (lingering ones included). */
unsigned ab_http_server_conns (ab_http_server_t *s);
/* Close the listeners and drop the caller's hold: the server's memory goes
 * with its last connection. */
void ab_http_server_free (ab_http_server_t *s);

#endif
