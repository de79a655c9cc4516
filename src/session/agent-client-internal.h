/* Internals of the blocking agent client, shared by its files:
 * agent-client.c (connection, frames, requests), agent-client-proc.c,
 * agent-client-file.c, agent-client-port.c. */
#ifndef AB_SESSION_AGENT_CLIENT_INTERNAL_H
#define AB_SESSION_AGENT_CLIENT_INTERNAL_H

#include "base/sys.h"
#include "proto/msg.h"
#include "session/agent-client.h"

#define AB_AC_MAX_FDS 16
/* EGRESS_READY announcements kept for the caller: the agent announces at
 * most 64 per listener before it stops accepting, so more is a confused
 * agent (the surplus is dropped and expires there). */
#define AB_AC_MAX_READY 1024

/* A received frame waiting for its reader (payload owned). */
struct ab_ac_frame_s {
	uint16_t type;
	uint32_t channel;
	uint32_t len;
	uint8_t *payload;
	struct ab_ac_frame_s *next;
};

struct ab_ac_queue_s {
	struct ab_ac_frame_s *head, **tail;
};

/* A channel of this connection. */
struct ab_ac_chan_s {
	uint32_t id;
	struct ab_ac_queue_s q;
	uint64_t credit;   /* bytes we may still send */
	uint64_t to_grant; /* bytes consumed, not yet granted back */
	struct ab_ac_chan_s *next;
};

struct ab_agent_conn_s {
	int fd;
	struct ab_agent_info_s info;
	int timeout_ms;
	uint32_t next_req, next_chan;
	bool broken;
	ab_error_t why_broken; /* the first error that broke the connection */
	uint8_t *in;
	size_t in_len, in_cap;
	struct ab_ac_queue_s replies; /* OK/FAIL frames not yet claimed */
	struct ab_ac_chan_s *chans;
	int fds[AB_AC_MAX_FDS]; /* received by SCM_RIGHTS, not yet claimed */
	size_t n_fds;
	int egress[AB_AC_MAX_FDS];
	uint16_t egress_port[AB_AC_MAX_FDS]; /* the listener each came in on (0: unsaid) */
	size_t n_egress;
	struct ab_ac_queue_s ready; /* EGRESS_READY frames not yet claimed */
	size_t n_ready;
	uint8_t *event; /* payload of the last event handed out */
};

/* Deadline helpers: ms since an arbitrary epoch; timeout -1 = never. */
int ab_ac_remaining (uint64_t deadline, int timeout_ms);

/* Send one frame (blocking, reading incoming frames meanwhile so the agent
 * never waits on us while we wait on it). */
int ab_ac_send (ab_agent_conn_t *c, uint16_t type, uint32_t channel, const void *p, size_t len,
                ab_error_t *err);
int ab_ac_send_msg (ab_agent_conn_t *c, uint32_t channel, const struct ab_msg_s *m,
                    ab_error_t *err);
/* Read and route whatever frames arrive within timeout_ms (0 = only what
 * is there now, -1 = block for at least one frame).  1 = something was
 * routed, 0 = timeout, -1 = error. */
int ab_ac_pump (ab_agent_conn_t *c, int timeout_ms, ab_error_t *err);
/* Send request m (REQ_ID filled in) and wait for its answer.  On OK, *reply
 * holds it decoded (ab_msg_free it); on FAIL, the agent's error. */
int ab_ac_call (ab_agent_conn_t *c, struct ab_msg_s *m, struct ab_msg_s *reply, ab_error_t *err);
/* Send request m and hand each of its answers (a listing comes in several,
 * the last without MORE) to each(ctx, reply) until the last; -1 on the
 * first error, after which the caller frees what each collected. */
int ab_ac_call_all (ab_agent_conn_t *c, struct ab_msg_s *m,
                    void (*each) (void *ctx, struct ab_msg_s *reply), void *ctx, ab_error_t *err);
/* Wait for (another) answer to req_id. */
int ab_ac_wait_reply (ab_agent_conn_t *c, uint32_t req_id, struct ab_msg_s *reply, ab_error_t *err);
/* An answer to req_id already here? 1 = yes (in *reply, or the error), 0 = no. */
int ab_ac_poll_reply (ab_agent_conn_t *c, uint32_t req_id, struct ab_msg_s *reply, int *rc,
                      ab_error_t *err);
uint32_t ab_ac_next_req (ab_agent_conn_t *c);

struct ab_ac_chan_s *ab_ac_chan_new (ab_agent_conn_t *c);
struct ab_ac_chan_s *ab_ac_chan_find (ab_agent_conn_t *c, uint32_t id);
/* Forget the channel; frames for it that still arrive are dropped. */
void ab_ac_chan_drop (ab_agent_conn_t *c, struct ab_ac_chan_s *ch);
struct ab_ac_frame_s *ab_ac_queue_pop (struct ab_ac_queue_s *q);
void ab_ac_frame_free (struct ab_ac_frame_s *f);
/* A channel's frames handed to take(c, ch, f, ev, err) in order (it owns
 * f; 1 = an event, 0 = keep going, -1 = error) until it reports one or
 * timeout_ms (-1 = forever) passes (0); credit for what was consumed goes
 * back before each wait. */
typedef int (*ab_ac_take_fn) (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, struct ab_ac_frame_s *f,
                              void *ev, ab_error_t *err);
int ab_ac_chan_next (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, ab_ac_take_fn take, void *ev,
                     int timeout_ms, ab_error_t *err);
/* The caller used n bytes of the channel's data: grant them back (batched). */
int ab_ac_consumed (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, size_t n, bool flush,
                    ab_error_t *err);
/* RESET (channel) or FAIL payload -> error with the agent's kind. */
int ab_ac_error_from (const struct ab_msg_s *m, ab_error_t *err);
int ab_ac_broken (ab_agent_conn_t *c, ab_error_t *err);

#endif
