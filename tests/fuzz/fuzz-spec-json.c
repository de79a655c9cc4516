/* libFuzzer harness for the sandbox spec's JSON reader (src/spec/spec-json.c):
 * what `POST /v1/sandboxes` accepts from any API client.  Besides "no
 * crash, no sanitizer report, no leak" (also of a spec left half-applied by
 * a refusal), it checks:
 *   - a refusal is an AB_E_INVALID error with a message;
 *   - what is accepted writes out canonically and reads back to a spec that
 *     writes out the same (the daemon's state files re-adopt what it
 *     stored), and passes ab_spec_validate no differently the second time.
 * Input: byte 0 picks the flags (bit 0: AB_SPEC_JSON_INTERNAL, the keys only
 * agentbox itself writes); the rest is the JSON document.
 *
 * Built and run by `make fuzz` on a copy of tests/fuzz/corpus/spec-json. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "spec/spec-json.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static json_t *
read_back (const json_t *written, unsigned flags, int *valid)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	json_t *again;

	ab_spec_init (&spec);
	if (ab_spec_from_json (written, flags, &spec, &err) < 0)
		abort (); /* what we wrote, we must read */
	*valid = ab_spec_validate (&spec, &err) == 0;
	again = ab_spec_to_json (&spec, flags);
	ab_spec_free (&spec);
	return again;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	struct ab_spec_s spec;
	ab_error_t err = AB_ERROR_INIT;
	unsigned flags;
	json_t *j, *written, *again;
	int valid, valid_again;

	if (size < 1)
		return 0;
	flags = (data[0] & 1) ? AB_SPEC_JSON_INTERNAL : 0;
	j = json_loadb ((const char *)data + 1, size - 1, JSON_REJECT_DUPLICATES, NULL);
	if (!j)
		return 0;
	ab_spec_init (&spec);
	if (ab_spec_from_json (j, flags, &spec, &err) < 0) {
		if (err.kind != AB_E_INVALID || err.msg[0] == '\0')
			abort ();
		ab_spec_free (&spec);
		json_decref (j);
		return 0;
	}
	json_decref (j);
	valid = ab_spec_validate (&spec, &err) == 0;
	written = ab_spec_to_json (&spec, flags);
	ab_spec_free (&spec);
	again = read_back (written, flags, &valid_again);
	if (!json_equal (written, again) || valid != valid_again)
		abort ();
	json_decref (written);
	json_decref (again);
	return 0;
}
