/* cgroup v2 driver (Documentation/admin-guide/cgroup-v2.rst): memory.max,
 * memory.swap.max, pids.max, cpu.max, cgroup.kill, memory.events,
 * memory.peak, cpu.stat.
 *
 * Controllers reach a group only when its parent lists them in
 * cgroup.subtree_control, and a non-root group may list them only while it
 * has no processes of its own ("no internal processes").  Our groups are
 * children of agentbox's own cgroup, so enabling there works when that
 * cgroup is the root or agentbox is alone in it; in the second case
 * agentbox first moves itself into a leaf of its own beside the sandbox
 * groups (agentbox-supervisor-<pid>), as systemd expects of delegated
 * services.  It never moves other processes: with company in its cgroup
 * (a login shell's scope) a requested limit fails with a clear error. */
#include "isolate/cgroup-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"

/* The v2 controllers agentbox enables. */
static const int v2_ctrls[] = { AB_CG_MEMORY, AB_CG_PIDS, AB_CG_CPU };

static int
first_ctrl (unsigned mask)
{
	return mask ? __builtin_ctz (mask) : -1;
}

static int
own_mask (const struct ab_cg_hier_s *h, const char *file, unsigned *mask, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("%s/%s", h->dir, file);
	char buf[512];
	ssize_t n = ab_cg_read (AT_FDCWD, path, buf, sizeof buf);

	if (n < 0)
		return ab_error (err, (int)-n, AB_E_SYSTEM, "read %s", path);
	*mask = ab_cg_ctrl_mask (buf, ' ');
	return 0;
}

static bool
own_has (const struct ab_cg_hier_s *h, const char *file)
{
	cleanup_free char *path = xasprintf ("%s/%s", h->dir, file);

	return access (path, F_OK) == 0;
}

static int
write_subtree (const struct ab_cg_hier_s *h, unsigned add)
{
	cleanup_free char *path = xasprintf ("%s/cgroup.subtree_control", h->dir);
	cleanup_close int fd = open (path, O_WRONLY | O_CLOEXEC);
	char buf[64];
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof v2_ctrls / sizeof v2_ctrls[0]; i++)
		if (add & AB_CG_BIT (v2_ctrls[i]))
			len += (size_t)snprintf (buf + len, sizeof buf - len, "%s+%s",
			                         len ? " " : "", ab_cg_ctrl_name (v2_ctrls[i]));
	if (fd < 0 || ab_write_all (fd, buf, len) < 0)
		return -errno;
	return 0;
}

/* True when no process but ours sits directly in our cgroup. */
static bool
alone_in (const struct ab_cg_hier_s *h)
{
	cleanup_free char *path = xasprintf ("%s/cgroup.procs", h->dir);
	char buf[32], *end;
	ssize_t n = ab_cg_read (AT_FDCWD, path, buf, sizeof buf);
	long v;

	if (n < 0 || (size_t)n >= sizeof buf - 1)
		return false;
	if (n == 0)
		return true;
	v = strtol (buf, &end, 10);
	while (*end == '\n')
		end++;
	return *end == '\0' && v == (long)getpid ();
}

static int
move_self_once (const struct ab_cg_hier_s *h)
{
	cleanup_free char *leaf =
	        xasprintf ("%s/" AB_CG_PREFIX "supervisor-%d", h->dir, (int)getpid ());
	cleanup_free char *procs = xasprintf ("%s/cgroup.procs", leaf);
	cleanup_close int fd = -1;
	char pid[24];

	if (mkdir (leaf, 0755) < 0 && errno != EEXIST)
		return -errno;
	snprintf (pid, sizeof pid, "%d", (int)getpid ());
	fd = open (procs, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || ab_write_all (fd, pid, strlen (pid)) < 0)
		return -errno;
	return 0;
}

static int
move_self_to_leaf (const struct ab_cg_hier_s *h)
{
	int r = -EBUSY;

	if (!alone_in (h))
		return -EBUSY;
	/* A sweeper may remove the leaf while it is still empty: try again. */
	for (int i = 0; i < 3 && (r = move_self_once (h)) == -ENOENT; i++)
		;
	return r;
}

/* Make sure every controller in `wish` is enabled for our children; the
 * ones in `want` (asked-for limits) are required, the rest only feed the
 * statistics.  *have = what our children get. */
static int
v2_enable (const struct ab_cg_hier_s *h, unsigned want, unsigned wish, unsigned *have,
           ab_error_t *err)
{
	unsigned enabled, avail, add, missing;
	int r;

	if (own_mask (h, "cgroup.subtree_control", &enabled, err) < 0)
		return ab_error_code (err);
	*have = enabled;
	if ((wish & ~enabled) == 0)
		return 0;
	if (own_mask (h, "cgroup.controllers", &avail, err) < 0)
		return ab_error_code (err);
	if ((missing = want & ~avail) != 0)
		return ab_error (
		        err, 0, AB_E_SYSTEM,
		        "a %s limit was asked for, but the %s controller is not available in %s "
		        "(see its cgroup.controllers)",
		        ab_cg_ctrl_name (first_ctrl (missing)),
		        ab_cg_ctrl_name (first_ctrl (missing)), h->dir);
	if ((add = wish & avail & ~enabled) == 0)
		return 0;
	r = write_subtree (h, add);
	if (r == -EBUSY && move_self_to_leaf (h) == 0)
		r = write_subtree (h, add);
	if (r == 0) {
		*have = enabled | add;
		return 0;
	}
	if ((missing = want & add) == 0)
		return 0; /* only statistics were at stake: go on without them */
	return ab_error (
	        err, -r, AB_E_SYSTEM, "enable the %s controller in %s/cgroup.subtree_control%s",
	        ab_cg_ctrl_name (first_ctrl (missing)), h->dir,
	        r == -EBUSY ? " (other processes share agentbox's cgroup, and cgroup v2 enables "
	                      "controllers only in groups without processes: run agentbox in "
	                      "a cgroup of its own, e.g. under systemd-run --scope)"
	                    : "");
}

static int
v2_set_limits (ab_cgroup_t *cg, const struct ab_limits_s *lim, ab_error_t *err)
{
	const struct ab_cg_dir_s *d = &cg->dirs[cg->unified];
	char buf[48];
	int r;

	if (lim->memory_bytes) {
		if (ab_cg_write_u64 (d, "memory.max", lim->memory_bytes, err) < 0)
			return ab_error_code (err);
		/* Unlike v1's memsw, memory.swap.max bounds swap alone: 0 = none.
		 * Absent without swap accounting (CONFIG_MEMCG_SWAP off). */
		if ((r = ab_cg_write (d, "memory.swap.max", "0", true, err)) < 0)
			return r;
		cg->memory_swap = r == 0;
	}
	if (lim->pids && ab_cg_write_u64 (d, "pids.max", lim->pids, err) < 0)
		return ab_error_code (err);
	if (lim->cpu_millis) {
		snprintf (buf, sizeof buf, "%" PRIu64 " %" PRIu64,
		          lim->cpu_millis * AB_CG_CPU_PERIOD_US / 1000, AB_CG_CPU_PERIOD_US);
		if (ab_cg_write (d, "cpu.max", buf, false, err) < 0)
			return ab_error_code (err);
	}
	return 0;
}

static int
v2_create (ab_cgroup_t *cg, const struct ab_limits_s *lim, ab_error_t *err)
{
	const struct ab_cg_layout_s *l = cg->layout;
	unsigned want = 0, have = 0;
	int idx;

	if (l->v2 < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "no cgroup2 hierarchy is mounted");
	want |= lim->memory_bytes ? AB_CG_BIT (AB_CG_MEMORY) : 0;
	want |= lim->pids ? AB_CG_BIT (AB_CG_PIDS) : 0;
	want |= lim->cpu_millis ? AB_CG_BIT (AB_CG_CPU) : 0;
	if (cg->flags & AB_CG_F_PROBE) {
		if (own_mask (&l->hier[l->v2], "cgroup.subtree_control", &have, err) < 0)
			return ab_error_code (err);
	} else if (v2_enable (&l->hier[l->v2], want, want | AB_CG_BIT (AB_CG_MEMORY), &have, err)
	           < 0) {
		return ab_error_code (err);
	}
	if ((idx = ab_cg_add_dir (cg, l->v2, err)) < 0)
		return idx;
	cg->unified = idx;
	for (size_t i = 0; i < sizeof v2_ctrls / sizeof v2_ctrls[0]; i++)
		if (have & AB_CG_BIT (v2_ctrls[i]))
			cg->ctrl[v2_ctrls[i]] = idx;
	/* cpu.stat's usage_usec and cgroup.freeze exist in every non-root
	 * group, whatever the controllers. */
	cg->ctrl[AB_CG_CPUACCT] = idx;
	cg->ctrl[AB_CG_FREEZER] = idx;
	return v2_set_limits (cg, lim, err);
}

int
ab_cg_v2_kill_file (const struct ab_cg_dir_s *d, ab_error_t *err)
{
	/* cgroup.kill (Linux 5.14) SIGKILLs the whole subtree in one step and
	 * makes forks into the dying group fail, so nothing can outrun it as a
	 * fork bomb can outrun a read-and-kill loop. */
	return ab_cg_write (d, "cgroup.kill", "1", true, err);
}

static bool
v2_frozen (const char *events)
{
	uint64_t v = 0;

	return ab_cg_keyed_u64 (events, "frozen", &v) == 0 && v == 1;
}

const struct ab_cg_freezer_s ab_cg_v2_freezer = {
	.file = "cgroup.freeze",
	.freeze = "1",
	.thaw = "0",
	.state_file = "cgroup.events",
	.frozen = v2_frozen,
};

static int
v2_kill (ab_cgroup_t *cg, ab_error_t *err)
{
	const struct ab_cg_dir_s *d = ab_cg_live (cg, cg->unified);
	int r;

	if (d == NULL)
		return 0;
	if ((r = ab_cg_v2_kill_file (d, err)) <= 0)
		return r;
	/* Before 5.14: cgroup.freeze (5.2), else a plain loop. */
	if (ab_cg_has_file (d, "cgroup.freeze"))
		return ab_cg_freeze_kill (d, &ab_cg_v2_freezer, err);
	return ab_cg_kill_loop (d, err);
}

/* Value of `key` in a keyed file of the group: 0, 1 when the file or key
 * is absent, -errno on other errors. */
static int
keyed (const struct ab_cg_dir_s *d, const char *file, const char *key, uint64_t *v)
{
	char buf[1024];
	ssize_t n = ab_cg_read (d->fd, file, buf, sizeof buf);

	if (n < 0)
		return n == -ENOENT ? 1 : (int)n;
	return ab_cg_keyed_u64 (buf, key, v) == 0 ? 0 : 1;
}

int
ab_cg_v2_cpu_ns (const struct ab_cg_dir_s *d, uint64_t *ns)
{
	uint64_t v = 0;
	int r = keyed (d, "cpu.stat", "usage_usec", &v);

	if (r == 0)
		*ns = v * 1000;
	return r < 0 ? r : 0;
}

static int
v2_stats (ab_cgroup_t *cg, struct ab_cgroup_stats_s *st, ab_error_t *err)
{
	const struct ab_cg_dir_s *d = ab_cg_live (cg, cg->unified);
	char buf[32];
	uint64_t v = 0;
	ssize_t n;
	int r;

	if (d == NULL)
		return 0;
	/* memory.events counts the whole subtree (unless mounted with
	 * memory_localevents). */
	if ((r = keyed (d, "memory.events", "oom_kill", &v)) < 0)
		return ab_error (err, -r, AB_E_SYSTEM, "read %s/memory.events", d->path);
	st->oom_killed = r == 0 && v > 0;
	/* memory.peak: Linux 5.19 */
	if ((n = ab_cg_read (d->fd, "memory.peak", buf, sizeof buf)) >= 0)
		st->peak_memory = strtoull (buf, NULL, 10);
	else if (n != -ENOENT)
		return ab_error (err, (int)-n, AB_E_SYSTEM, "read %s/memory.peak", d->path);
	if ((r = ab_cg_v2_cpu_ns (d, &st->cpu_ns)) < 0)
		return ab_error (err, -r, AB_E_SYSTEM, "read %s/cpu.stat", d->path);
	return 0;
}

static const char *
yes_no (bool b)
{
	return b ? "yes" : "no";
}

static int
v2_probe (const struct ab_cg_layout_s *l, struct ab_cgroup_info_s *info, ab_error_t *err)
{
	const struct ab_cg_hier_s *h = &l->hier[l->v2];
	unsigned enabled = 0, avail = 0, usable;
	ab_error_t e = AB_ERROR_INIT;
	ab_cgroup_t *cg = NULL;
	const struct ab_cg_dir_s *d;
	char id[48];

	if (own_mask (h, "cgroup.subtree_control", &enabled, &e) < 0
	    || own_mask (h, "cgroup.controllers", &avail, &e) < 0) {
		snprintf (info->detail, sizeof info->detail, "v2: %.200s", e.msg);
		return 0;
	}
	/* cgroup.type is in every group but the root (Linux 4.14), and only
	 * the root is exempt from the no-internal-processes rule. */
	usable = enabled | (!own_has (h, "cgroup.type") || alone_in (h) ? avail : 0);
	info->memory = usable & AB_CG_BIT (AB_CG_MEMORY);
	info->pids = usable & AB_CG_BIT (AB_CG_PIDS);
	info->cpu = usable & AB_CG_BIT (AB_CG_CPU);
	ab_cg_probe_id (id, sizeof id);
	if (ab_cgroup_create_with (&ab_cgroup_driver_v2, id, NULL, AB_CG_F_PROBE, &cg, &e) < 0) {
		snprintf (info->detail, sizeof info->detail, "v2: cannot create a group: %.200s",
		          e.msg);
		info->memory = info->pids = info->cpu = false;
		return 0;
	}
	d = ab_cg_live (cg, cg->unified);
	info->kill = ab_cg_has_file (d, "cgroup.kill");
	info->freezer = ab_cg_has_file (d, "cgroup.freeze");
	/* Without memory enabled yet, our own cgroup tells whether the kernel
	 * accounts swap (not the root, which has no memory.swap.max). */
	info->memory_swap =
	        info->memory
	        && (ab_cg_has_file (d, "memory.swap.max") || own_has (h, "memory.swap.max"));
	snprintf (info->detail, sizeof info->detail,
	          "v2: memory=%s swap-off=%s pids=%s cpu=%s cgroup.freeze=%s cgroup.kill=%s%s; "
	          "groups in %s",
	          yes_no (info->memory), yes_no (info->memory_swap), yes_no (info->pids),
	          yes_no (info->cpu), yes_no (info->freezer), yes_no (info->kill),
	          usable & ~enabled ? " (controllers enabled on first use)" : "", h->dir);
	return ab_cgroup_destroy (cg, err);
}

const struct ab_cgroup_driver_s ab_cgroup_driver_v2 = {
	.name = "v2",
	.create = v2_create,
	.kill = v2_kill,
	.stats = v2_stats,
	.probe = v2_probe,
};
