#ifndef AB_BACKEND_NATIVE_INTERNAL_H
#define AB_BACKEND_NATIVE_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>

#include "backend/native.h"

/* What the sandbox's first process needs, inherited across clone(). */
struct ab_native_init_s {
	const struct ab_spec_s *spec;
	const char *agent_path;
	int sync_fd;   /* to the monitor: "go" in, an error message out */
	int door_fd;   /* the sandbox's end of the agent connection, or -1 */
	int listen_fd; /* service mode: the agent's listening socket, or -1 */
	int image_mnt; /* privileged --rootfs: a detached read-only mount of it; a layered
	                * root: its overlay (sent with GO_MAPS); or -1 */
	int stdio[3];
	bool become_root; /* ids mapped as a range: switch to the mapped root */
	/* cgroup v1 `tasks` files init writes "0" to first thing, so that it
	 * joins its groups itself (ab_cgroup_join_s: no RCU grace period). */
	int *cg_tasks;
	size_t n_cg_tasks;
};

/* The monitor's go-ahead messages on sync_fd.  GO_MAPS: the id maps are
 * written, start building the root (with a layered root, the message
 * carries its overlay mount).  GO_READY: the limits are in place (init
 * joined its cgroups at birth; else its rlimits are set).
 * When privileged, GO_MOUNT messages follow, each carrying one idmapped
 * mount by SCM_RIGHTS: the workspace, then every bind in spec order.
 * Splitting them lets the monitor's slow steps (cgroup v1 attach, the
 * idmap namespaces) overlap with init's mount work. */
#define AB_NATIVE_GO_MAPS  'm'
#define AB_NATIVE_GO_READY 'r'
#define AB_NATIVE_GO_MOUNT 'f'

void ab_native_init (struct ab_native_init_s *in) __attribute__ ((noreturn));

#endif
