/* Internals of the credential proxy shared by its files:
 *   credential-proxy.c    the proxy object, configuration file watch, the
 *                         handler table for the relay core (relay.h runs
 *                         the connections, the head, bodies and response)
 *   credential-request.c  request heads: the checks in their order, the
 *                         head sent upstream (pure helpers exposed here for
 *                         the unit tests)
 *   credential-forward.c  connecting upstream, keep-alive, failures and
 *                         timeouts */
#ifndef AB_NET_CREDENTIAL_INTERNAL_H
#define AB_NET_CREDENTIAL_INTERNAL_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/credential-proxy.h"
#include "net/http-client.h"
#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/relay.h"

/* Bytes held per direction while streaming: large enough that a TLS
 * upstream's records go on in few system calls, small enough that 4096
 * busy connections stay around 1 GiB (idle ones hold no buffer). */
#define AB_CP_IO_CHUNK (128 * 1024)
/* OpenSSL's read buffer for an upstream (read-ahead fills it whole). */
#define AB_CP_TLS_READ_BUF AB_CP_IO_CHUNK

struct ab_cp_conn_s {
	struct ab_relay_conn_s r; /* first: the relay's connection */
	/* the configuration and upstream of the current request (referenced) */
	struct ab_cred_config_s *cfg;
	const struct ab_cred_upstream_s *ups;
	/* the upstream connection (c->r.us its stream once connected), kept
	 * between requests to the same upstream of the same configuration */
	ab_http_client_t *up;
	struct ab_cred_config_s *up_cfg;
	const struct ab_cred_upstream_s *up_ups;
};

struct ab_cred_proxy_s {
	struct ab_relay_s relay;
	struct ab_cred_proxy_config_s cfg;
	char *config_path;
	char *config_dir;
	char *config_base;
	struct ab_http_client_config_s client_cfg;
	struct ab_proxy_env_s proxy_env;
	struct ab_resolver_s *resolver;
	SSL_CTX *tls;

	struct ab_cred_config_s *config; /* NULL until one loads */

	int inotify_fd;
	struct event *inotify_ev;
};

static inline struct ab_cp_conn_s *
ab_cp_conn (struct ab_relay_conn_s *rc)
{
	return (struct ab_cp_conn_s *)rc;
}

static inline ab_cred_proxy_t *
ab_cp_conn_proxy (const struct ab_cp_conn_s *c)
{
	return c->r.relay->owner;
}

/* credential-proxy.c */
/* A line on the configured log (none when it is NULL). */
void ab_cp_log (ab_cred_proxy_t *p, const char *fmt, ...) __attribute__ ((format (printf, 2, 3)));
/* Release the request's configuration reference. */
void ab_cp_req_release (struct ab_cp_conn_s *c);

/* credential-request.c */
int ab_cp_request (struct ab_relay_conn_s *rc, const struct ab_http_head_s *h, size_t head_len);
/* Answer status with body text (text/plain), then close.  Returns
 * AB_RELAY_AGAIN. */
int ab_cp_answer (struct ab_cp_conn_s *c, int status, const char *body);

/* Pure helpers (unit-tested). */
typedef enum {
	AB_CP_TARGET_OK = 0,
	AB_CP_TARGET_MALFORMED, /* not origin-form, bad percent-encoding, NUL */
	AB_CP_TARGET_TRAVERSAL, /* a "." or ".." segment once decoded */
} ab_cp_target_verdict;

struct ab_cp_target_s {
	char name[AB_CRED_NAME_MAX + 1]; /* decoded first segment ("" if too long or absent) */
	const char *rest;                /* after the first segment: "" or "/..." (raw) */
	size_t rest_len;
	const char *query; /* "" or "?..." (raw) */
	size_t query_len;
};

ab_cp_target_verdict ab_cp_parse_target (const char *target, size_t len, struct ab_cp_target_s *t);
/* The token from "Authorization: Bearer <token>" among the head's fields:
 * exactly one Authorization field, scheme "Bearer" (any case), one or
 * more spaces, a non-empty token.  Returns false otherwise. */
bool ab_cp_bearer (const struct ab_http_head_s *h, const char **tok, size_t *len);
/* The head sent upstream into b.  absolute: "http://host" prefix for an
 * http proxy; proxy_auth: its Proxy-Authorization value or NULL. */
void ab_cp_build_request (struct ab_iobuf_s *b, const struct ab_http_head_s *h,
                          const struct ab_cred_config_s *cfg, const struct ab_cred_upstream_s *u,
                          const struct ab_cp_target_s *t, bool absolute, const char *proxy_auth);

/* credential-forward.c (the relay's handlers) */
/* Start (or reuse) the upstream connection for the request just parsed. */
int ab_cp_forward_start (struct ab_cp_conn_s *c, const struct ab_http_head_s *h,
                         const struct ab_cp_target_s *t);
int ab_cp_connect_step (struct ab_relay_conn_s *rc);
int ab_cp_fail (struct ab_relay_conn_s *rc, ab_relay_fail_kind kind, int status,
                const char *reason);
int ab_cp_timeout (struct ab_relay_conn_s *rc);
void ab_cp_close_upstream (struct ab_relay_conn_s *rc);
/* ops->redial: a new upstream connection for the request in uout. */
int ab_cp_redial (struct ab_relay_conn_s *rc);

#endif
