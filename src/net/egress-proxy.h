/* The egress proxy: an HTTP/1.1 forward proxy that decides on the address it
 * will dial (SECURITY.md, the network edge).
 *
 *   CONNECT host:port          -> policy, resolve once, vet every answer,
 *                                 dial the vetted literal, then a byte tunnel
 *                                 (splice(2) through a pipe: zero-copy)
 *   GET http://host[:port]/... -> the same decision, then the request is
 *                                 forwarded with hop-by-hop fields stripped
 *                                 both ways, Host set from the URL, and the
 *                                 client connection kept alive
 *
 * One event loop (libevent 2) serves every connection; nothing a peer does
 * (a client sending one byte a second, an upstream that never answers, ten
 * thousand idle keep-alive connections) can hold more than a bounded amount
 * of memory or any thread.  Name resolution runs on a small worker pool
 * with a deadline (resolve.h).
 *
 * Connections come from the proxy's own listener (ab_egress_proxy_listen,
 * the standalone `agentbox egress-proxy serve`) or are handed in already
 * connected (ab_egress_proxy_serve_fd): the sandbox's `--network proxy`
 * relays each in-sandbox connection over the agent connection and gives the
 * host end to the same code, with that sandbox's policy and id.
 *
 * Threading: every function here must be called on the thread that runs
 * the event base, except ab_egress_proxy_stop. */
#ifndef AB_NET_EGRESS_PROXY_H
#define AB_NET_EGRESS_PROXY_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"
#include "net/audit.h"
#include "policy/egress-policy.h"

struct event_base;

struct ab_egress_limits_s {
	size_t max_head;             /* request or response head, bytes (64 KiB) */
	unsigned max_fields;         /* header fields per head (100) */
	unsigned max_conns;          /* client connections at once (16384) */
	unsigned head_timeout_ms;    /* a whole request head, from its first byte (30 s) */
	unsigned idle_timeout_ms;    /* no byte either way (300 s) */
	unsigned dial_timeout_ms;    /* TCP connect to the vetted address (15 s) */
	unsigned resolve_timeout_ms; /* name resolution (5 s) */
	unsigned resolver_threads;   /* getaddrinfo workers (4) */
	unsigned resolver_queue;     /* lookups waiting for a worker (1024) */
};

void ab_egress_limits_default (struct ab_egress_limits_s *l);

struct ab_egress_proxy_config_s {
	/* Policy for connections from the listener and for serve_fd without
	 * its own.  Borrowed: it must outlive the proxy. */
	const struct ab_egress_policy_s *policy;
	struct ab_egress_limits_s limits;
	/* One JSON line per decision; borrowed, may be NULL. */
	struct ab_audit_s *audit;
	/* Human decision lines ("CONNECT h:p -> addr", "GET h:p denied: why");
	 * NULL for none. */
	FILE *log;
	/* A connection from the listener that could not be served (the event
	 * loop refused it); NULL: a line on log. */
	void (*report) (void *arg, const ab_error_t *err);
	void *report_arg;
};

typedef struct ab_egress_proxy_s ab_egress_proxy_t;

/* base: the event loop to join, or NULL for a private one (then use
 * ab_egress_proxy_run).  Leaves the process's signals alone: a peer that
 * closes fails a write with EPIPE, it never raises SIGPIPE (relay.h). */
ab_egress_proxy_t *ab_egress_proxy_new (struct event_base *base,
                                        const struct ab_egress_proxy_config_s *cfg,
                                        ab_error_t *err);
void ab_egress_proxy_free (ab_egress_proxy_t *p);

/* Listen on host:port (host a literal or "localhost"-style name resolved
 * with AI_PASSIVE; port 0 picks a free port).  The bound address is
 * written to bound ("127.0.0.1:41234", "[::1]:3128"). */
int ab_egress_proxy_listen (ab_egress_proxy_t *p, const char *host, const char *port, char *bound,
                            size_t bound_len, ab_error_t *err);

/* Serve one already-connected stream socket (TCP or AF_UNIX).  The proxy
 * takes ownership of fd (also on error).  sandbox_id (copied) goes into the
 * audit lines; policy NULL means the proxy's, otherwise it is borrowed and
 * must outlive the connection (in practice: the proxy). */
int ab_egress_proxy_serve_fd (ab_egress_proxy_t *p, int fd, const char *sandbox_id,
                              const struct ab_egress_policy_s *policy, ab_error_t *err);

/* Run the private event loop until ab_egress_proxy_stop, SIGINT or SIGTERM. */
int ab_egress_proxy_run (ab_egress_proxy_t *p, ab_error_t *err);
/* Ask the loop to return; async-signal-safe. */
void ab_egress_proxy_stop (ab_egress_proxy_t *p);

/* Connections being served right now. */
unsigned ab_egress_proxy_connections (const ab_egress_proxy_t *p);

#endif
