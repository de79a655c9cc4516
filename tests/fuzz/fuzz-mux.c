/* libFuzzer harness for the microVM multiplexer's frame decoder
 * (src/proto/mux.c), which the agent runs in the guest's PID 1 on every
 * byte the host sends.  Besides "no crash, no sanitizer report" it checks:
 *   - a decoded frame lies inside the input and re-encodes to the same
 *     bytes (header, and the fixed payloads of HELLO and CREDIT);
 *   - a refused stream comes with a message;
 *   - the same input fed in two-byte pieces (as a stream reader sees it)
 *     yields the same sequence of frames.
 *
 * Build (from the repository root) and run for 60 s on a copy of the seeds:
 *   clang-14 -g -O1 -std=gnu11 -D_GNU_SOURCE -Isrc \
 *     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     tests/fuzz/fuzz-mux.c src/proto/mux.c src/base/error.c -o /tmp/fuzz-mux
 *   rm -rf /tmp/fuzz-mux-corpus && cp -r tests/fuzz/corpus/mux /tmp/fuzz-mux-corpus
 *   /tmp/fuzz-mux -max_total_time=60 -max_len=4096 /tmp/fuzz-mux-corpus */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/mux.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

#define MAX_FRAMES 1024

struct seen_s {
	uint8_t type;
	uint32_t id, len, value;
	size_t off;
};

static void
check_encoding (const uint8_t *at, const struct ab_mux_frame_s *f)
{
	uint8_t buf[AB_MUX_HEADER + 8];
	size_t n;

	if (f->type == AB_MUX_HELLO)
		n = ab_mux_put_hello (buf);
	else if (f->type == AB_MUX_CREDIT)
		n = ab_mux_put_credit (buf, f->id, f->value);
	else
		n = ab_mux_put_header (buf, f->type, f->id, f->len);
	if (memcmp (buf, at, n) != 0)
		abort ();
}

/* Whole input at once: the frames, in order, until need-more or refusal. */
static size_t
decode_all (const uint8_t *data, size_t size, struct seen_s *seen, int *last)
{
	size_t off = 0, n = 0, used;
	struct ab_mux_frame_s f;
	ab_error_t err = AB_ERROR_INIT;

	while (n < MAX_FRAMES
	       && (*last = ab_mux_decode (data + off, size - off, &f, &used, &err)) == 1) {
		if (used < AB_MUX_HEADER || used > size - off || used != AB_MUX_HEADER + f.len)
			abort ();
		if (f.len && (f.payload < data + off || f.payload + f.len > data + size))
			abort ();
		check_encoding (data + off, &f);
		seen[n++] = (struct seen_s){ f.type, f.id, f.len, f.value, off };
		off += used;
	}
	if (*last < 0 && err.msg[0] == '\0')
		abort ();
	return n;
}

/* As a stream: a buffer that grows two bytes at a time. */
static void
decode_stream (const uint8_t *data, size_t size, const struct seen_s *seen, size_t n_seen, int last)
{
	size_t start = 0, avail = 0, n = 0, used;
	struct ab_mux_frame_s f;
	ab_error_t err = AB_ERROR_INIT;
	int r = 0;

	while (avail < size || r == 1) {
		if (r != 1)
			avail = avail + 2 > size ? size : avail + 2;
		r = ab_mux_decode (data + start, avail - start, &f, &used, &err);
		if (r < 0)
			break;
		if (r == 1) {
			if (n >= n_seen || seen[n].off != start || seen[n].type != f.type
			    || seen[n].id != f.id || seen[n].len != f.len
			    || seen[n].value != f.value)
				abort ();
			n++;
			start += used;
			if (n == MAX_FRAMES)
				return;
		}
	}
	if (n != n_seen || (r < 0) != (last < 0))
		abort ();
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	static struct seen_s seen[MAX_FRAMES];
	int last = 0;
	size_t n = decode_all (data, size, seen, &last);

	decode_stream (data, size, seen, n, last);
	return 0;
}
