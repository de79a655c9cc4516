/* Internals of the credential proxy shared by its files:
 *   credential-proxy.c    the proxy object, listener, configuration file
 *                         watch, connection lifetime, events, timers and
 *                         the driver loop
 *   credential-request.c  request heads: the checks in their order, the
 *                         head sent upstream (pure helpers exposed here for
 *                         the unit tests)
 *   credential-forward.c  connecting upstream, both bodies, the response,
 *                         keep-alive and failures
 *
 * Like the egress proxy (egress-internal.h): sockets are non-blocking and
 * registered once, edge-triggered; readiness lives in the streams' flags;
 * a step that stops early resumes from the flags. */
#ifndef AB_NET_CREDENTIAL_INTERNAL_H
#define AB_NET_CREDENTIAL_INTERNAL_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>

#include "net/credential-proxy.h"
#include "net/http-client.h"
#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/listener.h"
#include "net/loop-stop.h"

enum {
	AB_CP_CLOSE = -1,
	AB_CP_WAIT = 0,
	AB_CP_AGAIN = 1,
};

typedef enum {
	AB_CP_ST_HEAD = 0, /* reading a request head (or idle between requests) */
	AB_CP_ST_CONNECT,  /* setting up the upstream connection */
	AB_CP_ST_FORWARD,  /* request body up, response down */
	AB_CP_ST_CLOSING,  /* flushing our answer, then draining the client */
} ab_cp_state;

typedef enum {
	AB_CP_RESP_HEAD = 0,
	AB_CP_RESP_BODY,
	AB_CP_RESP_DONE,
} ab_cp_resp_phase;

/* Bytes held per direction while streaming: large enough that a TLS
 * upstream's records go on in few system calls, small enough that 4096
 * busy connections stay around 1 GiB (idle ones hold no buffer). */
#define AB_CP_IO_CHUNK     (128 * 1024)
#define AB_CP_BUDGET       16
#define AB_CP_LINGER_MS    2000
#define AB_CP_LINGER_BYTES (256 * 1024)

/* The request being served. */
struct ab_cp_req_s {
	bool is_head;
	int version_minor;
	bool client_close;   /* close the client after this response */
	bool upstream_close; /* the upstream connection cannot be reused */

	ab_http_body_kind req_body;
	uint64_t req_remaining;
	struct ab_http_chunked_s req_chunked;
	size_t cin_ready;
	bool req_done;

	ab_cp_resp_phase resp_phase;
	ab_http_body_kind resp_body;
	uint64_t resp_remaining;
	struct ab_http_chunked_s resp_chunked;
	size_t uin_ready;
	size_t resp_scan;
	bool resp_started; /* the client got response bytes: no 502 now */
};

struct ab_cp_conn_s {
	struct ab_cp_conn_s *prev;
	struct ab_cp_conn_s *next;
	ab_cred_proxy_t *proxy;
	ab_cp_state state;

	struct ab_stream_s cs; /* the client: plain TCP or a unix socket */
	struct event *cev;
	struct event *tev;
	bool c_shut;
	size_t lingered;

	struct ab_iobuf_s cin;
	struct ab_iobuf_s cout;
	struct ab_iobuf_s uin;
	struct ab_iobuf_s uout;
	size_t head_scan;

	uint64_t t_head_start;
	uint64_t t_last;
	uint64_t t_phase;
	uint64_t timer_at;

	/* the configuration and upstream of the current request (referenced) */
	struct ab_cred_config_s *cfg;
	const struct ab_cred_upstream_s *ups;
	/* the upstream connection, kept between requests to the same upstream
	 * of the same configuration */
	ab_http_client_t *up;
	struct ab_stream_s *us; /* NULL until connected */
	struct ab_cred_config_s *up_cfg;
	const struct ab_cred_upstream_s *up_ups;
	bool up_idle;

	struct ab_cp_req_s rq;
};

struct ab_cred_proxy_s {
	struct event_base *base;
	bool own_base;
	struct ab_cred_proxy_config_s cfg;
	char *config_path;
	char *config_dir;
	char *config_base;
	struct ab_http_limits_s http_limits;
	struct ab_http_client_config_s client_cfg;
	struct ab_proxy_env_s proxy_env;
	struct ab_resolver_s *resolver;
	SSL_CTX *tls;

	struct ab_cred_config_s *config; /* NULL until one loads */

	int inotify_fd;
	struct event *inotify_ev;

	struct ab_listener_s listener;
	struct ab_loop_stop_s stop;

	struct ab_cp_conn_s *conns;
	unsigned n_conns;
	struct ab_http_field_s *fields; /* scratch for one head at a time */
};

/* credential-proxy.c */
uint64_t ab_cp_now_us (void);
void ab_cp_conn_run (struct ab_cp_conn_s *c);
void ab_cp_conn_yield (struct ab_cp_conn_s *c);
/* The upstream connection's notification (readiness, resolver). */
void ab_cp_upstream_notify (void *arg);
/* Drop the upstream connection. */
void ab_cp_close_upstream (struct ab_cp_conn_s *c);
/* Release the request's configuration reference. */
void ab_cp_req_release (struct ab_cp_conn_s *c);

/* credential-request.c */
int ab_cp_head_step (struct ab_cp_conn_s *c);
int ab_cp_closing_step (struct ab_cp_conn_s *c);
/* Answer status with body text (text/plain), then close.  Returns
 * AB_CP_AGAIN. */
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

/* credential-forward.c */
/* Start (or reuse) the upstream connection for the request just parsed. */
int ab_cp_forward_start (struct ab_cp_conn_s *c, const struct ab_http_head_s *h,
                         const struct ab_cp_target_s *t);
int ab_cp_connect_step (struct ab_cp_conn_s *c);
int ab_cp_forward_step (struct ab_cp_conn_s *c);
/* The upstream failed: 502 before the response head, else drop. */
int ab_cp_upstream_failed (struct ab_cp_conn_s *c);
/* Between requests: notice an idle upstream that closed or spoke. */
void ab_cp_check_idle (struct ab_cp_conn_s *c);
/* Timers: what to do when the current state's deadline passed. */
int ab_cp_timeout (struct ab_cp_conn_s *c);

#endif
