/* Internals of the egress proxy shared by its files:
 *   egress-proxy.c    the proxy object, its handler table for the relay
 *                     core (relay.h: connections, events, timers, the
 *                     request/response pump), the upstream socket's
 *                     events, the decision log
 *   egress-request.c  request heads: target parsing, policy decision,
 *                     resolution, dialing, the head sent upstream,
 *                     refusals, log and audit lines
 *   egress-tunnel.c   CONNECT tunnels (splice through a pipe pair) */
#ifndef AB_NET_EGRESS_INTERNAL_H
#define AB_NET_EGRESS_INTERNAL_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "net/egress-proxy.h"
#include "net/relay.h"
#include "net/resolve.h"

/* Bytes move between sockets in chunks of this size (read buffers, splice
 * lengths); 64 KiB is one default pipe and a good loopback TCP write. */
#define AB_EG_IO_CHUNK   (64 * 1024)
#define AB_EG_METHOD_MAX 24

/* The request being served (reset for each one on a kept-alive
 * connection); the exchange itself is the relay's (c->r.m). */
struct ab_egress_req_s {
	char method[AB_EG_METHOD_MAX];
	char target[160]; /* raw target, truncated, for refusals that precede parsing */
	bool is_connect;
	bool have_hp;
	struct ab_hostport_s hp;
	struct ab_egress_verdict_s verdict;
	char addr_text[AB_ADDR_STRLEN + 8]; /* dialed "ip:port" */
	struct ab_addr_s *cands;            /* vetted addresses to dial, in order */
	size_t n_cands;
	size_t i_cand;
	struct timespec t_real;
	uint64_t t_start_us;
};

struct ab_egress_conn_s {
	struct ab_relay_conn_s r; /* first: the relay's connection */
	const struct ab_egress_policy_s *policy;
	char *sandbox_id;
	bool resolving; /* AB_RELAY_ST_CONNECT: waiting for the resolver, not the dial */

	struct ab_stream_s ustream; /* the upstream socket (c->r.us once dialed) */
	struct event *uev;

	struct ab_resolve_job_s *rjob;
	struct ab_egress_req_s rq;

	/* the idle upstream connection kept for the next request */
	char up_host[AB_HOST_MAX + 1];
	uint16_t up_port;
	char up_addr[AB_ADDR_STRLEN + 8];
};

struct ab_egress_proxy_s {
	struct ab_relay_s relay;
	struct ab_egress_proxy_config_s cfg;
	struct ab_resolver_s *resolver;

	/* decision lines of one loop turn, written together (one write(2)
	 * per turn instead of one per request) */
	struct ab_iobuf_s logbuf;
	struct event *log_ev;
};

static inline struct ab_egress_conn_s *
ab_egress_conn (struct ab_relay_conn_s *rc)
{
	return (struct ab_egress_conn_s *)rc;
}

static inline ab_egress_proxy_t *
ab_egress_conn_proxy (const struct ab_egress_conn_s *c)
{
	return c->r.relay->owner;
}

/* egress-proxy.c */
/* Drop the upstream socket and its event. */
void ab_egress_conn_close_upstream (struct ab_egress_conn_s *c);
/* Register c->ustream.fd (just created) with the loop. */
int ab_egress_conn_watch_upstream (struct ab_egress_conn_s *c);
/* Queue a decision line; written at the end of the loop turn. */
void ab_egress_log (ab_egress_proxy_t *p, const char *line, size_t len);

/* egress-request.c (the relay's handlers) */
void ab_egress_req_reset (struct ab_egress_conn_s *c);
int ab_egress_request (struct ab_relay_conn_s *rc, const struct ab_http_head_s *h, size_t head_len);
int ab_egress_connect_step (struct ab_relay_conn_s *rc);
/* ops->redial: the policy decision and a new dial for the request in uout. */
int ab_egress_redial (struct ab_relay_conn_s *rc);
int ab_egress_timeout (struct ab_relay_conn_s *rc);
int ab_egress_fail (struct ab_relay_conn_s *rc, ab_relay_fail_kind kind, int status,
                    const char *reason);
/* Answer with an error (403 for policy refusals) and close; writes the
 * decision's log and audit lines.  Always returns AB_RELAY_AGAIN or
 * AB_RELAY_CLOSE. */
int ab_egress_refuse (struct ab_egress_conn_s *c, int status, bool denied, const char *reason);
/* The request (or tunnel) is over: one audit line. */
void ab_egress_audit_done (struct ab_egress_conn_s *c);
void ab_egress_format_hostport (const struct ab_hostport_s *hp, char *buf, size_t len);

/* egress-tunnel.c */
int ab_egress_tunnel_start (struct ab_egress_conn_s *c);
int ab_egress_tunnel_step (struct ab_relay_conn_s *rc);

#endif
