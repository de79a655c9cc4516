/* The gVisor backend: the sandbox runs on gVisor's user-space kernel
 * (runsc, an OCI runtime), with agentbox-agent as the container's PID 1
 * listening on a unix socket the host reaches (service mode only). */
#ifndef AB_BACKEND_GVISOR_H
#define AB_BACKEND_GVISOR_H

#include "backend/backend.h"

extern const struct ab_backend_ops_s ab_backend_gvisor;

#endif
