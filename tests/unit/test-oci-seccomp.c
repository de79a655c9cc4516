/* Unit tests for cli/oci-seccomp.c: a bundle's linux.seccomp compiled with
 * libseccomp (never loaded here).  Table driven: what compiles, what is
 * refused and with which message; podman's own default profile (what
 * every podman container sends) compiles when it is installed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "cli/oci.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

struct case_s {
	const char *json;
	const char *error; /* NULL: compiles; else a part of the message */
};

static const struct case_s cases[] = {
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\"}", NULL },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"mkdir\"], "
	  "\"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 1}]}",
	  NULL },
	/* A name libseccomp does not know is skipped, as runc does. */
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": "
	  "[\"no_such_syscall\"], \"action\": \"SCMP_ACT_KILL\"}]}",
	  NULL },
	/* A rule with the default action is dropped, not an error. */
	{ "{\"defaultAction\": \"SCMP_ACT_ERRNO\", \"defaultErrnoRet\": 38, \"syscalls\": "
	  "[{\"names\": [\"read\"], \"action\": \"SCMP_ACT_ERRNO\", \"errnoRet\": 38}, "
	  "{\"names\": [\"write\"], \"action\": \"SCMP_ACT_ALLOW\"}]}",
	  NULL },
	/* Two conditions on one argument: one rule each. */
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"personality\"], "
	  "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"value\": 8, \"op\": "
	  "\"SCMP_CMP_EQ\"}, {\"index\": 0, \"value\": 9, \"op\": \"SCMP_CMP_EQ\"}]}]}",
	  NULL },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"ioctl\"], "
	  "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 1, \"value\": 4294967295, "
	  "\"valueTwo\": 21522, \"op\": \"SCMP_CMP_MASKED_EQ\"}]}]}",
	  NULL },
	{ "{\"defaultAction\": \"SCMP_ACT_NOTIFY\"}", "SCMP_ACT_NOTIFY" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"listenerPath\": \"/run/x.sock\"}",
	  "listenerPath" },
	{ "{\"defaultAction\": \"SCMP_ACT_MAYBE\"}", "unknown action" },
	{ "{}", "an action is required" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
	  "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 0, \"op\": "
	  "\"SCMP_CMP_ABOUT\"}]}]}",
	  "bad argument condition" },
	{ "{\"defaultAction\": \"SCMP_ACT_ALLOW\", \"syscalls\": [{\"names\": [\"read\"], "
	  "\"action\": \"SCMP_ACT_ERRNO\", \"args\": [{\"index\": 6, \"op\": \"SCMP_CMP_EQ\"}]}]}",
	  "bad argument condition" },
};

static void
test_table (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (cases); i++) {
		ab_error_t err = AB_ERROR_INIT;
		json_t *j = json_loads (cases[i].json, 0, NULL);
		void *f = (void *)1;
		int r;

		assert_non_null (j);
		r = ab_oci_seccomp_compile (j, &f, &err);
		if (!cases[i].error) {
			if (r != 0)
				fail_msg ("%s: %s", cases[i].json, err.msg);
			assert_non_null (f);
		} else {
			if (r >= 0 || !strstr (err.msg, cases[i].error))
				fail_msg ("%s: want an error with '%s', got %d '%s'", cases[i].json,
				          cases[i].error, r, err.msg);
			assert_null (f);
			assert_int_equal (err.kind, AB_E_INVALID);
		}
		ab_oci_seccomp_free (f);
		json_decref (j);
	}
}

static void
test_none (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	void *f = (void *)1;

	(void)state;
	assert_int_equal (ab_oci_seccomp_compile (NULL, &f, &err), 0);
	assert_null (f);
	assert_int_equal (ab_oci_seccomp_load (NULL), 0);
}

static void
test_podman_default (void **state)
{
	const char *path = "/usr/share/containers/seccomp.json";
	ab_error_t err = AB_ERROR_INIT;
	json_t *j;
	void *f = NULL;

	(void)state;
	if (access (path, R_OK) != 0)
		skip ();
	j = json_load_file (path, 0, NULL);
	assert_non_null (j);
	if (ab_oci_seccomp_compile (j, &f, &err) != 0)
		fail_msg ("%s: %s", path, err.msg);
	assert_non_null (f);
	ab_oci_seccomp_free (f);
	json_decref (j);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_table),
		cmocka_unit_test (test_none),
		cmocka_unit_test (test_podman_default),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
