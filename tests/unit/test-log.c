/* Unit tests for base/log: the line format (text and JSON, escaping, cuts),
 * level filtering, settings from the environment, one write per event. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <pthread.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/log.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

/* 2026-01-02T03:04:05.678Z */
#define T0 INT64_C (1767323045678)

static size_t
count_char (const char *s, char c)
{
	size_t n = 0;
	for (; *s; s++)
		n += *s == c;
	return n;
}

struct line_case_s {
	ab_log_format format;
	ab_log_level level;
	const char *msg;
	ab_error_kind kind; /* AB_E_NONE: no error */
	int errnum;
	const char *errmsg;
	const char *want;
};

static const struct line_case_s line_cases[] = {
	{ AB_LOG_TEXT, AB_LOG_INFO, "listening on /run/a.sock", 0, 0, NULL,
	  "prog: listening on /run/a.sock\n" },
	{ AB_LOG_TEXT, AB_LOG_WARN, "x is readable", 0, 0, NULL, "prog: warning: x is readable\n" },
	{ AB_LOG_TEXT, AB_LOG_ERROR, "boom", 0, 0, NULL, "prog: error: boom\n" },
	{ AB_LOG_TEXT, AB_LOG_DEBUG, "step", 0, 0, NULL, "prog: debug: step\n" },
	{ AB_LOG_TEXT, AB_LOG_WARN, "expire abc", AB_E_SYSTEM, 2, "open x: No such file",
	  "prog: warning: expire abc: open x: No such file\n" },
	{ AB_LOG_TEXT, AB_LOG_ERROR, "", AB_E_INVALID, 0, "bad", "prog: error: bad\n" },
	/* One event, one line: whatever the message holds. */
	{ AB_LOG_TEXT, AB_LOG_INFO,
	  "a\nb\rc\td\x01"
	  "e\x7f",
	  0, 0, NULL, "prog: a\\nb\\rc\\td\\x01e\\x7f\n" },
	{ AB_LOG_TEXT, AB_LOG_INFO, "quote \" and \\ stay", 0, 0, NULL,
	  "prog: quote \" and \\ stay\n" },
	{ AB_LOG_TEXT, AB_LOG_INFO, "caf\xc3\xa9", 0, 0, NULL, "prog: caf\xc3\xa9\n" },
	{ AB_LOG_JSON, AB_LOG_INFO, "hello", 0, 0, NULL,
	  "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"info\",\"program\":\"prog\","
	  "\"msg\":\"hello\"}\n" },
	{ AB_LOG_JSON, AB_LOG_WARN, "say \"hi\"\\", 0, 0, NULL,
	  "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"warn\",\"program\":\"prog\","
	  "\"msg\":\"say \\\"hi\\\"\\\\\"}\n" },
	{ AB_LOG_JSON, AB_LOG_DEBUG, "l1\nl2\r\t\x01\x1f\x7f", 0, 0, NULL,
	  "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"debug\",\"program\":\"prog\","
	  "\"msg\":\"l1\\nl2\\r\\t\\u0001\\u001f\\u007f\"}\n" },
	/* Valid UTF-8 passes; stray, overlong and surrogate bytes become U+FFFD. */
	{ AB_LOG_JSON, AB_LOG_INFO,
	  "caf\xc3\xa9 \xf0\x9f\x98\x80 \xff \xc0\xaf \xed\xa0\x80 \xe2\x82", 0, 0, NULL,
	  "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"info\",\"program\":\"prog\","
	  "\"msg\":\"caf\xc3\xa9 \xf0\x9f\x98\x80 \\ufffd \\ufffd\\ufffd "
	  "\\ufffd\\ufffd\\ufffd \\ufffd\\ufffd\"}\n" },
	{ AB_LOG_JSON, AB_LOG_ERROR, "expire abc", AB_E_SYSTEM, 2, "open \"x\": No such file",
	  "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"error\",\"program\":\"prog\","
	  "\"msg\":\"expire abc\",\"error\":\"open \\\"x\\\": No such file\",\"kind\":\"system\","
	  "\"errno\":2}\n" },
	{ AB_LOG_JSON, AB_LOG_WARN, "refused", AB_E_LIMIT, 0, "too many",
	  "{\"time\":\"2026-01-02T03:04:05.678Z\",\"level\":\"warn\",\"program\":\"prog\","
	  "\"msg\":\"refused\",\"error\":\"too many\",\"kind\":\"limit\"}\n" },
};

static void
test_line_format (void **state)
{
	char buf[AB_LOG_LINE_MAX];

	for (size_t i = 0; i < N (line_cases); i++) {
		const struct line_case_s *c = &line_cases[i];
		ab_error_t e = AB_ERROR_INIT;
		if (c->errmsg) {
			e.kind = c->kind;
			e.errnum = c->errnum;
			snprintf (e.msg, sizeof e.msg, "%s", c->errmsg);
		}
		size_t n = ab_log_format_line (buf, sizeof buf, c->format, "prog", c->level, c->msg,
		                               c->errmsg ? &e : NULL, T0);
		if (strcmp (buf, c->want) != 0)
			fail_msg ("case %zu:\n got  %s want %s", i, buf, c->want);
		assert_int_equal (n, strlen (c->want));
		assert_int_equal (count_char (buf, '\n'), 1);
	}
}

/* A message longer than a line is cut, and the line stays one line (and,
 * for JSON, one object). */
static void
test_line_cut (void **state)
{
	static const size_t caps[] = { 256, 1000, AB_LOG_LINE_MAX };
	static char msg[20000];
	ab_error_t e = AB_ERROR_INIT;
	char buf[AB_LOG_LINE_MAX];

	memset (msg, '"', sizeof msg - 1); /* each byte doubles in JSON */
	e.kind = AB_E_SYSTEM;
	e.errnum = 5;
	memset (e.msg, '\n', sizeof e.msg - 1);
	for (size_t i = 0; i < N (caps); i++)
		for (int f = AB_LOG_TEXT; f <= AB_LOG_JSON; f++) {
			size_t n = ab_log_format_line (buf, caps[i], (ab_log_format)f, "prog",
			                               AB_LOG_ERROR, msg, &e, T0);
			assert_true (n < caps[i]);
			assert_int_equal (n, strlen (buf));
			assert_int_equal (count_char (buf, '\n'), 1);
			assert_int_equal (buf[n - 1], '\n');
			if (f == AB_LOG_JSON) {
				assert_non_null (strstr (buf, "...\""));
				assert_non_null (
				        strstr (buf, "\"kind\":\"system\",\"errno\":5}\n"));
			} else {
				assert_non_null (strstr (buf, "...\n"));
			}
		}
}

/* The stamp of log lines, audit records and the API (base/clock.h). */
static void
test_utc_format (void **state)
{
	static const struct {
		int64_t ms;
		const char *want;
	} cases[] = {
		{ 0, "1970-01-01T00:00:00.000Z" },
		{ 5, "1970-01-01T00:00:00.005Z" },
		{ T0, "2026-01-02T03:04:05.678Z" },
		{ INT64_C (951782400999), "2000-02-29T00:00:00.999Z" },
		{ -1, "1970-01-01T00:00:00.000Z" },
	};
	char buf[AB_UTC_MS_LEN];

	for (size_t i = 0; i < N (cases); i++) {
		ab_utc_ms_format (cases[i].ms, buf);
		assert_string_equal (buf, cases[i].want);
	}
	assert_true (ab_unix_ms () > UINT64_C (1000000000000)); /* after 2001 */
}

struct parse_case_s {
	const char *in;
	int level; /* -1: rejected */
};

static void
test_parse (void **state)
{
	static const struct parse_case_s cases[] = {
		{ "debug", AB_LOG_DEBUG },
		{ "info", AB_LOG_INFO },
		{ "warn", AB_LOG_WARN },
		{ "warning", AB_LOG_WARN },
		{ "error", AB_LOG_ERROR },
		{ "", -1 },
		{ "INFO", -1 },
		{ "verbose", -1 },
		{ "info ", -1 },
	};
	for (size_t i = 0; i < N (cases); i++) {
		ab_error_t err = AB_ERROR_INIT;
		ab_log_level lv = (ab_log_level)99;
		int r = ab_log_parse_level (cases[i].in, &lv, &err);
		if (cases[i].level < 0) {
			assert_true (r < 0);
			assert_int_equal (err.kind, AB_E_INVALID);
			assert_int_equal (lv, 99);
		} else {
			assert_int_equal (r, 0);
			assert_int_equal (lv, cases[i].level);
		}
	}

	ab_error_t err = AB_ERROR_INIT;
	ab_log_format fm = AB_LOG_TEXT;
	assert_int_equal (ab_log_parse_format ("json", &fm, &err), 0);
	assert_int_equal (fm, AB_LOG_JSON);
	assert_int_equal (ab_log_parse_format ("text", &fm, &err), 0);
	assert_int_equal (fm, AB_LOG_TEXT);
	assert_true (ab_log_parse_format ("yaml", &fm, &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
}

/* What ab_log wrote to a temporary file, NUL-terminated. */
static char *
slurp (int fd)
{
	static char out[1 << 20];
	ssize_t n = pread (fd, out, sizeof out - 1, 0);

	assert_true (n >= 0);
	out[n] = '\0';
	return out;
}

static int
temp_fd (void)
{
	char path[] = "/tmp/test-log-XXXXXX";
	int fd = mkstemp (path);

	assert_true (fd >= 0);
	unlink (path);
	assert_int_equal (ftruncate (fd, 0), 0);
	return fd;
}

static void
test_levels_filtered (void **state)
{
	static const struct {
		ab_log_level min;
		const char *want;
	} cases[] = {
		{ AB_LOG_DEBUG, "p: debug: d\np: i\np: warning: w\np: error: e\n" },
		{ AB_LOG_INFO, "p: i\np: warning: w\np: error: e\n" },
		{ AB_LOG_WARN, "p: warning: w\np: error: e\n" },
		{ AB_LOG_ERROR, "p: error: e\n" },
	};
	for (size_t i = 0; i < N (cases); i++) {
		int fd = temp_fd ();
		ab_error_t e = AB_ERROR_INIT;
		snprintf (e.msg, sizeof e.msg, "e");
		ab_log_set_fd (fd);
		ab_log_set_program ("p");
		ab_log_set_level (cases[i].min);
		ab_log (AB_LOG_DEBUG, "%s", "d");
		ab_log (AB_LOG_INFO, "i");
		ab_log (AB_LOG_WARN, "%c", 'w');
		ab_log_error (AB_LOG_ERROR, &e, NULL);
		assert_string_equal (slurp (fd), cases[i].want);
		assert_int_equal (ab_log_enabled (AB_LOG_DEBUG), cases[i].min == AB_LOG_DEBUG);
		close (fd);
	}
	ab_log_set_level (AB_LOG_INFO);
	ab_log_set_fd (2);
}

/* A message longer than ab_log's buffer is cut and says so. */
static void
test_long_message (void **state)
{
	static char big[3000];
	int fd = temp_fd ();

	memset (big, 'x', sizeof big - 1);
	ab_log_set_fd (fd);
	ab_log_set_program ("p");
	ab_log (AB_LOG_INFO, "%s", big);
	char *out = slurp (fd);
	assert_int_equal (count_char (out, '\n'), 1);
	assert_true (strlen (out) < AB_LOG_LINE_MAX);
	assert_int_equal (strncmp (out, "p: xxx", 6), 0);
	assert_non_null (strstr (out, "x...\n"));
	ab_log_set_fd (2);
	close (fd);
}

static void
test_env (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	int fd = temp_fd ();

	setenv ("AGENTBOX_LOG_LEVEL", "warn", 1);
	setenv ("AGENTBOX_LOG_FORMAT", "json", 1);
	assert_int_equal (ab_log_setup_from_env (&err), 0);
	ab_log_set_fd (fd);
	ab_log_set_program ("p");
	ab_log (AB_LOG_INFO, "hidden");
	ab_log (AB_LOG_WARN, "shown");
	char *out = slurp (fd);
	assert_null (strstr (out, "hidden"));
	assert_non_null (strstr (out, "\"level\":\"warn\",\"program\":\"p\",\"msg\":\"shown\"}\n"));
	assert_int_equal (out[0], '{');

	/* A bad value is an error and changes nothing. */
	setenv ("AGENTBOX_LOG_LEVEL", "info", 1);
	setenv ("AGENTBOX_LOG_FORMAT", "xml", 1);
	assert_true (ab_log_setup_from_env (&err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	assert_non_null (strstr (err.msg, "AGENTBOX_LOG_FORMAT"));
	assert_false (ab_log_enabled (AB_LOG_INFO));

	unsetenv ("AGENTBOX_LOG_LEVEL");
	unsetenv ("AGENTBOX_LOG_FORMAT");
	ab_log_set_level (AB_LOG_INFO);
	ab_log_set_format (AB_LOG_TEXT);
	ab_log_set_fd (2);
	close (fd);
}

/* Lines from concurrent threads never interleave: one write each. */
#define THREADS 4
#define LINES   300
#define PADDING "padding padding padding padding padding padding padding padding"

static void *
writer (void *arg)
{
	for (int i = 0; i < LINES; i++)
		ab_log (AB_LOG_INFO, "thread %ld line %d %s", (long)(intptr_t)arg, i, PADDING);
	return NULL;
}

static void
test_threads (void **state)
{
	pthread_t t[THREADS];
	int fd = temp_fd ();
	size_t lines = 0;

	ab_log_set_fd (fd);
	ab_log_set_program ("p");
	for (intptr_t i = 0; i < THREADS; i++)
		assert_int_equal (pthread_create (&t[i], NULL, writer, (void *)i), 0);
	for (int i = 0; i < THREADS; i++)
		pthread_join (t[i], NULL);
	for (char *s = slurp (fd), *nl; (nl = strchr (s, '\n')); s = nl + 1, lines++) {
		char want[256];
		long th = -1;
		int ln = -1;
		*nl = '\0';
		assert_int_equal (sscanf (s, "p: thread %ld line %d ", &th, &ln), 2);
		snprintf (want, sizeof want, "p: thread %ld line %d %s", th, ln, PADDING);
		assert_string_equal (s, want);
	}
	assert_int_equal (lines, THREADS * LINES);
	ab_log_set_fd (2);
	close (fd);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_line_format),
		cmocka_unit_test (test_line_cut),
		cmocka_unit_test (test_parse),
		cmocka_unit_test (test_utc_format),
		cmocka_unit_test (test_levels_filtered),
		cmocka_unit_test (test_long_message),
		cmocka_unit_test (test_env),
		cmocka_unit_test (test_threads),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
