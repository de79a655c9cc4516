/* The host side of `agentbox run --credential`: the agent hands over each
 * connection made to 127.0.0.1:8288 inside the sandbox, and the credential
 * proxy (net/credential-proxy.h) serves it here, on its own thread and
 * event loop (fd-relay.h), with the sandbox's configuration: the real
 * secrets stay in this process (docs/credential-proxy.md). */
#ifndef AB_SESSION_CRED_RELAY_H
#define AB_SESSION_CRED_RELAY_H

#include "base/error.h"
#include "net/credential-config.h"

/* Where the agent listens inside the sandbox. */
#define AB_CRED_PORT 8288

typedef struct ab_cred_relay_s ab_cred_relay_t;

/* Start the proxy thread with `config` (the relay takes the reference,
 * also on error).  Call only after the sandbox's processes were forked. */
ab_cred_relay_t *ab_cred_relay_start (struct ab_cred_config_s *config, ab_error_t *err);
/* Thread-safe: hand one connection (ownership passes). */
void ab_cred_relay_submit (ab_cred_relay_t *r, int fd);
/* Stop the thread, close every connection, free. Safe on NULL. */
void ab_cred_relay_stop (ab_cred_relay_t *r);

#endif
