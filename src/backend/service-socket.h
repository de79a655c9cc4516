/* The host end of a service-mode sandbox's door when the monitor owns it
 * (native: inherited by the agent as fd 4; microvm: served by the
 * monitor's relay): a listening unix socket at spec->service_socket, 0600,
 * any number of sessions (docs/protocol-v2.md). */
#ifndef AB_BACKEND_SERVICE_SOCKET_H
#define AB_BACKEND_SERVICE_SOCKET_H

#include "base/error.h"

/* Listen at path; sock_flags are or-ed into the socket type
 * (SOCK_NONBLOCK); always close-on-exec.  Only a stale socket (of a
 * sandbox that is gone) is replaced: anything else there is
 * AB_E_CONFLICT.  The fd, or -1 with err. */
int ab_service_socket_listen (const char *path, int sock_flags, ab_error_t *err);

#endif
