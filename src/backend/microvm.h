/* The microVM backend (QEMU microvm; docs/microvm.md). */
#ifndef AB_BACKEND_MICROVM_H
#define AB_BACKEND_MICROVM_H

#include "backend/backend.h"

extern const struct ab_backend_ops_s ab_backend_microvm;

#endif
