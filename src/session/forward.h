/* A sandbox's forwarded ports, host side: the egress listener
 * (127.0.0.1:3128 inside, --network proxy) and the credential proxy's
 * (127.0.0.1:8288).  One thread holds an agent connection that subscribed
 * to each listener (EGRESS_LISTEN) and submits every connection made to it
 * inside the sandbox to the matching relay as an fd, so the egress proxy
 * and the credential proxy serve the same kind of fd on every backend:
 *
 *   - fd passing (native): the agent hands the fd over (SCM_RIGHTS);
 *   - stream (gVisor, microVM): the agent announces the connection and a
 *     small thread claims it on a connection of its own and relays it to
 *     one end of a socketpair (session/agent-client.h,
 *     ab_agent_egress_claim); at most AB_FORWARD_MAX_STREAMS at once per
 *     sandbox (the agent takes 512 sessions: API calls keep room).
 *
 * Used by the daemon (daemon/egress.c) and by `agentbox run` on a
 * service-mode backend.  A restarted host just starts it again: the agent
 * serves the session that subscribed last. */
#ifndef AB_SESSION_FORWARD_H
#define AB_SESSION_FORWARD_H

#include <stdbool.h>

#include "base/error.h"
#include "session/cred-relay.h"
#include "session/egress-relay.h"

#define AB_FORWARD_MAX_STREAMS 256
/* How long the agent keeps an announced connection for us to claim. */
#define AB_FORWARD_CLAIM_MS 10000

typedef struct ab_forward_s ab_forward_t;

/* Subscribe to AB_EGRESS_PORT when egress is set and to AB_CRED_PORT when
 * cred is set (at least one), then start the thread.  The relays stay the
 * caller's: stop them after ab_forward_stop.  fd_passing: from the
 * backend's AB_BACKEND_FD_PASSING, through ab_forward_use_fd_passing.
 * Call only after the sandbox's processes were forked (a thread). */
ab_forward_t *ab_forward_start (const char *socket_path, ab_egress_relay_t *egress,
                                ab_cred_relay_t *cred, bool fd_passing, ab_error_t *err);
/* Stop and join the thread, close its connection, free.  Streams already
 * handed to the relays end when the relays close them (or the sandbox
 * ends).  Safe on NULL. */
void ab_forward_stop (ab_forward_t *f);

/* Whether to use fd passing on a backend that can (backend_can): yes,
 * unless the environment variable AGENTBOX_EGRESS_STREAM=1 forces the
 * stream path (tests: it covers the gVisor/microVM path on native). */
bool ab_forward_use_fd_passing (bool backend_can);

#endif
