/* The HTTP/1.1 relay core under the egress and the credential proxies.
 *
 *   relay-conn.c  the connection engine: the list, events, lazy timers,
 *                 the fairness budget, the listener hooks, the driver loop
 *                 that runs one connection's state machine; the states it
 *                 owns: reading a request head, closing
 *   relay-pump.c  one request/response pump over ab_stream_s (plain fds,
 *                 with splice(2) as the fast path for big bodies, or the
 *                 credential proxy's TLS upstream), and the byte relays
 *                 the egress proxy's CONNECT tunnels use too
 *
 * A service (egress-*.c, credential-*.c) fills a handler table: take a
 * parsed request head (pick the target or refuse, rewrite the head into
 * uout), connect upstream, and report each outcome; the core moves the
 * bytes and explains every failure to the service's fail hook, which
 * answers the client the service's way and logs it.
 *
 * Every socket is non-blocking and registered once, edge-triggered, for
 * both directions; readiness lives in the streams' rd/wr flags, which the
 * callbacks set and EAGAIN clears.  So the loop never calls epoll_ctl per
 * request, and a step that stops early (a full peer, the fairness budget)
 * resumes from the flags, not from a new edge. */
#ifndef AB_NET_RELAY_H
#define AB_NET_RELAY_H

#include <event2/event.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "net/http-client.h"
#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/listener.h"
#include "net/loop-stop.h"

/* What a step tells the driver. */
enum {
	AB_RELAY_CLOSE = -1,   /* free the connection */
	AB_RELAY_WAIT = 0,     /* blocked on readiness or a timer */
	AB_RELAY_AGAIN = 1,    /* the state changed: run the new state now */
	AB_RELAY_NOSPLICE = 2, /* a relay without a buffer met fds splice(2) refuses */
};

typedef enum {
	AB_RELAY_ST_HEAD = 0, /* reading a request head (or idle between requests) */
	AB_RELAY_ST_CONNECT,  /* the service sets up the upstream (resolve, dial, TLS) */
	AB_RELAY_ST_FORWARD,  /* request body up, response down */
	AB_RELAY_ST_TUNNEL,   /* the service's byte tunnel (CONNECT) */
	AB_RELAY_ST_CLOSING,  /* flushing a final answer, then draining the client */
} ab_relay_state;

typedef enum {
	AB_RELAY_RESP_HEAD = 0,
	AB_RELAY_RESP_BODY,
	AB_RELAY_RESP_DONE,
} ab_relay_resp_phase;

/* Who a failure is about; the service answers and logs accordingly. */
typedef enum {
	AB_RELAY_FAIL_CLIENT,   /* the client's request is refused (head, body, timeout) */
	AB_RELAY_FAIL_UPSTREAM, /* the upstream failed or broke the protocol */
	AB_RELAY_FAIL_LOST,     /* a peer went away or broke framing mid-message */
} ab_relay_fail_kind;

/* Steps a connection may take per wakeup before yielding the loop. */
#define AB_RELAY_BUDGET 16
/* How long a refused client gets to read our answer while we drain its
 * request, and how much of it we read. */
#define AB_RELAY_LINGER_MS    2000
#define AB_RELAY_LINGER_BYTES (256 * 1024)
/* Bodies shorter than this are copied through the buffers: creating a pipe
 * would cost more than the copy saves. */
#define AB_RELAY_SPLICE_MIN (32 * 1024)
/* Pipes are per body; a few emptied ones are kept for the next body (the
 * pool), sparing pipe2 and two closes per body.  They keep the default
 * size (64 KiB): 256 KiB pipes made fewer splice calls but cost more CPU
 * per MiB on loopback (docs/performance.md). */
#define AB_RELAY_PIPE_POOL 8
#define AB_RELAY_ERROR_MAX 160

/* One direction of a byte relay (a tunnel, or a body): src -> pipe -> dst. */
struct ab_relay_dir_s {
	int pipe[2];
	bool body; /* a body's pipe: back to the pool when provably empty */
	size_t in_pipe;
	bool splice; /* false: copy through a buffer instead */
	bool eof;    /* src said EOF */
	bool shut;   /* we shut dst's write side */
};

/* What a relay step moves: src -> (pipe or buf) -> dst; pre (our own
 * bytes, not counted) goes first.  left: bytes still to move (NULL: until
 * EOF).  buf NULL: splice only (AB_RELAY_NOSPLICE if it cannot). */
struct ab_relay_io_s {
	const char *name;
	struct ab_stream_s *src;
	struct ab_stream_s *dst;
	struct ab_iobuf_s *pre;
	struct ab_iobuf_s *buf;
	uint64_t *count;
	uint64_t *left;
};

/* The message exchange being relayed (reset for each request). */
struct ab_relay_msg_s {
	bool is_head;
	int version_minor;
	bool client_close;   /* close the client after this response */
	bool upstream_close; /* the upstream connection cannot be reused */

	/* request body (client -> upstream) */
	ab_http_body_kind req_body;
	uint64_t req_remaining;
	struct ab_http_chunked_s req_chunked;
	size_t cin_ready; /* bytes at cin's front vetted as body, not yet written */
	bool req_done;

	/* response (upstream -> client) */
	ab_relay_resp_phase resp_phase;
	ab_http_body_kind resp_body;
	uint64_t resp_remaining;
	struct ab_http_chunked_s resp_chunked;
	size_t uin_ready;
	size_t resp_scan;
	bool resp_started; /* the client got response bytes: no error answer now */
	bool idempotent;   /* a method RFC 9110 9.2.2 calls idempotent, without a body */
	bool retried;      /* already sent again once on a new upstream */

	uint64_t bytes_up;
	uint64_t bytes_down;
	int status;
	char error[AB_RELAY_ERROR_MAX]; /* why it failed, "" while it did not */
};

struct ab_relay_s;

struct ab_relay_conn_s {
	struct ab_relay_conn_s *prev;
	struct ab_relay_conn_s *next;
	struct ab_relay_s *relay;
	ab_relay_state state;

	struct ab_stream_s cs;  /* the client: TCP or a unix socket */
	struct ab_stream_s *us; /* the upstream, NULL while there is none */
	struct event *cev;
	struct event *tev;
	bool c_hup;   /* the client's FIN was seen (EPOLLRDHUP) */
	bool u_hup;   /* the upstream's, where the service tracks it */
	bool c_shut;  /* our write side to the client is shut */
	bool up_idle; /* the upstream connection waits for the next request */
	size_t lingered;

	struct ab_iobuf_s cin;  /* from the client */
	struct ab_iobuf_s cout; /* for the client: our heads and answers */
	struct ab_iobuf_s uin;  /* from upstream */
	struct ab_iobuf_s uout; /* for upstream: the rewritten request head */
	/* A copy of uout while an idempotent request rides a kept-alive
	 * upstream: sent once more on a new one if that upstream turns out
	 * closed before answering (ab_relay_forward_reused). */
	struct ab_iobuf_s replay;
	size_t head_scan;

	uint64_t t_head_start; /* first byte of the current head, 0 if none */
	uint64_t t_last;       /* last byte moved either way */
	uint64_t t_phase;      /* connecting or closing began */
	uint64_t timer_at;     /* when the armed timer fires, 0 if not armed */

	struct ab_relay_msg_s m;
	struct ab_relay_dir_s d_cu; /* client -> upstream */
	struct ab_relay_dir_s d_uc; /* upstream -> client */
	bool no_splice;             /* splice failed once: copy bodies */
};

/* A service's handlers.  Each gets the connection, which is the first
 * member of the service's own (conn_size bytes, zeroed). */
struct ab_relay_ops_s {
	size_t conn_size;
	size_t io_chunk;         /* bytes moved per read, held per direction */
	bool splice;             /* plain-fd bodies may go through splice(2) */
	bool upstream_hup;       /* the service keeps c->u_hup up to date */
	const char *answer_type; /* Content-Type of the core's answers */
	/* A new connection (before its first step). */
	void (*init) (struct ab_relay_conn_s *c);
	/* A whole request head is at cin's front (head_len bytes; h parsed
	 * from it).  Pick the target or refuse (ab_relay_fail), rewrite the
	 * head into uout (ab_relay_forward_begin), consume the head from cin
	 * and move on: AB_RELAY_ST_CONNECT, or FORWARD on a reused upstream. */
	int (*request) (struct ab_relay_conn_s *c, const struct ab_http_head_s *h, size_t head_len);
	/* One step of AB_RELAY_ST_CONNECT, and of AB_RELAY_ST_TUNNEL (NULL
	 * for a service without tunnels). */
	int (*connect) (struct ab_relay_conn_s *c);
	int (*tunnel) (struct ab_relay_conn_s *c);
	/* The deadline of AB_RELAY_ST_CONNECT (monotonic microseconds), and
	 * what to do when the current state's deadline passed. */
	uint64_t (*connect_deadline) (const struct ab_relay_conn_s *c);
	int (*timeout) (struct ab_relay_conn_s *c);
	/* Report a failure and answer it (ab_relay_answer) or close; returns
	 * the step's result. */
	int (*fail) (struct ab_relay_conn_s *c, ab_relay_fail_kind kind, int status,
	             const char *reason);
	/* A response was relayed whole. */
	void (*done) (struct ab_relay_conn_s *c);
	/* Dial a new upstream for the request in uout (the one retry after a
	 * kept-alive upstream closed unanswered): AB_RELAY_ST_CONNECT, as
	 * after `request`.  NULL: the service never retries. */
	int (*redial) (struct ab_relay_conn_s *c);
	/* Drop the upstream connection (sets c->us NULL). */
	void (*close_upstream) (struct ab_relay_conn_s *c);
	/* Free the service's parts of a connection being freed. */
	void (*release) (struct ab_relay_conn_s *c);
	/* A connection from the listener could not be served, and the owner
	 * set no ab_relay_s.report: put it on the service's log. */
	void (*report) (struct ab_relay_s *r, const ab_error_t *err);
};

struct ab_relay_limits_s {
	size_t max_head;
	unsigned max_fields;
	unsigned max_conns;
	unsigned head_timeout_ms;
	unsigned idle_timeout_ms;
};

struct ab_relay_s {
	struct event_base *base;
	bool own_base;
	const struct ab_relay_ops_s *ops;
	void *owner;      /* the service's proxy object */
	const char *what; /* "egress proxy": for messages */
	struct ab_relay_limits_s limits;
	struct ab_http_limits_s http_limits;
	/* scratch for parsing one head at a time (the loop is single-threaded) */
	struct ab_http_field_s *fields;

	struct ab_listener_s listener;
	struct ab_loop_stop_s stop;

	/* Where a connection the listener could not serve is reported (the
	 * program's edge); NULL: ops->report. */
	void (*report) (void *arg, const ab_error_t *err);
	void *report_arg;

	struct ab_relay_conn_s *conns;
	unsigned n_conns;
	/* empty body pipes kept for the next spliced body */
	struct {
		int fd[2];
	} pipe_pool[AB_RELAY_PIPE_POOL];
	unsigned n_pipe_pool;
	/* The SIGPIPE guard of the current wakeup (ab_relay_sigpipe_guard):
	 * how deep the callbacks nest, whether this wakeup blocked SIGPIPE
	 * (and must unblock it), and the mask to restore. */
	unsigned guard_depth;
	bool guard_blocked;
	bool guard_restore;
	sigset_t guard_old;
	bool epipe; /* a write failed with EPIPE during this wakeup */
};

/* ---- the engine (relay-conn.c) -------------------------------------------- */

/* base NULL: a private loop (then ab_relay_run).  accept_retry_ms: see
 * ab_listener_s. */
int ab_relay_init (struct ab_relay_s *r, struct event_base *base, const char *what,
                   const struct ab_relay_ops_s *ops, void *owner,
                   const struct ab_relay_limits_s *limits, unsigned accept_retry_ms,
                   ab_error_t *err);
/* Free every connection (the service's resources they hold go first). */
void ab_relay_drop_conns (struct ab_relay_s *r);
/* Everything: connections, listener, stop, a private loop. */
void ab_relay_fini (struct ab_relay_s *r);
int ab_relay_listen (struct ab_relay_s *r, const char *host, const char *port, char *bound,
                     size_t bound_len, ab_error_t *err);
/* Serve one connected stream socket; the relay owns fd (also on error).
 * *out (if not NULL) gets the connection, to fill the service's parts. */
int ab_relay_serve_fd (struct ab_relay_s *r, int fd, struct ab_relay_conn_s **out, ab_error_t *err);
int ab_relay_run (struct ab_relay_s *r, ab_error_t *err);
void ab_relay_stop (struct ab_relay_s *r);

uint64_t ab_relay_now_us (void);
void ab_relay_conn_run (struct ab_relay_conn_s *c);
/* After a step ran outside the driver (a resolver's or a client's
 * callback): act on its result (run on, free, or wait). */
void ab_relay_conn_continue (struct ab_relay_conn_s *c, int r);
/* Run the connection again on the next loop turn (fairness budget spent). */
void ab_relay_conn_yield (struct ab_relay_conn_s *c);
/* Answer status with body (ops->answer_type) and close the connection
 * after it; drops the upstream.  Returns AB_RELAY_AGAIN. */
int ab_relay_answer (struct ab_relay_conn_s *c, int status, const char *body);
/* Report a failure to the service (ops->fail); returns its result. */
int ab_relay_fail (struct ab_relay_conn_s *c, ab_relay_fail_kind kind, int status,
                   const char *reason);
void ab_relay_set_nodelay (int fd);
/* Call before anything that may raise SIGPIPE (splice(2) into a socket,
 * a TLS read, write, handshake or close_notify, write(2) to a pipe): it
 * blocks SIGPIPE until the current wakeup ends.  Plain socket writes use
 * MSG_NOSIGNAL and need no guard, so a wakeup that makes none of these
 * calls costs no signal-mask system call. */
void ab_relay_sigpipe_guard (struct ab_relay_s *r);

/* Read into b (see ab_stream_read_buf) and keep s->rd right: cleared on
 * EAGAIN, and for a plain socket on a short read unless the peer's FIN is
 * pending (hup).  A short read drained the socket: with edge-triggered
 * epoll, bytes arriving later raise a new event, so the extra read that
 * would only say EAGAIN is saved. */
ssize_t ab_relay_read (struct ab_relay_s *r, struct ab_stream_s *s, struct ab_iobuf_s *b,
                       size_t chunk, size_t max_cap, bool hup);
/* b's bytes and then [p, p+n) (ab_stream_writev2; a plain fd that is not a
 * socket gets writev); returns bytes written, -1 with errno. */
ssize_t ab_relay_writev2 (struct ab_relay_s *r, struct ab_stream_s *s, struct ab_iobuf_s *b,
                          const char *p, size_t n);

/* ---- the pump (relay-pump.c) ---------------------------------------------- */

/* The request h is to be forwarded: set up both bodies' framing.  The
 * service writes the rewritten head into uout itself. */
void ab_relay_forward_begin (struct ab_relay_conn_s *c, const struct ab_http_head_s *h);
/* The head in uout goes out on a kept-alive upstream (call after writing
 * it).  A server may close an idle connection just as we reuse it (RFC
 * 9112 9.3.1); an idempotent request without a body then goes once more
 * on a new upstream (ops->redial) instead of failing with a 502.  Other
 * requests fail as before: they may have had an effect. */
void ab_relay_forward_reused (struct ab_relay_conn_s *c);
int ab_relay_forward_step (struct ab_relay_conn_s *c);

/* A default pipe for d (a tunnel's direction), if it has none. */
bool ab_relay_dir_open (struct ab_relay_dir_s *d);
/* A body's pipe for d (from the pool when one is there), if it has none. */
bool ab_relay_body_pipe_open (struct ab_relay_s *r, struct ab_relay_dir_s *d);
void ab_relay_dir_close (struct ab_relay_dir_s *d);
/* Done with both directions' pipes: they are per body, not per
 * connection.  An empty body pipe goes back to the pool, never one that
 * may still hold a byte. */
void ab_relay_dirs_release (struct ab_relay_conn_s *c);
/* Close the pool's pipes. */
void ab_relay_pipe_pool_drain (struct ab_relay_s *r);
/* Move bytes until blocked, done (eof or *left == 0 with nothing held) or
 * failed (AB_RELAY_CLOSE; c->m.error says why). */
int ab_relay_io_step (struct ab_relay_conn_s *c, struct ab_relay_dir_s *d,
                      const struct ab_relay_io_s *io);

#endif
