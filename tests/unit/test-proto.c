/* Unit tests for the agent wire protocol (src/proto): TLV records, frame
 * headers, frames over a real socketpair (with SCM_RIGHTS fd passing) and
 * the EXEC message.  The agent decodes what arrives on its one door, so
 * every malformed input must fail cleanly with an error, never crash. */
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "proto/exec-msg.h"
#include "proto/proto.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

/* ---- TLV ---------------------------------------------------------- */

static void
test_tlv_round_trip (void **state)
{
	static const uint8_t bin[] = { 0, 1, 0, 0xff, 0 };
	struct ab_tlv_writer_s w = { 0 };
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	ab_error_t err = AB_ERROR_INIT;
	uint32_t v32;
	uint64_t v64;
	char *s;

	ab_tlv_put_str (&w, AB_TAG_ARG, "hello");
	ab_tlv_put_u32 (&w, AB_TAG_UID, 0x01020304);
	ab_tlv_put_u64 (&w, AB_TAG_TIMEOUT_MS, UINT64_C (0x0102030405060708));
	ab_tlv_put (&w, 0xfffe, bin, sizeof bin);
	ab_tlv_put_str (&w, AB_TAG_CWD, "");
	ab_tlv_put (&w, AB_TAG_ENV, NULL, 0);
	/* 6-byte header + value per record */
	assert_int_equal (w.len, (6 + 5) + (6 + 4) + (6 + 8) + (6 + sizeof bin) + 6 + 6);
	/* big-endian on the wire: tag, then length, then the value */
	assert_memory_equal (w.buf, "\x00\x02\x00\x00\x00\x05hello", 11);
	assert_memory_equal (w.buf + 11, "\x00\x05\x00\x00\x00\x04\x01\x02\x03\x04", 10);

	ab_tlv_reader_init (&r, w.buf, w.len);
	assert_int_equal (ab_tlv_next (&r, &t, &err), 1);
	assert_int_equal (t.tag, AB_TAG_ARG);
	s = ab_tlv_strdup (&t, &err);
	assert_string_equal (s, "hello");
	free (s);
	assert_int_equal (ab_tlv_next (&r, &t, &err), 1);
	assert_int_equal (ab_tlv_u32 (&t, &v32, &err), 0);
	assert_int_equal (v32, 0x01020304);
	assert_int_equal (ab_tlv_next (&r, &t, &err), 1);
	assert_int_equal (ab_tlv_u64 (&t, &v64, &err), 0);
	assert_true (v64 == UINT64_C (0x0102030405060708));
	assert_int_equal (ab_tlv_next (&r, &t, &err), 1);
	assert_int_equal (t.tag, 0xfffe);
	assert_int_equal (t.length, sizeof bin);
	assert_memory_equal (t.value, bin, sizeof bin);
	assert_int_equal (ab_tlv_next (&r, &t, &err), 1);
	s = ab_tlv_strdup (&t, &err);
	assert_string_equal (s, "");
	free (s);
	assert_int_equal (ab_tlv_next (&r, &t, &err), 1);
	assert_int_equal (t.tag, AB_TAG_ENV);
	assert_int_equal (t.length, 0);
	assert_int_equal (ab_tlv_next (&r, &t, &err), 0); /* clean end */
	assert_int_equal (ab_tlv_next (&r, &t, &err), 0); /* and stays there */
	assert_int_equal (err.kind, AB_E_NONE);
	ab_tlv_writer_free (&w);
	assert_null (w.buf);
}

static void
test_tlv_empty_payload (void **state)
{
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	ab_error_t err = AB_ERROR_INIT;

	ab_tlv_reader_init (&r, NULL, 0);
	assert_int_equal (ab_tlv_next (&r, &t, &err), 0);
}

static const struct {
	const char *name;
	const char *bytes;
	size_t len;
} bad_tlv[] = {
	{ "1-byte header", "\x00", 1 },
	{ "2-byte header", "\x00\x02", 2 },
	{ "5-byte header", "\x00\x02\x00\x00\x00", 5 },
	{ "length 1 past the end",
	  "\x00\x02\x00\x00\x00\x03"
	  "ab",
	  8 },
	{ "length 10, 4 bytes",
	  "\x00\x02\x00\x00\x00\x0a"
	  "abcd",
	  10 },
	{ "length 2^32-1",
	  "\x00\x02\xff\xff\xff\xff"
	  "abcd",
	  10 },
	{ "length 2^31", "\x00\x02\x80\x00\x00\x00", 6 },
	{ "good record then a truncated header",
	  "\x00\x02\x00\x00\x00\x01"
	  "a"
	  "\x00\x03\x00",
	  10 },
	{ "good record then an overlong one",
	  "\x00\x02\x00\x00\x00\x00"
	  "\x00\x03\x00\x00\x01\x00"
	  "x",
	  13 },
};

static void
test_tlv_malformed (void **state)
{
	for (size_t i = 0; i < N (bad_tlv); i++) {
		struct ab_tlv_reader_s r;
		struct ab_tlv_s t;
		ab_error_t err = AB_ERROR_INIT;
		int k;

		ab_tlv_reader_init (&r, (const uint8_t *)bad_tlv[i].bytes, bad_tlv[i].len);
		while ((k = ab_tlv_next (&r, &t, &err)) > 0)
			/* every record handed out lies inside the payload */
			assert_true (t.value + t.length
			             <= (const uint8_t *)bad_tlv[i].bytes + bad_tlv[i].len);
		if (k != -1)
			fail_msg ("%s: accepted", bad_tlv[i].name);
		assert_int_equal (err.kind, AB_E_INVALID);
	}
}

static void
test_tlv_string_with_nul (void **state)
{
	static const struct {
		const char *bytes;
		uint32_t len;
		const char *want; /* NULL = refused */
	} cases[] = {
		{ "abc", 3, "abc" }, { "", 0, "" },       { "a\0b", 3, NULL },
		{ "\0", 1, NULL },   { "ab\0", 3, NULL }, { "/bin/sh\0-c", 10, NULL },
	};

	for (size_t i = 0; i < N (cases); i++) {
		struct ab_tlv_s t = { .tag = AB_TAG_ARG,
			              .length = cases[i].len,
			              .value = (const uint8_t *)cases[i].bytes };
		ab_error_t err = AB_ERROR_INIT;
		char *s = ab_tlv_strdup (&t, &err);

		if (cases[i].want) {
			assert_non_null (s);
			assert_string_equal (s, cases[i].want);
		} else {
			assert_null (s);
			assert_int_equal (err.kind, AB_E_INVALID);
		}
		free (s);
	}
}

static void
test_tlv_integer_width (void **state)
{
	static const uint8_t bytes[9] = { 1, 2, 3, 4, 5, 6, 7, 8, 9 };
	static const uint32_t lengths[] = { 0, 1, 3, 4, 5, 7, 8, 9 };

	for (size_t i = 0; i < N (lengths); i++) {
		struct ab_tlv_s t = { .tag = AB_TAG_UID, .length = lengths[i], .value = bytes };
		ab_error_t e32 = AB_ERROR_INIT, e64 = AB_ERROR_INIT;
		uint32_t v32 = 0xaaaaaaaa;
		uint64_t v64 = 0xaaaaaaaa;
		int r32 = ab_tlv_u32 (&t, &v32, &e32);
		int r64 = ab_tlv_u64 (&t, &v64, &e64);

		assert_int_equal (r32 == 0, lengths[i] == 4);
		assert_int_equal (r64 == 0, lengths[i] == 8);
		if (lengths[i] == 4) {
			assert_int_equal (v32, 0x01020304);
		} else {
			assert_int_equal (v32, 0xaaaaaaaa); /* untouched */
			assert_int_equal (e32.kind, AB_E_INVALID);
		}
		if (lengths[i] == 8) {
			assert_true (v64 == UINT64_C (0x0102030405060708));
		} else {
			assert_true (v64 == 0xaaaaaaaa);
			assert_int_equal (e64.kind, AB_E_INVALID);
		}
	}
}

/* ---- frame headers ------------------------------------------------ */

static void
test_header_round_trip (void **state)
{
	static const struct {
		uint16_t type;
		uint32_t channel, length;
	} cases[] = {
		{ AB_MSG_EXEC, 0, 0 },
		{ AB_MSG_EXIT, 7, 1234 },
		{ 0xffff, 0xffffffff, AB_PROTO_MAX_PAYLOAD },
		{ AB_MSG_HELLO, 1, 1 },
	};

	for (size_t i = 0; i < N (cases); i++) {
		uint8_t h[AB_PROTO_HEADER_SIZE];
		struct ab_frame_s f;
		ab_error_t err = AB_ERROR_INIT;

		ab_proto_encode_header (h, cases[i].type, cases[i].channel, cases[i].length);
		assert_int_equal (ab_proto_decode_header (h, &f, &err), 0);
		assert_int_equal (f.type, cases[i].type);
		assert_int_equal (f.channel, cases[i].channel);
		assert_int_equal (f.length, cases[i].length);
		assert_int_equal (f.flags, 0);
		assert_null (f.payload);
	}
}

static void
test_header_layout (void **state)
{
	uint8_t h[AB_PROTO_HEADER_SIZE];

	ab_proto_encode_header (h, 0x0102, 0x0a0b0c0d, 0x11223344);
	/* u32 length, u16 type, u16 flags, u32 channel, all big-endian */
	assert_memory_equal (h, "\x11\x22\x33\x44\x01\x02\x00\x00\x0a\x0b\x0c\x0d", 12);
}

static void
test_header_refused (void **state)
{
	static const struct {
		const char *name;
		uint8_t bytes[AB_PROTO_HEADER_SIZE];
		ab_error_kind kind;
	} cases[] = {
		{ "length max+1", { 0x00, 0x10, 0x00, 0x01, 0, 2, 0, 0, 0, 0, 0, 0 }, AB_E_LIMIT },
		{ "length 2^32-1", { 0xff, 0xff, 0xff, 0xff, 0, 2, 0, 0, 0, 0, 0, 0 }, AB_E_LIMIT },
		{ "flag 0x0001", { 0, 0, 0, 4, 0, 2, 0x00, 0x01, 0, 0, 0, 0 }, AB_E_INVALID },
		{ "flag 0x8000", { 0, 0, 0, 4, 0, 2, 0x80, 0x00, 0, 0, 0, 0 }, AB_E_INVALID },
	};

	for (size_t i = 0; i < N (cases); i++) {
		struct ab_frame_s f;
		ab_error_t err = AB_ERROR_INIT;

		if (ab_proto_decode_header (cases[i].bytes, &f, &err) != -1)
			fail_msg ("%s: accepted", cases[i].name);
		assert_int_equal (err.kind, cases[i].kind);
		assert_null (f.payload);
	}
}

/* ---- frames over a socketpair ------------------------------------- */

static void
pair (int sv[2])
{
	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
}

static void
test_frame_send_recv (void **state)
{
	static const char msg[] = "payload bytes";
	struct ab_frame_s f;
	ab_error_t err = AB_ERROR_INIT;
	int sv[2];

	pair (sv);
	assert_int_equal (ab_frame_send (sv[0], AB_MSG_EXEC, 3, msg, sizeof msg, NULL, 0, &err), 0);
	assert_int_equal (ab_frame_send (sv[0], AB_MSG_EXIT, 0, NULL, 0, NULL, 0, &err), 0);
	assert_int_equal (ab_frame_recv (sv[1], &f, NULL, 0, NULL, &err), 1);
	assert_int_equal (f.type, AB_MSG_EXEC);
	assert_int_equal (f.channel, 3);
	assert_int_equal (f.length, sizeof msg);
	assert_memory_equal (f.payload, msg, sizeof msg);
	ab_frame_free (&f);
	assert_null (f.payload);
	assert_int_equal (ab_frame_recv (sv[1], &f, NULL, 0, NULL, &err), 1);
	assert_int_equal (f.type, AB_MSG_EXIT);
	assert_int_equal (f.length, 0);
	ab_frame_free (&f);
	close (sv[0]);
	assert_int_equal (ab_frame_recv (sv[1], &f, NULL, 0, NULL, &err), 0); /* clean EOF */
	assert_int_equal (err.kind, AB_E_NONE);
	close (sv[1]);
}

/* The biggest frame allowed, written by another process so the reader
 * sees it in many pieces. */
static void
test_frame_max_payload (void **state)
{
	uint8_t *big = malloc (AB_PROTO_MAX_PAYLOAD);
	struct ab_frame_s f;
	ab_error_t err = AB_ERROR_INIT;
	int sv[2], status;
	pid_t pid;

	assert_non_null (big);
	for (size_t i = 0; i < AB_PROTO_MAX_PAYLOAD; i++)
		big[i] = (uint8_t)(i * 7 + 3);
	pair (sv);
	pid = fork ();
	assert_true (pid >= 0);
	if (pid == 0) {
		close (sv[1]);
		_exit (ab_frame_send (sv[0], AB_MSG_EXEC, 0, big, AB_PROTO_MAX_PAYLOAD, NULL, 0,
		                      &err)
		                       == 0
		               ? 0
		               : 1);
	}
	close (sv[0]);
	assert_int_equal (ab_frame_recv (sv[1], &f, NULL, 0, NULL, &err), 1);
	assert_int_equal (f.length, AB_PROTO_MAX_PAYLOAD);
	assert_memory_equal (f.payload, big, AB_PROTO_MAX_PAYLOAD);
	ab_frame_free (&f);
	assert_int_equal (waitpid (pid, &status, 0), pid);
	assert_true (WIFEXITED (status) && WEXITSTATUS (status) == 0);
	close (sv[1]);
	free (big);
}

static void
test_frame_send_oversize (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	int sv[2];

	pair (sv);
	/* refused before a byte is read from the (unused) payload pointer */
	assert_true (ab_frame_send (sv[0], AB_MSG_EXEC, 0, "", (size_t)AB_PROTO_MAX_PAYLOAD + 1,
	                            NULL, 0, &err)
	             < 0);
	assert_int_equal (err.kind, AB_E_LIMIT);
	close (sv[0]);
	close (sv[1]);
}

/* Raw bytes on the wire, then EOF: what the receiver makes of them. */
static const struct {
	const char *name;
	const char *bytes;
	size_t len;
	ab_error_kind kind;
} bad_streams[] = {
	{ "EOF inside the header", "\x00\x00\x00\x04\x00", 5, AB_E_INVALID },
	{ "EOF inside the payload",
	  "\x00\x00\x00\x04\x00\x02\x00\x00\x00\x00\x00\x00"
	  "ab",
	  14, AB_E_INVALID },
	{ "oversize length", "\x7f\x00\x00\x00\x00\x02\x00\x00\x00\x00\x00\x00", 12, AB_E_LIMIT },
	{ "unknown flags", "\x00\x00\x00\x00\x00\x02\x00\x04\x00\x00\x00\x00", 12, AB_E_INVALID },
};

static void
test_frame_recv_malformed (void **state)
{
	for (size_t i = 0; i < N (bad_streams); i++) {
		struct ab_frame_s f = { 0 };
		ab_error_t err = AB_ERROR_INIT;
		int sv[2];

		pair (sv);
		assert_int_equal (write (sv[0], bad_streams[i].bytes, bad_streams[i].len),
		                  (ssize_t)bad_streams[i].len);
		close (sv[0]);
		if (ab_frame_recv (sv[1], &f, NULL, 0, NULL, &err) != -1)
			fail_msg ("%s: accepted", bad_streams[i].name);
		assert_int_equal (err.kind, bad_streams[i].kind);
		assert_null (f.payload);
		close (sv[1]);
	}
}

static void
test_frame_fd_passing (void **state)
{
	struct ab_frame_s f;
	ab_error_t err = AB_ERROR_INIT;
	int sv[2], p[2], fds[4] = { -1, -1, -1, -1 }, send_fds[2];
	size_t n_fds = 99;
	char buf[8] = { 0 };

	pair (sv);
	assert_int_equal (pipe2 (p, O_CLOEXEC), 0);
	send_fds[0] = p[1];
	send_fds[1] = p[0];
	assert_int_equal (ab_frame_send (sv[0], AB_MSG_STARTED, 0, "x", 1, send_fds, 2, &err), 0);
	assert_int_equal (ab_frame_recv (sv[1], &f, fds, N (fds), &n_fds, &err), 1);
	assert_int_equal (f.type, AB_MSG_STARTED);
	assert_int_equal (f.length, 1);
	ab_frame_free (&f);
	assert_int_equal (n_fds, 2);
	assert_true (fds[0] >= 0 && fds[0] != p[1]);
	assert_true (fds[1] >= 0 && fds[1] != p[0]);
	assert_int_equal (fds[2], -1); /* nothing written past what arrived */
	/* received fds are close-on-exec: they must not leak into a child */
	assert_true (fcntl (fds[0], F_GETFD) & FD_CLOEXEC);
	assert_true (fcntl (fds[1], F_GETFD) & FD_CLOEXEC);
	/* and they are the same pipe */
	assert_int_equal (write (fds[0], "ping", 4), 4);
	assert_int_equal (read (p[0], buf, sizeof buf), 4);
	assert_memory_equal (buf, "ping", 4);
	assert_int_equal (write (p[1], "pong", 4), 4);
	assert_int_equal (read (fds[1], buf, sizeof buf), 4);
	assert_memory_equal (buf, "pong", 4);

	/* a frame without fds reports none */
	assert_int_equal (ab_frame_send (sv[0], AB_MSG_EXIT, 0, NULL, 0, NULL, 0, &err), 0);
	n_fds = 99;
	assert_int_equal (ab_frame_recv (sv[1], &f, fds, N (fds), &n_fds, &err), 1);
	assert_int_equal (n_fds, 0);
	ab_frame_free (&f);
	for (int i = 0; i < 2; i++)
		close (fds[i]);
	close (p[0]);
	close (p[1]);
	close (sv[0]);
	close (sv[1]);
}

/* ---- the EXEC message --------------------------------------------- */

static void
test_exec_round_trip (void **state)
{
	char *argv[] = { "/bin/sh", "-c", "echo 'a b'", "", NULL };
	char *env[] = { "PATH=/usr/bin:/bin", "HOME=/tmp", "EMPTY=", NULL };
	char *rw[] = { "/workspace", "/tmp", NULL };
	struct ab_exec_msg_s in = {
		.argv = argv,
		.env = env,
		.cwd = "/workspace",
		.uid = 1000,
		.gid = 4294967294u,
		.tty = true,
		.rows = 50,
		.cols = 132,
		.timeout_ms = UINT64_C (1) << 40,
		.grace_ms = 5000,
		.nofile = 1024,
		.rw_paths = rw,
		.n_rw_paths = 2,
	};
	struct ab_tlv_writer_s w = { 0 };
	struct ab_exec_msg_s out;
	ab_error_t err = AB_ERROR_INIT;

	ab_exec_msg_encode (&w, &in);
	assert_int_equal (ab_exec_msg_decode (w.buf, w.len, &out, &err), 0);
	assert_int_equal (out.n_argv, 4);
	for (size_t i = 0; i < 4; i++)
		assert_string_equal (out.argv[i], argv[i]);
	assert_null (out.argv[4]);
	assert_int_equal (out.n_env, 3);
	for (size_t i = 0; i < 3; i++)
		assert_string_equal (out.env[i], env[i]);
	assert_null (out.env[3]);
	assert_int_equal (out.n_rw_paths, 2);
	assert_string_equal (out.rw_paths[0], "/workspace");
	assert_string_equal (out.rw_paths[1], "/tmp");
	assert_string_equal (out.cwd, "/workspace");
	assert_int_equal (out.uid, 1000);
	assert_int_equal (out.gid, 4294967294u);
	assert_true (out.tty);
	assert_int_equal (out.rows, 50);
	assert_int_equal (out.cols, 132);
	assert_true (out.timeout_ms == UINT64_C (1) << 40);
	assert_int_equal (out.grace_ms, 5000);
	assert_int_equal (out.nofile, 1024);
	ab_exec_msg_free (&out);
	assert_null (out.argv);
	ab_tlv_writer_free (&w);
}

/* Only argv is required; the rest has safe defaults. */
static void
test_exec_defaults (void **state)
{
	struct ab_tlv_writer_s w = { 0 };
	struct ab_exec_msg_s out;
	ab_error_t err = AB_ERROR_INIT;

	ab_tlv_put_str (&w, AB_TAG_ARG, "true");
	assert_int_equal (ab_exec_msg_decode (w.buf, w.len, &out, &err), 0);
	assert_int_equal (out.n_argv, 1);
	assert_non_null (out.env);
	assert_null (out.env[0]);
	assert_string_equal (out.cwd, "/");
	assert_int_equal (out.uid, 0);
	assert_false (out.tty);
	assert_int_equal (out.timeout_ms, 0);
	ab_exec_msg_free (&out);
	ab_tlv_writer_free (&w);
}

enum { REC_END = 0, REC_STR, REC_U32, REC_U64, REC_RAW, REC_JUNK };

struct rec_s {
	int kind;
	uint16_t tag;
	const char *s;
	size_t len; /* REC_RAW, REC_JUNK */
};

/* A message built record by record, so each case names its defect. */
static const struct {
	const char *name;
	struct rec_s recs[4];
	ab_error_kind kind;
} bad_exec[] = {
	{ "empty payload", { { REC_END } }, AB_E_INVALID },
	{ "no argv",
	  { { REC_STR, AB_TAG_CWD, "/" }, { REC_STR, AB_TAG_ENV, "A=1" } },
	  AB_E_INVALID },
	{ "unknown tag", { { REC_STR, AB_TAG_ARG, "true" }, { REC_STR, 999, "x" } }, AB_E_INVALID },
	{ "reply tag in a request",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_U32, AB_TAG_PID } },
	  AB_E_INVALID },
	{ "NUL inside an argument", { { REC_RAW, AB_TAG_ARG, "tr\0ue", 5 } }, AB_E_INVALID },
	{ "NUL inside env",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_RAW, AB_TAG_ENV, "A=1\0B=2", 7 } },
	  AB_E_INVALID },
	{ "NUL inside cwd",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_RAW, AB_TAG_CWD, "/\0tmp", 5 } },
	  AB_E_INVALID },
	{ "uid as u64",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_U64, AB_TAG_UID } },
	  AB_E_INVALID },
	{ "tty as 1 byte",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_RAW, AB_TAG_TTY, "\1", 1 } },
	  AB_E_INVALID },
	{ "timeout as u32",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_U32, AB_TAG_TIMEOUT_MS } },
	  AB_E_INVALID },
	{ "nofile as 7 bytes",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_RAW, AB_TAG_NOFILE, "1234567", 7 } },
	  AB_E_INVALID },
	{ "truncated header after a good record",
	  { { REC_STR, AB_TAG_ARG, "true" }, { REC_JUNK, 0, "\x00\x02\x00", 3 } },
	  AB_E_INVALID },
	{ "overlong record after a good one",
	  { { REC_STR, AB_TAG_ARG, "true" },
	    { REC_JUNK, 0,
	      "\x00\x02\x00\x00\x00\x09"
	      "abc",
	      9 } },
	  AB_E_INVALID },
};

static void
append_junk (struct ab_tlv_writer_s *w, const char *bytes, size_t len)
{
	w->buf = realloc (w->buf, w->len + len);
	assert_non_null (w->buf);
	memcpy (w->buf + w->len, bytes, len);
	w->len += len;
	w->cap = w->len;
}

static void
build_bad (size_t i, struct ab_tlv_writer_s *w)
{
	for (size_t k = 0; k < N (bad_exec[i].recs) && bad_exec[i].recs[k].kind != REC_END; k++) {
		const struct rec_s *r = &bad_exec[i].recs[k];
		switch (r->kind) {
		case REC_STR: ab_tlv_put_str (w, r->tag, r->s); break;
		case REC_U32: ab_tlv_put_u32 (w, r->tag, 7); break;
		case REC_U64: ab_tlv_put_u64 (w, r->tag, 7); break;
		case REC_RAW: ab_tlv_put (w, r->tag, r->s, r->len); break;
		default: append_junk (w, r->s, r->len); break;
		}
	}
}

static void
test_exec_decode_refused (void **state)
{
	for (size_t i = 0; i < N (bad_exec); i++) {
		struct ab_tlv_writer_s w = { 0 };
		struct ab_exec_msg_s out;
		ab_error_t err = AB_ERROR_INIT;

		build_bad (i, &w);
		if (ab_exec_msg_decode (w.buf ? w.buf : (const uint8_t *)"", w.len, &out, &err)
		    != -1)
			fail_msg ("%s: accepted", bad_exec[i].name);
		assert_int_equal (err.kind, bad_exec[i].kind);
		assert_true (strlen (err.msg) > 0);
		ab_exec_msg_free (&out); /* what a failed decode allocated is still freeable */
		ab_tlv_writer_free (&w);
	}
}

/* Deterministic garbage: decode must fail or succeed, never crash (ASan
 * and UBSan watch this in make unit-asan). */
static void
test_exec_decode_garbage (void **state)
{
	uint32_t x = 2463534242u; /* xorshift32 */
	uint8_t buf[256];

	for (int round = 0; round < 20000; round++) {
		struct ab_exec_msg_s out;
		ab_error_t err = AB_ERROR_INIT;
		size_t len = (size_t)(round % (int)sizeof buf);

		for (size_t i = 0; i < len; i++) {
			x ^= x << 13, x ^= x >> 17, x ^= x << 5;
			buf[i] = (uint8_t)x;
			/* small tags and lengths now and then, so records nest and parse */
			if (i % 6 == 0 && (x & 0x300) == 0)
				buf[i] = 0;
		}
		if (ab_exec_msg_decode (buf, len, &out, &err) == 0)
			assert_true (out.n_argv > 0 && out.argv[0] != NULL);
		else
			assert_int_not_equal (err.kind, AB_E_NONE);
		ab_exec_msg_free (&out);
	}
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_tlv_round_trip),
		cmocka_unit_test (test_tlv_empty_payload),
		cmocka_unit_test (test_tlv_malformed),
		cmocka_unit_test (test_tlv_string_with_nul),
		cmocka_unit_test (test_tlv_integer_width),
		cmocka_unit_test (test_header_round_trip),
		cmocka_unit_test (test_header_layout),
		cmocka_unit_test (test_header_refused),
		cmocka_unit_test (test_frame_send_recv),
		cmocka_unit_test (test_frame_max_payload),
		cmocka_unit_test (test_frame_send_oversize),
		cmocka_unit_test (test_frame_recv_malformed),
		cmocka_unit_test (test_frame_fd_passing),
		cmocka_unit_test (test_exec_round_trip),
		cmocka_unit_test (test_exec_defaults),
		cmocka_unit_test (test_exec_decode_refused),
		cmocka_unit_test (test_exec_decode_garbage),
	};

	signal (SIGPIPE, SIG_IGN);
	return cmocka_run_group_tests (tests, NULL, NULL);
}
