/* Unit tests for the egress stream path's pure parts: the protocol
 * additions (EGRESS_LISTEN with EGRESS_STREAM and TIMEOUT_MS, EGRESS_READY,
 * EGRESS_OPEN, OK with PORT) round-trip through src/proto/msg.c and every
 * malformed form is refused; and the choice between fd passing and streams
 * (src/session/forward.c) follows the backend and the test override. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/msg.h"
#include "session/forward.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

/* A valid message of each new form. */
static void
sample (uint16_t type, struct ab_msg_s *m)
{
	ab_msg_init (m, type);
	switch (type) {
	case AB_MSG_EGRESS_LISTEN:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 4);
		ab_msg_set (m, port, AB_TAG_PORT, 3128);
		ab_msg_set (m, egress_stream, AB_TAG_EGRESS_STREAM, true);
		ab_msg_set (m, timeout_ms, AB_TAG_TIMEOUT_MS, 10000);
		break;
	case AB_MSG_EGRESS_READY:
		ab_msg_set (m, port, AB_TAG_PORT, 8288);
		ab_msg_set (m, conn, AB_TAG_CONN, 0xfffffffeU);
		break;
	case AB_MSG_EGRESS_OPEN:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 9);
		ab_msg_set (m, conn, AB_TAG_CONN, 77);
		ab_msg_set (m, channel, AB_TAG_CHANNEL, 3);
		break;
	case AB_MSG_OK:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 9);
		ab_msg_set (m, port, AB_TAG_PORT, 3128);
		break;
	default: break;
	}
}

static const uint16_t types[] = { AB_MSG_EGRESS_LISTEN, AB_MSG_EGRESS_READY, AB_MSG_EGRESS_OPEN,
	                          AB_MSG_OK };

static void
test_round_trip (void **state)
{
	for (size_t i = 0; i < N (types); i++) {
		struct ab_msg_s m, d;
		struct ab_tlv_writer_s w = { 0 };
		ab_error_t err = AB_ERROR_INIT;

		sample (types[i], &m);
		ab_msg_encode (&w, &m);
		if (ab_msg_decode (types[i], w.buf, w.len, &d, &err) < 0)
			fail_msg ("type %u: %s", types[i], err.msg);
		assert_int_equal (d.present, m.present);
		assert_int_equal (d.conn, m.conn);
		assert_int_equal (d.port, m.port);
		assert_int_equal (d.channel, m.channel);
		assert_int_equal (d.egress_stream, m.egress_stream);
		assert_true (d.timeout_ms == m.timeout_ms);
		ab_msg_free (&d);
		ab_tlv_writer_free (&w);
	}
	assert_true (ab_msg_known_type (AB_MSG_EGRESS_READY));
	assert_true (ab_msg_known_type (AB_MSG_EGRESS_OPEN));
}

/* An EGRESS_LISTEN from an older host (no EGRESS_STREAM) still decodes:
 * it means fd passing. */
static void
test_listen_without_stream_is_fd_passing (void **state)
{
	struct ab_tlv_writer_s w = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s d;

	ab_tlv_put_u32 (&w, AB_TAG_REQ_ID, 1);
	ab_tlv_put_u32 (&w, AB_TAG_PORT, 3128);
	assert_int_equal (ab_msg_decode (AB_MSG_EGRESS_LISTEN, w.buf, w.len, &d, &err), 0);
	assert_false (d.egress_stream);
	assert_false (ab_msg_has (&d, AB_TAG_TIMEOUT_MS));
	ab_msg_free (&d);
	ab_tlv_writer_free (&w);
}

struct bad_s {
	const char *what;
	uint16_t type;
	uint16_t tag; /* replaced (or added) */
	const void *value;
	size_t len;
};

static const uint8_t u32_zero[4] = { 0 }, u32_two[4] = { 0, 0, 0, 2 }, u32_big[4] = { 0, 1, 0, 0 },
                     u64_one[8] = { 0, 0, 0, 0, 0, 0, 0, 1 };

static const struct bad_s bad[] = {
	{ "conn 0", AB_MSG_EGRESS_OPEN, AB_TAG_CONN, u32_zero, 4 },
	{ "conn as u64", AB_MSG_EGRESS_OPEN, AB_TAG_CONN, u64_one, 8 },
	{ "conn of 2 bytes", AB_MSG_EGRESS_READY, AB_TAG_CONN, u32_two, 2 },
	{ "channel 0", AB_MSG_EGRESS_OPEN, AB_TAG_CHANNEL, u32_zero, 4 },
	{ "stream flag 2", AB_MSG_EGRESS_LISTEN, AB_TAG_EGRESS_STREAM, u32_two, 4 },
	{ "timeout as u32", AB_MSG_EGRESS_LISTEN, AB_TAG_TIMEOUT_MS, u32_two, 4 },
	{ "port 65536", AB_MSG_EGRESS_READY, AB_TAG_PORT, u32_big, 4 },
	{ "port 0", AB_MSG_EGRESS_READY, AB_TAG_PORT, u32_zero, 4 },
	{ "path in EGRESS_OPEN", AB_MSG_EGRESS_OPEN, AB_TAG_PATH, "x", 1 },
	{ "conn in EGRESS_LISTEN", AB_MSG_EGRESS_LISTEN, AB_TAG_CONN, u32_two, 4 },
	{ "stream flag in EGRESS_READY", AB_MSG_EGRESS_READY, AB_TAG_EGRESS_STREAM, u32_zero, 4 },
	{ "stream flag in OK", AB_MSG_OK, AB_TAG_EGRESS_STREAM, u32_zero, 4 },
};

static void
drop (struct ab_msg_s *m, uint16_t tag)
{
	m->present &= ~(UINT64_C (1) << tag);
}

static void
test_bad_records (void **state)
{
	for (size_t i = 0; i < N (bad); i++) {
		struct ab_msg_s m, d;
		struct ab_tlv_writer_s w = { 0 };
		ab_error_t err = AB_ERROR_INIT;

		sample (bad[i].type, &m);
		drop (&m, bad[i].tag);
		ab_msg_encode (&w, &m);
		ab_tlv_put (&w, bad[i].tag, bad[i].value, bad[i].len);
		if (ab_msg_decode (bad[i].type, w.buf, w.len, &d, &err) != -1)
			fail_msg ("%s: accepted", bad[i].what);
		if (err.kind != AB_E_INVALID)
			fail_msg ("%s: kind %d (%s)", bad[i].what, err.kind, err.msg);
		ab_msg_free (&d);
		ab_tlv_writer_free (&w);
	}
}

/* Each required field, left out, is refused. */
static void
test_missing_required (void **state)
{
	static const struct {
		uint16_t type, tag;
	} req[] = {
		{ AB_MSG_EGRESS_READY, AB_TAG_PORT },   { AB_MSG_EGRESS_READY, AB_TAG_CONN },
		{ AB_MSG_EGRESS_OPEN, AB_TAG_REQ_ID },  { AB_MSG_EGRESS_OPEN, AB_TAG_CONN },
		{ AB_MSG_EGRESS_OPEN, AB_TAG_CHANNEL },
	};
	for (size_t i = 0; i < N (req); i++) {
		struct ab_msg_s m, d;
		struct ab_tlv_writer_s w = { 0 };
		ab_error_t err = AB_ERROR_INIT;

		sample (req[i].type, &m);
		drop (&m, req[i].tag);
		ab_msg_encode (&w, &m);
		assert_int_equal (ab_msg_decode (req[i].type, w.buf, w.len, &d, &err), -1);
		assert_int_equal (err.kind, AB_E_INVALID);
		ab_msg_free (&d);
		ab_tlv_writer_free (&w);
	}
}

static void
test_fd_passing_choice (void **state)
{
	static const struct {
		const char *env; /* NULL = unset */
		bool backend_can, want;
	} cases[] = {
		{ NULL, true, true },  { NULL, false, false }, { "1", true, false },
		{ "1", false, false }, { "0", true, true },    { "", true, true },
		{ "yes", true, true }, { "0", false, false },
	};
	for (size_t i = 0; i < N (cases); i++) {
		if (cases[i].env)
			setenv ("AGENTBOX_EGRESS_STREAM", cases[i].env, 1);
		else
			unsetenv ("AGENTBOX_EGRESS_STREAM");
		if (ab_forward_use_fd_passing (cases[i].backend_can) != cases[i].want)
			fail_msg ("case %zu: env %s, backend %d", i,
			          cases[i].env ? cases[i].env : "(unset)", cases[i].backend_can);
	}
	unsetenv ("AGENTBOX_EGRESS_STREAM");
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_round_trip),
		cmocka_unit_test (test_listen_without_stream_is_fd_passing),
		cmocka_unit_test (test_bad_records),
		cmocka_unit_test (test_missing_required),
		cmocka_unit_test (test_fd_passing_choice),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
