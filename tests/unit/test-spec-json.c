/* Unit tests for spec/spec-json.c: what the API accepts, what it refuses
 * (naming the key), and that writing then reading gives the spec back. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "spec/spec-json.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static const struct {
	const char *json;
	const char *error; /* NULL = accepted; else a substring of the message */
} cases[] = {
	{ "{}", NULL },
	{ "{\"backend\": \"native\", \"rootfs\": \"host\", \"workspace\": null}", NULL },
	{ "{\"mounts\": [{\"type\": \"ro\", \"source\": \"/usr\", \"destination\": \"/data\"},"
	  " {\"type\": \"tmpfs\", \"destination\": \"/scratch\", \"size\": \"64m\"}]}",
	  NULL },
	{ "{\"env\": {\"A\": \"1\", \"B_2\": \"x=y\"}}", NULL },
	{ "{\"env\": [\"A=1\", \"B=\"]}", NULL },
	{ "{\"user\": \"1000:100\"}", NULL },
	{ "{\"user\": 7}", NULL },
	{ "{\"limits\": {\"memory\": \"512m\", \"pids\": 10, \"cpus\": 1.5, \"timeout\": \"30s\","
	  " \"kill_grace\": 2, \"nofile\": 64}}",
	  NULL },
	{ "{\"limits\": {\"memory\": 0, \"cpus\": \"unlimited\"}}", NULL },
	{ "{\"network\": \"proxy\", \"egress\": {\"allow_hosts\": [\"example.com\"]}}", NULL },

	{ "[]", "JSON object" },
	{ "{\"bogus\": 1}", "unknown key 'bogus'" },
	{ "{\"argv\": [\"sh\"]}", "unknown key 'argv'" },
	{ "{\"service_socket\": \"/x\"}", "unknown key 'service_socket'" },
	{ "{\"backend\": 1}", "'backend' must be a string" },
	{ "{\"workspace\": 5}", "'workspace'" },
	{ "{\"mounts\": {}}", "'mounts' must be an array" },
	{ "{\"mounts\": [{\"type\": \"rw\", \"destination\": \"/x\"}]}", "needs a source" },
	{ "{\"mounts\": [{\"type\": \"tmpfs\", \"source\": \"/x\", \"destination\": \"/x\"}]}",
	  "no source" },
	{ "{\"mounts\": [{\"type\": \"ro\", \"source\": \"rel\", \"destination\": \"/x\"}]}",
	  "absolute" },
	{ "{\"mounts\": [{\"type\": \"xx\", \"source\": \"/a\", \"destination\": \"/x\"}]}",
	  "ro, rw or tmpfs" },
	{ "{\"mounts\": [{\"type\": \"ro\", \"source\": \"/a\", \"destination\": \"/x\", "
	  "\"extra\": 1}]}",
	  "mounts[0]" },
	{ "{\"env\": {\"1BAD\": \"x\"}}", "env" },
	{ "{\"env\": {\"A\": 1}}", "env" },
	{ "{\"env\": [\"NOEQUALS\"]}", "KEY=VALUE" },
	{ "{\"user\": \"70000\"}", "user" },
	{ "{\"user\": \"a:b\"}", "user" },
	{ "{\"network\": \"host\"}", "'network'" },
	{ "{\"egress\": {\"nope\": []}}", "egress.nope" },
	{ "{\"limits\": {\"memory\": \"lots\"}}", "limits.memory" },
	{ "{\"limits\": {\"memory\": true}}", "limits.memory" },
	{ "{\"limits\": {\"pids\": -1}}", "limits.pids" },
	{ "{\"limits\": {\"cpus\": 5000}}", "limits.cpus" },
	{ "{\"limits\": {\"timeout\": \"soon\"}}", "limits.timeout" },
	{ "{\"limits\": {\"timeout\": -3}}", "limits.timeout" },
	{ "{\"limits\": {\"nofile\": 1}}", "limits.nofile" },
	{ "{\"limits\": {\"explicit_cgroup\": true}}", "limits.explicit_cgroup" },
	{ "{\"limits\": {\"swap\": 1}}", "limits.swap" },
	{ "{\"hostname\": null}", "'hostname' must be a string" },
};

static void
test_cases (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (cases); i++) {
		struct ab_spec_s spec;
		ab_error_t err = AB_ERROR_INIT;
		json_error_t je;
		json_t *j = json_loads (cases[i].json, 0, &je);
		int r;

		assert_non_null (j);
		ab_spec_init (&spec);
		r = ab_spec_from_json (j, 0, &spec, &err);
		if (cases[i].error == NULL) {
			if (r != 0)
				fail_msg ("case %zu (%s): %s", i, cases[i].json, err.msg);
		} else {
			if (r == 0)
				fail_msg ("case %zu (%s) was accepted", i, cases[i].json);
			assert_int_equal (err.kind, AB_E_INVALID);
			if (!strstr (err.msg, cases[i].error))
				fail_msg ("case %zu: '%s' does not mention '%s'", i, err.msg,
				          cases[i].error);
		}
		ab_spec_free (&spec);
		json_decref (j);
	}
}

static void
test_values (void **state)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	json_t *j = json_loads (
	        "{\"user\": \"1000:100\", \"env\": {\"A\": \"1\"},"
	        " \"limits\": {\"memory\": \"512m\", \"cpus\": 1.5, \"timeout\": \"1.5s\"}}",
	        0, NULL);
	(void)state;
	ab_spec_init (&spec);
	assert_int_equal (ab_spec_from_json (j, 0, &spec, &err), 0);
	assert_int_equal (spec.uid, 1000);
	assert_int_equal (spec.gid, 100);
	assert_string_equal (spec.env[0], "A=1");
	assert_null (spec.env[1]);
	assert_int_equal (spec.limits.memory_bytes, 512ULL << 20);
	assert_int_equal (spec.limits.cpu_millis, 1500);
	assert_int_equal (spec.limits.timeout_ms, 1500);
	assert_true (spec.limits.explicit_cgroup);
	ab_spec_free (&spec);
	json_decref (j);
}

/* Written then read back (internal keys included): the same JSON again. */
static void
test_round_trip (void **state)
{
	struct ab_spec_s a, b;
	ab_error_t err = AB_ERROR_INIT;
	json_t *ja, *jb;
	(void)state;

	ab_spec_init (&a);
	ab_spec_add_mount (&a, AB_MOUNT_RW_BIND, "/srv", "/out", 0);
	ab_spec_add_mount (&a, AB_MOUNT_TMPFS, NULL, "/scratch", 1 << 20);
	ab_strv_push (&a.env, "PATH=/bin");
	ab_strv_push (&a.argv, "true");
	a.service_socket = strdup ("/run/x/agent.sock");
	a.limits.cpu_millis = 250;
	a.limits.timeout_ms = 1234;
	a.uid = 5;
	a.gid = 6;
	ja = ab_spec_to_json (&a, AB_SPEC_JSON_INTERNAL);
	ab_spec_init (&b);
	assert_int_equal (ab_spec_from_json (ja, AB_SPEC_JSON_INTERNAL, &b, &err), 0);
	jb = ab_spec_to_json (&b, AB_SPEC_JSON_INTERNAL);
	assert_true (json_equal (ja, jb));
	assert_string_equal (b.service_socket, "/run/x/agent.sock");
	assert_int_equal (b.n_mounts, 2);
	json_decref (ja);
	json_decref (jb);
	ab_spec_free (&a);
	ab_spec_free (&b);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_cases),
		cmocka_unit_test (test_values),
		cmocka_unit_test (test_round_trip),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
