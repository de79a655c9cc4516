/* A daemon sandbox's `network: "proxy"`: one thread per such sandbox holds
 * an agent connection that asked for the egress listener and hands every
 * connection the agent passes over to the sandbox's egress relay
 * (session/egress-relay.h: the egress proxy with the sandbox's policy).
 * Re-adoption after a daemon restart starts it again: the agent hands new
 * connections to the session that asked last. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "daemon/daemon-internal.h"
#include "session/agent-client.h"
#include "session/egress-relay.h"

#define EGRESS_POLL_MS 500

static void *
egress_loop (void *arg)
{
	struct ab_box_s *b = arg;
	ab_error_t err = AB_ERROR_INIT;

	while (!b->egress_stop) {
		int fd = -1;
		int r = ab_agent_egress_next (b->egress_conn, &fd, EGRESS_POLL_MS, &err);
		if (r < 0)
			break; /* the agent is gone: housekeeping marks the sandbox dead */
		if (r > 0)
			ab_egress_relay_submit (b->egress_relay, fd);
	}
	return NULL;
}

static void
release (struct ab_box_s *b)
{
	ab_agent_close (b->egress_conn);
	b->egress_conn = NULL;
	ab_egress_relay_stop (b->egress_relay);
	b->egress_relay = NULL;
}

int
ab_box_egress_start (struct ab_box_s *b, ab_error_t *err)
{
	if (b->spec.network != AB_NETWORK_PROXY)
		return 0;
	b->egress_relay = ab_egress_relay_start (&b->spec.egress, b->id, err);
	if (b->egress_relay)
		b->egress_conn = ab_agent_connect (b->agent_sock, err);
	if (!b->egress_conn || ab_agent_egress_listen (b->egress_conn, AB_EGRESS_PORT, err) < 0) {
		release (b);
		return -1;
	}
	b->egress_stop = false;
	if ((errno = pthread_create (&b->egress_thread, NULL, egress_loop, b)) != 0) {
		release (b);
		return ab_error (err, errno, AB_E_SYSTEM, "egress thread");
	}
	b->egress_running = true;
	return 0;
}

void
ab_box_egress_stop (struct ab_box_s *b)
{
	if (!b->egress_running)
		return;
	b->egress_stop = true;
	pthread_join (b->egress_thread, NULL);
	b->egress_running = false;
	release (b);
}
