/* Internals of the egress proxy shared by its files:
 *   egress-proxy.c    the proxy object, connection lifetime, events,
 *                     timers and the per-connection driver loop (the
 *                     listener, stop and lazy timers are shared with the
 *                     credential proxy: listener.c, loop-stop.c,
 *                     lazy-timer.c; message relaying: http-relay.c)
 *   egress-request.c  request heads: target parsing, policy decision,
 *                     resolution, dialing, refusals, log and audit lines
 *   egress-forward.c  absolute-URI requests: head rewriting, bodies,
 *                     responses, keep-alive
 *   egress-tunnel.c   CONNECT tunnels (splice through a pipe pair)
 *
 * Every socket is non-blocking and registered once, edge-triggered, for
 * both directions; the connection keeps its own readiness flags (c_rd,
 * c_wr, u_rd, u_wr) which the callbacks set and EAGAIN clears.  So the loop
 * never calls epoll_ctl per request, and a step that stops early (a full
 * peer, a fairness budget) resumes from the flags, not from a new edge. */
#ifndef AB_NET_EGRESS_INTERNAL_H
#define AB_NET_EGRESS_INTERNAL_H

#include <event2/event.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "net/egress-proxy.h"
#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/listener.h"
#include "net/loop-stop.h"
#include "net/resolve.h"

/* What a step tells the driver. */
enum {
	AB_EG_CLOSE = -1,   /* free the connection */
	AB_EG_WAIT = 0,     /* blocked on readiness or a timer */
	AB_EG_AGAIN = 1,    /* the state changed: run the new state now */
	AB_EG_NOSPLICE = 2, /* a relay without a buffer met fds splice(2) refuses */
};

typedef enum {
	AB_EG_ST_HEAD = 0, /* reading a request head (or idle between requests) */
	AB_EG_ST_RESOLVE,  /* waiting for the resolver */
	AB_EG_ST_DIAL,     /* non-blocking connect in progress */
	AB_EG_ST_FORWARD,  /* an absolute-URI request and its response */
	AB_EG_ST_TUNNEL,   /* CONNECT relay */
	AB_EG_ST_CLOSING,  /* flushing a final response, then draining the client */
} ab_egress_state;

typedef enum {
	AB_EG_RESP_HEAD = 0,
	AB_EG_RESP_BODY,
	AB_EG_RESP_DONE,
} ab_egress_resp_phase;

/* Bytes move between sockets in chunks of this size (read buffers, splice
 * lengths); 64 KiB is one default pipe and a good loopback TCP write. */
#define AB_EG_IO_CHUNK (64 * 1024)
/* Steps a connection may take per wakeup before yielding the loop. */
#define AB_EG_BUDGET 16
/* How long a refused client gets to read our answer while we drain its
 * request, and how much of it we read. */
#define AB_EG_LINGER_MS    2000
#define AB_EG_LINGER_BYTES (256 * 1024)
#define AB_EG_METHOD_MAX   24

/* Bodies shorter than this are copied through the buffers: creating a pipe
 * would cost more than the copy saves. */
#define AB_EG_SPLICE_MIN (32 * 1024)

/* One direction of a relay (a tunnel, or a body): src -> pipe -> dst. */
struct ab_egress_dir_s {
	int pipe[2];
	size_t in_pipe;
	bool splice; /* false: copy through a buffer instead */
	bool eof;    /* src said EOF */
	bool shut;   /* we shut dst's write side */
};

/* The request being served (reset for each one on a kept-alive connection). */
struct ab_egress_req_s {
	char method[AB_EG_METHOD_MAX];
	char target[160]; /* raw target, truncated, for refusals that precede parsing */
	bool is_connect;
	bool is_head;
	int version_minor;
	bool have_hp;
	struct ab_hostport_s hp;
	struct ab_egress_verdict_s verdict;
	char addr_text[AB_ADDR_STRLEN + 8]; /* dialed "ip:port" */
	struct ab_addr_s *cands;            /* vetted addresses to dial, in order */
	size_t n_cands;
	size_t i_cand;
	struct timespec t_real;
	uint64_t t_start_us;
	uint64_t bytes_up;
	uint64_t bytes_down;
	int status;
	char error[160];

	/* request body (client -> upstream) */
	ab_http_body_kind req_body;
	uint64_t req_remaining;
	struct ab_http_chunked_s req_chunked;
	size_t cin_ready; /* bytes at cin's front vetted as body, not yet written */
	bool req_done;

	/* response (upstream -> client) */
	ab_egress_resp_phase resp_phase;
	ab_http_body_kind resp_body;
	uint64_t resp_remaining;
	struct ab_http_chunked_s resp_chunked;
	size_t uin_ready;
	size_t resp_scan;
	bool resp_started; /* the client got response bytes: no error reply now */
	bool client_close; /* close the client after this response */
	bool upstream_close;
};

struct ab_egress_conn_s {
	struct ab_egress_conn_s *prev;
	struct ab_egress_conn_s *next;
	ab_egress_proxy_t *proxy;
	const struct ab_egress_policy_s *policy;
	char *sandbox_id;
	ab_egress_state state;

	int cfd;
	int ufd;
	struct event *cev;
	struct event *uev;
	struct event *tev;
	bool c_rd, c_wr, u_rd, u_wr;
	bool c_hup, u_hup; /* the peer's FIN was seen (EPOLLRDHUP) */
	bool c_shut;       /* our write side to the client is shut */
	size_t lingered;

	struct ab_iobuf_s cin;  /* from the client */
	struct ab_iobuf_s cout; /* generated for the client (heads, refusals) */
	struct ab_iobuf_s uin;  /* from upstream */
	struct ab_iobuf_s uout; /* generated for upstream (the request head) */
	size_t head_scan;

	uint64_t t_head_start; /* first byte of the current head, 0 if none */
	uint64_t t_last;       /* last byte moved either way */
	uint64_t t_phase;      /* resolve, dial or closing began */
	uint64_t timer_at;     /* when the armed timer fires, 0 if not armed */

	struct ab_resolve_job_s *rjob;
	struct ab_egress_req_s rq;

	/* the idle upstream connection kept for the next request */
	bool up_reusable;
	char up_host[AB_HOST_MAX + 1];
	uint16_t up_port;
	char up_addr[AB_ADDR_STRLEN + 8];

	struct ab_egress_dir_s t_cu; /* client -> upstream */
	struct ab_egress_dir_s t_uc; /* upstream -> client */
	bool no_splice;              /* splice failed once: copy bodies */
};

/* What a relay step moves: src -> (pipe or buf) -> dst; pre (our own
 * bytes, not counted) goes first.  left: bytes still to move (NULL: until
 * EOF).  buf NULL: splice only (AB_EG_NOSPLICE if it cannot). */
struct ab_egress_relay_s {
	const char *name;
	int src;
	int dst;
	bool *src_rd;
	bool *dst_wr;
	struct ab_iobuf_s *pre;
	struct ab_iobuf_s *buf;
	uint64_t *count;
	uint64_t *left;
};

struct ab_egress_proxy_s {
	struct event_base *base;
	bool own_base;
	struct ab_egress_proxy_config_s cfg;
	struct ab_http_limits_s http_limits;
	struct ab_resolver_s *resolver;

	struct ab_listener_s listener;
	struct ab_loop_stop_s stop;

	struct ab_egress_conn_s *conns;
	unsigned n_conns;
	/* scratch for parsing one head at a time (the loop is single-threaded) */
	struct ab_http_field_s *fields;

	/* decision lines of one loop turn, written together (one write(2)
	 * per turn instead of one per request) */
	struct ab_iobuf_s logbuf;
	struct event *log_ev;
};

/* egress-proxy.c */
uint64_t ab_egress_now_us (void);
void ab_egress_conn_run (struct ab_egress_conn_s *c);
/* After a step ran outside the driver (resolver callback): act on its
 * result (run on, free, or wait). */
void ab_egress_conn_continue (struct ab_egress_conn_s *c, int r);
void ab_egress_set_nodelay (int fd);
/* Drop the upstream socket and its event. */
void ab_egress_conn_close_upstream (struct ab_egress_conn_s *c);
/* Register c->ufd (just created) with the loop. */
int ab_egress_conn_watch_upstream (struct ab_egress_conn_s *c);
/* read(2) into b (see ab_iobuf_read) and keep the readiness flag *rd
 * right: cleared on EAGAIN, and on a short read unless the peer's FIN is
 * pending (hup).  A short read drained the socket: with edge-triggered
 * epoll, bytes arriving later raise a new event, so the extra read that
 * would only say EAGAIN is saved. */
ssize_t ab_egress_read (struct ab_iobuf_s *b, int fd, size_t chunk, size_t max_cap, bool *rd,
                        bool hup);
/* Queue a decision line; written at the end of the loop turn. */
void ab_egress_log (ab_egress_proxy_t *p, const char *line, size_t len);
/* Run the connection again on the next loop turn (fairness budget spent). */
void ab_egress_conn_yield (struct ab_egress_conn_s *c);
/* Write buffered bytes from b and then [p, p+n) to fd with one writev;
 * returns bytes written, -1 with errno. */
ssize_t ab_egress_writev2 (int fd, struct ab_iobuf_s *b, const char *p, size_t n);

/* egress-request.c */
int ab_egress_head_step (struct ab_egress_conn_s *c);
int ab_egress_dial_step (struct ab_egress_conn_s *c);
int ab_egress_closing_step (struct ab_egress_conn_s *c);
/* Timers: what to do when the current state's deadline passed. */
int ab_egress_timeout (struct ab_egress_conn_s *c);
/* Answer with an error (403 for policy refusals) and close; writes the
 * decision's log and audit lines.  Always returns AB_EG_AGAIN or
 * AB_EG_CLOSE. */
int ab_egress_refuse (struct ab_egress_conn_s *c, int status, bool denied, const char *reason);
/* The request (or tunnel) is over: one audit line. */
void ab_egress_audit_done (struct ab_egress_conn_s *c);
void ab_egress_format_hostport (const struct ab_hostport_s *hp, char *buf, size_t len);

/* egress-forward.c */
int ab_egress_forward_prepare (struct ab_egress_conn_s *c, const struct ab_http_head_s *h,
                               const char *path, size_t path_len);
int ab_egress_forward_step (struct ab_egress_conn_s *c);
/* A client between requests: notice an idle upstream closing. */
void ab_egress_forward_check_idle (struct ab_egress_conn_s *c);

/* egress-tunnel.c */
bool ab_egress_dir_open (struct ab_egress_dir_s *d);
void ab_egress_dir_close (struct ab_egress_dir_s *d);
/* Move bytes until blocked, done (eof or *left == 0 with nothing held) or
 * failed (c->rq.error says why). */
int ab_egress_relay_step (struct ab_egress_conn_s *c, struct ab_egress_dir_s *d,
                          const struct ab_egress_relay_s *io);
int ab_egress_tunnel_start (struct ab_egress_conn_s *c);
int ab_egress_tunnel_step (struct ab_egress_conn_s *c);
void ab_egress_tunnel_release (struct ab_egress_conn_s *c);

#endif
