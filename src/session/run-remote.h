/* `agentbox run` on a backend that speaks only protocol v2 (gVisor, the
 * microVM, Docker): one process in a service-mode sandbox, driven through
 * the agent's socket.  The caller's stdin is written to the process,
 * its output copied to the caller's stdout and stderr, signals (INT, TERM,
 * HUP, QUIT) reach its process group and the window size follows the
 * caller's terminal. */
#ifndef AB_SESSION_RUN_REMOTE_H
#define AB_SESSION_RUN_REMOTE_H

#include <stdbool.h>

#include "base/error.h"
#include "session/run-session.h"
#include "spec/spec.h"

int ab_run_remote (const char *socket_path, const struct ab_spec_s *spec, bool tty,
                   struct ab_run_outcome_s *out, ab_error_t *err);

#endif
