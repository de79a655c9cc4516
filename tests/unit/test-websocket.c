/* The WebSocket codec (src/net/websocket.c) and the client handshake
 * checks (src/net/preview-ws-handshake.c), table-driven: the examples of
 * RFC 6455 5.7, every length boundary (125/126/65535/65536), masking,
 * fragmentation with interleaved control frames, the close payload, UTF-8,
 * and each malformed frame the decoder must refuse with its close code. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/http-head.h"
#include "net/preview-ws-handshake.h"
#include "net/websocket.h"

#define MAX 1000000

/* Decode the whole of in (copied: the decoder unmasks in place). */
static ssize_t
decode (const uint8_t *in, size_t len, bool expect_masked, uint64_t max, struct ab_ws_frame_s *f,
        uint8_t *copy, uint16_t *code)
{
	memcpy (copy, in, len);
	return ab_ws_decode_frame (copy, len, expect_masked, max, f, code);
}

/* ---- RFC 6455 5.7 examples ------------------------------------------------ */

struct example_s {
	const char *name;
	uint8_t bytes[16];
	size_t len;
	bool masked;
	bool fin;
	uint8_t opcode;
	const char *payload;
};

static const struct example_s examples[] = {
	{ "unmasked text Hello",
	  { 0x81, 0x05, 'H', 'e', 'l', 'l', 'o' },
	  7,
	  false,
	  true,
	  AB_WS_OP_TEXT,
	  "Hello" },
	{ "masked text Hello",
	  { 0x81, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 },
	  11,
	  true,
	  true,
	  AB_WS_OP_TEXT,
	  "Hello" },
	{ "first fragment Hel",
	  { 0x01, 0x03, 'H', 'e', 'l' },
	  5,
	  false,
	  false,
	  AB_WS_OP_TEXT,
	  "Hel" },
	{ "last fragment lo", { 0x80, 0x02, 'l', 'o' }, 4, false, true, AB_WS_OP_CONT, "lo" },
	{ "unmasked ping",
	  { 0x89, 0x05, 'H', 'e', 'l', 'l', 'o' },
	  7,
	  false,
	  true,
	  AB_WS_OP_PING,
	  "Hello" },
	{ "masked pong",
	  { 0x8a, 0x85, 0x37, 0xfa, 0x21, 0x3d, 0x7f, 0x9f, 0x4d, 0x51, 0x58 },
	  11,
	  true,
	  true,
	  AB_WS_OP_PONG,
	  "Hello" },
};

static void
test_rfc_examples (void **state)
{
	for (size_t i = 0; i < sizeof examples / sizeof examples[0]; i++) {
		const struct example_s *ex = &examples[i];
		struct ab_ws_frame_s f;
		uint8_t copy[16];
		uint16_t code = 0;
		ssize_t n = decode (ex->bytes, ex->len, ex->masked, MAX, &f, copy, &code);

		printf ("  %s\n", ex->name);
		assert_int_equal (n, (ssize_t)ex->len);
		assert_int_equal (f.fin, ex->fin);
		assert_int_equal (f.opcode, ex->opcode);
		assert_int_equal (f.payload_len, strlen (ex->payload));
		assert_memory_equal (f.payload, ex->payload, strlen (ex->payload));
		/* Every strict prefix is "need more", never an error. */
		for (size_t k = 0; k < ex->len; k++)
			assert_int_equal (decode (ex->bytes, k, ex->masked, MAX, &f, copy, &code),
			                  0);
	}
}

static void
test_encode_masked_hello (void **state)
{
	static const uint8_t key[4] = { 0x37, 0xfa, 0x21, 0x3d };
	uint8_t out[AB_WS_MAX_HEADER + 5];
	size_t hl = ab_ws_encode_header (out, true, AB_WS_OP_TEXT, 5, key);

	memcpy (out + hl, "Hello", 5);
	ab_ws_mask (out + hl, 5, key, 0);
	assert_int_equal (hl, 6);
	assert_memory_equal (out, examples[1].bytes, 11);
}

/* ---- lengths ----------------------------------------------------------------- */

struct length_case_s {
	uint64_t len;
	size_t header_len;    /* unmasked */
	uint8_t len_bytes[9]; /* what follows the first byte */
};

static const struct length_case_s lengths[] = {
	{ 0, 2, { 0x00 } },
	{ 1, 2, { 0x01 } },
	{ 125, 2, { 0x7d } },
	{ 126, 4, { 0x7e, 0x00, 0x7e } },
	{ 127, 4, { 0x7e, 0x00, 0x7f } },
	{ 65535, 4, { 0x7e, 0xff, 0xff } },
	{ 65536, 10, { 0x7f, 0, 0, 0, 0, 0, 0x01, 0x00, 0x00 } },
	{ 100000, 10, { 0x7f, 0, 0, 0, 0, 0, 0x01, 0x86, 0xa0 } },
};

static void
test_lengths_round_trip (void **state)
{
	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
		const struct length_case_s *c = &lengths[i];
		static const uint8_t key[4] = { 1, 2, 3, 4 };
		size_t total = AB_WS_MAX_HEADER + (size_t)c->len;
		uint8_t *buf = malloc (total);
		uint8_t *payload = malloc ((size_t)c->len + 1);
		struct ab_ws_frame_s f;
		uint16_t code = 0;
		size_t hl;

		printf ("  length %llu\n", (unsigned long long)c->len);
		for (size_t k = 0; k < c->len; k++)
			payload[k] = (uint8_t)(k * 7 + 3);
		/* Unmasked (server to client): exact header bytes. */
		hl = ab_ws_encode_header (buf, true, AB_WS_OP_BINARY, c->len, NULL);
		assert_int_equal (hl, c->header_len);
		assert_int_equal (buf[0], 0x82);
		assert_memory_equal (buf + 1, c->len_bytes, hl - 1);
		memcpy (buf + hl, payload, (size_t)c->len);
		assert_int_equal (
		        ab_ws_decode_frame (buf, hl + (size_t)c->len, false, MAX, &f, &code),
		        (ssize_t)(hl + c->len));
		assert_int_equal (f.payload_len, c->len);
		assert_memory_equal (f.payload, payload, (size_t)c->len);
		/* Masked (client to server): 4 more header bytes, payload masked,
		 * and the decoder unmasks it. */
		hl = ab_ws_encode_header (buf, true, AB_WS_OP_BINARY, c->len, key);
		assert_int_equal (hl, c->header_len + 4);
		assert_int_equal (buf[1] & 0x80, 0x80);
		memcpy (buf + hl, payload, (size_t)c->len);
		ab_ws_mask (buf + hl, (size_t)c->len, key, 0);
		if (c->len > 4)
			assert_memory_not_equal (buf + hl, payload, (size_t)c->len);
		assert_int_equal (
		        ab_ws_decode_frame (buf, hl + (size_t)c->len, true, MAX, &f, &code),
		        (ssize_t)(hl + c->len));
		assert_memory_equal (f.payload, payload, (size_t)c->len);
		/* One byte short is still "need more". */
		assert_int_equal (
		        ab_ws_decode_frame (buf, hl + (size_t)c->len - 1, true, MAX, &f, &code), 0);
		free (buf);
		free (payload);
	}
}

static void
test_mask_in_pieces (void **state)
{
	static const uint8_t key[4] = { 0xde, 0xad, 0xbe, 0xef };
	uint8_t a[37], b[37];

	for (size_t i = 0; i < sizeof a; i++)
		a[i] = b[i] = (uint8_t)i;
	ab_ws_mask (a, sizeof a, key, 0);
	ab_ws_mask (b, 5, key, 0);
	ab_ws_mask (b + 5, 11, key, 5);
	ab_ws_mask (b + 16, 21, key, 16);
	assert_memory_equal (a, b, sizeof a);
	/* Masking twice is the identity. */
	ab_ws_mask (a, sizeof a, key, 0);
	for (size_t i = 0; i < sizeof a; i++)
		assert_int_equal (a[i], i);
}

/* ---- frames the decoder refuses -------------------------------------------- */

struct bad_case_s {
	const char *name;
	uint8_t bytes[16];
	size_t len;
	bool expect_masked;
	uint64_t max;
	uint16_t code;
};

static const struct bad_case_s bad_frames[] = {
	{ "RSV1 set", { 0xc1, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "RSV2 set", { 0xa2, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "RSV3 set", { 0x92, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "reserved data opcode 3", { 0x83, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "reserved data opcode 7", { 0x87, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "reserved control opcode 0xB", { 0x8b, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "reserved control opcode 0xF", { 0x8f, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "fragmented ping", { 0x09, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "fragmented close", { 0x08, 0x00 }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "ping with 126 bytes", { 0x89, 0x7e, 0x00, 0x7e }, 4, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "close with 64-bit length", { 0x88, 0x7f }, 2, false, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "masked frame from a server",
	  { 0x81, 0x80, 1, 2, 3, 4 },
	  6,
	  false,
	  MAX,
	  AB_WS_CLOSE_PROTOCOL },
	{ "unmasked frame from a client", { 0x81, 0x00 }, 2, true, MAX, AB_WS_CLOSE_PROTOCOL },
	{ "16-bit length holding 125",
	  { 0x82, 0x7e, 0x00, 0x7d },
	  4,
	  false,
	  MAX,
	  AB_WS_CLOSE_PROTOCOL },
	{ "64-bit length holding 65535",
	  { 0x82, 0x7f, 0, 0, 0, 0, 0, 0, 0xff, 0xff },
	  10,
	  false,
	  MAX,
	  AB_WS_CLOSE_PROTOCOL },
	{ "64-bit length with the top bit set",
	  { 0x82, 0x7f, 0x80, 0, 0, 0, 0, 0, 0, 0 },
	  10,
	  false,
	  (uint64_t)-1,
	  AB_WS_CLOSE_PROTOCOL },
	{ "data frame over the limit (from the header alone)",
	  { 0x82, 0x7e, 0x01, 0x00 },
	  4,
	  false,
	  255,
	  AB_WS_CLOSE_TOO_BIG },
	{ "64-bit length over the limit",
	  { 0x82, 0x7f, 0, 0, 0, 1, 0, 0, 0, 0 },
	  10,
	  false,
	  MAX,
	  AB_WS_CLOSE_TOO_BIG },
	{ "continuation over the limit",
	  { 0x00, 0x7e, 0x01, 0x00 },
	  4,
	  false,
	  100,
	  AB_WS_CLOSE_TOO_BIG },
};

static void
test_bad_frames (void **state)
{
	for (size_t i = 0; i < sizeof bad_frames / sizeof bad_frames[0]; i++) {
		const struct bad_case_s *c = &bad_frames[i];
		struct ab_ws_frame_s f;
		uint8_t copy[16];
		uint16_t code = 0;

		printf ("  %s\n", c->name);
		assert_int_equal (
		        decode (c->bytes, c->len, c->expect_masked, c->max, &f, copy, &code), -1);
		assert_int_equal (code, c->code);
	}
}

/* The header alone: its length from the first two bytes, then the frame's
 * fields before any payload byte, masked and not. */
static void
test_header_only (void **state)
{
	static const uint8_t key[4] = { 1, 2, 3, 4 };

	for (size_t i = 0; i < sizeof lengths / sizeof lengths[0]; i++) {
		const struct length_case_s *c = &lengths[i];
		uint8_t buf[AB_WS_MAX_HEADER];
		struct ab_ws_frame_s f;
		uint16_t code = 0;

		for (int masked = 0; masked <= 1; masked++) {
			size_t hl = ab_ws_encode_header (buf, false, AB_WS_OP_TEXT, c->len,
			                                 masked ? key : NULL);
			assert_int_equal (ab_ws_header_len (buf), hl);
			assert_int_equal (ab_ws_decode_header (buf, hl - 1, masked, MAX, &f, &code),
			                  0);
			assert_int_equal (ab_ws_decode_header (buf, hl, masked, MAX, &f, &code),
			                  (ssize_t)hl);
			assert_int_equal (f.payload_len, c->len);
			assert_int_equal (f.opcode, AB_WS_OP_TEXT);
			assert_false (f.fin);
			assert_int_equal (f.masked, masked);
			assert_null (f.payload);
			if (masked)
				assert_memory_equal (f.mask, key, 4);
			/* too big for the limit: refused from the header */
			if (c->len > 0) {
				assert_int_equal (ab_ws_decode_header (buf, hl, masked, c->len - 1,
				                                       &f, &code),
				                  -1);
				assert_int_equal (code, AB_WS_CLOSE_TOO_BIG);
			}
		}
	}
}

static void
test_limit_is_inclusive (void **state)
{
	uint8_t buf[4 + 256];
	struct ab_ws_frame_s f;
	uint16_t code = 0;
	size_t hl = ab_ws_encode_header (buf, true, AB_WS_OP_BINARY, 256, NULL);

	memset (buf + hl, 'x', 256);
	assert_int_equal (ab_ws_decode_frame (buf, hl + 256, false, 256, &f, &code),
	                  (ssize_t)(hl + 256));
	assert_int_equal (ab_ws_decode_frame (buf, hl + 256, false, 255, &f, &code), -1);
	assert_int_equal (code, AB_WS_CLOSE_TOO_BIG);
}

/* ---- reassembly ------------------------------------------------------------------ */

/* Build an unmasked frame into buf; returns its length. */
static size_t
frame (uint8_t *buf, bool fin, uint8_t op, const void *p, size_t n)
{
	size_t hl = ab_ws_encode_header (buf, fin, op, n, NULL);
	memcpy (buf + hl, p, n);
	return hl + n;
}

/* Feed one frame; returns the assembler's verdict and fills ev/code. */
static int
feed (struct ab_ws_assembler_s *a, bool fin, uint8_t op, const void *p, size_t n,
      struct ab_ws_event_s *ev, uint16_t *code)
{
	static uint8_t buf[AB_WS_MAX_HEADER + 4096];
	struct ab_ws_frame_s f;
	size_t len = frame (buf, fin, op, p, n);

	assert_int_equal (ab_ws_decode_frame (buf, len, false, MAX, &f, code), (ssize_t)len);
	return ab_ws_assemble (a, &f, ev, code);
}

static void
test_fragmentation (void **state)
{
	struct ab_ws_assembler_s a;
	struct ab_ws_event_s ev;
	uint16_t code = 0;

	ab_ws_assembler_init (&a, 100);
	assert_int_equal (feed (&a, false, AB_WS_OP_TEXT, "Hel", 3, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_NONE);
	/* 5.4: control frames may come between fragments. */
	assert_int_equal (feed (&a, true, AB_WS_OP_PING, "p", 1, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_PING);
	assert_int_equal (ev.len, 1);
	assert_int_equal (feed (&a, false, AB_WS_OP_CONT, "", 0, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_NONE);
	assert_int_equal (feed (&a, true, AB_WS_OP_PONG, "", 0, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_PONG);
	assert_int_equal (feed (&a, true, AB_WS_OP_CONT, "lo", 2, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_MESSAGE);
	assert_int_equal (ev.opcode, AB_WS_OP_TEXT);
	assert_int_equal (ev.len, 5);
	assert_memory_equal (ev.data, "Hello", 5);
	/* A new message after it starts clean. */
	assert_int_equal (feed (&a, false, AB_WS_OP_BINARY, "\x00\x01", 2, &ev, &code), 0);
	assert_int_equal (feed (&a, true, AB_WS_OP_CONT, "\x02", 1, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_MESSAGE);
	assert_int_equal (ev.opcode, AB_WS_OP_BINARY);
	assert_int_equal (ev.len, 3);
	assert_memory_equal (ev.data, "\x00\x01\x02", 3);
	ab_ws_assembler_free (&a);
}

static void
test_fragmentation_errors (void **state)
{
	struct ab_ws_assembler_s a;
	struct ab_ws_event_s ev;
	uint16_t code = 0;
	char big[60];

	memset (big, 'a', sizeof big);
	ab_ws_assembler_init (&a, 100);
	/* A continuation with no message to continue. */
	assert_int_equal (feed (&a, true, AB_WS_OP_CONT, "x", 1, &ev, &code), -1);
	assert_int_equal (code, AB_WS_CLOSE_PROTOCOL);
	ab_ws_assembler_free (&a);

	ab_ws_assembler_init (&a, 100);
	/* A new data frame inside a fragmented message. */
	assert_int_equal (feed (&a, false, AB_WS_OP_TEXT, "x", 1, &ev, &code), 0);
	assert_int_equal (feed (&a, true, AB_WS_OP_BINARY, "y", 1, &ev, &code), -1);
	assert_int_equal (code, AB_WS_CLOSE_PROTOCOL);
	ab_ws_assembler_free (&a);

	ab_ws_assembler_init (&a, 100);
	/* Fragments that add up past the limit: 60 + 40 fits, 60 + 41 does not. */
	assert_int_equal (feed (&a, false, AB_WS_OP_BINARY, big, 60, &ev, &code), 0);
	assert_int_equal (feed (&a, true, AB_WS_OP_CONT, big, 40, &ev, &code), 0);
	assert_int_equal (ev.len, 100);
	assert_int_equal (feed (&a, false, AB_WS_OP_BINARY, big, 60, &ev, &code), 0);
	assert_int_equal (feed (&a, true, AB_WS_OP_CONT, big, 41, &ev, &code), -1);
	assert_int_equal (code, AB_WS_CLOSE_TOO_BIG);
	ab_ws_assembler_free (&a);
}

static void
test_text_must_be_utf8 (void **state)
{
	struct ab_ws_assembler_s a;
	struct ab_ws_event_s ev;
	uint16_t code = 0;

	ab_ws_assembler_init (&a, 100);
	assert_int_equal (feed (&a, true, AB_WS_OP_TEXT, "\xff", 1, &ev, &code), -1);
	assert_int_equal (code, AB_WS_CLOSE_BAD_DATA);
	/* Binary messages carry any bytes. */
	assert_int_equal (feed (&a, true, AB_WS_OP_BINARY, "\xff", 1, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_MESSAGE);
	/* A character split across fragments is fine once whole (U+20AC). */
	assert_int_equal (feed (&a, false, AB_WS_OP_TEXT, "\xe2\x82", 2, &ev, &code), 0);
	assert_int_equal (feed (&a, true, AB_WS_OP_CONT, "\xac", 1, &ev, &code), 0);
	assert_int_equal (ev.kind, AB_WS_EV_MESSAGE);
	assert_int_equal (ev.len, 3);
	/* ... and refused if the message ends inside it. */
	assert_int_equal (feed (&a, false, AB_WS_OP_TEXT, "ok\xe2", 3, &ev, &code), 0);
	assert_int_equal (feed (&a, true, AB_WS_OP_CONT, "\x82", 1, &ev, &code), -1);
	assert_int_equal (code, AB_WS_CLOSE_BAD_DATA);
	ab_ws_assembler_free (&a);
}

/* ---- close frames -------------------------------------------------------------------- */

struct close_case_s {
	const char *name;
	const char *payload;
	size_t len;
	int ok;        /* 0 accepted, else the close code to fail with */
	uint16_t code; /* when accepted */
	const char *reason;
};

static const struct close_case_s close_cases[] = {
	{ "empty: no status", "", 0, 0, AB_WS_CLOSE_NO_STATUS, "" },
	{ "1000 with a reason",
	  "\x03\xe8"
	  "bye",
	  5, 0, 1000, "bye" },
	{ "1001 going away", "\x03\xe9", 2, 0, 1001, "" },
	{ "1011 server error", "\x03\xf3", 2, 0, 1011, "" },
	{ "3000 registered", "\x0b\xb8", 2, 0, 3000, "" },
	{ "4999 private", "\x13\x87", 2, 0, 4999, "" },
	{ "UTF-8 reason", "\x03\xe8\xe2\x82\xac", 5, 0, 1000, "\xe2\x82\xac" },
	{ "one byte", "\x03", 1, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "999", "\x03\xe7", 2, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "1004 reserved", "\x03\xec", 2, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "1005 never sent", "\x03\xed", 2, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "1006 never sent", "\x03\xee", 2, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "1015 never sent", "\x03\xf7", 2, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "2999 reserved", "\x0b\xb7", 2, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "5000", "\x13\x88", 2, AB_WS_CLOSE_PROTOCOL, 0, NULL },
	{ "reason not UTF-8", "\x03\xe8\xc0\xaf", 4, AB_WS_CLOSE_BAD_DATA, 0, NULL },
};

static void
test_close_frames (void **state)
{
	for (size_t i = 0; i < sizeof close_cases / sizeof close_cases[0]; i++) {
		const struct close_case_s *c = &close_cases[i];
		struct ab_ws_assembler_s a;
		struct ab_ws_event_s ev;
		uint16_t code = 0;
		int r;

		printf ("  %s\n", c->name);
		ab_ws_assembler_init (&a, 100);
		r = feed (&a, true, AB_WS_OP_CLOSE, c->payload, c->len, &ev, &code);
		if (c->ok == 0) {
			assert_int_equal (r, 0);
			assert_int_equal (ev.kind, AB_WS_EV_CLOSE);
			assert_int_equal (ev.close_code, c->code);
			assert_int_equal (ev.reason_len, strlen (c->reason));
			assert_memory_equal (ev.reason, c->reason, ev.reason_len);
		} else {
			assert_int_equal (r, -1);
			assert_int_equal (code, c->ok);
		}
		ab_ws_assembler_free (&a);
	}
}

/* ---- UTF-8 ------------------------------------------------------------------------------ */

struct utf8_case_s {
	const char *name;
	const char *s;
	size_t len;
	bool valid;
};

static const struct utf8_case_s utf8_cases[] = {
	{ "ASCII", "hello", 5, true },
	{ "empty", "", 0, true },
	{ "NUL is a character", "\x00", 1, true },
	{ "2 bytes", "\xc3\xa9", 2, true },
	{ "3 bytes", "\xe2\x82\xac", 3, true },
	{ "4 bytes", "\xf0\x9f\x98\x80", 4, true },
	{ "U+10FFFF", "\xf4\x8f\xbf\xbf", 4, true },
	{ "U+D7FF", "\xed\x9f\xbf", 3, true },
	{ "lone continuation", "\x80", 1, false },
	{ "overlong NUL", "\xc0\x80", 2, false },
	{ "overlong slash", "\xc1\xaf", 2, false },
	{ "overlong 3-byte", "\xe0\x80\xaf", 3, false },
	{ "overlong 4-byte", "\xf0\x80\x80\xaf", 4, false },
	{ "surrogate", "\xed\xa0\x80", 3, false },
	{ "above U+10FFFF", "\xf4\x90\x80\x80", 4, false },
	{ "0xF5", "\xf5\x80\x80\x80", 4, false },
	{ "0xFF", "\xff", 1, false },
	{ "truncated 2-byte", "\xc3", 1, false },
	{ "truncated 4-byte", "\xf0\x9f\x98", 3, false },
	{ "bad continuation", "\xe2\x28\xa1", 3, false },
};

static void
test_utf8 (void **state)
{
	for (size_t i = 0; i < sizeof utf8_cases / sizeof utf8_cases[0]; i++) {
		printf ("  %s\n", utf8_cases[i].name);
		assert_int_equal (
		        ab_ws_utf8_valid ((const uint8_t *)utf8_cases[i].s, utf8_cases[i].len),
		        utf8_cases[i].valid);
	}
}

/* ---- the opening handshake ----------------------------------------------------------- */

static void
test_accept_key (void **state)
{
	char accept[AB_WS_ACCEPT_LEN + 1];
	char k1[AB_WS_KEY_LEN + 1], k2[AB_WS_KEY_LEN + 1];

	/* RFC 6455 1.3. */
	ab_ws_accept_key ("dGhlIHNhbXBsZSBub25jZQ==", 24, accept);
	assert_string_equal (accept, "s3pPLMBiTxaQ9kYGzzhZRbK+xOo=");
	assert_int_equal (ab_ws_make_key (k1), 0);
	assert_int_equal (ab_ws_make_key (k2), 0);
	assert_int_equal (strlen (k1), AB_WS_KEY_LEN);
	assert_string_equal (k1 + 22, "==");
	assert_string_not_equal (k1, k2);
}

static void
test_request_format (void **state)
{
	struct ab_preview_header_s extra[] = { { (char *)"Origin", (char *)"http://x" } };
	struct ab_preview_headers_s h = { extra, 1 };
	struct ab_iobuf_s out = { 0 };

	ab_ws_format_request (&out, "localhost:5173", "/hmr?x=1", "dGhlIHNhbXBsZSBub25jZQ==", &h);
	ab_iobuf_append (&out, "", 1);
	assert_string_equal (ab_iobuf_peek (&out), "GET /hmr?x=1 HTTP/1.1\r\n"
	                                           "Host: localhost:5173\r\n"
	                                           "Upgrade: websocket\r\n"
	                                           "Connection: Upgrade\r\n"
	                                           "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
	                                           "Sec-WebSocket-Version: 13\r\n"
	                                           "Origin: http://x\r\n"
	                                           "\r\n");
	ab_iobuf_free (&out);
}

struct response_case_s {
	const char *name;
	const char *head;
	bool ok;
};

#define ACC "Sec-WebSocket-Accept: s3pPLMBiTxaQ9kYGzzhZRbK+xOo=\r\n"
static const struct response_case_s responses[] = {
	{ "the RFC's answer",
	  "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" ACC
	  "\r\n",
	  true },
	{ "case and lists",
	  "HTTP/1.1 101 OK\r\nupgrade: WebSocket\r\nconnection: keep-alive, upgrade\r\n" ACC "\r\n",
	  true },
	{ "200 instead of 101",
	  "HTTP/1.1 200 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" ACC
	  "Content-Length: 0\r\n\r\n",
	  false },
	{ "no Upgrade", "HTTP/1.1 101 OK\r\nConnection: Upgrade\r\n" ACC "\r\n", false },
	{ "Upgrade: h2c", "HTTP/1.1 101 OK\r\nUpgrade: h2c\r\nConnection: Upgrade\r\n" ACC "\r\n",
	  false },
	{ "no Connection: upgrade",
	  "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: keep-alive\r\n" ACC "\r\n", false },
	{ "no Accept", "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n\r\n",
	  false },
	{ "wrong Accept",
	  "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Accept: "
	  "s3pPLMBiTxaQ9kYGzzhZRbK+xOO=\r\n\r\n",
	  false },
	{ "two Accepts",
	  "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" ACC ACC "\r\n",
	  false },
	{ "an extension we never offered",
	  "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" ACC
	  "Sec-WebSocket-Extensions: permessage-deflate\r\n\r\n",
	  false },
	{ "a subprotocol we never offered",
	  "HTTP/1.1 101 OK\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n" ACC
	  "Sec-WebSocket-Protocol: chat\r\n\r\n",
	  false },
};

static void
test_check_response (void **state)
{
	const struct ab_http_limits_s lim = { .max_head = 4096, .max_fields = 16 };

	for (size_t i = 0; i < sizeof responses / sizeof responses[0]; i++) {
		struct ab_http_field_s fields[16];
		struct ab_http_head_s h = { .fields = fields };
		struct ab_http_error_s e;
		const char *why = NULL;
		const char *in = responses[i].head;

		printf ("  %s\n", responses[i].name);
		assert_int_equal (ab_http_parse_response (in, strlen (in), &lim, false, &h, &e), 0);
		assert_int_equal (ab_ws_check_response (&h, "dGhlIHNhbXBsZSBub25jZQ==", &why) == 0,
		                  responses[i].ok);
		if (!responses[i].ok)
			assert_non_null (why);
	}
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_rfc_examples),
		cmocka_unit_test (test_encode_masked_hello),
		cmocka_unit_test (test_lengths_round_trip),
		cmocka_unit_test (test_mask_in_pieces),
		cmocka_unit_test (test_bad_frames),
		cmocka_unit_test (test_limit_is_inclusive),
		cmocka_unit_test (test_header_only),
		cmocka_unit_test (test_fragmentation),
		cmocka_unit_test (test_fragmentation_errors),
		cmocka_unit_test (test_text_must_be_utf8),
		cmocka_unit_test (test_close_frames),
		cmocka_unit_test (test_utf8),
		cmocka_unit_test (test_accept_key),
		cmocka_unit_test (test_request_format),
		cmocka_unit_test (test_check_response),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
