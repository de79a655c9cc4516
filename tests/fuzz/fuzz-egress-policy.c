/* libFuzzer harness for the egress policy's JSON loader
 * (src/policy/egress-policy-json.c): what `--policy FILE` and the daemon's
 * create requests hand to every proxy.  Besides "no crash, no sanitizer
 * report, no leak", it checks:
 *   - a refusal is an AB_E_INVALID error with a message, and it changes
 *     nothing: the policy decides a fixed set of hosts exactly as before
 *     (a document is applied whole or not at all);
 *   - an accepted document gives verdicts whose reasons are never empty.
 * Input: byte 0 picks the mode (bit 0: sandbox, else standalone); the rest
 * is the JSON document.
 *
 * Built and run by `make fuzz` on a copy of tests/fuzz/corpus/egress-policy. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "policy/egress-policy.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

/* Hosts of every class and kind, as a client would send them. */
static const char *const probes[] = {
	"example.com:443", "pypi.org",  "127.0.0.1:80", "[::1]:22",   "10.20.1.2:5000",
	"169.254.169.254", "localhost", "metadata:80",  "8.8.8.8:53", "[2001:db8::1]:443",
};
#define N_PROBES (sizeof probes / sizeof *probes)

/* One bit per probe: allowed or not. */
static uint32_t
verdicts (const struct ab_egress_policy_s *p)
{
	uint32_t bits = 0;

	for (size_t i = 0; i < N_PROBES; i++) {
		struct ab_hostport_s hp;
		struct ab_egress_verdict_s v;
		ab_error_t err = AB_ERROR_INIT;

		if (ab_hostport_parse (probes[i], 80, &hp, &err) < 0)
			abort (); /* the probes are well-formed */
		if (ab_egress_check_host (p, &hp, &v))
			bits |= 1u << i;
		if (v.reason[0] == '\0')
			abort ();
	}
	return bits;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	struct ab_egress_policy_s *p;
	ab_error_t err = AB_ERROR_INIT;
	char *doc;
	uint32_t before;

	if (size < 1)
		return 0;
	p = (data[0] & 1) ? ab_egress_policy_new_sandbox () : ab_egress_policy_new_standalone ();
	doc = strndup ((const char *)data + 1, size - 1);
	if (!p || !doc)
		abort ();
	before = verdicts (p);
	if (ab_egress_policy_load_string (p, doc, "fuzz", &err) < 0) {
		if (err.kind != AB_E_INVALID || err.msg[0] == '\0' || verdicts (p) != before)
			abort ();
	} else
		(void)verdicts (p);
	free (doc);
	ab_egress_policy_free (p);
	return 0;
}
