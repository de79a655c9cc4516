/* The Docker backend: agentbox-agent as PID 1 of a container that a local
 * Docker daemon runs (docs/docker-backend.md).  Service mode only. */
#ifndef AB_BACKEND_DOCKER_H
#define AB_BACKEND_DOCKER_H

#include "backend/backend.h"

extern const struct ab_backend_ops_s ab_backend_docker;

/* Remove the containers of ours (label agentbox=1) whose monitor is gone
 * (docker-sweep.c), at most a bounded number, each logged.  -1 without
 * trying when no engine answers (or not root), else how many.  Blocks for
 * the `docker` calls (each bounded): call it off any request path. */
int ab_docker_sweep (void);

/* Whether the monitor of the sandbox whose agent listened at
 * service_socket saw the whole container end by the kernel's OOM killer
 * (docker.c leaves a note next to the socket, for a caller that was not
 * listening); the note is removed. */
bool ab_docker_ended_oom (const char *service_socket);

#endif
