#ifndef AB_BACKEND_NATIVE_INTERNAL_H
#define AB_BACKEND_NATIVE_INTERNAL_H

#include <stdbool.h>

#include "backend/native.h"

/* What the sandbox's first process needs, inherited across clone(). */
struct ab_native_init_s {
	const struct ab_spec_s *spec;
	int sync_fd;      /* to the monitor: "go" in, an error message out */
	int door_fd;      /* the sandbox's end of the agent connection */
	int agent_exe_fd; /* sealed memfd copy of agentbox-agent */
	int workspace_fd; /* idmapped workspace mount made by the monitor, or -1 */
	int stdio[3];
	bool become_root; /* ids mapped as a range: switch to the mapped root */
};

void ab_native_init (struct ab_native_init_s *in) __attribute__ ((noreturn));

/* A sealed, read-only memfd copy of agentbox-agent (runc CVE-2019-5736:
 * nothing in the sandbox can ever write to the binary it runs as PID 1). */
int ab_native_agent_memfd (ab_error_t *err);

#endif
