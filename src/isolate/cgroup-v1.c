/* cgroup v1 driver (also the hybrid one: limits on v1, and a group on the
 * cgroup2 mount beside them for its atomic cgroup.kill).
 *
 * Files (Documentation/admin-guide/cgroup-v1/): memory.limit_in_bytes and
 * memory.memsw.limit_in_bytes (memory+swap; the same value = no swap),
 * pids.max, cpu.cfs_quota_us, freezer.state, memory.oom_control,
 * memory.max_usage_in_bytes, cpuacct.usage. */
#include "isolate/cgroup-internal.h"

#include <errno.h>
#include <inttypes.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether cgroup.kill exists (Linux 5.14): a property of the kernel, so
 * learnt once per process.  -1 unknown, 0 no, 1 yes. */
static int unified_kill_known = -1;

static bool
unified_can_kill (const ab_cgroup_t *cg)
{
	const struct ab_cg_dir_s *u = ab_cg_live (cg, cg->unified);
	int known = __atomic_load_n (&unified_kill_known, __ATOMIC_RELAXED);

	if (u == NULL)
		return false;
	if (known < 0) {
		known = ab_cg_has_file (u, "cgroup.kill");
		__atomic_store_n (&unified_kill_known, known, __ATOMIC_RELAXED);
	}
	return known == 1;
}

/* The limits a caller can ask for, and the controller each needs. */
static const struct {
	int ctrl;
	size_t offset;
} limit_ctrls[] = {
	{ AB_CG_MEMORY, offsetof (struct ab_limits_s, memory_bytes) },
	{ AB_CG_PIDS, offsetof (struct ab_limits_s, pids) },
	{ AB_CG_CPU, offsetof (struct ab_limits_s, cpu_millis) },
};

static uint64_t
limit_of (const struct ab_limits_s *lim, size_t offset)
{
	return *(const uint64_t *)(const void *)((const char *)lim + offset);
}

/* The controllers to create a group for: memory and cpuacct always (OOM,
 * peak and CPU statistics), pids and cpu only for a limit; a probe wants
 * them all. */
static unsigned
wanted_ctrls (const ab_cgroup_t *cg, const struct ab_limits_s *lim, ab_error_t *err, int *rc)
{
	const struct ab_cg_layout_s *l = cg->layout;
	unsigned want = AB_CG_BIT (AB_CG_MEMORY) | AB_CG_BIT (AB_CG_CPUACCT);

	*rc = 0;
	for (size_t i = 0; i < sizeof limit_ctrls / sizeof limit_ctrls[0]; i++) {
		int c = limit_ctrls[i].ctrl;
		if (limit_of (lim, limit_ctrls[i].offset) == 0)
			continue;
		if (l->v1[c] < 0) {
			*rc = ab_error (err, 0, AB_E_SYSTEM,
			                "a %s limit was asked for, but no cgroup v1 %s hierarchy "
			                "is mounted",
			                ab_cg_ctrl_name (c), ab_cg_ctrl_name (c));
			return 0;
		}
		want |= AB_CG_BIT (c);
	}
	if (cg->flags & AB_CG_F_PROBE)
		want = AB_CG_BIT (AB_CG_N_CTRL) - 1;
	return want;
}

static int
v1_make_dirs (ab_cgroup_t *cg, const struct ab_limits_s *lim, ab_error_t *err)
{
	const struct ab_cg_layout_s *l = cg->layout;
	int rc;
	unsigned want = wanted_ctrls (cg, lim, err, &rc);

	if (rc < 0)
		return rc;
	/* On a hybrid host the unified group's cpu.stat counts CPU time (the
	 * cgroup core keeps it, controller or not): no cpuacct group needed. */
	if (l->v2 >= 0 && !(cg->flags & (AB_CG_F_NO_UNIFIED | AB_CG_F_PROBE)))
		want &= ~AB_CG_BIT (AB_CG_CPUACCT);
	for (int c = 0; c < AB_CG_N_CTRL; c++) {
		if (c == AB_CG_FREEZER || !(want & AB_CG_BIT (c)) || l->v1[c] < 0)
			continue;
		/* cpu and cpuacct are often one hierarchy (cpu,cpuacct): one dir */
		if ((cg->ctrl[c] = ab_cg_add_dir (cg, l->v1[c], err)) < 0)
			return cg->ctrl[c];
	}
	if (l->v2 >= 0 && !(cg->flags & AB_CG_F_NO_UNIFIED))
		if ((cg->unified = ab_cg_add_dir (cg, l->v2, err)) < 0)
			return cg->unified;
	/* The freezer is only needed to kill when cgroup.kill is missing. */
	if (l->v1[AB_CG_FREEZER] >= 0 && ((cg->flags & AB_CG_F_PROBE) || !unified_can_kill (cg)))
		if ((cg->ctrl[AB_CG_FREEZER] = ab_cg_add_dir (cg, l->v1[AB_CG_FREEZER], err)) < 0)
			return cg->ctrl[AB_CG_FREEZER];
	return 0;
}

static int
v1_set_memory (ab_cgroup_t *cg, uint64_t bytes, ab_error_t *err)
{
	const struct ab_cg_dir_s *d = &cg->dirs[cg->ctrl[AB_CG_MEMORY]];
	char buf[24];
	int r;

	if (ab_cg_write_u64 (d, "memory.limit_in_bytes", bytes, err) < 0)
		return ab_error_code (err);
	/* memsw limits memory plus swap; the same value leaves no room for
	 * swap.  Written second: the kernel keeps memsw >= memory (EINVAL). */
	snprintf (buf, sizeof buf, "%" PRIu64, bytes);
	r = ab_cg_write (d, "memory.memsw.limit_in_bytes", buf, true, err);
	if (r <= 0) {
		cg->memory_swap = r == 0;
		return r;
	}
	/* No swap accounting (CONFIG_MEMCG_SWAP off, or swapaccount=0): the
	 * best left is telling reclaim not to swap this group's memory. */
	return ab_cg_write (d, "memory.swappiness", "0", false, err);
}

static int
v1_create (ab_cgroup_t *cg, const struct ab_limits_s *lim, ab_error_t *err)
{
	if (v1_make_dirs (cg, lim, err) < 0)
		return ab_error_code (err);
	if (lim->memory_bytes && v1_set_memory (cg, lim->memory_bytes, err) < 0)
		return ab_error_code (err);
	if (lim->pids
	    && ab_cg_write_u64 (&cg->dirs[cg->ctrl[AB_CG_PIDS]], "pids.max", lim->pids, err) < 0)
		return ab_error_code (err);
	/* A new group starts with cpu.cfs_period_us at the default 100000, so
	 * the quota alone sets the limit: 1000 millicpus = one full period. */
	if (lim->cpu_millis
	    && ab_cg_write_u64 (&cg->dirs[cg->ctrl[AB_CG_CPU]], "cpu.cfs_quota_us",
	                        lim->cpu_millis * AB_CG_CPU_PERIOD_US / 1000, err)
	               < 0)
		return ab_error_code (err);
	return 0;
}

static bool
v1_frozen (const char *state)
{
	return strncmp (state, "FROZEN", 6) == 0;
}

const struct ab_cg_freezer_s ab_cg_v1_freezer = {
	.file = "freezer.state",
	.freeze = "FROZEN",
	.thaw = "THAWED",
	.state_file = "freezer.state",
	.frozen = v1_frozen,
};

static int
v1_kill (ab_cgroup_t *cg, ab_error_t *err)
{
	const struct ab_cg_dir_s *u = ab_cg_live (cg, cg->unified);
	const struct ab_cg_dir_s *f = ab_cg_live (cg, cg->ctrl[AB_CG_FREEZER]);

	if (u != NULL) {
		int r = ab_cg_v2_kill_file (u, err);
		if (r <= 0)
			return r;
	}
	if (f != NULL)
		return ab_cg_freeze_kill (f, &ab_cg_v1_freezer, err);
	for (size_t i = 0; i < cg->n_dirs; i++)
		if (ab_cg_live (cg, (int)i))
			return ab_cg_kill_loop (&cg->dirs[i], err);
	return 0;
}

/* 0 with *v, 1 when the file is absent, -errno otherwise. */
static int
read_u64 (const struct ab_cg_dir_s *d, const char *file, uint64_t *v)
{
	char buf[32];
	ssize_t n = ab_cg_read (d->fd, file, buf, sizeof buf);

	if (n < 0)
		return n == -ENOENT ? 1 : (int)n;
	*v = strtoull (buf, NULL, 10);
	return 0;
}

static int
v1_oom (const struct ab_cg_dir_s *m, bool *oom_killed)
{
	char buf[256];
	struct ab_cg_oom_s oom;
	uint64_t failcnt = 0;
	ssize_t n = ab_cg_read (m->fd, "memory.oom_control", buf, sizeof buf);

	if (n < 0)
		return (int)n;
	ab_cg_parse_oom_control (buf, &oom);
	if (oom.has_oom_kill) {
		*oom_killed = oom.oom_kill > 0;
		return 0;
	}
	/* Before Linux 4.13 there is no oom_kill counter.  Hitting the limit
	 * (failcnt) is the nearest sign; it over-reports when reclaim
	 * succeeded after the limit was hit. */
	if (read_u64 (m, "memory.failcnt", &failcnt) < 0)
		failcnt = 0;
	*oom_killed = oom.under_oom || failcnt > 0;
	return 0;
}

static int
v1_stats (ab_cgroup_t *cg, struct ab_cgroup_stats_s *st, ab_error_t *err)
{
	const struct ab_cg_dir_s *m = ab_cg_live (cg, cg->ctrl[AB_CG_MEMORY]);
	const struct ab_cg_dir_s *a = ab_cg_live (cg, cg->ctrl[AB_CG_CPUACCT]);
	const struct ab_cg_dir_s *u = ab_cg_live (cg, cg->unified);
	int r;

	if (m != NULL) {
		if ((r = v1_oom (m, &st->oom_killed)) < 0)
			return ab_error (err, -r, AB_E_SYSTEM, "read %s/memory.oom_control",
			                 m->path);
		if ((r = read_u64 (m, "memory.max_usage_in_bytes", &st->peak_memory)) < 0)
			return ab_error (err, -r, AB_E_SYSTEM, "read %s/memory.max_usage_in_bytes",
			                 m->path);
	}
	if (a != NULL && (r = read_u64 (a, "cpuacct.usage", &st->cpu_ns)) < 0)
		return ab_error (err, -r, AB_E_SYSTEM, "read %s/cpuacct.usage", a->path);
	if (a == NULL && u != NULL && (r = ab_cg_v2_cpu_ns (u, &st->cpu_ns)) < 0)
		return ab_error (err, -r, AB_E_SYSTEM, "read %s/cpu.stat", u->path);
	return 0;
}

/* What a probe group offers, file by file. */
static const struct {
	int ctrl;
	const char *file;
	size_t offset;
} v1_features[] = {
	{ AB_CG_MEMORY, "memory.limit_in_bytes", offsetof (struct ab_cgroup_info_s, memory) },
	{ AB_CG_MEMORY, "memory.memsw.limit_in_bytes",
	  offsetof (struct ab_cgroup_info_s, memory_swap) },
	{ AB_CG_PIDS, "pids.max", offsetof (struct ab_cgroup_info_s, pids) },
	{ AB_CG_CPU, "cpu.cfs_quota_us", offsetof (struct ab_cgroup_info_s, cpu) },
	{ AB_CG_FREEZER, "freezer.state", offsetof (struct ab_cgroup_info_s, freezer) },
};

static const char *
yes_no (bool b)
{
	return b ? "yes" : "no";
}

static int
v1_probe (const struct ab_cg_layout_s *l, struct ab_cgroup_info_s *info, ab_error_t *err)
{
	ab_error_t e = AB_ERROR_INIT;
	ab_cgroup_t *cg = NULL;
	const struct ab_cg_dir_s *m;
	char id[48];

	ab_cg_probe_id (id, sizeof id);
	if (ab_cgroup_create_with (&ab_cgroup_driver_v1, id, NULL, AB_CG_F_PROBE, &cg, &e) < 0) {
		snprintf (info->detail, sizeof info->detail, "%s: cannot create a group: %.200s",
		          ab_cg_mode_name (l->mode), e.msg);
		return 0;
	}
	for (size_t i = 0; i < sizeof v1_features / sizeof v1_features[0]; i++)
		*(bool *)(void *)((char *)info + v1_features[i].offset) = ab_cg_has_file (
		        ab_cg_live (cg, cg->ctrl[v1_features[i].ctrl]), v1_features[i].file);
	info->kill = ab_cg_has_file (ab_cg_live (cg, cg->unified), "cgroup.kill");
	m = ab_cg_live (cg, cg->ctrl[AB_CG_MEMORY]);
	snprintf (
	        info->detail, sizeof info->detail,
	        "%s: memory=%s swap-off=%s pids=%s cpu=%s freezer=%s cgroup.kill=%s; groups in %s",
	        ab_cg_mode_name (l->mode), yes_no (info->memory),
	        info->memory_swap ? "memsw" : "swappiness=0", yes_no (info->pids),
	        yes_no (info->cpu), yes_no (info->freezer), yes_no (info->kill),
	        m ? l->hier[m->hier].dir : "?");
	return ab_cgroup_destroy (cg, err);
}

const struct ab_cgroup_driver_s ab_cgroup_driver_v1 = {
	.name = "v1",
	.create = v1_create,
	.kill = v1_kill,
	.stats = v1_stats,
	.probe = v1_probe,
};
