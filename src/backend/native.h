/* The native backend: agentbox's own namespaces. */
#ifndef AB_BACKEND_NATIVE_H
#define AB_BACKEND_NATIVE_H

#include "backend/backend.h"

extern const struct ab_backend_ops_s ab_backend_native;

#endif
