/* Egress without fd passing, the subscriber's half: EGRESS_LISTEN in
 * stream mode, and the EGRESS_READY announcements the agent then sends on
 * that connection (queued by agent-client.c's router).  Claiming one is
 * agent-client-port.c's (ab_agent_egress_open, ab_agent_egress_claim). */
#include "session/agent-client-internal.h"

int
ab_agent_egress_listen_stream (ab_agent_conn_t *c, uint16_t port, uint32_t claim_timeout_ms,
                               ab_error_t *err)
{
	struct ab_msg_s m, reply;

	ab_msg_init (&m, AB_MSG_EGRESS_LISTEN);
	ab_msg_set (&m, port, AB_TAG_PORT, port);
	ab_msg_set (&m, egress_stream, AB_TAG_EGRESS_STREAM, true);
	if (claim_timeout_ms)
		ab_msg_set (&m, timeout_ms, AB_TAG_TIMEOUT_MS, claim_timeout_ms);
	if (ab_ac_call (c, &m, &reply, err) < 0)
		return -1;
	ab_msg_free (&reply);
	return 0;
}

/* 1 = an announcement was taken off the queue (a malformed one is skipped
 * and reported as none). */
static int
pop_ready (ab_agent_conn_t *c, uint32_t *conn, uint16_t *port)
{
	ab_error_t ignored = AB_ERROR_INIT;
	struct ab_ac_frame_s *f;
	struct ab_msg_s m;
	int r;

	while ((f = ab_ac_queue_pop (&c->ready))) {
		c->n_ready--;
		r = ab_msg_decode (f->type, f->payload, f->len, &m, &ignored);
		ab_ac_frame_free (f);
		if (r == 0) {
			*conn = m.conn;
			*port = (uint16_t)m.port;
		}
		ab_msg_free (&m);
		if (r == 0)
			return 1;
	}
	return 0;
}

int
ab_agent_egress_next_ready (ab_agent_conn_t *c, uint32_t *conn, uint16_t *port, int timeout_ms,
                            ab_error_t *err)
{
	uint64_t deadline = ab_mono_ms () + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);

	for (;;) {
		int k;
		if (pop_ready (c, conn, port))
			return 1;
		k = ab_ac_pump (c, ab_ac_remaining (deadline, timeout_ms), err);
		if (k <= 0)
			return k;
	}
}
