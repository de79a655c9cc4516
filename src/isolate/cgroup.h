/* Resource limits through cgroups, on v1, v2 and the v1+v2 hybrid.
 *
 * A pluggable driver (cgroup-v1.c, cgroup-v2.c) behind one small interface,
 * in the spirit of crun's cgroup-internal.h.  On a hybrid host (memory, pids
 * and cpu on v1, an otherwise empty v2 hierarchy at /sys/fs/cgroup/unified)
 * the limits live on v1 and a v2 child group is added when available so the
 * sandbox can be killed atomically with cgroup.kill.
 *
 * Groups are created below the caller's own cgroup in each hierarchy (at a
 * hierarchy's root only when the caller itself sits there), named
 * "agentbox-<id>".  The layout (/proc/self/mountinfo, /proc/self/cgroup) is
 * read once per process.  While its handle is alive a group is locked
 * (flock on its directory), so ab_cgroup_sweep_stale in another process
 * never removes it, even while it is empty.  Thread-safe for different
 * handles; one handle is used by one thread at a time. */
#ifndef AB_ISOLATE_CGROUP_H
#define AB_ISOLATE_CGROUP_H

#include <stdbool.h>
#include <stddef.h>
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
	/* Usable features.  memory_swap: swap can be switched off for the group
	 * (v1 memsw, v2 memory.swap.max); without it v1 falls back to
	 * swappiness 0.  freezer: v1 freezer.state or v2 cgroup.freeze.  kill:
	 * atomic cgroup.kill (Linux 5.14); without it kill freezes first. */
	bool memory, memory_swap, pids, cpu, freezer, kill;
	char detail[256]; /* one line for `agentbox doctor` */
};

struct ab_cgroup_stats_s {
	bool oom_killed;      /* the kernel OOM-killed a task in the group */
	uint64_t peak_memory; /* bytes, 0 when unknown */
	uint64_t cpu_ns;      /* total CPU time, 0 when unknown */
};

typedef struct ab_cgroup_s ab_cgroup_t;

/* Fill info; creates and removes a probe group, changes nothing else (on
 * v2 it reports controllers that would be enabled on first use). */
int ab_cgroup_probe (struct ab_cgroup_info_s *info, ab_error_t *err);

/* Create the groups for sandbox `id` ([A-Za-z0-9._-], at most 64) and apply
 * limits (memory with swap off, pids, cpu quota per 100 ms period; `limits`
 * may be NULL).  A limit of 0 is not written, but the group still exists
 * for stats and kill.  A limit that was asked for but cannot be applied is
 * an AB_E_SYSTEM error naming the controller, not a silent skip.  An id
 * whose group is held by a live handle is AB_E_CONFLICT; a leftover with
 * the same name and no process is replaced.  On pure v2 the controllers
 * are enabled in our cgroup's subtree_control; when other processes share
 * that cgroup this is impossible (no internal processes) and a requested
 * limit fails; when agentbox is alone there it first moves itself into a
 * leaf "agentbox-supervisor-<pid>" beside the sandbox groups. */
int ab_cgroup_create (const char *id, const struct ab_limits_s *limits, ab_cgroup_t **out,
                      ab_error_t *err);

/* The same at `path` in every hierarchy instead of agentbox-<id> below
 * our own cgroup (an OCI bundle's cgroupsPath, cgroupfs style): absolute
 * from each hierarchy's root, or relative to our own cgroup.  Missing
 * parents are made (and left, as runc leaves them); a group already at
 * `path` is a conflict unless empty.  `..` components are refused.  On a
 * pure v2 host this is ab_cgroup_create (the v2 driver delegates
 * controllers from our own cgroup only). */
int ab_cgroup_create_at (const char *id, const char *path, const struct ab_limits_s *limits,
                         ab_cgroup_t **out, ab_error_t *err);

/* Move `pid` into every group of the sandbox.  Do it before the process
 * runs untrusted code or allocates much: v1 does not move charges made
 * before the move. */
int ab_cgroup_enter (ab_cgroup_t *cg, pid_t pid, ab_error_t *err);

/* Joining a group at a sandbox's birth without paying an RCU grace period
 * on the start path.  Moving a process by pid (cgroup.procs) takes the
 * global cgroup_threadgroup_rwsem for writing, whose rcu_sync costs one
 * grace period: several ms, most of a one-shot start on cgroup v1.  Two
 * moves skip that lock: a cgroup2 group is entered at fork by clone3
 * CLONE_INTO_CGROUP (Linux 5.7; only the read side), and on v1 a
 * single-threaded process moves itself by writing "0" to the group's
 * `tasks` (one thread, current: Linux 6.0, "cgroup: Optimize single
 * thread migration"; older kernels take the lock, as the pid write does).
 * The v1 check of that write uses the credentials the file was opened
 * with (kernel/cgroup/cgroup-v1.c), so the caller opens `tasks` and the
 * child, already in its user namespace, writes through the inherited fd. */
#define AB_CGROUP_MAX_TASKS_FDS 6
struct ab_cgroup_join_s {
	int clone_into; /* cgroup2 dir for CLONE_INTO_CGROUP (borrowed), or -1 */
	int tasks[AB_CGROUP_MAX_TASKS_FDS]; /* v1 `tasks`, O_WRONLY | O_CLOEXEC */
	size_t n_tasks;
};
int ab_cgroup_join_prepare (ab_cgroup_t *cg, struct ab_cgroup_join_s *j, ab_error_t *err);
/* In the single-threaded child: write "0" to every tasks fd, closing each. */
int ab_cgroup_join_self (int *tasks, size_t n_tasks, ab_error_t *err);
/* The caller's copies of the tasks fds (after the fork). */
void ab_cgroup_join_release (struct ab_cgroup_join_s *j);

/* Kill every process in the group (cgroup.kill on v2 and hybrid; freeze,
 * kill, thaw on v1).  With cgroup.kill it returns once the signals are
 * sent; otherwise once the group is empty (at most 2 s, else an error). */
int ab_cgroup_kill (ab_cgroup_t *cg, ab_error_t *err);

/* Freeze (or thaw) every process of sandbox `id`'s group, made by
 * ab_cgroup_create in a process of our own cgroup (the daemon's monitors):
 * v2 cgroup.freeze, else the v1 freezer.  Freezing returns once every task
 * is frozen (bounded; on timeout it thaws again and fails).  Idempotent.
 * cgroup-freeze.c. */
int ab_cgroup_freeze_id (const char *id, bool freeze, ab_error_t *err);

/* The same for the group directory `dir` (v2 cgroup.freeze there, else
 * v1 freezer.state): for a runtime whose pause runs in another process
 * and cgroup than its create (agentbox-runc).  cgroup-freeze.c. */
int ab_cgroup_freeze_path (const char *dir, bool freeze, ab_error_t *err);

int ab_cgroup_stats (ab_cgroup_t *cg, struct ab_cgroup_stats_s *stats, ab_error_t *err);

/* Remove every directory; if processes are left, kill them and wait for
 * the group to empty (at most 2 s, else an error and the directories stay
 * for a later sweep).  Frees `cg` in every case.  Safe on NULL. */
int ab_cgroup_destroy (ab_cgroup_t *cg, ab_error_t *err);

/* Remove groups named agentbox-* below our own cgroup whose sandbox is gone
 * (no handle holds them and no process is left): what a killed
 * `agentbox run` could not clean up.  Groups in use are skipped. */
int ab_cgroup_sweep_stale (ab_error_t *err);

/* Remove the group directories `paths` (below /sys/fs/cgroup, no `..`),
 * made by ab_cgroup_create or ab_cgroup_create_at in a process that may be gone (agentbox-runc's
 * create and delete are different processes): thaw them, kill what is left in them, remove child
 * groups, and retry rmdir while the last tasks leave (bounded, AB_CG_KILL_TIMEOUT_NS each).  Every
 * path is tried; the first failure is returned.  A path already gone is fine. */
int ab_cgroup_remove_paths (const char *const *paths, size_t n, ab_error_t *err);

#endif
