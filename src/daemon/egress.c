/* A daemon sandbox's forwarded ports: network "proxy" (the egress listener
 * on 127.0.0.1:3128) and credentials (the credential proxy's on
 * 127.0.0.1:8288).  One thread per such sandbox holds an agent connection
 * that asked for each listener and routes every connection the agent
 * passes over by its port: to the egress relay (session/egress-relay.h,
 * the egress proxy with the sandbox's policy) or the credential relay
 * (session/cred-relay.h, the real secrets stay in the daemon).
 * Re-adoption after a daemon restart starts it again: the agent hands new
 * connections to the session that asked last for that port. */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <unistd.h>

#include "daemon/daemon-internal.h"
#include "session/agent-client.h"
#include "session/cred-relay.h"
#include "session/egress-relay.h"

#define EGRESS_POLL_MS 500

/* An agent that says no port has only the egress listener. */
static void
route (struct ab_box_s *b, uint16_t port, int fd)
{
	if (port == AB_CRED_PORT && b->cred_relay)
		ab_cred_relay_submit (b->cred_relay, fd);
	else if ((port == AB_EGRESS_PORT || port == 0) && b->egress_relay)
		ab_egress_relay_submit (b->egress_relay, fd);
	else
		close (fd);
}

static void *
ports_loop (void *arg)
{
	struct ab_box_s *b = arg;
	ab_error_t err = AB_ERROR_INIT;

	while (!b->egress_stop) {
		int fd = -1;
		uint16_t port = 0;
		int r = ab_agent_egress_next_port (b->egress_conn, &fd, &port, EGRESS_POLL_MS,
		                                   &err);
		if (r < 0)
			break; /* the agent is gone: housekeeping marks the sandbox dead */
		if (r > 0)
			route (b, port, fd);
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
	ab_cred_relay_stop (b->cred_relay);
	b->cred_relay = NULL;
}

/* The relays, the connection, and a listener per port. */
static int
open_ports (struct ab_box_s *b, ab_error_t *err)
{
	bool proxy = b->spec.network == AB_NETWORK_PROXY;

	if (proxy && !(b->egress_relay = ab_egress_relay_start (&b->spec.egress, b->id, err)))
		return -1;
	if (b->cred_config
	    && !(b->cred_relay = ab_cred_relay_start (ab_cred_config_ref (b->cred_config), err)))
		return -1;
	if (!(b->egress_conn = ab_agent_connect (b->agent_sock, err)))
		return -1;
	if (proxy && ab_agent_egress_listen (b->egress_conn, AB_EGRESS_PORT, err) < 0)
		return -1;
	if (b->cred_config && ab_agent_egress_listen (b->egress_conn, AB_CRED_PORT, err) < 0)
		return -1;
	return 0;
}

int
ab_box_egress_start (struct ab_box_s *b, ab_error_t *err)
{
	if (b->spec.network != AB_NETWORK_PROXY && !b->cred_config)
		return 0;
	if (open_ports (b, err) < 0) {
		release (b);
		return -1;
	}
	b->egress_stop = false;
	if ((errno = pthread_create (&b->egress_thread, NULL, ports_loop, b)) != 0) {
		release (b);
		return ab_error (err, errno, AB_E_SYSTEM, "forwarded ports thread");
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
