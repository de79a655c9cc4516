/* Unit tests for base/parse: the numbers users type on the command line.
 * Table driven; every rejected input must leave the output untouched and
 * say AB_E_INVALID with a message. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "base/parse.h"

#define N(a) (sizeof (a) / sizeof (a)[0])
#define BAD  UINT64_C (0xdeadbeefdeadbeef) /* sentinel: must survive a rejected input */
#define KiB  (UINT64_C (1) << 10)
#define MiB  (UINT64_C (1) << 20)
#define GiB  (UINT64_C (1) << 30)
#define TiB  (UINT64_C (1) << 40)

struct case_s {
	const char *in;
	int ok;
	uint64_t want;
};

static void
check_case (const char *what, const struct case_s *c, int r, uint64_t got, const ab_error_t *err)
{
	if (c->ok) {
		if (r != 0)
			fail_msg ("%s('%s') failed: %s", what, c->in, err->msg);
		if (got != c->want)
			fail_msg ("%s('%s') = %llu, want %llu", what, c->in,
			          (unsigned long long)got, (unsigned long long)c->want);
		assert_int_equal (err->kind, AB_E_NONE); /* success leaves err untouched */
		return;
	}
	if (r >= 0)
		fail_msg ("%s('%s') accepted (= %llu), want an error", what, c->in,
		          (unsigned long long)got);
	if (got != BAD)
		fail_msg ("%s('%s') wrote its output although it failed", what, c->in);
	assert_int_equal (err->kind, AB_E_INVALID);
	assert_true (strlen (err->msg) > 0);
}

static const struct case_s sizes[] = {
	{ "512m", 1, 512 * MiB },
	{ "2g", 1, 2 * GiB },
	{ "2G", 1, 2 * GiB },
	{ "2gb", 1, 2 * GiB },
	{ "2GiB", 1, 2 * GiB },
	{ "1.5g", 1, 3 * GiB / 2 },
	{ "0.5k", 1, 512 },
	{ "64k", 1, 64 * KiB },
	{ "64K", 1, 64 * KiB },
	{ "1048576", 1, 1048576 },
	{ "1", 1, 1 },
	{ "1b", 1, 1 },
	{ "3t", 1, 3 * TiB },
	{ "16384t", 1, UINT64_C (1) << 54 },
	{ "0", 0, 0 }, /* a zero limit is a mistake, not "unlimited" */
	{ "0m", 0, 0 },
	{ "0.0001k", 0, 0 }, /* rounds to zero bytes */
	{ "-1", 0, 0 },
	{ "-512m", 0, 0 },
	{ "+1g", 0, 0 },
	{ "lots", 0, 0 },
	{ "1e3", 0, 0 },
	{ "0x100", 0, 0 },
	{ "", 0, 0 },
	{ " 2g", 0, 0 },
	{ "2g ", 0, 0 },
	{ "2 g", 0, 0 },
	{ "1.g", 0, 0 },
	{ ".5g", 0, 0 },
	{ "1..5g", 0, 0 },
	{ "2gg", 0, 0 },
	{ "2x", 0, 0 },
	{ "99999999999999999999g", 0, 0 }, /* digits overflow */
	{ "99999999999999999999", 0, 0 },
	{ "16777216t", 0, 0 }, /* 2^64 bytes: the multiplication overflows */
	{ "18446744073709551616", 0, 0 },
};

static void
test_size (void **state)
{
	for (size_t i = 0; i < N (sizes); i++) {
		ab_error_t err = AB_ERROR_INIT;
		uint64_t got = BAD;
		int r = ab_parse_size (sizes[i].in, &got, &err);
		check_case ("ab_parse_size", &sizes[i], r, got, &err);
	}
}

static const struct case_s durations[] = {
	{ "30s", 1, 30000 },    { "5m", 1, 300000 },
	{ "250ms", 1, 250 },    { "1.5s", 1, 1500 },
	{ "0.25s", 1, 250 },    { "1h", 1, 3600000 },
	{ "1.5h", 1, 5400000 }, { "10", 1, 10000 }, /* bare number: seconds */
	{ "0", 1, 0 },          { "0s", 1, 0 },
	{ "5x", 0, 0 },         { "5M", 0, 0 }, /* units are case-sensitive: M is not minutes */
	{ "5S", 0, 0 },         { "5sec", 0, 0 },
	{ "5min", 0, 0 },       { "1d", 0, 0 },
	{ "", 0, 0 },           { "s", 0, 0 },
	{ "-1s", 0, 0 },        { "+1s", 0, 0 },
	{ " 1s", 0, 0 },        { "1s ", 0, 0 },
	{ "1 s", 0, 0 },        { "1.s", 0, 0 },
	{ "1e3", 0, 0 },        { "99999999999999999999h", 0, 0 },
};

static void
test_duration (void **state)
{
	for (size_t i = 0; i < N (durations); i++) {
		ab_error_t err = AB_ERROR_INIT;
		uint64_t got = BAD;
		int r = ab_parse_duration (durations[i].in, &got, &err);
		check_case ("ab_parse_duration", &durations[i], r, got, &err);
	}
}

static const struct {
	struct case_s c;
	uint64_t min, max;
} uints[] = {
	{ { "0", 1, 0 }, 0, 10 },
	{ { "10", 1, 10 }, 0, 10 },
	{ { "7", 1, 7 }, 7, 7 },
	{ { "512", 1, 512 }, 1, 4194304 },
	{ { "007", 1, 7 }, 0, 10 },
	{ { "11", 0, 0 }, 0, 10 },
	{ { "0", 0, 0 }, 1, 4194304 },
	{ { "4194305", 0, 0 }, 1, 4194304 },
	{ { "6", 0, 0 }, 7, 7 },
	{ { "18446744073709551615", 1, UINT64_MAX }, 0, UINT64_MAX },
	{ { "18446744073709551614", 1, UINT64_MAX - 1 }, 0, UINT64_MAX },
	{ { "18446744073709551616", 0, 0 }, 0, UINT64_MAX },
	{ { "99999999999999999999999", 0, 0 }, 0, UINT64_MAX },
	{ { "", 0, 0 }, 0, 10 },
	{ { "-1", 0, 0 }, 0, 10 },
	{ { "+1", 0, 0 }, 0, 10 },
	{ { " 1", 0, 0 }, 0, 10 },
	{ { "1 ", 0, 0 }, 0, 10 },
	{ { "1.0", 0, 0 }, 0, 10 },
	{ { "0x1", 0, 0 }, 0, 10 },
	{ { "1k", 0, 0 }, 0, 100000 },
	{ { "one", 0, 0 }, 0, 10 },
};

static void
test_uint (void **state)
{
	for (size_t i = 0; i < N (uints); i++) {
		ab_error_t err = AB_ERROR_INIT;
		uint64_t got = BAD;
		int r = ab_parse_uint (uints[i].c.in, uints[i].min, uints[i].max, &got, &err);
		check_case ("ab_parse_uint", &uints[i].c, r, got, &err);
	}
}

static const struct case_s cpus[] = {
	{ "1", 1, 1000 },
	{ "1.5", 1, 1500 },
	{ "0.5", 1, 500 },
	{ "0.001", 1, 1 },
	{ "2.25", 1, 2250 },
	{ "1024", 1, 1024000 },
	{ "0", 0, 0 },
	{ "0.0", 0, 0 },
	{ "0.0001", 0, 0 }, /* below one millicpu */
	{ "1024.001", 0, 0 },
	{ "1025", 0, 0 },
	{ "-1", 0, 0 },
	{ "", 0, 0 },
	{ ".5", 0, 0 },
	{ "1.", 0, 0 },
	{ "2c", 0, 0 },
	{ "1,5", 0, 0 },
	{ "1e2", 0, 0 },
	{ "lots", 0, 0 },
	{ "99999999999999999999", 0, 0 },
};

static void
test_cpus (void **state)
{
	for (size_t i = 0; i < N (cpus); i++) {
		ab_error_t err = AB_ERROR_INIT;
		uint64_t got = BAD;
		int r = ab_parse_cpus (cpus[i].in, &got, &err);
		check_case ("ab_parse_cpus", &cpus[i], r, got, &err);
	}
}

static const struct case_s modes[] = {
	{ "644", 1, 0644 },
	{ "0755", 1, 0755 },
	{ "7777", 1, 07777 },
	{ "0", 1, 0 },
	{ "10000", 0, 0 },
	{ "8", 0, 0 },
	{ "-1", 0, 0 },
	{ "+644", 0, 0 },
	{ " 644", 0, 0 },
	{ "644 ", 0, 0 },
	{ "", 0, 0 },
	{ "0x1ff", 0, 0 },
	{ "99999999999999999999999", 0, 0 },
};

static void
test_mode (void **state)
{
	uint32_t got;

	for (size_t i = 0; i < N (modes); i++) {
		ab_error_t err = AB_ERROR_INIT;
		got = 0xdead;
		int r = ab_parse_mode (modes[i].in, &got, &err);
		check_case ("ab_parse_mode", &modes[i], r, got == 0xdead ? BAD : got, &err);
	}
	assert_int_equal (ab_parse_mode (NULL, &got, NULL), 0);
	assert_int_equal (got, 0);
}

/* The message names the input, so the CLI's one line says what was wrong. */
static void
test_messages_name_the_input (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	uint64_t v;

	assert_true (ab_parse_size ("lots", &v, &err) < 0);
	assert_non_null (strstr (err.msg, "'lots'"));
	ab_error_clear (&err);
	assert_true (ab_parse_duration ("5x", &v, &err) < 0);
	assert_non_null (strstr (err.msg, "'5x'"));
	ab_error_clear (&err);
	assert_true (ab_parse_uint ("11", 0, 10, &v, &err) < 0);
	assert_non_null (strstr (err.msg, "11"));
	assert_non_null (strstr (err.msg, "10"));
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_size), cmocka_unit_test (test_duration),
		cmocka_unit_test (test_uint), cmocka_unit_test (test_cpus),
		cmocka_unit_test (test_mode), cmocka_unit_test (test_messages_name_the_input),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
