/* The Docker backend: agentbox-agent as PID 1 of a container that a local
 * Docker daemon runs (docs/docker-backend.md).  Service mode only. */
#ifndef AB_BACKEND_DOCKER_H
#define AB_BACKEND_DOCKER_H

#include "backend/backend.h"

extern const struct ab_backend_ops_s ab_backend_docker;

#endif
