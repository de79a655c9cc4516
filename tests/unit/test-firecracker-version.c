/* Unit tests for backend/firecracker-version.c: the strict version line
 * parser, semver precedence and the >= 1.14.1 rule (a prerelease of the
 * minimum is refused), and `--version` of a real (scripted) binary. */
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

#include "backend/firecracker-version.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

enum verdict { BAD, TOO_OLD, OK };

static const struct {
	const char *output;
	enum verdict verdict;
	const char *version; /* formatted back, when it parsed */
} cases[] = {
	/* accepted */
	{ "Firecracker v1.14.1", OK, "1.14.1" },
	{ "Firecracker v1.14.1\n", OK, "1.14.1" },
	{ "Firecracker v1.14.1\n\nSupported snapshot versions: v1.0.0\n", OK, "1.14.1" },
	{ "firecracker v1.14.1\n", OK, "1.14.1" },
	{ "Firecracker v1.14.2\n", OK, "1.14.2" },
	{ "Firecracker v1.15.0\n", OK, "1.15.0" },
	{ "Firecracker v1.15.0-rc1\n", OK, "1.15.0-rc1" },
	{ "Firecracker v1.14.2-rc.1\n", OK, "1.14.2-rc.1" },
	{ "Firecracker v2.0.0\n", OK, "2.0.0" },
	{ "Firecracker v1.100.0\n", OK, "1.100.0" },
	{ "Firecracker v4294967295.4294967295.4294967295\n", OK,
	  "4294967295.4294967295.4294967295" },
	{ "Firecracker v10.0.0\n", OK, "10.0.0" },
	/* parsed but too old */
	{ "Firecracker v1.14.1-rc1\n", TOO_OLD, "1.14.1-rc1" },
	{ "Firecracker v1.14.1-rc.9\n", TOO_OLD, "1.14.1-rc.9" },
	{ "Firecracker v1.14.1-12-gdeadbee-dirty\n", TOO_OLD, "1.14.1-12-gdeadbee-dirty" },
	{ "Firecracker v1.14.0\n", TOO_OLD, "1.14.0" },
	{ "Firecracker v1.13.99\n", TOO_OLD, "1.13.99" },
	{ "Firecracker v1.7.0\n\nSupported snapshot versions: v1.0.0\n", TOO_OLD, "1.7.0" },
	{ "Firecracker v0.25.2\n", TOO_OLD, "0.25.2" },
	{ "Firecracker v0.0.0\n", TOO_OLD, "0.0.0" },
	{ "Firecracker v1.9.100\n", TOO_OLD, "1.9.100" },
	/* not a version line */
	{ "", BAD, NULL },
	{ "\n", BAD, NULL },
	{ "garbage", BAD, NULL },
	{ "Firecracker\n", BAD, NULL },
	{ "Firecracker v\n", BAD, NULL },
	{ "Firecracker 1.14.1\n", BAD, NULL },
	{ "Firecracker V1.14.1\n", BAD, NULL },
	{ "FIRECRACKER v1.14.1\n", BAD, NULL },
	{ "Jailer v1.14.1\n", BAD, NULL },
	{ " Firecracker v1.14.1\n", BAD, NULL },
	{ "Firecracker  v1.14.1\n", BAD, NULL },
	{ "Firecracker\tv1.14.1\n", BAD, NULL },
	{ "Firecracker v 1.14.1\n", BAD, NULL },
	{ "Firecracker v1.14\n", BAD, NULL },
	{ "Firecracker v1\n", BAD, NULL },
	{ "Firecracker v1.14.1.2\n", BAD, NULL },
	{ "Firecracker v1.14.\n", BAD, NULL },
	{ "Firecracker v.14.1\n", BAD, NULL },
	{ "Firecracker v1..1\n", BAD, NULL },
	{ "Firecracker v01.14.1\n", BAD, NULL },
	{ "Firecracker v1.014.1\n", BAD, NULL },
	{ "Firecracker v1.14.01\n", BAD, NULL },
	{ "Firecracker v1.14.00\n", BAD, NULL },
	{ "Firecracker v+1.14.1\n", BAD, NULL },
	{ "Firecracker v-1.14.1\n", BAD, NULL },
	{ "Firecracker v1.-14.1\n", BAD, NULL },
	{ "Firecracker v1.14.+1\n", BAD, NULL },
	{ "Firecracker v0x1.14.1\n", BAD, NULL },
	{ "Firecracker v1.14.1 \n", BAD, NULL },
	{ "Firecracker v1.14.1\r\n", BAD, NULL },
	{ "Firecracker v1.14.1x\n", BAD, NULL },
	{ "Firecracker v1.14.1 (built 2025)\n", BAD, NULL },
	{ "Firecracker v1.14.1+build5\n", BAD, NULL },
	{ "Firecracker v1.14.1-\n", BAD, NULL },
	{ "Firecracker v1.14.1-rc1.\n", BAD, NULL },
	{ "Firecracker v1.14.1-rc..1\n", BAD, NULL },
	{ "Firecracker v1.14.1-rc_1\n", BAD, NULL },
	{ "Firecracker v1.14.1-rc 1\n", BAD, NULL },
	{ "Firecracker v1.14.1-01\n", BAD, NULL },
	{ "Firecracker v1.14.1-rc1\r\n", BAD, NULL },
	{ "Firecracker v4294967296.0.0\n", BAD, NULL },
	{ "Firecracker v1.4294967296.0\n", BAD, NULL },
	{ "Firecracker v1.14.99999999999999999999999\n", BAD, NULL },
	{ "Firecracker v18446744073709551617.0.0\n", BAD, NULL },
	{ "Firecracker v1.14.1-aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\n",
	  BAD, NULL },                                        /* 65-character prerelease */
	{ "Firecracker v1.\xd9\xa1\xd9\xa4.1\n", BAD, NULL }, /* Arabic-Indic digits */
	{ "error: unknown flag --version\nFirecracker v1.14.1\n", BAD, NULL },
};

static void
test_table (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (cases); i++) {
		struct ab_fc_version_s v;
		ab_error_t err = AB_ERROR_INIT;
		char buf[128];
		int r = ab_firecracker_version_check (cases[i].output, &v, &err);

		if (cases[i].verdict == OK && r != 0)
			fail_msg ("row %zu '%s': refused: %s", i, cases[i].output, err.msg);
		if (cases[i].verdict != OK && r == 0)
			fail_msg ("row %zu '%s': accepted", i, cases[i].output);
		if (cases[i].verdict == BAD && err.kind != AB_E_INVALID)
			fail_msg ("row %zu '%s': kind %s (%s)", i, cases[i].output,
			          ab_error_kind_name (err.kind), err.msg);
		if (cases[i].verdict == TOO_OLD && err.kind != AB_E_DENIED)
			fail_msg ("row %zu '%s': kind %s (%s)", i, cases[i].output,
			          ab_error_kind_name (err.kind), err.msg);
		if (cases[i].version) {
			ab_firecracker_version_format (&v, buf, sizeof buf);
			if (strcmp (buf, cases[i].version) != 0)
				fail_msg ("row %zu: parsed as %s", i, buf);
		}
		/* Error messages never carry control bytes from the tool. */
		for (const char *p = err.msg; *p; p++)
			if ((unsigned char)*p < 0x20)
				fail_msg ("row %zu: control byte in '%s'", i, err.msg);
	}
}

static void
test_parse_fields (void **state)
{
	(void)state;
	struct ab_fc_version_s v;
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (ab_firecracker_version_parse ("Firecracker v3.21.7-rc.2\n", &v, &err), 0);
	assert_int_equal (v.major, 3);
	assert_int_equal (v.minor, 21);
	assert_int_equal (v.patch, 7);
	assert_string_equal (v.prerelease, "rc.2");
	assert_int_equal (ab_firecracker_version_parse ("Firecracker v1.14.1", &v, &err), 0);
	assert_string_equal (v.prerelease, "");
}

static void
test_messages (void **state)
{
	(void)state;
	struct ab_fc_version_s v;
	ab_error_t err = AB_ERROR_INIT;

	assert_true (ab_firecracker_version_check ("Firecracker v1.14.1-rc1\n", &v, &err) < 0);
	assert_non_null (strstr (err.msg, "1.14.1-rc1 is older than the required 1.14.1"));
	assert_non_null (strstr (err.msg, "prerelease"));
	ab_error_clear (&err);
	assert_true (ab_firecracker_version_check ("Firecracker v1.14\n", &v, &err) < 0);
	assert_non_null (strstr (err.msg, "three components"));
	ab_error_clear (&err);
	assert_true (ab_firecracker_version_check ("Firecracker v01.14.1\n", &v, &err) < 0);
	assert_non_null (strstr (err.msg, "leading zeros"));
	ab_error_clear (&err);
	assert_true (ab_firecracker_version_check ("\x1b[31mFirecracker\n", &v, &err) < 0);
	assert_non_null (strstr (err.msg, "'?[31mFirecracker' is not"));
}

/* semver.org section 11's own example chain, each strictly below the next. */
static void
test_precedence_chain (void **state)
{
	(void)state;
	static const char *const chain[] = {
		"1.0.0-alpha",  "1.0.0-alpha.1", "1.0.0-alpha.beta", "1.0.0-beta",
		"1.0.0-beta.2", "1.0.0-beta.11", "1.0.0-rc.1",       "1.0.0",
		"1.0.1",        "1.1.0",         "1.14.1-rc1",       "1.14.1",
		"1.14.2-rc1",   "1.14.2",        "1.15.0-rc1",       "1.15.0",
		"2.0.0",
	};
	struct ab_fc_version_s v[N (chain)];
	for (size_t i = 0; i < N (chain); i++) {
		char line[96];
		ab_error_t err = AB_ERROR_INIT;
		snprintf (line, sizeof line, "Firecracker v%s\n", chain[i]);
		if (ab_firecracker_version_parse (line, &v[i], &err) < 0)
			fail_msg ("%s: %s", chain[i], err.msg);
	}
	for (size_t i = 0; i < N (chain); i++)
		for (size_t j = 0; j < N (chain); j++) {
			int c = ab_firecracker_version_cmp (&v[i], &v[j]);
			int want = i < j ? -1 : i > j;
			if ((c > 0) - (c < 0) != want)
				fail_msg ("cmp(%s, %s) = %d", chain[i], chain[j], c);
		}
}

static void
test_minimum (void **state)
{
	(void)state;
	struct ab_fc_version_s v = ab_firecracker_version_min;
	assert_true (ab_firecracker_version_ok (&v));
	strcpy (v.prerelease, "rc1");
	assert_false (ab_firecracker_version_ok (&v));
	v.minor = 15;
	v.patch = 0;
	assert_true (ab_firecracker_version_ok (&v)); /* 1.15.0-rc1 > 1.14.1 */
}

/* --version of a real executable (a shell script in a temp dir). */
static void
write_script (const char *path, const char *body)
{
	FILE *f = fopen (path, "w");
	assert_non_null (f);
	fprintf (f, "#!/bin/sh\n%s\n", body);
	assert_int_equal (fclose (f), 0);
	assert_int_equal (chmod (path, 0700), 0);
}

static void
test_query (void **state)
{
	(void)state;
	char dir[] = "/tmp/ab-fcver-XXXXXX", path[64];
	struct ab_fc_version_s v;
	ab_error_t err = AB_ERROR_INIT;

	assert_non_null (mkdtemp (dir));
	snprintf (path, sizeof path, "%s/firecracker", dir);

	write_script (path, "[ \"$1\" = --version ] || exit 9\n"
	                    "printf 'Firecracker v1.14.1\\n\\n'");
	assert_int_equal (ab_firecracker_version_query (path, 5000, &v, &err), 0);
	assert_int_equal (v.minor, 14);

	write_script (path, "printf 'Firecracker v1.14.1-rc1\\n'");
	assert_true (ab_firecracker_version_query (path, 5000, &v, &err) < 0);
	assert_int_equal (err.kind, AB_E_DENIED);
	assert_non_null (strstr (err.msg, path));

	ab_error_clear (&err);
	write_script (path, "echo 'Firecracker v1.14.1'; exit 3");
	assert_true (ab_firecracker_version_query (path, 5000, &v, &err) < 0);
	assert_non_null (strstr (err.msg, "status 3"));

	ab_error_clear (&err);
	write_script (path, "exec sleep 30");
	assert_true (ab_firecracker_version_query (path, 200, &v, &err) < 0);

	ab_error_clear (&err);
	unlink (path);
	assert_true (ab_firecracker_version_query (path, 5000, &v, &err) < 0);
	assert_int_equal (rmdir (dir), 0);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_table),    cmocka_unit_test (test_parse_fields),
		cmocka_unit_test (test_messages), cmocka_unit_test (test_precedence_chain),
		cmocka_unit_test (test_minimum),  cmocka_unit_test (test_query),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
