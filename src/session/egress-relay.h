/* The host side of a sandbox's `--network proxy`: the agent hands over each
 * connection made to 127.0.0.1:3128 inside the sandbox, and the egress proxy
 * (net/egress-proxy.h) serves it here with the sandbox's policy, on its own
 * thread and event loop so the session's relay loop never waits on it. */
#ifndef AB_SESSION_EGRESS_RELAY_H
#define AB_SESSION_EGRESS_RELAY_H

#include "base/error.h"
#include "spec/spec.h"

typedef struct ab_egress_relay_s ab_egress_relay_t;

/* Build the sandbox-mode policy from `egress` (policy file first, then the
 * flags) and start the proxy thread.  Call only after the sandbox's
 * processes were forked: the caller becomes multi-threaded. */
ab_egress_relay_t *ab_egress_relay_start (const struct ab_egress_spec_s *egress,
                                          const char *sandbox_id, ab_error_t *err);
/* Thread-safe: hand one connection (ownership passes). */
void ab_egress_relay_submit (ab_egress_relay_t *r, int fd);
/* Stop the thread, close every connection, free. Safe on NULL. */
void ab_egress_relay_stop (ab_egress_relay_t *r);

/* The policy alone (for validation before anything starts). */
struct ab_egress_policy_s *ab_egress_policy_from_spec (const struct ab_egress_spec_s *egress,
                                                       ab_error_t *err);

#endif
