/* Unit tests for the Docker probe's explanations (backend/docker-probe.c):
 * what `docker info --format` prints for a runtime must never read as
 * "configured" when it is not.  The answers below were printed by the
 * Debian client (20.10) and a 28.x client against a daemon without runsc,
 * and by the same daemon for runc. */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "backend/docker-internal.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static const struct {
	const char *answer;
	bool configured;
} answers[] = {
	/* nothing there */
	{ "", false },
	{ "\n", false },
	{ "   \t\n", false },
	{ "<no value>", false }, /* {{.Runtimes.runsc}}, any client */
	{ "<no value>\n", false },
	{ "{}", false }, /* {{json (index .Runtimes "runsc")}}, 28.x */
	{ "{}\n", false },
	{ "map[]", false },
	{ "map[]\n", false },
	{ "null", false }, /* {{json .Runtimes.runsc}} */
	{ "null\n", false },
	{ "<nil>", false },
	{ "[]", false },
	{ "{ [] <nil>}\n", false },          /* {{index .Runtimes "runsc"}}, 20.10 client */
	{ "{{ []  map[]} map[]}\n", false }, /* {{index .Runtimes "runsc"}}, 28.x client */
	{ "{\"path\":\"\"}\n", false },      /* {{json (index ...)}}, 20.10 client */
	{ "{\"path\":\"\",\"runtimeArgs\":[]}", false },
	{ "map[path:]", false },
	{ "map[path: runtimeArgs:[]]", false },
	{ "{<nil> [] <nil>}", false },
	/* something there */
	{ "{runc [] <nil>}\n", true },          /* runc, 20.10 client */
	{ "{{runc []  map[]} map[]}\n", true }, /* runc, 28.x client */
	{ "{\"path\":\"runc\"}\n", true },
	{ "{\"path\":\"/usr/bin/runsc\",\"runtimeArgs\":[\"--platform=ptrace\"]}", true },
	{ "{\"path\":\"\",\"runtimeArgs\":[\"--debug\"]}", true },
	{ "{/usr/bin/runsc [--network=none] <nil>}", true },
	{ "map[path:/usr/bin/runsc]", true },
	{ "map[path:runsc runtimeArgs:[]]", true },
	{ "runsc", true },
};

static void
test_runtime_answers (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (answers); i++) {
		bool got = ab_docker_runtime_answer_configured (answers[i].answer);
		if (got != answers[i].configured)
			fail_msg ("answer %zu \"%s\": got %d, want %d", i, answers[i].answer, got,
			          answers[i].configured);
	}
	assert_false (ab_docker_runtime_answer_configured (NULL));
}

static const struct {
	const char *json;
	bool ok;
	const char *names;
} name_cases[] = {
	{ "{\"io.containerd.runc.v2\":{\"path\":\"runc\"},\"runc\":{\"path\":\"runc\"}}\n", true,
	  "io.containerd.runc.v2 runc" },
	{ "{\"runc\":{\"path\":\"runc\"},\"runsc\":{\"path\":\"/usr/bin/runsc\"}}", true,
	  "runc runsc" },
	{ "{}", true, "" },
	{ "null", false, "" },
	{ "", false, "" },
	{ "<no value>", false, "" },
	{ "map[runc:{runc [] <nil>}]", false, "" },
	{ "[\"runc\"]", false, "" },
};

static void
test_runtime_names (void **state)
{
	char out[128];

	(void)state;
	for (size_t i = 0; i < N (name_cases); i++) {
		bool ok = ab_docker_runtime_names (name_cases[i].json, out, sizeof out);
		if (ok != name_cases[i].ok || strcmp (out, name_cases[i].names) != 0)
			fail_msg ("case %zu \"%s\": got %d \"%s\"", i, name_cases[i].json, ok, out);
	}
	/* A small buffer cuts at a whole name, never mid-name. */
	assert_true (ab_docker_runtime_names ("{\"aaaa\":{},\"bbbb\":{}}", out, 8));
	assert_string_equal (out, "aaaa");
	assert_false (ab_docker_runtime_names (NULL, out, sizeof out));
}

static void
test_first_line (void **state)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "", "" },
		{ "\n\n", "" },
		{ "one", "one" },
		{ "  one  \ntwo", "one" },
		{ "\ndocker: Error response from daemon: x.\nSee 'docker run --help'.\n",
		  "docker: Error response from daemon: x." },
	};
	char out[64];

	(void)state;
	for (size_t i = 0; i < N (cases); i++) {
		ab_docker_first_line (cases[i].in, out, sizeof out);
		assert_string_equal (out, cases[i].out);
	}
	ab_docker_first_line ("0123456789", out, 4);
	assert_string_equal (out, "012");
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_runtime_answers),
		cmocka_unit_test (test_runtime_names),
		cmocka_unit_test (test_first_line),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
