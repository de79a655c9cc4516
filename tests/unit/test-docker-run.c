/* Unit tests for the Docker backend's pure parts: the `docker run` command
 * line built from a spec (backend/docker-run.c), the scan for /etc entries
 * "others" cannot read (docker-host.c over host-mask.c) and the --rootfs image key
 * (docker-image.c), on a tree made in a temporary directory. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/docker-internal.h"
#include "backend/host-mask.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static char *trees[] = { (char *)"/usr", (char *)"/etc", NULL };
static char *mask_files[] = { (char *)"/etc/shadow", (char *)"/etc/gshadow", NULL };
static char *mask_dirs[] = { (char *)"/etc/ssl/private", NULL };
static char *sub_src[] = { (char *)"/usr/local/x", (char *)"/etc/ssl/private/inner", NULL };
static char *sub_dst[] = { (char *)"/usr/local/x", (char *)"/etc/ssl/private/inner", NULL };

static const struct ab_docker_run_s base_run = {
	.client = "docker",
	.name = "agentbox-0123456789abcdef",
	.image = AB_DOCKER_EMPTY_IMAGE,
	.agent_path = "/opt/ab/agentbox-agent",
	.door_dir = "/state/agent.sock.docker/door",
	.mask_file = "/state/agent.sock.docker/mask",
	.mask_dir = "/state/agent.sock.docker/mask.d",
	.trees = trees,
	.mask_files = mask_files,
	.mask_dirs = mask_dirs,
	.submount_src = sub_src,
	.submount_dst = sub_dst,
};

static size_t
count (char **v)
{
	size_t n = 0;
	while (v && v[n])
		n++;
	return n;
}

/* Index of the pair FLAG VALUE in argv, or -1. */
static long
find_pair (char **v, const char *flag, const char *value)
{
	for (size_t i = 0; v[i] && v[i + 1]; i++)
		if (strcmp (v[i], flag) == 0 && strcmp (v[i + 1], value) == 0)
			return (long)i;
	return -1;
}

static long
find (char **v, const char *s)
{
	for (size_t i = 0; v[i]; i++)
		if (strcmp (v[i], s) == 0)
			return (long)i;
	return -1;
}

static size_t
count_flag (char **v, const char *flag)
{
	size_t n = 0;
	for (size_t i = 0; v[i]; i++)
		n += strcmp (v[i], flag) == 0;
	return n;
}

static void
spec_for_test (struct ab_spec_s *spec)
{
	ab_spec_init (spec);
	spec->workspace = xstrdup ("/home/u/project");
	spec->limits.memory_bytes = 256ULL << 20;
	spec->limits.pids = 64;
	spec->limits.cpu_millis = 1500;
	free (spec->hostname);
	spec->hostname = xstrdup ("box1");
}

static void
test_host_layout (void **state)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	cleanup_strv char **v = NULL;
	static const char *const pairs[][2] = {
		{ "--network", "none" },
		{ "--user", "0:0" },
		{ "--cap-drop", "ALL" },
		{ "--cap-add", "SETPCAP" },
		{ "--cap-add", "SETUID" },
		{ "--cap-add", "SETGID" },
		{ "--cap-add", "KILL" },
		{ "--cap-add", "DAC_OVERRIDE" },
		{ "--security-opt", "no-new-privileges" },
		{ "--memory", "268435456" },
		{ "--memory-swap", "268435456" },
		{ "--pids-limit", "64" },
		{ "--cpus", "1.500" },
		{ "--mount",
		  "type=bind,source=/opt/ab/agentbox-agent,destination=/.agentbox-agent,readonly" },
		{ "--mount",
		  "type=bind,source=/state/agent.sock.docker/door,destination=/.agentbox" },
		{ "--mount", "type=bind,source=/home/u/project,destination=/workspace" },
		{ "--tmpfs", "/tmp:rw,exec,nosuid,nodev,mode=1777" },
		{ "--mount", "type=bind,source=/usr,destination=/usr,readonly" },
		{ "--mount", "type=bind,source=/etc,destination=/etc,readonly" },
		{ "--mount", "type=bind,source=/state/agent.sock.docker/mask,destination=/etc/"
		             "shadow,readonly" },
		{ "--mount", "type=bind,source=/state/agent.sock.docker/mask,destination=/etc/"
		             "gshadow,readonly" },
		{ "--mount",
		  "type=bind,source=/state/agent.sock.docker/mask.d,destination=/etc/ssl/"
		  "private,readonly" },
		{ "--mount", "type=bind,source=/usr/local/x,destination=/usr/local/x,readonly" },
		{ "--entrypoint", "/.agentbox-agent" },
		{ "--listen", "/.agentbox/agent.sock" },
	};

	(void)state;
	spec_for_test (&spec);
	spec.service_socket = xstrdup ("/state/agent.sock");
	v = ab_docker_run_argv (&spec, &base_run, &err);
	assert_non_null (v);
	assert_true (find_pair (v, "--label", "agentbox.socket=/state/agent.sock") > 0);
	assert_string_equal (v[0], "docker");
	assert_string_equal (v[1], "run");
	assert_true (find (v, "--detach") > 0);
	assert_true (find (v, "--read-only") > 0);
	assert_true (find (v, "--name=agentbox-0123456789abcdef") > 0);
	assert_true (find (v, "--hostname=box1") > 0);
	for (size_t i = 0; i < N (pairs); i++)
		if (find_pair (v, pairs[i][0], pairs[i][1]) < 0)
			fail_msg ("missing %s %s", pairs[i][0], pairs[i][1]);
	/* Exactly the agent's capabilities, nothing else. */
	assert_int_equal (count_flag (v, "--cap-add"), 5);
	/* Nothing is ever mounted over a masked directory. */
	for (size_t i = 0; v[i]; i++)
		assert_null (strstr (v[i], "/etc/ssl/private/inner"));
	/* The image, then the agent's arguments, last. */
	size_t n = count (v);
	assert_string_equal (v[n - 3], AB_DOCKER_EMPTY_IMAGE);
	assert_string_equal (v[n - 2], "--listen");
	ab_spec_free (&spec);
}

/* The caller's mounts win over masks and trees on the same destination;
 * with --rootfs no host tree, mask or submount is used. */
static void
test_priorities_and_rootfs (void **state)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	cleanup_strv char **v = NULL, **w = NULL;

	(void)state;
	spec_for_test (&spec);
	ab_spec_add_mount (&spec, AB_MOUNT_RO_BIND, "/srv/shadow-copy", "/etc/shadow", 0);
	ab_spec_add_mount (&spec, AB_MOUNT_TMPFS, NULL, "/scratch", 1 << 20);
	ab_spec_add_mount (&spec, AB_MOUNT_RW_BIND, "/srv/data", "/data", 0);
	v = ab_docker_run_argv (&spec, &base_run, &err);
	assert_non_null (v);
	assert_true (
	        find_pair (v, "--mount",
	                   "type=bind,source=/srv/shadow-copy,destination=/etc/shadow,readonly")
	        > 0);
	assert_true (find_pair (v, "--mount",
	                        "type=bind,source=/state/agent.sock.docker/mask,destination=/etc/"
	                        "shadow,readonly")
	             < 0);
	assert_true (
	        find_pair (v, "--tmpfs", "/scratch:rw,exec,nosuid,nodev,mode=1777,size=1048576")
	        > 0);
	assert_true (find_pair (v, "--mount", "type=bind,source=/srv/data,destination=/data") > 0);

	spec.rootfs = xstrdup ("/images/alpine");
	w = ab_docker_run_argv (&spec, &base_run, &err);
	assert_non_null (w);
	for (size_t i = 0; w[i]; i++) {
		assert_null (strstr (w[i], "source=/usr,"));
		assert_null (strstr (w[i], "/mask,"));
		assert_null (strstr (w[i], "/etc/ssl/private"));
		assert_null (strstr (w[i], "/usr/local/x"));
	}
	assert_true (
	        find_pair (w, "--mount", "type=bind,source=/home/u/project,destination=/workspace")
	        > 0);
	ab_spec_free (&spec);
}

/* A layered root: no host tree or mask either; the container's own root
 * takes the writes unless root.read_only. */
static void
test_layered_root (void **state)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	cleanup_strv char **v = NULL, **w = NULL;

	(void)state;
	spec_for_test (&spec);
	ab_strv_push (&spec.root.layers, "/store/layers/a");
	ab_strv_push (&spec.root.layers, "/store/layers/b");
	v = ab_docker_run_argv (&spec, &base_run, &err);
	assert_non_null (v);
	assert_true (find (v, "--read-only") < 0);
	for (size_t i = 0; v[i]; i++) {
		assert_null (strstr (v[i], "source=/usr,"));
		assert_null (strstr (v[i], "/mask,"));
	}
	spec.root.read_only = true;
	w = ab_docker_run_argv (&spec, &base_run, &err);
	assert_non_null (w);
	assert_true (find (w, "--read-only") > 0);
	ab_spec_free (&spec);
}

static void
test_no_limits_no_workspace (void **state)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	cleanup_strv char **v = NULL;

	(void)state;
	ab_spec_init (&spec);
	spec.limits.memory_bytes = 0;
	spec.limits.pids = 0;
	v = ab_docker_run_argv (&spec, &base_run, &err);
	assert_non_null (v);
	assert_true (find (v, "--memory") < 0);
	assert_true (find (v, "--memory-swap") < 0);
	assert_true (find (v, "--pids-limit") < 0);
	assert_true (find (v, "--cpus") < 0);
	for (size_t i = 0; v[i]; i++)
		assert_null (strstr (v[i], "destination=/workspace"));
	assert_true (find (v, "--hostname=" AB_DEFAULT_HOSTNAME) > 0);
	ab_spec_free (&spec);
}

/* Docker splits --mount at commas (CSV) and --tmpfs at the first colon:
 * such paths are refused, never passed on to be read differently. */
static void
test_paths_docker_would_misread (void **state)
{
	static const struct {
		ab_mount_kind kind;
		const char *src, *dst;
	} bad[] = {
		{ AB_MOUNT_RO_BIND, "/srv/a,b", "/a" },
		{ AB_MOUNT_RO_BIND, "/srv/a", "/a,readonly=false" },
		{ AB_MOUNT_RW_BIND, "/srv/\"q", "/q" },
		{ AB_MOUNT_RW_BIND, "/srv/n\nl", "/n" },
		{ AB_MOUNT_TMPFS, NULL, "/t:size=1" },
		{ AB_MOUNT_TMPFS, NULL, "/t,x" },
	};

	(void)state;
	for (size_t i = 0; i < N (bad); i++) {
		struct ab_spec_s spec;
		ab_error_t err = AB_ERROR_INIT;
		char **v;
		ab_spec_init (&spec);
		ab_spec_add_mount (&spec, bad[i].kind, bad[i].src, bad[i].dst, 0);
		v = ab_docker_run_argv (&spec, &base_run, &err);
		if (v)
			fail_msg ("case %zu accepted", i);
		assert_int_equal (err.kind, AB_E_INVALID);
		ab_spec_free (&spec);
	}
	/* The workspace too. */
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	ab_spec_init (&spec);
	spec.workspace = xstrdup ("/home/u/a,b");
	assert_null (ab_docker_run_argv (&spec, &base_run, &err));
	assert_int_equal (err.kind, AB_E_INVALID);
	ab_spec_free (&spec);
}

/* ---- a tree in a temporary directory ---------------------------------- */

static char tmp[64];

static void
mk (const char *rel, mode_t mode, bool dir)
{
	cleanup_free char *p = xasprintf ("%s/%s", tmp, rel);
	if (dir)
		assert_int_equal (mkdir (p, mode), 0);
	else {
		int fd = open (p, O_CREAT | O_WRONLY | O_CLOEXEC, 0600);
		assert_true (fd >= 0);
		assert_int_equal (write (fd, "x", 1), 1);
		close (fd);
	}
	assert_int_equal (chmod (p, mode), 0);
}

static int
make_tree (void **state)
{
	(void)state;
	snprintf (tmp, sizeof tmp, "/tmp/ab-docker-unit.XXXXXX");
	if (!mkdtemp (tmp) || chmod (tmp, 0755) < 0)
		return -1;
	/* The host-mask cache goes beside the tree, never into the host's. */
	cleanup_free char *cache = xasprintf ("%s-cache", tmp);
	setenv ("AGENTBOX_CACHE_DIR", cache, 1);
	mk ("passwd", 0644, false);
	mk ("shadow", 0640, false);
	mk ("secret", 0600, false);
	mk ("wonly", 0602, false); /* others may write, not read: still masked */
	mk ("ssl", 0755, true);
	mk ("ssl/certs", 0755, true);
	mk ("ssl/certs/ca.pem", 0644, false);
	mk ("ssl/private", 0700, true);
	mk ("ssl/private/key.pem", 0600, false);
	mk ("searchonly", 0711, true); /* traversable, not listable: masked */
	mk ("listonly", 0744, true);   /* listable, not traversable: masked */
	mk ("deep", 0755, true);
	mk ("deep/er", 0755, true);
	mk ("deep/er/opasswd", 0600, false);
	cleanup_free char *l = xasprintf ("%s/link-to-secret", tmp);
	assert_int_equal (symlink ("secret", l), 0);
	return 0;
}

static int
remove_tree (void **state)
{
	cleanup_free char *cmd = xasprintf ("rm -rf -- '%s' '%s-cache'", tmp, tmp);
	(void)state;
	return system (cmd) == 0 ? 0 : -1;
}

static bool
has (char **v, const char *rel)
{
	cleanup_free char *p = xasprintf ("%s/%s", tmp, rel);
	for (size_t i = 0; v && v[i]; i++)
		if (strcmp (v[i], p) == 0)
			return true;
	return false;
}

static void
test_scan_unreadable (void **state)
{
	cleanup_strv char **files = NULL, **dirs = NULL;
	ab_error_t err = AB_ERROR_INIT;

	(void)state;
	assert_int_equal (ab_docker_scan_unreadable (tmp, &files, &dirs, &err), 0);
	assert_true (has (files, "shadow"));
	assert_true (has (files, "secret"));
	assert_true (has (files, "wonly"));
	assert_true (has (files, "deep/er/opasswd"));
	assert_int_equal (count (files), 4);
	assert_true (has (dirs, "ssl/private"));
	assert_true (has (dirs, "searchonly"));
	assert_true (has (dirs, "listonly"));
	assert_int_equal (count (dirs), 3);
	/* A masked directory is not descended; a symlink is not followed. */
	assert_false (has (files, "ssl/private/key.pem"));
	assert_false (has (files, "link-to-secret"));

	cleanup_strv char **f2 = NULL, **d2 = NULL;
	assert_int_equal (ab_docker_scan_unreadable ("/nonexistent-ab", &f2, &d2, &err), 0);
	assert_int_equal (count (f2) + count (d2), 0);

	/* A directory closed to others is masked whole, the top one too. */
	cleanup_strv char **f3 = NULL, **d3 = NULL;
	assert_int_equal (chmod (tmp, 0700), 0);
	assert_int_equal (ab_docker_scan_unreadable (tmp, &f3, &d3, &err), 0);
	assert_int_equal (chmod (tmp, 0755), 0);
	assert_int_equal (count (f3), 0);
	assert_int_equal (count (d3), 1);
	assert_string_equal (d3[0], tmp);
}

/* More entries to mask than mounts we would make: refused, not cut short. */
static void
test_scan_limit (void **state)
{
	cleanup_strv char **files = NULL, **dirs = NULL;
	cleanup_free char *many = xasprintf ("%s/many", tmp);
	ab_error_t err = AB_ERROR_INIT;

	(void)state;
	mk ("many", 0755, true);
	for (int i = 0; i <= AB_HOST_MASK_MAX_MASKS; i++) {
		char name[32];
		snprintf (name, sizeof name, "many/%d", i);
		mk (name, 0600, false);
	}
	assert_true (ab_docker_scan_unreadable (many, &files, &dirs, &err) < 0);
	assert_int_equal (err.kind, AB_E_LIMIT);
}

static void
test_rootfs_tag (void **state)
{
	char a[128], b[128], c[128], d[128];
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *f = xasprintf ("%s/deep/er/opasswd", tmp);
	struct timespec ts = { 0, 50 * 1000 * 1000 };

	(void)state;
	assert_int_equal (ab_docker_rootfs_tag (tmp, a, sizeof a, &err), 0);
	assert_int_equal (
	        strncmp (a, AB_DOCKER_ROOTFS_REPO ":", strlen (AB_DOCKER_ROOTFS_REPO) + 1), 0);
	assert_int_equal (strlen (a), strlen (AB_DOCKER_ROOTFS_REPO) + 1 + 32);
	assert_int_equal (ab_docker_rootfs_tag (tmp, b, sizeof b, &err), 0);
	assert_string_equal (a, b); /* unchanged tree, same image */
	nanosleep (&ts, NULL);
	assert_int_equal (chmod (f, 0640), 0); /* deep, metadata only */
	assert_int_equal (ab_docker_rootfs_tag (tmp, c, sizeof c, &err), 0);
	assert_string_not_equal (a, c);
	nanosleep (&ts, NULL);
	int fd = open (f, O_WRONLY | O_APPEND | O_CLOEXEC);
	assert_true (fd >= 0);
	assert_int_equal (write (fd, "y", 1), 1);
	close (fd);
	assert_int_equal (ab_docker_rootfs_tag (tmp, d, sizeof d, &err), 0);
	assert_string_not_equal (c, d);
	/* Not a directory: an input error. */
	assert_int_equal (ab_docker_rootfs_tag (f, d, sizeof d, &err) < 0, 1);
	assert_int_equal (err.kind, AB_E_INVALID);
}

/* The orphan sweep judges only monitors of this boot and pid namespace,
 * and only by pid + start time. */
static void
test_monitor_label (void **state)
{
	cleanup_free char *label = ab_docker_monitor_label ();
	char boot[40], v[160];
	uint64_t ns, start;
	int pid;

	(void)state;
	assert_non_null (label);
	assert_int_equal (sscanf (label, "agentbox.monitor=%39[^/]/%" SCNu64 "/%d/%" SCNu64, boot,
	                          &ns, &pid, &start),
	                  4);
	assert_int_equal (pid, (int)getpid ());
	/* Our own (alive) monitor identity: not gone. */
	assert_false (ab_docker_monitor_gone (strchr (label, '=') + 1, boot, ns));
	/* Same pid, another start time: that monitor is gone (pid reused). */
	snprintf (v, sizeof v, "%s/%" PRIu64 "/%d/%" PRIu64, boot, ns, pid, start + 1);
	assert_true (ab_docker_monitor_gone (v, boot, ns));
	/* Another boot or pid namespace: not ours to judge. */
	snprintf (v, sizeof v, "%s/%" PRIu64 "/%d/%" PRIu64, "other-boot", ns, pid, start + 1);
	assert_false (ab_docker_monitor_gone (v, boot, ns));
	snprintf (v, sizeof v, "%s/%" PRIu64 "/%d/%" PRIu64, boot, ns + 1, pid, start + 1);
	assert_false (ab_docker_monitor_gone (v, boot, ns));
	/* Malformed: left alone. */
	assert_false (ab_docker_monitor_gone ("", boot, ns));
	assert_false (ab_docker_monitor_gone ("x/1/2", boot, ns));
	snprintf (v, sizeof v, "%s/%" PRIu64 "/%d/%" PRIu64 "junk", boot, ns, pid, start + 1);
	assert_false (ab_docker_monitor_gone (v, boot, ns));
	snprintf (v, sizeof v, "%s/%" PRIu64 "/0/%" PRIu64, boot, ns, start + 1);
	assert_false (ab_docker_monitor_gone (v, boot, ns));
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_host_layout),
		cmocka_unit_test (test_priorities_and_rootfs),
		cmocka_unit_test (test_layered_root),
		cmocka_unit_test (test_no_limits_no_workspace),
		cmocka_unit_test (test_paths_docker_would_misread),
		cmocka_unit_test (test_scan_unreadable),
		cmocka_unit_test (test_rootfs_tag),
		cmocka_unit_test (test_scan_limit),
		cmocka_unit_test (test_monitor_label),
	};
	return cmocka_run_group_tests (tests, make_tree, remove_tree);
}
