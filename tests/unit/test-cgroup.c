/* cgroup tests.
 *
 * The parsers are tested with fixed strings (this host's hybrid layout, the
 * co-mounted cpu,cpuacct form, pure v2, containers), so the v2 logic gets
 * coverage on any host.  The rest needs root and creates real groups below
 * the test's own cgroup, named agentbox-t<pid>-*, and always removes them
 * (teardown destroys whatever a failed test left). */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/vfs.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/sys.h"
#include "isolate/cgroup-internal.h"

#ifndef CGROUP_SUPER_MAGIC
#define CGROUP_SUPER_MAGIC 0x27e0eb
#endif
#ifndef CGROUP2_SUPER_MAGIC
#define CGROUP2_SUPER_MAGIC 0x63677270
#endif

#define MiB (1024ull * 1024ull)

/* ------------------------------------------------------------------ */
/* Pure parsers                                                         */

static void
test_ctrl_mask (void **state)
{
	static const struct {
		const char *list;
		char sep;
		unsigned mask;
	} cases[] = {
		{ "rw,cpu,cpuacct", ',', AB_CG_BIT (AB_CG_CPU) | AB_CG_BIT (AB_CG_CPUACCT) },
		{ "rw,cpuset", ',', 0 }, /* cpuset is not cpu */
		{ "rw,memory", ',', AB_CG_BIT (AB_CG_MEMORY) },
		{ "rw,name=systemd", ',', 0 },
		{ "rw,relatime,freezer", ',', AB_CG_BIT (AB_CG_FREEZER) },
		{ "cpuset cpu io memory hugetlb pids rdma misc\n", ' ',
		  AB_CG_BIT (AB_CG_CPU) | AB_CG_BIT (AB_CG_MEMORY) | AB_CG_BIT (AB_CG_PIDS) },
		{ "hugetlb\n", ' ', 0 },
		{ "", ' ', 0 },
		{ "memory pids", ' ', AB_CG_BIT (AB_CG_MEMORY) | AB_CG_BIT (AB_CG_PIDS) },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		assert_int_equal (ab_cg_ctrl_mask (cases[i].list, cases[i].sep), cases[i].mask);
}

static void
test_mountinfo_lines (void **state)
{
	static const struct {
		const char *line;
		int rc;
		bool v2;
		unsigned ctrls;
		const char *root, *mountpoint;
	} cases[] = {
		{ "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory", 1,
		  false, AB_CG_BIT (AB_CG_MEMORY), "/", "/sys/fs/cgroup/memory" },
		{ "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw", 1, true,
		  0, "/", "/sys/fs/cgroup/unified" },
		/* co-mounted, with optional fields before the separator */
		{ "27 26 0:24 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime "
		  "shared:7 - "
		  "cgroup cgroup rw,cpu,cpuacct",
		  1, false, AB_CG_BIT (AB_CG_CPU) | AB_CG_BIT (AB_CG_CPUACCT), "/",
		  "/sys/fs/cgroup/cpu,cpuacct" },
		{ "30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 master:1 - "
		  "cgroup2 "
		  "cgroup2 rw,nsdelegate,memory_recursiveprot",
		  1, true, 0, "/", "/sys/fs/cgroup" },
		/* a container without a cgroup namespace: a subtree is mounted */
		{ "300 299 0:32 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup "
		  "rw,memory",
		  1, false, AB_CG_BIT (AB_CG_MEMORY), "/docker/abc", "/sys/fs/cgroup/memory" },
		/* octal escapes in the mount point */
		{ "50 31 0:40 / /mnt/my\\040cg rw - cgroup2 none rw", 1, true, 0, "/",
		  "/mnt/my cg" },
		{ "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd",
		  1, false, 0, "/", "/sys/fs/cgroup/systemd" },
		{ "23 1 0:21 / /sys rw,nosuid - sysfs sysfs rw", 0, false, 0, NULL, NULL },
		{ "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755", 0, false, 0,
		  NULL, NULL },
		{ "garbage", -1, false, 0, NULL, NULL },
		{ "1 2 3:4 / /x rw shared:1", -1, false, 0, NULL, NULL }, /* no separator */
		{ "1 2 3:4 / /x rw - cgroup", -1, false, 0, NULL, NULL }, /* cut short */
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *line = strdup (cases[i].line);
		struct ab_cg_mount_s m;
		int rc = ab_cg_parse_mountinfo_line (line, &m);

		assert_int_equal (rc, cases[i].rc);
		if (rc == 1) {
			assert_int_equal (m.v2, cases[i].v2);
			assert_int_equal (m.ctrls, cases[i].ctrls);
			assert_string_equal (m.root, cases[i].root);
			assert_string_equal (m.mountpoint, cases[i].mountpoint);
		}
		free (line);
	}
}

static void
test_proc_cgroup_lines (void **state)
{
	static const struct {
		const char *line;
		int rc;
		bool v2;
		unsigned ctrls;
		const char *path;
	} cases[] = {
		{ "4:memory:/process_api/7acb5cd9", 0, false, AB_CG_BIT (AB_CG_MEMORY),
		  "/process_api/7acb5cd9" },
		{ "3:cpu,cpuacct:/user.slice", 0, false,
		  AB_CG_BIT (AB_CG_CPU) | AB_CG_BIT (AB_CG_CPUACCT), "/user.slice" },
		{ "0::/user.slice/x", 0, true, 0, "/user.slice/x" },
		{ "0::/", 0, true, 0, "/" },
		{ "9:name=systemd:/", 0, false, 0, "/" },
		{ "5:pids:/a:b", 0, false, AB_CG_BIT (AB_CG_PIDS), "/a:b" }, /* colons in a path */
		{ "garbage", -1, false, 0, NULL },
		{ "1:cpu:relative", -1, false, 0, NULL },
		{ ":memory:/", -1, false, 0, NULL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char *line = strdup (cases[i].line);
		struct ab_cg_proc_entry_s e;
		int rc = ab_cg_parse_proc_cgroup_line (line, &e);

		assert_int_equal (rc, cases[i].rc);
		if (rc == 0) {
			assert_int_equal (e.v2, cases[i].v2);
			assert_int_equal (e.ctrls, cases[i].ctrls);
			assert_string_equal (e.path, cases[i].path);
		}
		free (line);
	}
}

/* This machine: separate cpu and cpuacct, memory in a sub-cgroup, an empty
 * cgroup2 at .../unified. */
static const char hybrid_mountinfo[] =
        "23 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime - sysfs sysfs rw\n"
        "31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755\n"
        "32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu\n"
        "33 31 0:30 / /sys/fs/cgroup/cpuacct rw,relatime - cgroup cgroup rw,cpuacct\n"
        "34 31 0:31 / /sys/fs/cgroup/cpuset rw,relatime - cgroup cgroup rw,cpuset\n"
        "35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory\n"
        "36 31 0:33 / /sys/fs/cgroup/devices rw,relatime - cgroup cgroup rw,devices\n"
        "37 31 0:34 / /sys/fs/cgroup/freezer rw,relatime - cgroup cgroup rw,freezer\n"
        "38 31 0:35 / /sys/fs/cgroup/blkio rw,relatime - cgroup cgroup rw,blkio\n"
        "39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids\n"
        "40 31 0:37 / /sys/fs/cgroup/systemd rw,relatime - cgroup cgroup rw,name=systemd\n"
        "41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw\n";
static const char hybrid_cgroup[] = "9:name=systemd:/\n8:pids:/\n7:blkio:/\n6:freezer:/\n"
                                    "5:devices:/\n4:memory:/process_api/7acb\n3:cpuset:/\n"
                                    "2:cpuacct:/\n1:cpu:/\n0::/\n";

/* A systemd hybrid host of the Debian 10 kind: cpu,cpuacct co-mounted. */
static const char comount_mountinfo[] =
        "25 18 0:23 / /sys/fs/cgroup ro,nosuid,nodev,noexec shared:9 - tmpfs tmpfs ro,mode=755\n"
        "26 25 0:24 / /sys/fs/cgroup/unified rw,nosuid,nodev,noexec,relatime shared:10 - cgroup2 "
        "cgroup2 rw,nsdelegate\n"
        "27 25 0:25 / /sys/fs/cgroup/systemd rw,nosuid shared:11 - cgroup cgroup "
        "rw,xattr,name=systemd\n"
        "30 25 0:28 / /sys/fs/cgroup/cpu,cpuacct rw,nosuid,nodev,noexec,relatime shared:14 - "
        "cgroup "
        "cgroup rw,cpu,cpuacct\n"
        "31 25 0:29 / /sys/fs/cgroup/net_cls,net_prio rw shared:15 - cgroup cgroup "
        "rw,net_cls,net_prio\n"
        "32 25 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:16 - cgroup cgroup rw,memory\n"
        "33 25 0:31 / /sys/fs/cgroup/pids rw,nosuid shared:17 - cgroup cgroup rw,pids\n"
        "34 25 0:32 / /sys/fs/cgroup/freezer rw,nosuid shared:18 - cgroup cgroup rw,freezer\n";
static const char comount_cgroup[] =
        "12:freezer:/\n11:pids:/user.slice/user-0.slice/session-1.scope\n"
        "10:memory:/user.slice/user-0.slice/session-1.scope\n9:net_cls,net_prio:/\n"
        "8:cpu,cpuacct:/user.slice\n1:name=systemd:/user.slice/user-0.slice/session-1.scope\n"
        "0::/user.slice/user-0.slice/session-1.scope\n";

/* Pure v2 (systemd, Debian 12). */
static const char v2_mountinfo[] =
        "22 1 0:21 / /sys rw,nosuid,nodev,noexec,relatime shared:7 - sysfs sysfs rw\n"
        "26 22 0:23 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 "
        "rw,nsdelegate,memory_recursiveprot\n";
static const char v2_cgroup[] = "0::/user.slice/x\n";

/* A v2 container with a cgroup namespace: its own cgroup is "/". */
static const char v2ns_cgroup[] = "0::/\n";

/* A v1 container without a cgroup namespace: the mounts show a subtree. */
static const char docker_v1_mountinfo[] =
        "300 299 0:32 /docker/abc /sys/fs/cgroup/memory ro,nosuid - cgroup cgroup rw,memory\n"
        "301 299 0:33 /docker/abc /sys/fs/cgroup/pids ro,nosuid - cgroup cgroup rw,pids\n"
        "302 299 0:33 /docker/abc /sys/fs/cgroup/pids2 ro,nosuid - cgroup cgroup rw,pids\n";
static const char docker_v1_cgroup[] = "4:memory:/docker/abc/sub\n3:pids:/docker/abc\n";

/* Our cgroup lies outside the mounted subtree: unusable. */
static const char unreachable_cgroup[] = "4:memory:/elsewhere\n3:pids:/other\n";

struct layout_case_s {
	const char *name, *mountinfo, *cgroup;
	ab_cgroup_mode mode;
	const char *dir[AB_CG_N_CTRL]; /* v1 directory per controller, NULL = none */
	const char *v2dir;             /* NULL = no cgroup2 mount */
};

static void
check_layout (const struct layout_case_s *c)
{
	struct ab_cg_layout_s l;
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (ab_cg_layout_parse (c->mountinfo, c->cgroup, &l, &err), 0);
	assert_int_equal (l.mode, c->mode);
	for (int k = 0; k < AB_CG_N_CTRL; k++) {
		if (c->dir[k] == NULL) {
			assert_int_equal (l.v1[k], -1);
			continue;
		}
		assert_true (l.v1[k] >= 0);
		assert_false (l.hier[l.v1[k]].v2);
		assert_string_equal (l.hier[l.v1[k]].dir, c->dir[k]);
	}
	if (c->v2dir == NULL) {
		assert_int_equal (l.v2, -1);
	} else {
		assert_true (l.v2 >= 0);
		assert_true (l.hier[l.v2].v2);
		assert_string_equal (l.hier[l.v2].dir, c->v2dir);
	}
	ab_cg_layout_free (&l);
}

static void
test_layouts (void **state)
{
	static const struct layout_case_s cases[] = {
		{ "hybrid-here",
		  hybrid_mountinfo,
		  hybrid_cgroup,
		  AB_CGROUP_HYBRID,
		  { "/sys/fs/cgroup/memory/process_api/7acb", "/sys/fs/cgroup/pids",
		    "/sys/fs/cgroup/cpu", "/sys/fs/cgroup/cpuacct", "/sys/fs/cgroup/freezer" },
		  "/sys/fs/cgroup/unified" },
		{ "hybrid-comount",
		  comount_mountinfo,
		  comount_cgroup,
		  AB_CGROUP_HYBRID,
		  { "/sys/fs/cgroup/memory/user.slice/user-0.slice/session-1.scope",
		    "/sys/fs/cgroup/pids/user.slice/user-0.slice/session-1.scope",
		    "/sys/fs/cgroup/cpu,cpuacct/user.slice",
		    "/sys/fs/cgroup/cpu,cpuacct/user.slice", "/sys/fs/cgroup/freezer" },
		  "/sys/fs/cgroup/unified/user.slice/user-0.slice/session-1.scope" },
		{ "v2",
		  v2_mountinfo,
		  v2_cgroup,
		  AB_CGROUP_V2,
		  { NULL },
		  "/sys/fs/cgroup/user.slice/x" },
		{ "v2-cgroupns",
		  v2_mountinfo,
		  v2ns_cgroup,
		  AB_CGROUP_V2,
		  { NULL },
		  "/sys/fs/cgroup" },
		{ "v1-docker",
		  docker_v1_mountinfo,
		  docker_v1_cgroup,
		  AB_CGROUP_V1,
		  { "/sys/fs/cgroup/memory/sub", "/sys/fs/cgroup/pids", NULL, NULL, NULL },
		  NULL },
		{ "unreachable",
		  docker_v1_mountinfo,
		  unreachable_cgroup,
		  AB_CGROUP_NONE,
		  { NULL },
		  NULL },
		{ "v2-named-v1",
		  "1 0 0:1 / /sys/fs/cgroup rw - cgroup2 cgroup2 rw\n"
		  "2 1 0:2 / /sys/fs/cgroup/systemd rw - cgroup cgroup rw,name=systemd\n",
		  "1:name=systemd:/\n0::/a\n",
		  AB_CGROUP_V2,
		  { NULL },
		  "/sys/fs/cgroup/a" },
		{ "nothing",
		  "23 1 0:21 / /sys rw - sysfs sysfs rw\n",
		  "0::/\n",
		  AB_CGROUP_NONE,
		  { NULL },
		  NULL },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		print_message ("layout %s\n", cases[i].name);
		check_layout (&cases[i]);
	}
}

static void
test_comount_shares_hierarchy (void **state)
{
	struct ab_cg_layout_s l;
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (ab_cg_layout_parse (comount_mountinfo, comount_cgroup, &l, &err), 0);
	assert_int_equal (l.v1[AB_CG_CPU], l.v1[AB_CG_CPUACCT]);
	assert_int_not_equal (l.v1[AB_CG_CPU], l.v1[AB_CG_MEMORY]);
	ab_cg_layout_free (&l);
}

static void
test_keyed (void **state)
{
	static const char events[] = "low 0\nhigh 0\nmax 12\noom 3\noom_kill 2\noom_group_kill 0\n";
	static const char cpu_stat[] = "usage_usec 123456\nuser_usec 100000\nsystem_usec 23456\n";
	static const char cg_events[] = "populated 1\nfrozen 0\n";
	uint64_t v = 0;

	assert_int_equal (ab_cg_keyed_u64 (events, "oom_kill", &v), 0);
	assert_int_equal (v, 2);
	assert_int_equal (ab_cg_keyed_u64 (events, "oom", &v), 0); /* not oom_kill's prefix */
	assert_int_equal (v, 3);
	assert_int_equal (ab_cg_keyed_u64 (events, "max", &v), 0);
	assert_int_equal (v, 12);
	assert_int_equal (ab_cg_keyed_u64 (events, "oom_group", &v), -1);
	assert_int_equal (ab_cg_keyed_u64 (cpu_stat, "usage_usec", &v), 0);
	assert_int_equal (v, 123456);
	assert_int_equal (ab_cg_keyed_u64 (cpu_stat, "system_usec", &v), 0);
	assert_int_equal (v, 23456);
	assert_int_equal (ab_cg_keyed_u64 (cg_events, "frozen", &v), 0);
	assert_int_equal (v, 0);
	assert_int_equal (ab_cg_keyed_u64 (cg_events, "absent", &v), -1);
	assert_int_equal (ab_cg_keyed_u64 ("", "x", &v), -1);
	assert_int_equal (ab_cg_keyed_u64 ("x \n", "x", &v), -1);
}

static void
test_oom_control (void **state)
{
	static const struct {
		const char *text;
		bool has_oom_kill, under_oom;
		uint64_t oom_kill;
	} cases[] = {
		{ "oom_kill_disable 0\nunder_oom 0\noom_kill 0\n", true, false, 0 },
		{ "oom_kill_disable 0\nunder_oom 0\noom_kill 3\n", true, false, 3 },
		{ "oom_kill_disable 1\nunder_oom 1\n", false, true, 0 }, /* Linux < 4.13 */
		{ "oom_kill_disable 0\nunder_oom 0\n", false, false, 0 },
	};

	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		struct ab_cg_oom_s oom;

		ab_cg_parse_oom_control (cases[i].text, &oom);
		assert_int_equal (oom.has_oom_kill, cases[i].has_oom_kill);
		assert_int_equal (oom.under_oom, cases[i].under_oom);
		assert_int_equal (oom.oom_kill, cases[i].oom_kill);
	}
}

static void
test_bad_input (void **state)
{
	static const char *const bad_ids[] = {
		"",      "a/b",
		"x y",   "semi;colon",
		"nul\n", "0123456789012345678901234567890123456789012345678901234567890123456789"
	};
	struct ab_limits_s lim = { .cpu_millis = 5 };
	ab_cgroup_t *cg = NULL;

	for (size_t i = 0; i < sizeof bad_ids / sizeof bad_ids[0]; i++) {
		ab_error_t err = AB_ERROR_INIT;
		assert_true (ab_cgroup_create (bad_ids[i], NULL, &cg, &err) < 0);
		assert_int_equal (err.kind, AB_E_INVALID);
	}
	{
		ab_error_t err = AB_ERROR_INIT;
		assert_true (ab_cgroup_create ("cpu-too-small", &lim, &cg, &err) < 0);
		assert_int_equal (err.kind, AB_E_INVALID);
		assert_non_null (strstr (err.msg, "cpu"));
	}
}

/* ------------------------------------------------------------------ */
/* Real groups (root)                                                   */

#define MAX_TRACKED 16
static ab_cgroup_t *tracked[MAX_TRACKED];
static pid_t tracked_pids[MAX_TRACKED];

static void
track (ab_cgroup_t *cg)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked[i] == NULL) {
			tracked[i] = cg;
			return;
		}
	fail_msg ("too many groups");
}

static void
untrack (ab_cgroup_t *cg)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked[i] == cg)
			tracked[i] = NULL;
}

static void
track_pid (pid_t pid)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked_pids[i] <= 0) {
			tracked_pids[i] = pid;
			return;
		}
}

static void
reap_all (void)
{
	/* Grandchildren are reparented to us (PR_SET_CHILD_SUBREAPER); give
	 * the dying ones up to 200 ms. */
	for (int i = 0; i < 200;) {
		pid_t r = waitpid (-1, NULL, WNOHANG);
		if (r < 0)
			break;
		if (r == 0) {
			usleep (1000);
			i++;
		}
	}
}

static int
teardown_real (void **state)
{
	for (int i = 0; i < MAX_TRACKED; i++) {
		if (tracked_pids[i] > 0) {
			kill (tracked_pids[i], SIGKILL);
			waitpid (tracked_pids[i], NULL, 0);
			tracked_pids[i] = 0;
		}
		if (tracked[i] != NULL) {
			ab_error_t err = AB_ERROR_INIT;
			if (ab_cgroup_destroy (tracked[i], &err) < 0)
				print_error ("teardown: %s\n", err.msg);
			tracked[i] = NULL;
		}
	}
	reap_all ();
	return 0;
}

static bool
need_root (void)
{
	ab_error_t err = AB_ERROR_INIT;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (&err);

	if (geteuid () != 0 || l == NULL || l->mode == AB_CGROUP_NONE) {
		print_message ("skipped: needs root and a cgroup hierarchy\n");
		return false;
	}
	return true;
}

static void
make_id (char *buf, size_t size, const char *what)
{
	snprintf (buf, size, "t%d-%s", (int)getpid (), what);
}

static bool
fs_is (const char *path, long magic)
{
	struct statfs s;

	return statfs (path, &s) == 0 && (long)s.f_type == magic;
}

static void
read_text (const char *dir, const char *file, char *buf, size_t size)
{
	char path[512];
	FILE *f;
	size_t n;

	snprintf (path, sizeof path, "%s/%s", dir, file);
	f = fopen (path, "r");
	if (f == NULL)
		fail_msg ("open %s: %s", path, strerror (errno));
	n = fread (buf, 1, size - 1, f);
	buf[n] = '\0';
	fclose (f);
	buf[strcspn (buf, "\n")] = '\0';
}

static void
assert_file (const char *dir, const char *file, const char *want)
{
	char buf[256];

	read_text (dir, file, buf, sizeof buf);
	if (strcmp (buf, want) != 0)
		fail_msg ("%s/%s = '%s', want '%s'", dir, file, buf, want);
}

static const char *
dir_of (const ab_cgroup_t *cg, int ctrl)
{
	assert_true (cg->ctrl[ctrl] >= 0);
	return cg->dirs[cg->ctrl[ctrl]].path;
}

static bool
exists (const char *path)
{
	return access (path, F_OK) == 0;
}

/* Every path of cg, copied so they can be checked after destroy. */
static size_t
save_paths (const ab_cgroup_t *cg, char paths[][512])
{
	for (size_t i = 0; i < cg->n_dirs; i++)
		snprintf (paths[i], 512, "%s", cg->dirs[i].path);
	return cg->n_dirs;
}

static void
destroy_and_check_gone (ab_cgroup_t *cg)
{
	char paths[AB_CG_MAX_HIER][512];
	size_t n = save_paths (cg, paths);
	ab_error_t err = AB_ERROR_INIT;

	untrack (cg);
	if (ab_cgroup_destroy (cg, &err) < 0)
		fail_msg ("destroy: %s", err.msg);
	for (size_t i = 0; i < n; i++)
		if (exists (paths[i]))
			fail_msg ("%s is left after destroy", paths[i]);
}

static void
test_probe (void **state)
{
	struct ab_cgroup_info_s info;
	ab_error_t err = AB_ERROR_INIT;

	if (!need_root ())
		skip ();
	assert_int_equal (ab_cgroup_probe (&info, &err), 0);
	print_message ("probe: %s\n", info.detail);
	assert_true (info.memory);
	assert_true (info.pids);
	assert_true (info.cpu);
	/* This machine (checked with statfs, not with our parser): v1
	 * controllers plus a cgroup2 mount at .../unified. */
	if (fs_is ("/sys/fs/cgroup/memory", CGROUP_SUPER_MAGIC)
	    && fs_is ("/sys/fs/cgroup/unified", CGROUP2_SUPER_MAGIC)) {
		assert_int_equal (info.mode, AB_CGROUP_HYBRID);
		assert_true (info.kill);
		assert_true (info.freezer);
		assert_non_null (strstr (info.detail, "hybrid"));
	}
	/* The probe group is gone. */
	assert_int_equal (ab_cgroup_sweep_stale (&err), 0);
}

static ab_cgroup_t *
create_or_fail (const char *what, const struct ab_limits_s *lim, unsigned flags,
                const struct ab_cgroup_driver_s *drv)
{
	char id[64];
	ab_cgroup_t *cg = NULL;
	ab_error_t err = AB_ERROR_INIT;
	int rc;

	make_id (id, sizeof id, what);
	if (drv == NULL && flags == 0)
		rc = ab_cgroup_create (id, lim, &cg, &err);
	else
		rc = ab_cgroup_create_with (drv ? drv : &ab_cgroup_driver_v1, id, lim, flags, &cg,
		                            &err);
	if (rc < 0)
		fail_msg ("create %s: %s", id, err.msg);
	track (cg);
	return cg;
}

static void
test_create_limits (void **state)
{
	struct ab_limits_s lim = { .memory_bytes = 64 * MiB, .pids = 77, .cpu_millis = 1500 };
	ab_cgroup_t *cg;

	if (!need_root ())
		skip ();
	cg = create_or_fail ("limits", &lim, 0, NULL);
	if (cg->drv == &ab_cgroup_driver_v1) {
		assert_file (dir_of (cg, AB_CG_MEMORY), "memory.limit_in_bytes", "67108864");
		if (cg->memory_swap)
			assert_file (dir_of (cg, AB_CG_MEMORY), "memory.memsw.limit_in_bytes",
			             "67108864");
		else
			assert_file (dir_of (cg, AB_CG_MEMORY), "memory.swappiness", "0");
		assert_file (dir_of (cg, AB_CG_PIDS), "pids.max", "77");
		assert_file (dir_of (cg, AB_CG_CPU), "cpu.cfs_quota_us", "150000");
		assert_file (dir_of (cg, AB_CG_CPU), "cpu.cfs_period_us", "100000");
	} else {
		assert_file (dir_of (cg, AB_CG_MEMORY), "memory.max", "67108864");
		if (cg->memory_swap)
			assert_file (dir_of (cg, AB_CG_MEMORY), "memory.swap.max", "0");
		assert_file (dir_of (cg, AB_CG_PIDS), "pids.max", "77");
		assert_file (dir_of (cg, AB_CG_CPU), "cpu.max", "150000 100000");
	}
	destroy_and_check_gone (cg);
}

static void
test_no_limits_writes_nothing (void **state)
{
	struct ab_limits_s lim = { 0 };
	ab_cgroup_t *cg;

	if (!need_root ())
		skip ();
	cg = create_or_fail ("nolimits", &lim, 0, NULL);
	/* The group exists for stats and kill, with the kernel's defaults. */
	if (cg->drv == &ab_cgroup_driver_v1) {
		char buf[64];
		read_text (dir_of (cg, AB_CG_MEMORY), "memory.limit_in_bytes", buf, sizeof buf);
		assert_true (strtoull (buf, NULL, 10) > (1ull << 60));
		assert_int_equal (cg->ctrl[AB_CG_PIDS],
		                  -1); /* no pids group without a pids limit */
	}
	destroy_and_check_gone (cg);
}

enum child_act { ACT_PAUSE, ACT_ALLOC, ACT_BURN, ACT_FORK, ACT_BOMB };

static void
child_main (int go, enum child_act act)
{
	char c;

	if (read (go, &c, 1) != 1)
		_exit (100);
	switch (act) {
	case ACT_ALLOC: {
		size_t size = 256 * MiB;
		char *p = mmap (NULL, size, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1,
		                0);
		if (p == MAP_FAILED)
			_exit (101);
		for (size_t i = 0; i < size; i += 4096)
			p[i] = 1;
		_exit (0); /* survived: the limit did not hold */
	}
	case ACT_BURN: {
		struct timespec t0, t;
		clock_gettime (CLOCK_THREAD_CPUTIME_ID, &t0);
		do
			clock_gettime (CLOCK_THREAD_CPUTIME_ID, &t);
		while ((t.tv_sec - t0.tv_sec) * 1000000000L + (t.tv_nsec - t0.tv_nsec) < 30000000L);
		break;
	}
	case ACT_FORK:
		for (int i = 0; i < 3; i++)
			if (fork () == 0)
				break;
		break;
	case ACT_BOMB: /* bounded by the group's pids.max */
		for (;;)
			if (fork () < 0)
				usleep (100);
	case ACT_PAUSE: break;
	}
	for (;;)
		pause ();
}

/* A child that waits until it is in the group, then acts. */
static pid_t
spawn_in (ab_cgroup_t *cg, enum child_act act)
{
	int p[2];
	pid_t pid;
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (pipe2 (p, O_CLOEXEC), 0);
	pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		close (p[1]);
		child_main (p[0], act);
	}
	close (p[0]);
	track_pid (pid);
	if (ab_cgroup_enter (cg, pid, &err) < 0)
		fail_msg ("enter: %s", err.msg);
	assert_int_equal (write (p[1], "x", 1), 1);
	close (p[1]);
	return pid;
}

static void
untrack_pid (pid_t pid)
{
	for (int i = 0; i < MAX_TRACKED; i++)
		if (tracked_pids[i] == pid)
			tracked_pids[i] = 0;
}

static void
assert_killed (pid_t pid)
{
	int status = 0;

	assert_int_equal (waitpid (pid, &status, 0), pid);
	untrack_pid (pid);
	if (!WIFSIGNALED (status) || WTERMSIG (status) != SIGKILL)
		fail_msg ("child %d: status 0x%x, want SIGKILL", (int)pid, status);
}

static void
assert_in_group (pid_t pid, const ab_cgroup_t *cg)
{
	char path[64], buf[2048];
	FILE *f;
	size_t n, hits = 0;

	snprintf (path, sizeof path, "/proc/%d/cgroup", (int)pid);
	f = fopen (path, "r");
	assert_non_null (f);
	n = fread (buf, 1, sizeof buf - 1, f);
	buf[n] = '\0';
	fclose (f);
	for (char *p = buf; (p = strstr (p, cg->name)) != NULL; p++)
		hits++;
	if (hits != cg->n_dirs)
		fail_msg ("%d is in %zu of the %zu groups:\n%s", (int)pid, hits, cg->n_dirs, buf);
}

static void
kill_test (const char *what, unsigned flags, const struct ab_cgroup_driver_s *drv)
{
	struct ab_limits_s lim = { .memory_bytes = drv == &ab_cgroup_driver_v2 ? 0 : 256 * MiB,
		                   .pids = drv == &ab_cgroup_driver_v2 ? 0 : 64 };
	ab_cgroup_t *cg = create_or_fail (what, &lim, flags, drv);
	struct ab_cgroup_stats_s st;
	ab_error_t err = AB_ERROR_INIT;
	pid_t pid = spawn_in (cg, ACT_FORK);

	assert_in_group (pid, cg);
	usleep (20000); /* let the grandchildren start */
	if (ab_cgroup_kill (cg, &err) < 0)
		fail_msg ("kill: %s", err.msg);
	assert_killed (pid);
	assert_int_equal (ab_cgroup_stats (cg, &st, &err), 0);
	assert_false (st.oom_killed);
	/* destroy fails if anything (the grandchildren) is left after 2 s */
	destroy_and_check_gone (cg);
	reap_all ();
}

static void
test_kill (void **state)
{
	if (!need_root ())
		skip ();
	kill_test ("kill", 0, NULL);
}

/* The sandbox's way in (ab_cgroup_join_s): born in the cgroup2 group by
 * clone3 CLONE_INTO_CGROUP, into the v1 groups by writing "0" to their
 * tasks itself; then in every group of cg, and its children with it. */
static void
test_join_at_birth (void **state)
{
	struct ab_limits_s lim = { .memory_bytes = 256 * MiB, .pids = 64 };
	struct ab_cgroup_join_s join;
	ab_error_t err = AB_ERROR_INIT;
	ab_cgroup_t *cg;
	int ready[2];
	pid_t pid;
	char c;

	if (!need_root ())
		skip ();
	cg = create_or_fail ("join", &lim, 0, NULL);
	if (ab_cgroup_join_prepare (cg, &join, &err) < 0)
		fail_msg ("join_prepare: %s", err.msg);
	assert_true (join.clone_into >= 0 || join.n_tasks > 0);
	assert_int_equal (pipe2 (ready, O_CLOEXEC), 0);
	pid = join.clone_into >= 0 ? ab_sys_clone_into_cgroup (0, join.clone_into) : fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		close (ready[0]);
		if (ab_cgroup_join_self (join.tasks, join.n_tasks, &err) < 0)
			_exit (102);
		if (write (ready[1], "j", 1) != 1)
			_exit (103);
		for (;;)
			pause ();
	}
	track_pid (pid);
	ab_cgroup_join_release (&join);
	assert_int_equal (join.n_tasks, 0);
	close (ready[1]);
	assert_int_equal (read (ready[0], &c, 1), 1);
	close (ready[0]);
	assert_in_group (pid, cg);
	if (ab_cgroup_kill (cg, &err) < 0)
		fail_msg ("kill: %s", err.msg);
	assert_killed (pid);
	destroy_and_check_gone (cg);
	reap_all ();
}

/* A fork bomb held by pids.max: every process dies, none escapes. */
static void
bomb_test (const char *what, unsigned flags, bool explicit_kill)
{
	struct ab_limits_s lim = { .memory_bytes = 256 * MiB, .pids = 32 };
	ab_cgroup_t *cg = create_or_fail (what, &lim, flags, flags ? &ab_cgroup_driver_v1 : NULL);
	ab_error_t err = AB_ERROR_INIT;
	pid_t pid = spawn_in (cg, ACT_BOMB);
	char procs[4096];
	const char *pids_dir = dir_of (cg, AB_CG_PIDS);

	for (int i = 0; i < 200; i++) { /* until the bomb fills pids.max */
		read_text (pids_dir, "pids.current", procs, sizeof procs);
		if (atoi (procs) >= 32)
			break;
		usleep (1000);
	}
	print_message ("pids.current=%s before the kill\n", procs);
	if (explicit_kill && ab_cgroup_kill (cg, &err) < 0)
		fail_msg ("kill: %s", err.msg);
	if (explicit_kill)
		assert_killed (pid);
	destroy_and_check_gone (cg); /* fails if anything is left after 2 s */
	if (!explicit_kill)
		assert_killed (pid);
	reap_all ();
}

static void
test_destroy_kills_bomb (void **state)
{
	if (!need_root ())
		skip ();
	bomb_test ("bomb", 0, false);
}

static void
test_freezer_kills_bomb (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (&err);

	if (!need_root () || l->v1[AB_CG_FREEZER] < 0 || l->v1[AB_CG_PIDS] < 0)
		skip ();
	bomb_test ("bomb-freezer", AB_CG_F_NO_UNIFIED, true);
}

/* The v1 path without cgroup.kill: freeze, kill, thaw. */
static void
test_kill_v1_freezer (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (&err);

	if (!need_root () || l->v1[AB_CG_FREEZER] < 0)
		skip ();
	kill_test ("freezer", AB_CG_F_NO_UNIFIED, &ab_cgroup_driver_v1);
}

/* The v2 driver on the cgroup2 mount (the whole tree on a v2 host; the
 * controller-less .../unified here): create, enter, cpu.stat, cgroup.kill. */
static void
test_v2_driver (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (&err);
	struct ab_cgroup_stats_s st;
	ab_cgroup_t *cg;
	pid_t pid;

	if (!need_root () || l->v2 < 0)
		skip ();
	cg = create_or_fail ("v2", NULL, 0, &ab_cgroup_driver_v2);
	pid = spawn_in (cg, ACT_BURN);
	assert_in_group (pid, cg);
	for (int i = 0; i < 200; i++) { /* the child burns 30 ms of CPU */
		assert_int_equal (ab_cgroup_stats (cg, &st, &err), 0);
		if (st.cpu_ns >= 25000000ull)
			break;
		usleep (5000);
	}
	assert_true (st.cpu_ns >= 25000000ull);
	if (ab_cgroup_kill (cg, &err) < 0)
		fail_msg ("kill: %s", err.msg);
	assert_killed (pid);
	destroy_and_check_gone (cg);
}

/* A limit whose controller is missing is an error that names it. */
static void
test_v2_missing_controller (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (&err);
	struct ab_limits_s lim = { .memory_bytes = 64 * MiB };
	char controllers[256], id[64], path[512];
	ab_cgroup_t *cg = NULL;

	if (!need_root () || l->v2 < 0)
		skip ();
	read_text (l->hier[l->v2].dir, "cgroup.controllers", controllers, sizeof controllers);
	if (ab_cg_ctrl_mask (controllers, ' ') & AB_CG_BIT (AB_CG_MEMORY))
		skip (); /* a real v2 host: memory is there */
	make_id (id, sizeof id, "v2-nomem");
	assert_true (ab_cgroup_create_with (&ab_cgroup_driver_v2, id, &lim, 0, &cg, &err) < 0);
	assert_int_equal (err.kind, AB_E_SYSTEM);
	assert_non_null (strstr (err.msg, "memory"));
	print_message ("as expected: %s\n", err.msg);
	snprintf (path, sizeof path, "%s/" AB_CG_PREFIX "%s", l->hier[l->v2].dir, id);
	assert_false (exists (path));
}

static void
test_oom (void **state)
{
	struct ab_limits_s lim = { .memory_bytes = 32 * MiB, .pids = 16 };
	struct ab_cgroup_stats_s st;
	ab_error_t err = AB_ERROR_INIT;
	ab_cgroup_t *cg;
	pid_t pid;

	if (!need_root ())
		skip ();
	cg = create_or_fail ("oom", &lim, 0, NULL);
	pid = spawn_in (cg, ACT_ALLOC);
	assert_killed (pid);
	assert_int_equal (ab_cgroup_stats (cg, &st, &err), 0);
	print_message ("oom_killed=%d peak=%llu cpu_ns=%llu\n", st.oom_killed,
	               (unsigned long long)st.peak_memory, (unsigned long long)st.cpu_ns);
	assert_true (st.oom_killed);
	assert_true (st.peak_memory >= 24 * MiB);
	assert_true (st.peak_memory <= 33 * MiB);
	assert_true (st.cpu_ns > 0);
	destroy_and_check_gone (cg);
}

static void
test_conflict_and_reuse (void **state)
{
	ab_cgroup_t *a, *b = NULL;
	ab_error_t err = AB_ERROR_INIT;
	char id[64];
	pid_t pid;
	int status;

	if (!need_root ())
		skip ();
	a = create_or_fail ("dup", NULL, 0, NULL);
	make_id (id, sizeof id, "dup");
	/* Held by `a`: a second sandbox with the same id is refused. */
	assert_true (ab_cgroup_create (id, NULL, &b, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	destroy_and_check_gone (a);

	/* A leftover of a killed run with the same id is taken over. */
	make_id (id, sizeof id, "reuse");
	pid = fork ();
	if (pid == 0) {
		ab_cgroup_t *cg;
		ab_error_t e = AB_ERROR_INIT;
		_exit (ab_cgroup_create (id, NULL, &cg, &e) < 0 ? 1 : 0); /* no destroy */
	}
	assert_int_equal (waitpid (pid, &status, 0), pid);
	assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
	b = create_or_fail ("reuse", NULL, 0, NULL);
	destroy_and_check_gone (b);
}

/* Is agentbox-<id> present in any hierarchy? */
static size_t
count_dirs (const char *id)
{
	ab_error_t err = AB_ERROR_INIT;
	const struct ab_cg_layout_s *l = ab_cg_layout_get (&err);
	size_t n = 0;

	for (size_t i = 0; i < l->n_hier; i++) {
		char path[512];
		snprintf (path, sizeof path, "%s/" AB_CG_PREFIX "%s", l->hier[i].dir, id);
		n += exists (path);
	}
	return n;
}

/* What a SIGKILLed `agentbox run` leaves: groups nobody holds.  With
 * `busy`, a process of the sandbox outlives it (reparented to us). */
static pid_t
leave_behind (const char *id, bool busy)
{
	int p[2];
	pid_t pid, survivor = 0;
	int status;

	assert_int_equal (pipe (p), 0);
	pid = fork ();
	if (pid == 0) {
		ab_cgroup_t *cg;
		ab_error_t e = AB_ERROR_INIT;
		pid_t g;
		struct ab_limits_s lim = { .memory_bytes = 64 * MiB, .pids = 8 };
		if (ab_cgroup_create (id, &lim, &cg, &e) < 0)
			_exit (1);
		if (busy) {
			g = fork ();
			if (g == 0) {
				/* As after exec: the O_CLOEXEC group fds (and their
				 * locks) are gone, only the membership protects it. */
				close_range (3, ~0u, 0);
				for (;;)
					pause ();
			}
			if (ab_cgroup_enter (cg, g, &e) < 0)
				_exit (2);
			if (write (p[1], &g, sizeof g) != sizeof g)
				_exit (3);
		}
		_exit (0);
	}
	close (p[1]);
	assert_int_equal (waitpid (pid, &status, 0), pid);
	assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
	if (busy) {
		assert_int_equal (read (p[0], &survivor, sizeof survivor), sizeof survivor);
		track_pid (survivor);
	}
	close (p[0]);
	return survivor;
}

static void
test_sweep (void **state)
{
	char stale[64], busy[64], held[64];
	ab_error_t err = AB_ERROR_INIT;
	ab_cgroup_t *live;
	pid_t survivor;

	if (!need_root ())
		skip ();
	make_id (stale, sizeof stale, "stale");
	make_id (busy, sizeof busy, "busy");
	make_id (held, sizeof held, "held");
	leave_behind (stale, false);
	survivor = leave_behind (busy, true);
	live = create_or_fail ("held", NULL, 0, NULL); /* empty, but its owner is alive */
	assert_true (count_dirs (stale) > 0);
	assert_true (count_dirs (busy) > 0);

	if (ab_cgroup_sweep_stale (&err) < 0)
		fail_msg ("sweep: %s", err.msg);
	assert_int_equal (count_dirs (stale), 0);
	assert_true (count_dirs (busy) > 0);                /* a live process: untouched */
	assert_int_equal (count_dirs (held), live->n_dirs); /* locked: untouched */

	/* Once the survivor is gone, the next sweep takes the rest. */
	kill (survivor, SIGKILL);
	assert_int_equal (waitpid (survivor, NULL, 0), survivor);
	untrack_pid (survivor);
	for (int i = 0; i < 100 && count_dirs (busy) > 0; i++) {
		assert_int_equal (ab_cgroup_sweep_stale (&err), 0);
		if (count_dirs (busy) > 0)
			usleep (10000);
	}
	assert_int_equal (count_dirs (busy), 0);
	destroy_and_check_gone (live);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_ctrl_mask),
		cmocka_unit_test (test_mountinfo_lines),
		cmocka_unit_test (test_proc_cgroup_lines),
		cmocka_unit_test (test_layouts),
		cmocka_unit_test (test_comount_shares_hierarchy),
		cmocka_unit_test (test_keyed),
		cmocka_unit_test (test_oom_control),
		cmocka_unit_test (test_bad_input),
		cmocka_unit_test_teardown (test_probe, teardown_real),
		cmocka_unit_test_teardown (test_create_limits, teardown_real),
		cmocka_unit_test_teardown (test_no_limits_writes_nothing, teardown_real),
		cmocka_unit_test_teardown (test_kill, teardown_real),
		cmocka_unit_test_teardown (test_kill_v1_freezer, teardown_real),
		cmocka_unit_test_teardown (test_destroy_kills_bomb, teardown_real),
		cmocka_unit_test_teardown (test_freezer_kills_bomb, teardown_real),
		cmocka_unit_test_teardown (test_v2_driver, teardown_real),
		cmocka_unit_test_teardown (test_v2_missing_controller, teardown_real),
		cmocka_unit_test_teardown (test_oom, teardown_real),
		cmocka_unit_test_teardown (test_conflict_and_reuse, teardown_real),
		cmocka_unit_test_teardown (test_sweep, teardown_real),
		cmocka_unit_test_teardown (test_join_at_birth, teardown_real),
	};

	/* Grandchildren of killed children come back to us to be reaped. */
	prctl (PR_SET_CHILD_SUBREAPER, 1);
	return cmocka_run_group_tests (tests, NULL, NULL);
}
