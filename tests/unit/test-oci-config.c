/* Unit tests for agentbox-runc's config.json reader (cli/oci-config.c):
 * signals by name and number, container ids, mount options split into
 * flags and data (0 is "is it alive"), namespaces, refused id maps and rootfs symlinks. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sched.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/compat.h"
#include "cli/oci.h"

static void
test_signals (void **state)
{
	static const struct {
		const char *in;
		int sig;
	} ok[] = { { "9", SIGKILL },    { "KILL", SIGKILL },      { "SIGTERM", SIGTERM },
		   { "term", SIGTERM }, { "SIGWINCH", SIGWINCH }, { "15", 15 },
		   { "0", 0 } };
	static const char *const bad[] = { "", "-1", "65", "SIGNOPE", "9x" };
	int sig;

	(void)state;
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		assert_int_equal (ab_oci_signal_parse (ok[i].in, &sig), 0);
		assert_int_equal (sig, ok[i].sig);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++)
		assert_int_equal (ab_oci_signal_parse (bad[i], &sig), -1);
}

static void
test_ids (void **state)
{
	static const char *const ok[] = { "a", "test_busybox", "0c81ee8da09d", "x.y-z+1" };
	static const char *const bad[] = { "", "../x", "a/b", ".hidden", "sp ace" };

	(void)state;
	for (size_t i = 0; i < sizeof ok / sizeof *ok; i++) {
		ab_error_t err = AB_ERROR_INIT;
		assert_int_equal (ab_oci_check_id (ok[i], &err), 0);
	}
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		ab_error_t err = AB_ERROR_INIT;
		assert_int_not_equal (ab_oci_check_id (bad[i], &err), 0);
		assert_non_null (strstr (err.msg, "invalid container id"));
	}
}

static char bundle[256];

static int
write_bundle (const char *json)
{
	char path[300];
	FILE *f;

	snprintf (path, sizeof path, "%s/config.json", bundle);
	f = fopen (path, "w");
	if (!f)
		return -1;
	fputs (json, f);
	return fclose (f);
}

static int
setup (void **state)
{
	char path[300];

	(void)state;
	snprintf (bundle, sizeof bundle, "%s/oci-unit-XXXXXX", getenv ("TMPDIR") ?: "/tmp");
	if (!mkdtemp (bundle))
		return -1;
	snprintf (path, sizeof path, "%s/rootfs", bundle);
	return mkdir (path, 0755);
}

static int
teardown (void **state)
{
	char cmd[400];

	(void)state;
	snprintf (cmd, sizeof cmd, "rm -rf '%s'", bundle);
	return system (cmd) == 0 ? 0 : -1;
}

static void
test_config (void **state)
{
	struct ab_oci_s c = { 0 };
	ab_error_t err = AB_ERROR_INIT;

	(void)state;
	assert_int_equal (
	        write_bundle (
	                "{\"process\": {\"args\": [\"sh\"], \"cwd\": \"/w\", \"user\": {\"uid\": 5,"
	                " \"gid\": 6, \"additionalGids\": [7]}, \"rlimits\": [{\"type\":"
	                " \"RLIMIT_NOFILE\", \"soft\": 10, \"hard\": 20}]},"
	                " \"root\": {\"path\": \"rootfs\", \"readonly\": true},"
	                " \"mounts\": [{\"destination\": \"/dev\", \"type\": \"tmpfs\", \"source\":"
	                " \"tmpfs\", \"options\": [\"nosuid\", \"mode=755\", \"size=65536k\"]},"
	                " {\"destination\": \"/data\", \"source\": \"/srv\", \"options\": "
	                "[\"rbind\","
	                " \"ro\", \"rprivate\"]}],"
	                " \"linux\": {\"namespaces\": [{\"type\": \"pid\"}, {\"type\": \"network\","
	                " \"path\": \"/run/netns/x\"}], \"resources\": {\"memory\": {\"limit\":"
	                " 1048576}, \"pids\": {\"limit\": 9}, \"cpu\": {\"quota\": 50000,"
	                " \"period\": 100000}}}}"),
	        0);
	assert_int_equal (ab_oci_config_load (bundle, &c, &err), 0);
	assert_string_equal (c.proc.args[0], "sh");
	assert_string_equal (c.proc.cwd, "/w");
	assert_int_equal (c.proc.uid, 5);
	assert_int_equal (c.proc.n_groups, 1);
	assert_int_equal (c.proc.rlimits[0].hard, 20);
	assert_true (c.root_readonly);
	assert_int_equal (c.n_mounts, 2);
	assert_string_equal (c.mounts[0].data, "mode=755,size=65536k");
	assert_true (c.mounts[0].attr & MOUNT_ATTR_NOSUID);
	assert_true (c.mounts[1].bind && c.mounts[1].recursive);
	assert_true (c.mounts[1].attr & MOUNT_ATTR_RDONLY);
	assert_int_equal (c.mounts[1].propagation, MS_PRIVATE | MS_REC);
	assert_true (ab_oci_ns_new (&c, CLONE_NEWPID));
	assert_false (ab_oci_ns_new (&c, CLONE_NEWNET));
	assert_int_equal (c.memory, 1048576);
	assert_int_equal (c.pids, 9);
	assert_int_equal (c.cpu_millis, 500);
	ab_oci_config_free (&c);
}

static void
test_refused (void **state)
{
	static const struct {
		const char *json, *msg;
	} cases[] = {
		{ "{\"process\": ", "line" },
		{ "{\"root\": {\"path\": \"rootfs\"}}", "process is missing" },
		{ "{\"process\": {\"args\": []}, \"root\": {\"path\": \"rootfs\"}}",
		  "must not be empty" },
		{ "{\"process\": {\"args\": [\"a\"]}, \"root\": {\"path\": \"rootfs\"}, \"linux\":"
		  " {\"uidMappings\": [{\"containerID\": 0, \"hostID\": 0, \"size\": 1}]}}",
		  "host id 0" },
		{ "{\"process\": {\"args\": [\"a\"]}, \"root\": {\"path\": \"rootfs\"}, \"linux\":"
		  " {\"namespaces\": [{\"type\": \"user\", \"path\": \"/proc/1/ns/user\"}]}}",
		  "not supported" },
		{ "{\"process\": {\"args\": [\"a\"]}, \"root\": {\"path\": \"rootfs\"}, \"mounts\":"
		  " [{\"destination\": \"rel\", \"type\": \"tmpfs\"}]}",
		  "absolute" },
		{ "{\"process\": {\"args\": [\"a\"]}, \"root\": {\"path\": \"link\"}}", "symlink" },
	};
	char link[300];

	(void)state;
	snprintf (link, sizeof link, "%s/link", bundle);
	assert_int_equal (symlink ("/etc", link), 0);
	for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
		struct ab_oci_s c = { 0 };
		ab_error_t err = AB_ERROR_INIT;
		assert_int_equal (write_bundle (cases[i].json), 0);
		assert_int_equal (ab_oci_config_load (bundle, &c, &err), -1);
		if (!strstr (err.msg, cases[i].msg))
			fail_msg ("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].msg);
		ab_oci_config_free (&c);
	}
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_signals),
		cmocka_unit_test (test_ids),
		cmocka_unit_test_setup_teardown (test_config, setup, teardown),
		cmocka_unit_test_setup_teardown (test_refused, setup, teardown),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
