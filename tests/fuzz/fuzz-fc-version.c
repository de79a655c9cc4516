/* libFuzzer harness for backend/firecracker-version.c.  Besides "no crash,
 * no sanitizer report", it checks:
 *   - what parses formats back to text that parses to the same version;
 *   - precedence is a total order on what parses (cmp antisymmetric and
 *     reflexive) and ab_firecracker_version_ok agrees with cmp to the minimum;
 *   - a refusal's message holds no control byte from the input.
 * Build with clang-14 -fsanitize=fuzzer,address,undefined together with
 * src/backend/firecracker-version.c, tool.c and base/error.c; run with
 * -max_total_time=60 on a copy of tests/fuzz/corpus/fc-version. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "backend/firecracker-version.h"

#define MAX_INPUT 512

static struct ab_fc_version_s previous;
static int have_previous;

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	char text[MAX_INPUT + 1], again[160];
	struct ab_fc_version_s v, w;
	ab_error_t err = AB_ERROR_INIT;

	if (size > MAX_INPUT)
		return 0;
	memcpy (text, data, size);
	text[size] = '\0';
	if (ab_firecracker_version_parse (text, &v, &err) < 0) {
		for (const char *p = err.msg; *p; p++)
			if ((unsigned char)*p < 0x20)
				abort ();
		return 0;
	}
	if (strncmp (text, "Firecracker v", 13) != 0 && strncmp (text, "firecracker v", 13) != 0)
		abort ();
	snprintf (again, sizeof again, "Firecracker v");
	ab_firecracker_version_format (&v, again + 13, sizeof again - 13);
	if (ab_firecracker_version_parse (again, &w, &err) < 0 || memcmp (&v, &w, sizeof v) != 0)
		abort ();
	if (ab_firecracker_version_cmp (&v, &v) != 0)
		abort ();
	if (ab_firecracker_version_ok (&v)
	    != (ab_firecracker_version_cmp (&v, &ab_firecracker_version_min) >= 0))
		abort ();
	if (have_previous) {
		int a = ab_firecracker_version_cmp (&v, &previous);
		int b = ab_firecracker_version_cmp (&previous, &v);
		if ((a > 0) != (b < 0) || (a == 0) != (b == 0))
			abort ();
	}
	previous = v;
	have_previous = 1;
	return 0;
}
