/* libFuzzer harness for the WebSocket codec (src/net/websocket.c): the
 * bytes a server in the sandbox sends the preview bridge.  Besides "no
 * crash, no sanitizer report", it checks what the relay relies on:
 *   - a decoded frame lies inside the buffer, its payload within the limit
 *     (data) or 125 bytes (control), and a text message is valid UTF-8;
 *   - a frame re-encoded with ab_ws_encode_header decodes to the same
 *     frame (what we send means what we meant);
 *   - the reassembly buffer never grows past the message limit.
 * The first byte picks the direction (masked or not) and the limit.
 *
 * Build (from the repository root) and run for 60 s on a copy of the seeds:
 *   clang-14 -g -O1 -std=gnu11 -D_GNU_SOURCE -Isrc \
 *     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     tests/fuzz/fuzz-websocket.c src/net/websocket.c src/net/iobuf.c \
 *     src/base/base64.c src/base/cleanup.c src/base/xalloc.c -lcrypto \
 *     -o /tmp/fuzz-websocket
 *   rm -rf /tmp/fuzz-ws-corpus && cp -r tests/fuzz/corpus/websocket /tmp/fuzz-ws-corpus
 *   /tmp/fuzz-websocket -max_total_time=60 -max_len=4096 /tmp/fuzz-ws-corpus */
#include <stdlib.h>
#include <string.h>

#include "net/websocket.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
check_round_trip (const struct ab_ws_frame_s *f, bool masked, uint64_t max)
{
	uint8_t *buf = malloc (AB_WS_MAX_HEADER + (size_t)f->payload_len);
	static const uint8_t key[4] = { 9, 8, 7, 6 };
	struct ab_ws_frame_s g;
	uint16_t code = 0;
	size_t hl =
	        ab_ws_encode_header (buf, f->fin, f->opcode, f->payload_len, masked ? key : NULL);
	ssize_t n;

	memcpy (buf + hl, f->payload, (size_t)f->payload_len);
	if (masked)
		ab_ws_mask (buf + hl, (size_t)f->payload_len, key, 0);
	n = ab_ws_decode_frame (buf, hl + (size_t)f->payload_len, masked, max, &g, &code);
	if (n != (ssize_t)(hl + f->payload_len) || g.opcode != f->opcode || g.fin != f->fin
	    || g.payload_len != f->payload_len
	    || memcmp (g.payload, f->payload, (size_t)f->payload_len) != 0)
		abort ();
	free (buf);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	struct ab_ws_assembler_s a;
	uint8_t *buf;
	size_t off = 1;
	bool masked;
	uint64_t max;

	if (size < 1)
		return 0;
	masked = (data[0] & 1) != 0;
	max = (uint64_t)(data[0] >> 1) * 8; /* 0..1016: small, so limits are hit */
	buf = malloc (size);
	memcpy (buf, data, size);
	ab_ws_assembler_init (&a, max);
	while (off < size) {
		struct ab_ws_frame_s f;
		struct ab_ws_event_s ev;
		uint16_t code = 0;
		ssize_t n = ab_ws_decode_frame (buf + off, size - off, masked, max, &f, &code);

		if (n <= 0)
			break;
		if ((size_t)n > size - off || f.payload + f.payload_len != buf + off + n)
			abort ();
		if ((f.opcode & 8) ? f.payload_len > AB_WS_MAX_CONTROL : f.payload_len > max)
			abort ();
		check_round_trip (&f, masked, max);
		if (ab_ws_assemble (&a, &f, &ev, &code) < 0)
			break;
		if (ab_iobuf_len (&a.buf) > max)
			abort ();
		if (ev.kind == AB_WS_EV_MESSAGE && ev.opcode == AB_WS_OP_TEXT
		    && !ab_ws_utf8_valid (ev.data, ev.len))
			abort ();
		off += (size_t)n;
	}
	ab_ws_assembler_free (&a);
	free (buf);
	return 0;
}
