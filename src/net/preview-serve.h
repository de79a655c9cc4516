/* `preview-bridge serve`: a small HTTP/1.1 service on the HTTP server
 * (net/http-server.h: a thread per connection, blocking sockets).
 *
 *   GET  /healthz  -> 200 "ok" (text/plain)
 *   POST /signal   -> the signalling store (preview-signal-store.h):
 *                     body over 512 KiB -> 413 {"error":"payload too large"}
 *                     body not JSON     -> 400 {"error":"bad json"}
 *   anything else  -> 404 "not found" (text/plain)
 *
 * Requests are read with the strict head parser (http-head.h); a head it
 * refuses is answered with its status (400, 431, 501, 505) and the
 * connection closed.  Keep-alive and pipelining work; a connection must
 * deliver each whole request within request_timeout_ms of connecting or of
 * its previous response, so an idle or slow client is dropped, and at most
 * max_conns connections (and so threads) are served at once (more are
 * closed on accept).
 * After an answer that closes the connection (413 among them) the server
 * shuts its side and discards what the client still sends for a moment,
 * so the client reads the answer instead of a reset. */
#ifndef AB_NET_PREVIEW_SERVE_H
#define AB_NET_PREVIEW_SERVE_H

#include <stddef.h>

#include "base/error.h"
#include "net/preview-signal-store.h"

#define AB_PREVIEW_SIGNAL_MAX_BODY (512u * 1024)

struct ab_preview_serve_config_s {
	struct ab_signal_limits_s signal;
	size_t max_body;             /* POST /signal body (512 KiB) */
	unsigned max_conns;          /* (512) */
	unsigned request_timeout_ms; /* (30 s) */
	unsigned linger_ms;          /* discard after a closing answer (2 s) */
};

void ab_preview_serve_config_default (struct ab_preview_serve_config_s *c);

typedef struct ab_preview_server_s ab_preview_server_t;

/* Blocks SIGINT and SIGTERM in the calling thread until
 * ab_preview_server_free (they are read from a signalfd; no handler is
 * installed), so threads the caller started earlier must block them too.
 * Writes use MSG_NOSIGNAL: a client that goes away is EPIPE, never
 * SIGPIPE. */
ab_preview_server_t *ab_preview_server_new (const struct ab_preview_serve_config_s *cfg,
                                            ab_error_t *err);
/* host empty = any address; port "0" = any port; the bound address is
 * written to bound ("127.0.0.1:41234", "[::1]:8080"). */
int ab_preview_server_listen (ab_preview_server_t *s, const char *host, const char *port,
                              char *bound, size_t bound_len, ab_error_t *err);
/* Serve until SIGINT or SIGTERM. */
int ab_preview_server_run (ab_preview_server_t *s, ab_error_t *err);
void ab_preview_server_free (ab_preview_server_t *s);

#endif
