/* Unit tests for the gVisor backend's pure parts: the OCI config.json
 * built from a spec (backend/oci-bundle.c), the host masks over /etc
 * (backend/host-mask.c, on a temporary tree) and the parsing of
 * `runsc --version` (backend/gvisor-runsc.c).  Table driven where the
 * inputs are many. */
#include <fcntl.h>
#include <jansson.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/gvisor-internal.h"
#include "backend/host-mask.h"
#include "backend/oci-bundle.h"
#include "spec/spec.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static char *const host_dirs[] = { (char *)"usr", (char *)"etc", NULL };

static json_t *
config_for (struct ab_spec_s *spec, const struct ab_oci_mask_s *masks, size_t n_masks)
{
	struct ab_oci_bundle_s b = {
		.spec = spec,
		.root_path = "/run/x/rootfs",
		.agent_path = "/opt/agentbox/agentbox-agent",
		.door_dir = "/run/x/door",
		.cgroup_path = "gvisor-agentbox-1",
		.host_dirs = host_dirs,
		.masks = masks,
		.n_masks = n_masks,
		.mask_file = "/run/x/mask-file",
		.mask_dir = "/run/x/mask-dir",
	};
	ab_error_t err = AB_ERROR_INIT;
	json_t *cfg = ab_oci_config (&b, &err);
	if (!cfg)
		fail_msg ("ab_oci_config: %s", err.msg);
	return cfg;
}

/* The mount at dst, or NULL; *index its position. */
static json_t *
find_mount (json_t *cfg, const char *dst, size_t *index)
{
	json_t *mounts = json_object_get (cfg, "mounts"), *m;
	size_t i;

	json_array_foreach (mounts, i, m)
	{
		if (strcmp (json_string_value (json_object_get (m, "destination")), dst) == 0) {
			if (index)
				*index = i;
			return m;
		}
	}
	return NULL;
}

static bool
has_option (json_t *m, const char *opt)
{
	json_t *o;
	size_t i;
	json_array_foreach (json_object_get (m, "options"), i, o)
	{
		if (strcmp (json_string_value (o), opt) == 0)
			return true;
	}
	return false;
}

static const char *
str_at (json_t *cfg, const char *path)
{
	json_t *v = cfg;
	char buf[128], *save = NULL;

	snprintf (buf, sizeof buf, "%s", path);
	for (char *k = strtok_r (buf, ".", &save); k && v; k = strtok_r (NULL, ".", &save))
		v = json_is_array (v) ? json_array_get (v, (size_t)atoi (k))
		                      : json_object_get (v, k);
	return json_string_value (v);
}

static json_int_t
int_at (json_t *cfg, const char *path)
{
	json_t *v = cfg;
	char buf[128], *save = NULL;

	snprintf (buf, sizeof buf, "%s", path);
	for (char *k = strtok_r (buf, ".", &save); k && v; k = strtok_r (NULL, ".", &save))
		v = json_object_get (v, k);
	if (!json_is_integer (v))
		fail_msg ("%s is not an integer", path);
	return json_integer_value (v);
}

/* What every sandbox gets: the layout of the contract, the agent as PID 1
 * listening in the door, a read-only root, no environment. */
static void
test_layout (void **state)
{
	(void)state;
	struct ab_spec_s spec;
	ab_spec_init (&spec);
	json_t *cfg = config_for (&spec, NULL, 0);
	static const struct {
		const char *dst, *type, *src, *opt;
	} want[] = {
		{ "/proc", "proc", "proc", "nosuid" },
		{ "/dev", "tmpfs", "tmpfs", "nosuid" },
		{ "/dev/pts", "devpts", "devpts", "newinstance" },
		{ "/tmp", "tmpfs", "tmpfs", "mode=1777" },
		{ "/usr", "bind", "/usr", "ro" },
		{ "/etc", "bind", "/etc", "ro" },
		{ "/.agentbox", "bind", "/run/x/door", "rw" },
		{ "/.agentbox/agentbox-agent", "bind", "/opt/agentbox/agentbox-agent", "ro" },
	};
	size_t door, agent, etc;

	for (size_t i = 0; i < N (want); i++) {
		json_t *m = find_mount (cfg, want[i].dst, NULL);
		if (!m)
			fail_msg ("no mount at %s", want[i].dst);
		assert_string_equal (json_string_value (json_object_get (m, "type")), want[i].type);
		assert_string_equal (json_string_value (json_object_get (m, "source")),
		                     want[i].src);
		if (!has_option (m, want[i].opt))
			fail_msg ("%s lacks %s", want[i].dst, want[i].opt);
	}
	assert_false (has_option (find_mount (cfg, "/usr", NULL), "rw"));
	assert_null (find_mount (cfg, "/workspace", NULL)); /* no workspace in the spec */
	/* The door and the agent come last: nothing can be mounted over them. */
	find_mount (cfg, "/.agentbox", &door);
	find_mount (cfg, "/.agentbox/agentbox-agent", &agent);
	find_mount (cfg, "/etc", &etc);
	assert_true (etc < door && door < agent);
	assert_int_equal (agent, json_array_size (json_object_get (cfg, "mounts")) - 1);

	assert_string_equal (str_at (cfg, "root.path"), "/run/x/rootfs");
	assert_true (json_is_true (json_object_get (json_object_get (cfg, "root"), "readonly")));
	assert_string_equal (str_at (cfg, "hostname"), "agentbox");
	assert_string_equal (str_at (cfg, "process.args.0"), AB_OCI_AGENT);
	assert_string_equal (str_at (cfg, "process.args.1"), "--listen");
	assert_string_equal (str_at (cfg, "process.args.2"), AB_OCI_SOCKET);
	assert_int_equal (
	        json_array_size (json_object_get (json_object_get (cfg, "process"), "env")), 0);
	assert_int_equal (int_at (cfg, "process.user.uid"), 0);
	assert_true (json_is_true (
	        json_object_get (json_object_get (cfg, "process"), "noNewPrivileges")));
	json_decref (cfg);
	ab_spec_free (&spec);
}

/* Namespaces: a network namespace always (network none), no user one. */
static void
test_namespaces (void **state)
{
	(void)state;
	struct ab_spec_s spec;
	ab_spec_init (&spec);
	json_t *cfg = config_for (&spec, NULL, 0), *n;
	json_t *nss = json_object_get (json_object_get (cfg, "linux"), "namespaces");
	bool net = false, pid = false;
	size_t i;

	json_array_foreach (nss, i, n)
	{
		const char *t = json_string_value (json_object_get (n, "type"));
		net |= strcmp (t, "network") == 0;
		pid |= strcmp (t, "pid") == 0;
		assert_string_not_equal (t, "user");
		assert_null (json_object_get (n, "path")); /* never joins a host namespace */
	}
	assert_true (net && pid);
	json_decref (cfg);
	ab_spec_free (&spec);
}

static void
test_caps (void **state)
{
	(void)state;
	static const char *const forbidden[] = { "CAP_SYS_PTRACE", "CAP_NET_RAW", "CAP_MKNOD",
		                                 "CAP_SYS_MODULE" };
	struct ab_spec_s spec;
	ab_spec_init (&spec);
	spec.limits.pids = 0;
	json_t *cfg = config_for (&spec, NULL, 0);
	json_t *bnd = json_object_get (
	        json_object_get (json_object_get (cfg, "process"), "capabilities"), "bounding");
	json_t *c;
	size_t i;

	assert_true (json_array_size (bnd) > 0);
	json_array_foreach (bnd, i, c)
	{
		for (size_t k = 0; k < N (forbidden); k++)
			if (strcmp (json_string_value (c), forbidden[k]) == 0)
				fail_msg ("the agent gets %s", forbidden[k]);
	}
	json_decref (cfg);
	ab_spec_free (&spec);
}

struct limits_case_s {
	uint64_t memory, pids, cpu_millis;
	json_int_t want_quota; /* 0 = no cpu entry */
};

static const struct limits_case_s limit_cases[] = {
	{ 512ULL << 20, 64, 1500, 150000 },
	{ 2ULL << 30, 512, 0, 0 },
	{ 0, 16, 250, 25000 },
	{ 64ULL << 20, 0, 0, 0 },
};

/* Memory (swap = limit) and cpu go to the host cgroup; pids to the agent
 * (--pids-max) and, as a backstop
 * against host exhaustion, a scaled host pids limit. */
static void
test_limits (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (limit_cases); i++) {
		const struct limits_case_s *c = &limit_cases[i];
		struct ab_spec_s spec;
		ab_spec_init (&spec);
		spec.limits.memory_bytes = c->memory;
		spec.limits.pids = c->pids;
		spec.limits.cpu_millis = c->cpu_millis;
		json_t *cfg = config_for (&spec, NULL, 0);
		json_t *res = json_object_get (json_object_get (cfg, "linux"), "resources");
		json_t *args = json_object_get (json_object_get (cfg, "process"), "args");
		json_t *bnd = json_object_get (
		        json_object_get (json_object_get (cfg, "process"), "capabilities"),
		        "bounding");
		bool sys_admin = false;
		json_t *v;
		size_t k;

		assert_string_equal (str_at (cfg, "linux.cgroupsPath"), "gvisor-agentbox-1");
		if (c->memory) {
			assert_int_equal (int_at (res, "memory.limit"), (json_int_t)c->memory);
			assert_int_equal (int_at (res, "memory.swap"), (json_int_t)c->memory);
		} else {
			assert_null (json_object_get (res, "memory"));
		}
		if (c->pids) {
			char n[24];
			snprintf (n, sizeof n, "%llu", (unsigned long long)c->pids);
			assert_int_equal (json_array_size (args), 5);
			assert_string_equal (json_string_value (json_array_get (args, 3)),
			                     "--pids-max");
			assert_string_equal (json_string_value (json_array_get (args, 4)), n);
			assert_int_equal (int_at (res, "pids.limit"),
			                  (json_int_t)ab_oci_host_pids (c->pids));
			assert_true (ab_oci_host_pids (c->pids) > c->pids * 10);
		} else {
			assert_int_equal (json_array_size (args), 3);
			assert_null (json_object_get (res, "pids"));
		}
		json_array_foreach (bnd, k, v)
		{
			sys_admin |= strcmp (json_string_value (v), "CAP_SYS_ADMIN") == 0;
		}
		/* Always: the agent makes the commands' pid namespace. */
		assert_true (sys_admin);
		if (c->want_quota) {
			assert_int_equal (int_at (res, "cpu.quota"), c->want_quota);
			assert_int_equal (int_at (res, "cpu.period"), 100000);
		} else {
			assert_null (json_object_get (res, "cpu"));
		}
		json_decref (cfg);
		ab_spec_free (&spec);
	}
	assert_int_equal (ab_oci_host_pids (0), 0);
	assert_int_equal (ab_oci_host_pids (UINT64_MAX / 2), UINT64_MAX);
}

static void
test_no_limits_no_cgroup (void **state)
{
	(void)state;
	struct ab_spec_s spec;
	ab_spec_init (&spec);
	struct ab_oci_bundle_s b = {
		.spec = &spec, .root_path = "/r", .agent_path = "/a", .door_dir = "/d"
	};
	ab_error_t err = AB_ERROR_INIT;
	json_t *cfg = ab_oci_config (&b, &err);

	assert_non_null (cfg);
	assert_null (json_object_get (json_object_get (cfg, "linux"), "cgroupsPath"));
	assert_null (json_object_get (json_object_get (cfg, "linux"), "resources"));
	json_decref (cfg);
	ab_spec_free (&spec);
}

/* The workspace, the user's mounts and the hostname, with a --rootfs
 * image: no host binds then, whatever host_dirs says. */
static void
test_user_mounts (void **state)
{
	(void)state;
	struct ab_spec_s spec;
	ab_spec_init (&spec);
	free (spec.hostname);
	spec.hostname = strdup ("box1");
	spec.rootfs = strdup ("/images/alpine");
	spec.workspace = strdup ("/home/u/proj");
	ab_spec_add_mount (&spec, AB_MOUNT_RO_BIND, "/data", "/data", 0);
	ab_spec_add_mount (&spec, AB_MOUNT_RW_BIND, "/cache", "/var/cache/x", 0);
	ab_spec_add_mount (&spec, AB_MOUNT_TMPFS, NULL, "/scratch", 64ULL << 20);
	json_t *cfg = config_for (&spec, NULL, 0), *m;

	assert_null (find_mount (cfg, "/usr", NULL));
	assert_null (find_mount (cfg, "/etc", NULL));
	assert_string_equal (str_at (cfg, "hostname"), "box1");
	m = find_mount (cfg, "/workspace", NULL);
	assert_non_null (m);
	assert_string_equal (json_string_value (json_object_get (m, "source")), "/home/u/proj");
	assert_true (has_option (m, "rw") && has_option (m, "nosuid") && has_option (m, "nodev"));
	m = find_mount (cfg, "/data", NULL);
	assert_true (has_option (m, "ro") && !has_option (m, "rw"));
	m = find_mount (cfg, "/var/cache/x", NULL);
	assert_string_equal (json_string_value (json_object_get (m, "source")), "/cache");
	assert_true (has_option (m, "rw"));
	m = find_mount (cfg, "/scratch", NULL);
	assert_string_equal (json_string_value (json_object_get (m, "type")), "tmpfs");
	assert_true (has_option (m, "size=67108864"));
	json_decref (cfg);
	ab_spec_free (&spec);
}

/* A user mount may not cover the door or the agent. */
static void
test_reserved_destinations (void **state)
{
	(void)state;
	static const char *const dsts[] = { "/.agentbox", "/.agentbox/agent.sock",
		                            "/.agentbox/agentbox-agent" };
	for (size_t i = 0; i < N (dsts); i++) {
		struct ab_spec_s spec;
		ab_spec_init (&spec);
		ab_spec_add_mount (&spec, AB_MOUNT_TMPFS, NULL, dsts[i], 0);
		struct ab_oci_bundle_s b = {
			.spec = &spec, .root_path = "/r", .agent_path = "/a", .door_dir = "/d"
		};
		ab_error_t err = AB_ERROR_INIT;
		assert_null (ab_oci_config (&b, &err));
		assert_int_equal (err.kind, AB_E_INVALID);
		ab_spec_free (&spec);
	}
	struct ab_spec_s ok;
	ab_spec_init (&ok);
	ab_spec_add_mount (&ok, AB_MOUNT_TMPFS, NULL, "/.agentboxes", 0); /* a prefix only */
	json_t *cfg = config_for (&ok, NULL, 0);
	assert_non_null (find_mount (cfg, "/.agentboxes", NULL));
	json_decref (cfg);
	ab_spec_free (&ok);
}

/* Masks follow the /etc bind (or they would be covered by it): read-only
 * binds of the empty covers, a file over a file, a directory over a
 * directory. */
static void
test_masks_in_config (void **state)
{
	(void)state;
	const struct ab_oci_mask_s masks[] = {
		{ (char *)"/etc/shadow", false },
		{ (char *)"/etc/ssl/private", true },
	};
	struct ab_spec_s spec;
	ab_spec_init (&spec);
	json_t *cfg = config_for (&spec, masks, N (masks)), *m;
	size_t etc, shadow, priv;

	m = find_mount (cfg, "/etc/shadow", &shadow);
	assert_string_equal (json_string_value (json_object_get (m, "source")), "/run/x/mask-file");
	assert_true (has_option (m, "ro") && has_option (m, "bind"));
	m = find_mount (cfg, "/etc/ssl/private", &priv);
	assert_string_equal (json_string_value (json_object_get (m, "source")), "/run/x/mask-dir");
	assert_true (has_option (m, "ro"));
	find_mount (cfg, "/etc", &etc);
	assert_true (etc < shadow && etc < priv);
	json_decref (cfg);

	/* Masks without covers are a bug, not an unmasked sandbox. */
	struct ab_oci_bundle_s b = { .spec = &spec,
		                     .root_path = "/r",
		                     .agent_path = "/a",
		                     .door_dir = "/d",
		                     .masks = masks,
		                     .n_masks = N (masks) };
	ab_error_t err = AB_ERROR_INIT;
	assert_null (ab_oci_config (&b, &err));
	assert_int_equal (err.kind, AB_E_INTERNAL);
	ab_spec_free (&spec);
}

/* host-mask.c on a tree: what "others" cannot read is listed, nothing else. */
static const struct {
	const char *path; /* trailing / = directory */
	mode_t mode;
	bool masked;
} mask_tree[] = {
	{ "passwd", 0644, false },
	{ "shadow", 0640, true },
	{ "gshadow", 0600, true },
	{ "ssl/", 0755, false },
	{ "ssl/certs/", 0755, false },
	{ "ssl/certs/ca.pem", 0644, false },
	{ "ssl/private/", 0700, true },
	{ "ssl/private/key.pem", 0600, false }, /* inside a masked dir: not listed */
	{ "listonly/", 0711, true },            /* o+x without o+r */
	{ "readonly/", 0744, true },            /* o+r without o+x */
	{ "deep/a/b/", 0755, false },
	{ "deep/a/b/secret", 0400, true },
	{ "exec-only", 0711, true },
};

static void
test_host_masks (void **state)
{
	(void)state;
	char top[] = "/tmp/ab-mask-XXXXXX";
	struct ab_oci_mask_s *masks = NULL;
	size_t n = 0, want = 0;
	ab_error_t err = AB_ERROR_INIT;
	char cmd[128];

	assert_non_null (mkdtemp (top));
	chmod (top, 0755);
	/* Create everything open first, then set the modes, deepest first. */
	for (size_t i = 0; i < N (mask_tree); i++) {
		char p[256], sub[256];
		const char *path = mask_tree[i].path;
		snprintf (p, sizeof p, "%s/%s", top, path);
		for (char *s = strchr (p + strlen (top) + 1, '/'); s; s = strchr (s + 1, '/')) {
			snprintf (sub, sizeof sub, "%.*s", (int)(s - p), p);
			mkdir (sub, 0755);
		}
		if (path[strlen (path) - 1] != '/')
			assert_int_equal (close (open (p, O_CREAT | O_WRONLY, 0600)), 0);
	}
	for (size_t i = N (mask_tree); i-- > 0;) {
		char p[256];
		snprintf (p, sizeof p, "%s/%s", top, mask_tree[i].path);
		assert_int_equal (chmod (p, mask_tree[i].mode), 0);
	}
	{
		char l[256];
		snprintf (l, sizeof l, "%s/link", top);
		assert_int_equal (symlink ("shadow", l), 0); /* not followed, not masked */
	}
	assert_int_equal (ab_host_masks (top, "/etc", &masks, &n, &err), 0);
	for (size_t i = 0; i < N (mask_tree); i++) {
		char shown[256];
		bool found = false, dir = mask_tree[i].path[strlen (mask_tree[i].path) - 1] == '/';
		snprintf (shown, sizeof shown, "/etc/%.*s",
		          (int)strlen (mask_tree[i].path) - (dir ? 1 : 0), mask_tree[i].path);
		for (size_t k = 0; k < n; k++)
			if (strcmp (masks[k].path, shown) == 0) {
				found = true;
				assert_int_equal (masks[k].dir, dir);
			}
		if (found != mask_tree[i].masked)
			fail_msg ("%s: masked %d, want %d", shown, found, mask_tree[i].masked);
		want += mask_tree[i].masked;
	}
	assert_int_equal (n, want);
	ab_host_masks_free (masks, n);
	snprintf (cmd, sizeof cmd, "chmod -R u+rwx '%s' && rm -rf '%s'", top, top);
	assert_int_equal (system (cmd), 0);
}

static const struct {
	const char *out;
	const char *version; /* NULL = refused */
} versions[] = {
	{ "runsc version 0.0~20221219.0\nspec: 1.0.2-dev\n", "0.0~20221219.0" },
	{ "runsc version release-20240513.0\nspec: 1.1.0\n", "release-20240513.0" },
	{ "runsc version \nspec: 1.0.2\n", NULL },
	{ "runsc version 1.0\n", NULL },               /* no spec line */
	{ "runc version 1.1.5\nspec: 1.0.2\n", NULL }, /* another runtime */
	{ "", NULL },
	{ "<no value>", NULL },
	{ "runsc version 1 2\nspec: x\n", NULL },
};

static void
test_runsc_version (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (versions); i++) {
		char v[64] = "unchanged";
		int r = ab_runsc_parse_version (versions[i].out, v, sizeof v);
		if (versions[i].version) {
			if (r != 0)
				fail_msg ("'%s' refused", versions[i].out);
			assert_string_equal (v, versions[i].version);
		} else if (r == 0) {
			fail_msg ("'%s' accepted as %s", versions[i].out, v);
		}
	}
}

/* gVisor's own cgroup (gvisor.c): "." is the group runsc runs in, made
 * and limited by the monitor; runsc gets no resources to write over it. */
static void
test_premade_cgroup (void **state)
{
	(void)state;
	struct ab_spec_s spec;
	ab_spec_init (&spec);
	spec.limits.memory_bytes = 64ULL << 20;
	spec.limits.pids = 16;
	spec.limits.cpu_millis = 500;
	struct ab_oci_bundle_s b = { .spec = &spec,
		                     .root_path = "/r",
		                     .agent_path = "/a",
		                     .door_dir = "/d",
		                     .cgroup_path = ".",
		                     .cgroup_premade = true };
	ab_error_t err = AB_ERROR_INIT;
	json_t *cfg = ab_oci_config (&b, &err);
	json_t *res;

	assert_non_null (cfg);
	assert_string_equal (str_at (cfg, "linux.cgroupsPath"), ".");
	res = json_object_get (json_object_get (cfg, "linux"), "resources");
	assert_true (json_is_object (res));
	assert_int_equal (json_object_size (res), 0);
	/* The sandbox's own process limit is still the agent's. */
	assert_int_equal (
	        json_array_size (json_object_get (json_object_get (cfg, "process"), "args")), 5);
	json_decref (cfg);
	ab_spec_free (&spec);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_layout),
		cmocka_unit_test (test_namespaces),
		cmocka_unit_test (test_caps),
		cmocka_unit_test (test_limits),
		cmocka_unit_test (test_no_limits_no_cgroup),
		cmocka_unit_test (test_premade_cgroup),
		cmocka_unit_test (test_user_mounts),
		cmocka_unit_test (test_reserved_destinations),
		cmocka_unit_test (test_masks_in_config),
		cmocka_unit_test (test_host_masks),
		cmocka_unit_test (test_runsc_version),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
