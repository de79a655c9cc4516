/* The credential proxy: the sandbox asks for
 *
 *     POST http://<proxy>/<upstream>/v1/messages
 *     Authorization: Bearer <thread token>
 *
 * and the proxy, on the host, sends the request to the upstream's baseUrl
 * over verified TLS with the real secret injected, so the secret never
 * enters the sandbox (SECURITY.md, the network edge; docs/credential-proxy.md).
 *
 * Per request, in this order (each answer text/plain, then the connection
 * closes):
 *   no configuration loaded yet         503 "credential configuration is not available yet\n"
 *   Bearer token missing or wrong       401 "unauthorized\n"
 *   "." or ".." segment (decoded path)  400 "path traversal is not allowed\n"
 *   first segment names no upstream     404 "unknown upstream\n"  (nothing sent upstream)
 *   upstream fails before its head      502 "upstream request failed\n" and the log
 *                                       line "upstream <name> request failed"
 * then the request goes upstream with Authorization, Host, hop-by-hop and
 * the upstream's stripRequestHeaders removed, its inject headers set
 * (replacing), and Host set to the upstream's.  Bodies stream both ways
 * as they arrive (content-length or chunked, checked byte by byte by the
 * strict parser in http-head.h); a failure after the response head drops
 * the client connection.  Every failure of a request that named an
 * upstream is explained on the log: "upstream <name>: <why>".
 *
 * The configuration file is loaded at start if present and re-read when
 * its directory reports a change (inotify); a malformed file keeps the
 * previous configuration.
 *
 * One event loop (libevent 2) serves every connection; every function
 * here runs on its thread, except ab_cred_proxy_stop. */
#ifndef AB_NET_CREDENTIAL_PROXY_H
#define AB_NET_CREDENTIAL_PROXY_H

#include <stddef.h>
#include <stdio.h>

#include "base/error.h"
#include "net/credential-config.h"

struct event_base;

struct ab_cred_limits_s {
	size_t max_head;             /* request or response head, bytes (64 KiB) */
	unsigned max_fields;         /* header fields per head (100) */
	unsigned max_conns;          /* client connections at once (4096) */
	unsigned head_timeout_ms;    /* a whole request head from its first byte (30 s) */
	unsigned connect_timeout_ms; /* resolve, dial, proxy CONNECT and TLS (30 s) */
	unsigned idle_timeout_ms;    /* no byte either way, including waiting for the
	                                response head: model APIs think for minutes (600 s) */
};

void ab_cred_limits_default (struct ab_cred_limits_s *l);

struct ab_cred_proxy_config_s {
	/* The JSON configuration file, watched for changes; NULL for none
	 * (then ab_cred_proxy_set_config provides it). */
	const char *config_path;
	struct ab_cred_limits_s limits;
	/* Configuration and failure lines; NULL for none. */
	FILE *log;
	/* A connection from the listener that could not be served (the event
	 * loop refused it); NULL: a line on log. */
	void (*report) (void *arg, const ab_error_t *err);
	void *report_arg;
};

typedef struct ab_cred_proxy_s ab_cred_proxy_t;

/* base: the loop to join, or NULL for a private one (ab_cred_proxy_run).
 * Loads the configuration file if it exists and starts watching its
 * directory (which must exist).  Leaves the process's signals alone (a
 * write to a gone peer fails with EPIPE, relay.h). */
ab_cred_proxy_t *ab_cred_proxy_new (struct event_base *base,
                                    const struct ab_cred_proxy_config_s *cfg, ab_error_t *err);
void ab_cred_proxy_free (ab_cred_proxy_t *p);

/* Listen on host:port (port "0" = any); the bound address goes to bound
 * ("127.0.0.1:8288", "[::1]:8288"). */
int ab_cred_proxy_listen (ab_cred_proxy_t *p, const char *host, const char *port, char *bound,
                          size_t bound_len, ab_error_t *err);

/* Serve one already-connected stream socket; the proxy owns fd (also on
 * error). */
int ab_cred_proxy_serve_fd (ab_cred_proxy_t *p, int fd, ab_error_t *err);

/* Replace the configuration (the proxy takes the reference); requests in
 * flight finish with the one they started with. */
void ab_cred_proxy_set_config (ab_cred_proxy_t *p, struct ab_cred_config_s *c);

int ab_cred_proxy_run (ab_cred_proxy_t *p, ab_error_t *err);
/* Ask the loop to return; async-signal-safe. */
void ab_cred_proxy_stop (ab_cred_proxy_t *p);

#endif
