/* libFuzzer harness for the E2B front end's Connect envelope parser
 * (src/daemon/e2b-envelope.c): what any client of `--e2b-listen` sends as
 * a server-streaming request body, and as the envelopes of a client
 * stream.  Besides "no crash, no sanitizer report, no leak", it checks:
 *   - a refusal is an error with a kind and a message, and leaves no
 *     message behind;
 *   - an accepted message is a JSON object;
 *   - a stated length beyond the limit is refused before anything is
 *     read for it (AB_E_LIMIT), and a compressed envelope always is;
 *   - the unary form accepts exactly one envelope of flags 0 whose length
 *     is the rest of the body.
 * Input: the body, read as one unary envelope and then walked as a
 * sequence of envelopes (limit: byte 0 of the input, in KiB).
 *
 * Built and run by `make fuzz` on a copy of tests/fuzz/corpus/e2b-envelope. */
#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/e2b-wire.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
refused (const ab_error_t *err, json_t *msg)
{
	if (err->kind == AB_E_NONE || err->msg[0] == '\0' || msg)
		abort ();
}

static void
unary (const uint8_t *data, size_t size)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *msg = NULL;

	if (ab_e2b_envelope_unary (data, size, &msg, &err) < 0) {
		refused (&err, msg);
		return;
	}
	if (!json_is_object (msg) || size < AB_E2B_ENVELOPE_HEAD || data[0] != 0)
		abort ();
	if (((size_t)data[1] << 24 | (size_t)data[2] << 16 | (size_t)data[3] << 8 | data[4])
	    != size - AB_E2B_ENVELOPE_HEAD)
		abort ();
	json_decref (msg);
}

static void
stream (const uint8_t *data, size_t size, size_t max)
{
	size_t off = 0;

	while (size - off >= AB_E2B_ENVELOPE_HEAD) {
		ab_error_t err = AB_ERROR_INIT;
		json_t *msg = NULL;
		size_t len;
		bool end;

		if (ab_e2b_envelope_head (data + off, max, &len, &end, &err) < 0) {
			refused (&err, NULL);
			if (!(data[off] & AB_E2B_FLAG_COMPRESSED) && err.kind != AB_E_LIMIT)
				abort ();
			return;
		}
		if (len > max || (data[off] & AB_E2B_FLAG_COMPRESSED))
			abort ();
		off += AB_E2B_ENVELOPE_HEAD;
		if (len > size - off || end)
			return; /* truncated, or the end of the stream */
		if (ab_e2b_envelope_json ((const char *)data + off, len, &msg, &err) < 0)
			refused (&err, msg);
		else if (!json_is_object (msg))
			abort ();
		json_decref (msg);
		off += len;
	}
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	unary (data, size);
	if (size > 0)
		stream (data + 1, size - 1, (size_t)data[0] * 1024);
	return 0;
}
