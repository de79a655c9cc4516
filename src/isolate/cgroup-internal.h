/* Internals shared by cgroup.c, cgroup-v1.c, cgroup-v2.c and the unit tests.
 *
 * cgroup.c reads the layout of the host once per process (which hierarchies
 * are mounted where, and where our own process sits in each), owns the
 * directory handling common to every version (create, lock, enter, remove,
 * sweep), and picks a driver.  A driver (in the spirit of crun's
 * cgroup-internal.h) knows the files of one cgroup version: which groups to
 * create, how to write limits, kill, and read statistics. */
#ifndef AB_ISOLATE_CGROUP_INTERNAL_H
#define AB_ISOLATE_CGROUP_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "isolate/cgroup.h"
#include "spec/spec.h"

/* The controllers agentbox uses.  On v2, "cpu" also provides the usage that
 * v1 keeps in "cpuacct", and freezing is built in (cgroup.freeze). */
enum {
	AB_CG_MEMORY,
	AB_CG_PIDS,
	AB_CG_CPU,
	AB_CG_CPUACCT,
	AB_CG_FREEZER,
	AB_CG_N_CTRL,
};
#define AB_CG_BIT(c) (1u << (c))

/* At most one hierarchy per controller plus the unified one. */
#define AB_CG_MAX_HIER (AB_CG_N_CTRL + 1)

#define AB_CG_PREFIX "agentbox-"
#define AB_CG_ID_MAX 64

/* Bound on killing a group and waiting for it to empty. */
#define AB_CG_KILL_TIMEOUT_NS UINT64_C (2000000000)
/* CPU limits are a quota per period of this many microseconds (the
 * kernel's default period, so new groups need no write to get it). */
#define AB_CG_CPU_PERIOD_US UINT64_C (100000)

/* One mounted hierarchy we can use. */
struct ab_cg_hier_s {
	bool v2;
	unsigned ctrls; /* v1: AB_CG_BIT set of the controllers mounted here */
	char *own;      /* our cgroup in this hierarchy, as /proc/self/cgroup says */
	char *dir;      /* absolute directory of `own`: our groups go below it */
};

struct ab_cg_layout_s {
	ab_cgroup_mode mode;
	struct ab_cg_hier_s hier[AB_CG_MAX_HIER];
	size_t n_hier;
	int v1[AB_CG_N_CTRL]; /* index into hier of each v1 controller, -1 = none */
	int v2;               /* index into hier of the cgroup2 mount, -1 = none */
};

/* One directory of a sandbox's group. */
struct ab_cg_dir_s {
	int hier;   /* index into layout->hier */
	int fd;     /* O_DIRECTORY; holds the flock that keeps sweepers away */
	char *path; /* absolute, for rmdir and messages */
};

struct ab_cgroup_s {
	const struct ab_cgroup_driver_s *drv;
	const struct ab_cg_layout_s *layout;
	char *name; /* "agentbox-<id>" */
	char *at;   /* or this path in every hierarchy (ab_cgroup_create_at) */
	unsigned flags;
	struct ab_cg_dir_s dirs[AB_CG_MAX_HIER];
	size_t n_dirs;
	int ctrl[AB_CG_N_CTRL]; /* index into dirs of the group holding each controller */
	int unified;            /* index into dirs of the cgroup2 group, -1 = none */
	bool memory_swap;       /* swap is really off (memsw / memory.swap.max written) */
};

/* Flags for ab_cg_create_with. */
enum {
	/* Ignore the cgroup2 mount of a hybrid host: behave as on pure v1 (the
	 * freezer then does the killing).  Lets tests cover v1 paths here. */
	AB_CG_F_NO_UNIFIED = 1u << 0,
	/* Create a group in every usable hierarchy, even those no limit needs,
	 * and change nothing outside the group itself (no subtree_control
	 * writes, no process moves): what ab_cgroup_probe wants. */
	AB_CG_F_PROBE = 1u << 1,
};

struct ab_cgroup_driver_s {
	const char *name;
	/* Create cg's directories (ab_cg_add_dir) and write the limits.  On
	 * failure the caller removes whatever was created. */
	int (*create) (ab_cgroup_t *cg, const struct ab_limits_s *limits, ab_error_t *err);
	int (*kill) (ab_cgroup_t *cg, ab_error_t *err);
	int (*stats) (ab_cgroup_t *cg, struct ab_cgroup_stats_s *stats, ab_error_t *err);
	/* Fill the feature flags and detail of info (mode is already set). */
	int (*probe) (const struct ab_cg_layout_s *layout, struct ab_cgroup_info_s *info,
	              ab_error_t *err);
};

extern const struct ab_cgroup_driver_s ab_cgroup_driver_v1;
extern const struct ab_cgroup_driver_s ab_cgroup_driver_v2;

/* ---- pure parsing (cgroup.c), unit-tested with fixed strings ---- */

/* AB_CG_BIT set of the controllers named in a `sep`-separated list
 * ("rw,cpu,cpuacct", "memory pids cpu"); unknown names are ignored. */
unsigned ab_cg_ctrl_mask (const char *list, char sep);

struct ab_cg_mount_s {
	bool v2;
	unsigned ctrls;
	const char *root; /* the hierarchy path mounted here */
	const char *mountpoint;
};
/* One /proc/self/mountinfo line (without its newline), parsed in place
 * (octal escapes in root and mount point are decoded).  Returns 1 for a
 * cgroup or cgroup2 mount, 0 for another file system, -1 when malformed. */
int ab_cg_parse_mountinfo_line (char *line, struct ab_cg_mount_s *m);

struct ab_cg_proc_entry_s {
	bool v2;          /* the "0::" line */
	unsigned ctrls;   /* v1 controllers of this hierarchy (ours only) */
	const char *path; /* starts with '/' */
};
/* One /proc/self/cgroup line, parsed in place.  0 or -1 when malformed. */
int ab_cg_parse_proc_cgroup_line (char *line, struct ab_cg_proc_entry_s *e);

/* Build a layout from the text of /proc/self/mountinfo and /proc/self/cgroup. */
int ab_cg_layout_parse (const char *mountinfo, const char *proc_cgroup,
                        struct ab_cg_layout_s *layout, ab_error_t *err);
void ab_cg_layout_free (struct ab_cg_layout_s *layout);

/* Value of `key` in a flat keyed file ("key value\n" lines: memory.events,
 * cpu.stat, cgroup.events, memory.oom_control).  0, or -1 when absent. */
int ab_cg_keyed_u64 (const char *text, const char *key, uint64_t *value);

struct ab_cg_oom_s {
	bool has_oom_kill; /* "oom_kill N" is there (Linux >= 4.13) */
	uint64_t oom_kill;
	bool under_oom;
};
/* v1 memory.oom_control. */
void ab_cg_parse_oom_control (const char *text, struct ab_cg_oom_s *oom);

/* ---- helpers for drivers (cgroup.c) ---- */

/* The cached layout of this process (read once). */
const struct ab_cg_layout_s *ab_cg_layout_get (ab_error_t *err);

int ab_cgroup_create_with (const struct ab_cgroup_driver_s *drv, const char *id,
                           const struct ab_limits_s *limits, unsigned flags, ab_cgroup_t **out,
                           ab_error_t *err);

/* Create (or find) cg's directory in hierarchy `hier`: mkdir, open, lock.
 * Returns the index into cg->dirs. */
int ab_cg_add_dir (ab_cgroup_t *cg, int hier, ab_error_t *err);

const char *ab_cg_ctrl_name (int ctrl);

/* Write `value` to `file` of the group: 0; 1 (err untouched) when the file
 * does not exist and `enoent_ok`; negative with err otherwise. */
int ab_cg_write (const struct ab_cg_dir_s *d, const char *file, const char *value, bool enoent_ok,
                 ab_error_t *err);
int ab_cg_write_u64 (const struct ab_cg_dir_s *d, const char *file, uint64_t value,
                     ab_error_t *err);
/* Read a small file of the group into buf (NUL-terminated).  Length, or
 * -errno (err untouched). */
ssize_t ab_cg_read (int dfd, const char *file, char *buf, size_t size);
bool ab_cg_has_file (const struct ab_cg_dir_s *d, const char *file);

/* cg->dirs[idx] if it exists and has not been removed yet, else NULL. */
static inline const struct ab_cg_dir_s *
ab_cg_live (const ab_cgroup_t *cg, int idx)
{
	return idx >= 0 && cg->dirs[idx].fd >= 0 ? &cg->dirs[idx] : NULL;
}

/* A fresh id for a probe group ("probe-<pid>-<n>"). */
void ab_cg_probe_id (char *buf, size_t size);
const char *ab_cg_mode_name (ab_cgroup_mode mode);

/* SIGKILL every process listed in the group's cgroup.procs once.  Number of
 * processes listed (0 = empty), or negative with err. */
int ab_cg_kill_listed (const struct ab_cg_dir_s *d, ab_error_t *err);
/* Kill by re-listing until cgroup.procs is empty, without freezing (the
 * last resort when neither cgroup.kill nor a freezer exists). */
int ab_cg_kill_loop (const struct ab_cg_dir_s *d, ab_error_t *err);

/* The freezer of one cgroup version: v1 freezer.state, v2 cgroup.freeze. */
struct ab_cg_freezer_s {
	const char *file; /* written to freeze and thaw */
	const char *freeze;
	const char *thaw;
	const char *state_file; /* read until frozen() says so */
	bool (*frozen) (const char *state);
};
extern const struct ab_cg_freezer_s ab_cg_v1_freezer, ab_cg_v2_freezer;
/* Freeze, SIGKILL every process, thaw; repeat until empty (bounded). */
int ab_cg_freeze_kill (const struct ab_cg_dir_s *d, const struct ab_cg_freezer_s *fz,
                       ab_error_t *err);

/* Sleep for the next step of a bounded backoff; false once `deadline_ns`
 * (CLOCK_MONOTONIC) is past. */
bool ab_cg_backoff (unsigned *step, uint64_t deadline_ns);

/* v2 helpers also used by the v1 driver for the unified group of a hybrid
 * host.  cgroup.kill: 0 when written, 1 (err untouched) when the kernel
 * has none (before Linux 5.14). */
int ab_cg_v2_kill_file (const struct ab_cg_dir_s *d, ab_error_t *err);
/* usage_usec of cpu.stat in ns (kept by the cgroup core, with or without
 * the cpu controller).  0, or -errno; *ns untouched when absent. */
int ab_cg_v2_cpu_ns (const struct ab_cg_dir_s *d, uint64_t *ns);

#endif
