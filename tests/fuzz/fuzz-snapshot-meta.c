/* libFuzzer harness for backend/snapshot-meta.c's parser.  Besides "no
 * crash, no sanitizer report", it checks that what parses passes
 * ab_snapshot_meta_check (every range and form) and survives a round trip
 * through ab_snapshot_meta_to_json unchanged.  Build with clang-14
 * -fsanitize=fuzzer,address,undefined together with
 * src/backend/snapshot-meta.c, sha256-file.c and base/error.c, xalloc.c,
 * cleanup.c, fd.c, sys.c (-ljansson -lcrypto); run with -max_total_time=60
 * on a copy of tests/fuzz/corpus/snapshot-meta. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "backend/snapshot-meta.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	struct ab_snapshot_meta_s m, back;
	ab_error_t err = AB_ERROR_INIT;
	json_t *j;
	char *text;

	if (size > AB_SNAPSHOT_META_MAX)
		return 0;
	if (ab_snapshot_meta_parse ((const char *)data, size, &m, &err) < 0)
		return 0;
	if (ab_snapshot_meta_check (&m, &err) < 0)
		abort ();
	j = ab_snapshot_meta_to_json (&m, &err);
	if (!j)
		abort ();
	text = json_dumps (j, 0);
	json_decref (j);
	if (!text || ab_snapshot_meta_parse (text, strlen (text), &back, &err) < 0)
		abort ();
	free (text);
	if (memcmp (&m, &back, sizeof m) != 0)
		abort ();
	return 0;
}
