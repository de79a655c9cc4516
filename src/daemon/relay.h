/* Copy bytes both ways between two connected stream sockets until both
 * directions have ended: the raw side of `agentbox port` and of the
 * daemon's port endpoints (api-port.c).  Half-close is forwarded
 * (shutdown(SHUT_WR) on the other side at EOF), so protocols that end one
 * direction first (HTTP/1.0 requests, `nc -N`) keep working. */
#ifndef AB_DAEMON_RELAY_H
#define AB_DAEMON_RELAY_H

#include <stddef.h>
#include <stdint.h>

/* Blocks until both directions ended or either side failed; counts the
 * bytes copied each way (a_to_b, b_to_a; either may be NULL).  Closes
 * neither fd. */
void ab_relay_fds (int a, int b, uint64_t *a_to_b, uint64_t *b_to_a);
/* The same, ending when no byte moved either way for idle_ms (-1: never):
 * 1 then, else 0. */
int ab_relay_fds_idle (int a, int b, int idle_ms, uint64_t *a_to_b, uint64_t *b_to_a);

/* The same, ending as soon as either side ended (its EOF is still passed
 * on as a half-close): for a WebSocket, where a peer that went away does
 * not come back to finish the other direction, and the other end (Chromium's
 * DevTools) never closes on a half-close. */
int ab_relay_fds_first_eof (int a, int b, int idle_ms);

#endif
