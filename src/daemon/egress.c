/* A daemon sandbox's forwarded ports: network "proxy" (the egress listener
 * on 127.0.0.1:3128) and credentials (the credential proxy's on
 * 127.0.0.1:8288).  The relays (the egress proxy with the sandbox's
 * policy, the credential proxy with its secrets, which stay in the daemon)
 * are the sandbox's; the thread that takes the connections over from the
 * agent is session/forward.h, by fd passing where the sandbox's backend
 * can hand fds over its wall, else as streams.  Re-adoption after a daemon
 * restart starts it again: the agent serves the session that asked last. */
#include <errno.h>
#include <sys/socket.h>
#include <unistd.h>

#include "backend/backend.h"
#include "daemon/daemon-internal.h"
#include "session/cred-relay.h"
#include "session/egress-relay.h"
#include "session/forward.h"

static void
release (struct ab_box_s *b)
{
	ab_forward_stop (b->forward);
	b->forward = NULL;
	ab_egress_relay_stop (b->egress_relay);
	b->egress_relay = NULL;
	ab_cred_relay_stop (b->cred_relay);
	b->cred_relay = NULL;
}

/* A backend we do not know (a state file from another build) gets the
 * stream path: it works over any wall. */
static bool
backend_passes_fds (const struct ab_box_s *b)
{
	const struct ab_backend_ops_s *ops = ab_backend_find (b->backend);

	return ops && (ops->features & AB_BACKEND_FD_PASSING);
}

static int
start_relays (struct ab_box_s *b, ab_error_t *err)
{
	if (b->spec.network == AB_NETWORK_PROXY
	    && !(b->egress_relay = ab_egress_relay_start (&b->spec.egress, b->id, err)))
		return -1;
	if (b->cred_config
	    && !(b->cred_relay = ab_cred_relay_start (ab_cred_config_ref (b->cred_config), err)))
		return -1;
	return 0;
}

int
ab_box_egress_start (struct ab_box_s *b, ab_error_t *err)
{
	if (b->spec.network != AB_NETWORK_PROXY && !b->cred_config)
		return 0;
	if (start_relays (b, err) < 0
	    || !(b->forward = ab_forward_start (b->agent_sock, b->egress_relay, b->cred_relay,
	                                        ab_forward_use_fd_passing (backend_passes_fds (b)),
	                                        err))) {
		release (b);
		return -1;
	}
	return 0;
}

void
ab_box_egress_stop (struct ab_box_s *b)
{
	release (b);
}

/* One more connection into the sandbox's egress relay, made by the daemon
 * itself (the exec-server's http/request): one end of a socketpair goes
 * to the relay exactly as a connection the agent hands over, so the proxy
 * applies the sandbox's policy and audit to it.  The state check and the
 * submit happen under d->lock: a sandbox leaves RUNNING under that lock
 * before its relay stops, so the relay is alive when it takes the fd. */
int
ab_box_egress_connect (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	int sv[2];
	bool taken = false;

	if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	pthread_mutex_lock (&d->lock);
	if (b->state == AB_BOX_RUNNING && b->egress_relay) {
		ab_egress_relay_submit (b->egress_relay, sv[1]);
		taken = true;
	}
	pthread_mutex_unlock (&d->lock);
	if (!taken) {
		close (sv[0]);
		close (sv[1]);
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "sandbox %s has no egress relay (not running)", b->id);
	}
	return sv[0];
}
