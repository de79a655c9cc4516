/* Resource limits through cgroups, on v1, v2 and the v1+v2 hybrid.
 *
 * A pluggable driver (cgroup-v1.c, cgroup-v2.c) behind one small interface,
 * in the spirit of crun's cgroup-internal.h.  On a hybrid host (memory, pids
 * and cpu on v1, an otherwise empty v2 hierarchy at /sys/fs/cgroup/unified)
 * the limits live on v1 and a v2 child group is added when available so the
 * sandbox can be killed atomically with cgroup.kill.
 *
 * Groups are created below the caller's own cgroup in each hierarchy
 * (never at the root of the host's tree), named "agentbox-<id>". */
#ifndef AB_ISOLATE_CGROUP_H
#define AB_ISOLATE_CGROUP_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

typedef enum {
	AB_CGROUP_NONE,   /* nothing usable mounted */
	AB_CGROUP_V1,     /* legacy only */
	AB_CGROUP_HYBRID, /* v1 controllers plus a v2 mount at .../unified */
	AB_CGROUP_V2,     /* unified only */
} ab_cgroup_mode;

struct ab_cgroup_info_s {
	ab_cgroup_mode mode;
	bool memory, memory_swap, pids, cpu, freezer, kill; /* usable features */
	char detail[256]; /* one line for `agentbox doctor` */
};

struct ab_cgroup_stats_s {
	bool oom_killed;        /* the kernel OOM-killed a task in the group */
	uint64_t peak_memory;   /* bytes, 0 when unknown */
	uint64_t cpu_ns;        /* total CPU time, 0 when unknown */
};

typedef struct ab_cgroup_s ab_cgroup_t;

int ab_cgroup_probe (struct ab_cgroup_info_s *info, ab_error_t *err);

/* Create the groups for sandbox `id` and apply limits (memory with swap off,
 * pids, cpu quota).  A limit that was asked for but cannot be applied is an
 * error, not a silent skip. */
int ab_cgroup_create (const char *id, const struct ab_limits_s *limits, ab_cgroup_t **out,
                      ab_error_t *err);

/* Move `pid` into every group of the sandbox. */
int ab_cgroup_enter (ab_cgroup_t *cg, pid_t pid, ab_error_t *err);

/* Kill every process in the group (cgroup.kill on v2; freeze, kill, thaw on v1). */
int ab_cgroup_kill (ab_cgroup_t *cg, ab_error_t *err);

int ab_cgroup_stats (ab_cgroup_t *cg, struct ab_cgroup_stats_s *stats, ab_error_t *err);

/* Kill what is left, remove every directory, free `cg`.  Safe on NULL. */
int ab_cgroup_destroy (ab_cgroup_t *cg, ab_error_t *err);

/* Remove groups named agentbox-* below our own cgroup whose sandbox is gone
 * (no process left): what a killed `agentbox run` could not clean up. */
int ab_cgroup_sweep_stale (ab_error_t *err);

#endif
