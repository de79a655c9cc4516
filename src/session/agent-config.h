/* The CONFIG every service-mode sandbox gets right after create, derived
 * from its spec: the same for the daemon's sandboxes and for `agentbox run`
 * on a backend that speaks only protocol v2. */
#ifndef AB_SESSION_AGENT_CONFIG_H
#define AB_SESSION_AGENT_CONFIG_H

#include "session/agent-client.h"
#include "spec/spec.h"

/* File roots: the workspace and every writable mount; Landlock write paths
 * as the native backend's (ab_spec_rw_paths); the spec's RLIMIT_NOFILE. */
int ab_session_configure_agent (ab_agent_conn_t *c, const struct ab_spec_s *spec, ab_error_t *err);

/* A service-mode backend's functional probe (backend/probe-service.c):
 * connect to spec->service_socket, configure the new sandbox as every
 * session does and run `true`.  The backend layer cannot call up into this
 * one, so the program registers it (ab_backend_set_service_exec). */
int ab_session_probe_exec (const struct ab_spec_s *spec, ab_error_t *err);

#endif
