/* Unit tests for session/cred-setup: the entries a daemon's create request
 * carries become a proxy configuration (the proxy's own validation, errors
 * that never quote a value) and the sandbox's variables.  Table driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "session/cred-setup.h"

#define N(a)   (sizeof (a) / sizeof (a)[0])
#define SECRET "sk-SECRET-unit-3f9a"

static const struct {
	const char *ups; /* the "credentials" array */
	bool ok;
} entry_cases[] = {
	{ "[{\"name\":\"openai\",\"baseUrl\":\"https://api.example/v1\","
	  "\"inject\":[{\"header\":\"authorization\",\"value\":\"Bearer " SECRET "\"}]}]",
	  true },
	{ "[{\"name\":\"a\",\"baseUrl\":\"https://a.example\"},"
	  "{\"name\":\"b.c-d\",\"baseUrl\":\"https://b.example/x\"}]",
	  true },
	/* plain http upstream, a value with a newline, no name, a bad name */
	{ "[{\"name\":\"o\",\"baseUrl\":\"http://x.example\","
	  "\"inject\":[{\"header\":\"a\",\"value\":\"" SECRET "\"}]}]",
	  false },
	{ "[{\"name\":\"o\",\"baseUrl\":\"https://x.example\","
	  "\"inject\":[{\"header\":\"a\",\"value\":\"" SECRET "\\n\"}]}]",
	  false },
	{ "[{\"baseUrl\":\"https://x.example\"}]", false },
	{ "[{\"name\":\"a/b\",\"baseUrl\":\"https://x.example\"}]", false },
};

static void
test_entries (void **state)
{
	for (size_t i = 0; i < N (entry_cases); i++) {
		ab_error_t err = AB_ERROR_INIT;
		json_t *ups = json_loads (entry_cases[i].ups, 0, NULL);
		struct ab_cred_config_s *c;

		assert_non_null (ups);
		c = ab_cred_config_from_entries ("tok", ups, &err);
		json_decref (ups);
		if (entry_cases[i].ok) {
			assert_non_null (c);
			ab_cred_config_unref (c);
		} else {
			assert_null (c);
			assert_int_not_equal (err.kind, AB_E_NONE);
			assert_null (strstr (err.msg, SECRET));
		}
	}
}

static const char *
env_value (const struct ab_spec_s *s, const char *key)
{
	size_t n = strlen (key);
	for (char **e = s->env; e && *e; e++)
		if (strncmp (*e, key, n) == 0 && (*e)[n] == '=')
			return *e + n + 1;
	return NULL;
}

static const struct {
	const char *key, *value;
} env_cases[] = {
	{ "AGENTBOX_CREDENTIAL_TOKEN", "tok" },
	{ "AGENTBOX_OPENAI_BASE_URL", "http://127.0.0.1:8288/openai" },
	{ "OPENAI_BASE_URL", "http://127.0.0.1:8288/openai/v1" },
	{ "OPENAI_API_KEY", "tok" },
	{ "ANTHROPIC_BASE_URL", "http://127.0.0.1:8288/anthropic" },
	{ "ANTHROPIC_AUTH_TOKEN", "tok" },
	{ "AGENTBOX_MY_GIT_HOST_BASE_URL", "http://127.0.0.1:8288/my-git.host" },
};

static void
test_env (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *ups =
	        json_loads ("[{\"name\":\"openai\",\"baseUrl\":\"https://o.example\"},"
	                    "{\"name\":\"anthropic\",\"baseUrl\":\"https://a.example\"},"
	                    "{\"name\":\"my-git.host\",\"baseUrl\":\"https://g.example/api\"}]",
	                    0, NULL);
	struct ab_cred_config_s *c = ab_cred_config_from_entries ("tok", ups, &err);
	struct ab_spec_s spec;

	assert_non_null (c);
	ab_spec_init (&spec);
	ab_cred_spec_env (&spec, c, "tok");
	for (size_t i = 0; i < N (env_cases); i++)
		assert_string_equal (env_value (&spec, env_cases[i].key), env_cases[i].value);
	ab_spec_free (&spec);
	ab_cred_config_unref (c);
	json_decref (ups);
}

static void
test_token (void **state)
{
	char a[AB_CRED_TOKEN_HEX], b[AB_CRED_TOKEN_HEX];
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (ab_cred_token_new (a, &err), 0);
	assert_int_equal (ab_cred_token_new (b, &err), 0);
	assert_int_equal (strlen (a), 64);
	assert_int_equal (strspn (a, "0123456789abcdef"), 64);
	assert_string_not_equal (a, b);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_entries),
		cmocka_unit_test (test_env),
		cmocka_unit_test (test_token),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
