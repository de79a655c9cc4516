/* libFuzzer harness for the credential proxy's configuration parser
 * (src/net/credential-config.c): the file `credential-proxy serve
 * --config` and `run --credentials` read, which holds secrets.  Besides
 * "no crash, no sanitizer report, no leak", it checks:
 *   - a refusal is an AB_E_INVALID error with a message that never quotes
 *     a secret (the thread token or an injected header value);
 *   - an accepted configuration finds every upstream by its name, and its
 *     token matches itself.
 *
 * Built and run by `make fuzz` on a copy of tests/fuzz/corpus/credential-config. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/credential-config.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Whether msg contains s, for secrets long enough to mean anything. */
static bool
quotes (const char *msg, const json_t *s)
{
	return json_is_string (s) && json_string_length (s) >= 6
	       && strlen (json_string_value (s)) == json_string_length (s)
	       && strstr (msg, json_string_value (s));
}

static void
check_refusal (const uint8_t *data, size_t size, const ab_error_t *err)
{
	json_t *root, *ups, *up, *inj, *h;
	size_t i, k;

	if (err->kind != AB_E_INVALID || err->msg[0] == '\0')
		abort ();
	root = json_loadb ((const char *)data, size, 0, NULL);
	if (!root)
		return;
	if (quotes (err->msg, json_object_get (root, "threadToken")))
		abort ();
	ups = json_object_get (root, "upstreams");
	json_array_foreach (ups, i, up)
	{
		inj = json_object_get (up, "inject");
		json_array_foreach (inj, k, h) if (quotes (err->msg, json_object_get (h, "value")))
		        abort ();
	}
	json_decref (root);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cred_config_s *c = ab_cred_config_parse ((const char *)data, size, &err);

	if (!c) {
		check_refusal (data, size, &err);
		return 0;
	}
	for (size_t i = 0; i < c->n_ups; i++)
		if (ab_cred_config_find (c, c->ups[i].name, strlen (c->ups[i].name)) != &c->ups[i])
			abort ();
	if (!ab_cred_token_ok (c, c->token, strlen (c->token)))
		abort ();
	ab_cred_config_unref (c);
	return 0;
}
