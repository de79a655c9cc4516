/* The native backend: agentbox's own namespaces. */
#ifndef AB_BACKEND_NATIVE_H
#define AB_BACKEND_NATIVE_H

#include "backend/backend.h"

extern const struct ab_backend_ops_s ab_backend_native;

/* The report the monitor sends when the sandbox is gone. */
struct ab_native_report_s {
	int ok; /* 1 = torn down cleanly */
	int oom_killed;
	uint64_t peak_memory;
	uint64_t cpu_ns;
	char error[512]; /* why the sandbox could not start, if it did not */
};

#endif
