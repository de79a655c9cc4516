#ifndef AB_BACKEND_NATIVE_INTERNAL_H
#define AB_BACKEND_NATIVE_INTERNAL_H

#include <stdbool.h>

#include "backend/native.h"

/* What the sandbox's first process needs, inherited across clone(). */
struct ab_native_init_s {
	const struct ab_spec_s *spec;
	int sync_fd;      /* to the monitor: "go" in, an error message out */
	int door_fd;      /* the sandbox's end of the agent connection */
	int stdio[3];
	bool become_root; /* ids mapped as a range: switch to the mapped root */
};

/* The monitor's two go-ahead messages on sync_fd.  GO_MAPS: the id maps are
 * written, start building the root.  GO_READY: the cgroups are joined; it
 * carries the sealed agent copy and, when privileged, the workspace mount,
 * by SCM_RIGHTS.  Splitting them lets the monitor's slow steps (cgroup v1
 * attach, the idmap namespace) overlap with init's mount work. */
#define AB_NATIVE_GO_MAPS 'm'
#define AB_NATIVE_GO_READY 'r'

void ab_native_init (struct ab_native_init_s *in) __attribute__ ((noreturn));

/* A sealed, read-only memfd copy of agentbox-agent (runc CVE-2019-5736:
 * nothing in the sandbox can ever write to the binary it runs as PID 1). */
int ab_native_agent_memfd (ab_error_t *err);

#endif
