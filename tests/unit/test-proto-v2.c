/* Unit tests for the version 2 messages (src/proto/msg.c): every message
 * type round-trips through encode and decode; every malformed form is
 * refused with an error (wrong record lengths, truncation at every byte,
 * integers of the wrong width, out-of-range values, unknown or repeated
 * fields, missing required fields, nesting too deep); the incremental
 * frame parser waits for whole frames and refuses bad headers. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "proto/msg.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static char *argv_sample[] = { (char *)"sh", (char *)"-c", (char *)"echo hi", NULL };
static char *env_sample[] = { (char *)"PATH=/bin", (char *)"A=", NULL };
static char *roots_sample[] = { (char *)"/workspace", (char *)"/data", NULL };

/* A message of each type with every field its schema allows. */
static void
sample (uint16_t type, struct ab_msg_s *m)
{
	static struct ab_msg_s entries[2], procs[2];

	ab_msg_init (m, type);
	switch (type) {
	case AB_MSG_HELLO:
		ab_msg_set (m, version, AB_TAG_VERSION, 2);
		ab_msg_set (m, features, AB_TAG_FEATURES, 0xf);
		ab_msg_set (m, landlock_abi, AB_TAG_LANDLOCK_ABI, 7);
		ab_msg_set (m, configured, AB_TAG_CONFIGURED, true);
		break;
	case AB_MSG_OK:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 0xfffffffe);
		ab_msg_set (m, pid, AB_TAG_PID, 42);
		ab_msg_set (m, size, AB_TAG_SIZE, UINT64_C (1) << 40);
		ab_msg_set (m, mode, AB_TAG_MODE, 0755);
		ab_msg_set (m, ftype, AB_TAG_FTYPE, AB_WIRE_FT_DIR);
		ab_msg_set (m, mtime_ms, AB_TAG_MTIME_MS, -1234);
		ab_msg_set (m, more, AB_TAG_MORE, true);
		for (int i = 0; i < 2; i++) {
			ab_msg_init (&entries[i], AB_MSG_NESTED_ENTRY);
			entries[i].name = i ? (char *)"b" : (char *)"a file";
			ab_msg_set (&entries[i], size, AB_TAG_SIZE, (uint64_t)i);
			ab_msg_init (&procs[i], AB_MSG_NESTED_PROC);
			ab_msg_set (&procs[i], pid, AB_TAG_PID, (uint32_t)(7 + i));
			procs[i].argv = argv_sample;
			ab_msg_set (&procs[i], running, AB_TAG_RUNNING, i == 0);
			ab_msg_set (&procs[i], started_ms, AB_TAG_STARTED_MS,
			            UINT64_C (1700000000000));
		}
		m->entries = entries;
		m->n_entries = 2;
		m->procs = procs;
		m->n_procs = 2;
		break;
	case AB_MSG_FAIL:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 3);
		ab_msg_set (m, code, AB_TAG_CODE, AB_WIRE_DENIED);
		ab_msg_set (m, errnum, AB_TAG_ERRNO, 13);
		m->message = (char *)"no";
		break;
	case AB_MSG_CONFIG:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		m->roots = roots_sample;
		m->rw_paths = roots_sample;
		ab_msg_set (m, nofile, AB_TAG_NOFILE, 1024);
		ab_msg_set (m, uid, AB_TAG_UID, 1000);
		ab_msg_set (m, gid, AB_TAG_GID, 1000);
		break;
	case AB_MSG_WINDOW: ab_msg_set (m, bytes, AB_TAG_BYTES, 65536); break;
	case AB_MSG_RESET:
		ab_msg_set (m, code, AB_TAG_CODE, AB_WIRE_SYSTEM);
		ab_msg_set (m, errnum, AB_TAG_ERRNO, 5);
		m->message = (char *)"io";
		break;
	case AB_MSG_PROC_EXIT:
		ab_msg_set (m, wait_status, AB_TAG_WAIT_STATUS, 0x0f00);
		ab_msg_set (m, timed_out, AB_TAG_TIMED_OUT, true);
		ab_msg_set (m, exec_errno, AB_TAG_EXEC_ERRNO, 2);
		break;
	case AB_MSG_PROC_START:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 9);
		ab_msg_set (m, channel, AB_TAG_CHANNEL, 5);
		m->argv = argv_sample;
		m->env = env_sample;
		m->cwd = (char *)"/workspace";
		ab_msg_set (m, uid, AB_TAG_UID, 1);
		ab_msg_set (m, gid, AB_TAG_GID, 2);
		ab_msg_set (m, tty, AB_TAG_TTY, true);
		ab_msg_set (m, rows, AB_TAG_ROWS, 24);
		ab_msg_set (m, cols, AB_TAG_COLS, 80);
		ab_msg_set (m, timeout_ms, AB_TAG_TIMEOUT_MS, 30000);
		ab_msg_set (m, grace_ms, AB_TAG_GRACE_MS, 500);
		ab_msg_set (m, stdin_open, AB_TAG_STDIN, true);
		break;
	case AB_MSG_PROC_SIGNAL:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		ab_msg_set (m, pid, AB_TAG_PID, 3);
		ab_msg_set (m, signal, AB_TAG_SIGNAL, 15);
		break;
	case AB_MSG_PROC_RESIZE:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		ab_msg_set (m, pid, AB_TAG_PID, 3);
		ab_msg_set (m, rows, AB_TAG_ROWS, 50);
		ab_msg_set (m, cols, AB_TAG_COLS, 132);
		break;
	case AB_MSG_PROC_ATTACH:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		ab_msg_set (m, pid, AB_TAG_PID, 3);
		ab_msg_set (m, channel, AB_TAG_CHANNEL, 4);
		break;
	case AB_MSG_PROC_STDIN:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		ab_msg_set (m, pid, AB_TAG_PID, 3);
		m->data = (const uint8_t *)"a\0b";
		m->data_len = 3;
		break;
	case AB_MSG_PROC_CLOSE_STDIN:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		ab_msg_set (m, pid, AB_TAG_PID, 3);
		break;
	case AB_MSG_FILE_READ:
	case AB_MSG_FILE_WRITE:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		m->path = (char *)"/workspace/a b";
		ab_msg_set (m, channel, AB_TAG_CHANNEL, 2);
		if (type == AB_MSG_FILE_WRITE) {
			static char *xattrs[] = { (char *)"owner=me", (char *)"k=", NULL };
			ab_msg_set (m, mode, AB_TAG_MODE, 0600);
			m->xattrs = xattrs;
		}
		break;
	case AB_MSG_FILE_LIST:
	case AB_MSG_FILE_STAT:
	case AB_MSG_FILE_MKDIR:
	case AB_MSG_FILE_REMOVE:
	case AB_MSG_FILE_RENAME:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		m->path = (char *)"x";
		if (type == AB_MSG_FILE_MKDIR)
			ab_msg_set (m, mode, AB_TAG_MODE, 0700);
		if (type == AB_MSG_FILE_REMOVE)
			ab_msg_set (m, recursive, AB_TAG_RECURSIVE, true);
		if (type == AB_MSG_FILE_RENAME)
			m->to = (char *)"y";
		break;
	case AB_MSG_FILE_WATCH:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		m->path = (char *)"/workspace";
		ab_msg_set (m, channel, AB_TAG_CHANNEL, 2);
		ab_msg_set (m, recursive, AB_TAG_RECURSIVE, true);
		break;
	case AB_MSG_WATCH_EVENT:
		ab_msg_set (m, event, AB_TAG_EVENT, AB_WIRE_WATCH_RENAME);
		m->name = (char *)"a/b";
		ab_msg_set (m, ftype, AB_TAG_FTYPE, AB_WIRE_FT_DIR);
		break;
	case AB_MSG_PORT_OPEN:
	case AB_MSG_EGRESS_LISTEN:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		ab_msg_set (m, port, AB_TAG_PORT, 65535);
		if (type == AB_MSG_PORT_OPEN)
			ab_msg_set (m, channel, AB_TAG_CHANNEL, 2);
		break;
	case AB_MSG_SHUTDOWN:
		ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1);
		ab_msg_set (m, grace_ms, AB_TAG_GRACE_MS, 100);
		break;
	case AB_MSG_PROC_LIST:
	case AB_MSG_PING: ab_msg_set (m, req_id, AB_TAG_REQ_ID, 1); break;
	default: break;
	}
}

static const uint16_t all_types[] = {
	AB_MSG_HELLO,         AB_MSG_OK,
	AB_MSG_FAIL,          AB_MSG_CONFIG,
	AB_MSG_WINDOW,        AB_MSG_RESET,
	AB_MSG_PROC_EXIT,     AB_MSG_PROC_START,
	AB_MSG_PROC_SIGNAL,   AB_MSG_PROC_RESIZE,
	AB_MSG_PROC_LIST,     AB_MSG_PROC_ATTACH,
	AB_MSG_PROC_STDIN,    AB_MSG_PROC_CLOSE_STDIN,
	AB_MSG_FILE_READ,     AB_MSG_FILE_WRITE,
	AB_MSG_FILE_LIST,     AB_MSG_FILE_STAT,
	AB_MSG_FILE_MKDIR,    AB_MSG_FILE_REMOVE,
	AB_MSG_FILE_RENAME,   AB_MSG_PORT_OPEN,
	AB_MSG_EGRESS_LISTEN, AB_MSG_SHUTDOWN,
	AB_MSG_PING,          AB_MSG_FILE_WATCH,
	AB_MSG_WATCH_EVENT,
};

static void
encode (const struct ab_msg_s *m, struct ab_tlv_writer_s *w)
{
	memset (w, 0, sizeof *w);
	ab_msg_encode (w, m);
}

/* decode(encode(m)) encodes to the same bytes, and a few fields survive. */
static void
test_round_trip_every_type (void **state)
{
	for (size_t i = 0; i < N (all_types); i++) {
		struct ab_msg_s m, d;
		struct ab_tlv_writer_s w, again;
		ab_error_t err = AB_ERROR_INIT;

		sample (all_types[i], &m);
		encode (&m, &w);
		if (ab_msg_decode (all_types[i], w.buf, w.len, &d, &err) < 0)
			fail_msg ("type %u: %s", all_types[i], err.msg);
		assert_int_equal (d.present & m.present, m.present);
		encode (&d, &again);
		assert_int_equal (again.len, w.len);
		assert_memory_equal (again.buf, w.buf, w.len);
		assert_int_equal (d.req_id, m.req_id);
		assert_int_equal (d.n_argv, m.argv ? 3 : 0);
		ab_msg_free (&d);
		ab_tlv_writer_free (&w);
		ab_tlv_writer_free (&again);
	}
}

static void
test_round_trip_values (void **state)
{
	struct ab_msg_s m, d;
	struct ab_tlv_writer_s w;
	ab_error_t err = AB_ERROR_INIT;

	sample (AB_MSG_OK, &m);
	encode (&m, &w);
	assert_int_equal (ab_msg_decode (AB_MSG_OK, w.buf, w.len, &d, &err), 0);
	assert_int_equal (d.mtime_ms, -1234);
	assert_true (d.size == UINT64_C (1) << 40);
	assert_int_equal (d.n_entries, 2);
	assert_string_equal (d.entries[0].name, "a file");
	assert_int_equal (d.n_procs, 2);
	assert_string_equal (d.procs[1].argv[2], "echo hi");
	assert_null (d.procs[1].argv[3]);
	assert_true (d.procs[0].running);
	assert_false (d.procs[1].running);
	assert_true (d.more);
	ab_msg_free (&d);
	ab_tlv_writer_free (&w);

	sample (AB_MSG_PROC_STDIN, &m);
	encode (&m, &w);
	assert_int_equal (ab_msg_decode (AB_MSG_PROC_STDIN, w.buf, w.len, &d, &err), 0);
	assert_int_equal (d.data_len, 3);
	assert_memory_equal (d.data, "a\0b", 3);
	ab_msg_free (&d);
	ab_tlv_writer_free (&w);
}

/* Cut every payload at every byte: a cut inside a record is malformed;
 * a cut between records may only succeed when no required field is lost. */
static void
test_truncation_every_byte (void **state)
{
	for (size_t i = 0; i < N (all_types); i++) {
		struct ab_msg_s m;
		struct ab_tlv_writer_s w;
		size_t boundary = 0;

		sample (all_types[i], &m);
		encode (&m, &w);
		for (size_t cut = 0; cut < w.len; cut++) {
			ab_error_t err = AB_ERROR_INIT;
			struct ab_msg_s d;
			int r;
			/* Walk record boundaries. */
			while (boundary < cut) {
				uint32_t len = (uint32_t)w.buf[boundary + 2] << 24
				               | (uint32_t)w.buf[boundary + 3] << 16
				               | (uint32_t)w.buf[boundary + 4] << 8
				               | w.buf[boundary + 5];
				boundary += 6 + len;
			}
			r = ab_msg_decode (all_types[i], w.buf, cut, &d, &err);
			if (cut != boundary)
				assert_int_equal (r, -1);
			if (r < 0)
				assert_int_not_equal (err.kind, AB_E_NONE);
			ab_msg_free (&d);
		}
		ab_tlv_writer_free (&w);
	}
}

/* Every record's length field, set to anything that overruns the payload,
 * is refused. */
static void
test_bad_record_lengths (void **state)
{
	static const uint32_t deltas[] = { 1, 2, 255, 65536 };
	for (size_t i = 0; i < N (all_types); i++) {
		struct ab_msg_s m;
		struct ab_tlv_writer_s w;

		sample (all_types[i], &m);
		encode (&m, &w);
		for (size_t off = 0; off < w.len;) {
			uint8_t *p = w.buf + off + 2;
			uint32_t len = (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16
			               | (uint32_t)p[2] << 8 | p[3];
			uint32_t left = (uint32_t)(w.len - off - 6);
			uint32_t bad[N (deltas) + 2];
			size_t nb = 0;
			for (size_t k = 0; k < N (deltas); k++)
				bad[nb++] = left + deltas[k];
			bad[nb++] = 0xffffffffU;
			bad[nb++] = 0x80000000U;
			for (size_t k = 0; k < nb; k++) {
				ab_error_t err = AB_ERROR_INIT;
				struct ab_msg_s d;
				p[0] = (uint8_t)(bad[k] >> 24), p[1] = (uint8_t)(bad[k] >> 16);
				p[2] = (uint8_t)(bad[k] >> 8), p[3] = (uint8_t)bad[k];
				assert_int_equal (
				        ab_msg_decode (all_types[i], w.buf, w.len, &d, &err), -1);
				assert_int_equal (err.kind, AB_E_INVALID);
				ab_msg_free (&d);
			}
			p[0] = (uint8_t)(len >> 24), p[1] = (uint8_t)(len >> 16);
			p[2] = (uint8_t)(len >> 8), p[3] = (uint8_t)len;
			off += 6 + len;
		}
		ab_tlv_writer_free (&w);
	}
}

struct bad_case_s {
	const char *what;
	uint16_t type;
	uint16_t tag;
	const void *value;
	size_t len;
	bool keep; /* keep the sample's own record of this tag */
};

static const uint8_t u32_zero[4] = { 0, 0, 0, 0 }, u32_two[4] = { 0, 0, 0, 2 },
                     u32_big[4] = { 0, 1, 0, 0 }, u32_65[4] = { 0, 0, 0, 65 },
                     u32_mode[4] = { 0, 0, 0x10, 0 }, u32_code[4] = { 0, 0, 0, 8 },
                     u32_four[4] = { 0, 0, 0, 4 }, three[3] = { 0, 0, 1 },
                     five[5] = { 0, 0, 0, 0, 1 }, nul_str[3] = { 'a', 0, 'b' },
                     u32_six[4] = { 0, 0, 0, 6 };

/* A valid sample with one record replaced (or added): each is refused. */
static const struct bad_case_s bad_cases[] = {
	{ "unknown tag", AB_MSG_PING, 999, u32_two, 4, false },
	{ "tag not in this schema", AB_MSG_PING, AB_TAG_PATH, "x", 1, false },
	{ "scalar given twice", AB_MSG_PROC_SIGNAL, AB_TAG_PID, u32_two, 4, true },
	{ "string given twice", AB_MSG_FILE_STAT, AB_TAG_PATH, "y", 1, true },
	{ "u32 of 3 bytes", AB_MSG_FILE_MKDIR, AB_TAG_MODE, three, 3, false },
	{ "u32 of 5 bytes", AB_MSG_FILE_MKDIR, AB_TAG_MODE, five, 5, false },
	{ "u32 of 0 bytes", AB_MSG_PROC_SIGNAL, AB_TAG_SIGNAL, "", 0, false },
	{ "u64 of 4 bytes", AB_MSG_SHUTDOWN, AB_TAG_GRACE_MS, u32_two, 4, false },
	{ "boolean 2", AB_MSG_FILE_REMOVE, AB_TAG_RECURSIVE, u32_two, 4, false },
	{ "channel 0", AB_MSG_FILE_READ, AB_TAG_CHANNEL, u32_zero, 4, false },
	{ "signal 0", AB_MSG_PROC_SIGNAL, AB_TAG_SIGNAL, u32_zero, 4, false },
	{ "signal 65", AB_MSG_PROC_SIGNAL, AB_TAG_SIGNAL, u32_65, 4, false },
	{ "pid 0", AB_MSG_PROC_ATTACH, AB_TAG_PID, u32_zero, 4, false },
	{ "port 0", AB_MSG_PORT_OPEN, AB_TAG_PORT, u32_zero, 4, false },
	{ "port 65536", AB_MSG_PORT_OPEN, AB_TAG_PORT, u32_big, 4, false },
	{ "mode 010000", AB_MSG_FILE_MKDIR, AB_TAG_MODE, u32_mode, 4, false },
	{ "rows 65536", AB_MSG_PROC_RESIZE, AB_TAG_ROWS, u32_big, 4, false },
	{ "string with NUL", AB_MSG_FILE_RENAME, AB_TAG_TO, nul_str, 3, false },
	{ "code out of range", AB_MSG_RESET, AB_TAG_CODE, u32_code, 4, false },
	{ "file type out of range", AB_MSG_OK, AB_TAG_FTYPE, u32_four, 4, false },
	{ "watch event 0", AB_MSG_WATCH_EVENT, AB_TAG_EVENT, u32_zero, 4, false },
	{ "watch event out of range", AB_MSG_WATCH_EVENT, AB_TAG_EVENT, u32_six, 4, false },
	{ "watch without a channel", AB_MSG_FILE_WATCH, AB_TAG_CHANNEL, u32_zero, 4, false },
	{ "nested record not a record", AB_MSG_OK, AB_TAG_ENTRY, three, 3, true },
};

static void
drop (struct ab_msg_s *m, uint16_t tag)
{
	if (tag < 64)
		m->present &= ~(UINT64_C (1) << tag);
	if (tag == AB_TAG_PATH)
		m->path = NULL;
	if (tag == AB_TAG_TO)
		m->to = NULL;
}

static void
test_bad_records (void **state)
{
	for (size_t i = 0; i < N (bad_cases); i++) {
		const struct bad_case_s *c = &bad_cases[i];
		struct ab_msg_s m, d;
		struct ab_tlv_writer_s w;
		ab_error_t err = AB_ERROR_INIT;

		sample (c->type, &m);
		if (!c->keep)
			drop (&m, c->tag);
		encode (&m, &w);
		ab_tlv_put (&w, c->tag, c->value, c->len);
		if (ab_msg_decode (c->type, w.buf, w.len, &d, &err) != -1)
			fail_msg ("%s: accepted", c->what);
		if (err.kind != AB_E_INVALID)
			fail_msg ("%s: kind %d, message %s", c->what, err.kind, err.msg);
		ab_msg_free (&d);
		ab_tlv_writer_free (&w);
	}
}

static void
test_nul_in_string_field (void **state)
{
	struct ab_tlv_writer_s w = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s d;

	ab_tlv_put_u32 (&w, AB_TAG_REQ_ID, 1);
	ab_tlv_put (&w, AB_TAG_PATH, nul_str, sizeof nul_str);
	assert_int_equal (ab_msg_decode (AB_MSG_FILE_STAT, w.buf, w.len, &d, &err), -1);
	assert_int_equal (err.kind, AB_E_INVALID);
	ab_msg_free (&d);
	ab_tlv_writer_free (&w);
}

static void
test_missing_required (void **state)
{
	for (size_t i = 0; i < N (all_types); i++) {
		struct ab_msg_s m, d;
		struct ab_tlv_writer_s w;
		ab_error_t err = AB_ERROR_INIT;

		sample (all_types[i], &m);
		/* Drop REQ_ID (or VERSION / BYTES / WAIT_STATUS / EVENT, the
		 * required field of the message types without one). */
		m.present &=
		        ~((UINT64_C (1) << AB_TAG_REQ_ID) | (UINT64_C (1) << AB_TAG_VERSION)
		          | (UINT64_C (1) << AB_TAG_BYTES) | (UINT64_C (1) << AB_TAG_WAIT_STATUS)
		          | (UINT64_C (1) << AB_TAG_EVENT));
		encode (&m, &w);
		if (all_types[i] == AB_MSG_RESET)
			assert_int_equal (ab_msg_decode (all_types[i], w.buf, w.len, &d, &err), 0);
		else if (ab_msg_decode (all_types[i], w.buf, w.len, &d, &err) != -1)
			fail_msg ("type %u accepted without its required field", all_types[i]);
		ab_msg_free (&d);
		ab_tlv_writer_free (&w);
	}
}

static void
test_unknown_types (void **state)
{
	static const uint16_t bad[] = {
		0,     2, 3, 9, 13, 19, 29, 47, 62, 0x7fff, AB_MSG_NESTED_ENTRY, AB_MSG_NESTED_PROC,
		0xffff
	};
	for (size_t i = 0; i < N (bad); i++) {
		ab_error_t err = AB_ERROR_INIT;
		struct ab_msg_s d;
		assert_int_equal (ab_msg_decode (bad[i], NULL, 0, &d, &err), -1);
		assert_int_equal (err.kind, AB_E_INVALID);
		ab_msg_free (&d);
	}
	assert_true (ab_msg_known_type (AB_MSG_PING));
	assert_false (ab_msg_known_type (AB_MSG_NESTED_ENTRY));
	assert_false (ab_msg_known_type (AB_MSG_EXEC));
}

static void
test_nested_too_deep (void **state)
{
	struct ab_tlv_writer_s inner = { 0 }, entry = { 0 }, w = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s d;

	/* An ENTRY inside an ENTRY is not in the nested schema; a PROC inside
	 * a PROC neither: both are refused. */
	ab_tlv_put_str (&inner, AB_TAG_NAME, "x");
	ab_tlv_put_str (&entry, AB_TAG_NAME, "y");
	ab_tlv_put (&entry, AB_TAG_ENTRY, inner.buf, inner.len);
	ab_tlv_put_u32 (&w, AB_TAG_REQ_ID, 1);
	ab_tlv_put (&w, AB_TAG_ENTRY, entry.buf, entry.len);
	assert_int_equal (ab_msg_decode (AB_MSG_OK, w.buf, w.len, &d, &err), -1);
	assert_int_equal (err.kind, AB_E_INVALID);
	ab_msg_free (&d);
	ab_tlv_writer_free (&inner);
	ab_tlv_writer_free (&entry);
	ab_tlv_writer_free (&w);
}

static void
test_limits (void **state)
{
	struct ab_tlv_writer_s w = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s d;
	char *long_path = malloc (AB_MSG_MAX_PATH + 2);

	memset (long_path, 'a', AB_MSG_MAX_PATH + 1);
	long_path[AB_MSG_MAX_PATH + 1] = '\0';
	ab_tlv_put_u32 (&w, AB_TAG_REQ_ID, 1);
	ab_tlv_put_str (&w, AB_TAG_PATH, long_path);
	assert_int_equal (ab_msg_decode (AB_MSG_FILE_STAT, w.buf, w.len, &d, &err), -1);
	assert_int_equal (err.kind, AB_E_LIMIT);
	ab_msg_free (&d);
	ab_tlv_writer_free (&w);
	free (long_path);

	/* More ARG records than AB_MSG_MAX_STRV. */
	ab_tlv_put_u32 (&w, AB_TAG_REQ_ID, 1);
	for (int i = 0; i <= AB_MSG_MAX_STRV; i++)
		ab_tlv_put (&w, AB_TAG_ARG, "", 0);
	assert_int_equal (ab_msg_decode (AB_MSG_PROC_START, w.buf, w.len, &d, &err), -1);
	assert_int_equal (err.kind, AB_E_LIMIT);
	ab_msg_free (&d);
	ab_tlv_writer_free (&w);
}

static void
test_wire_codes (void **state)
{
	static const ab_error_kind kinds[] = { AB_E_SYSTEM,    AB_E_INVALID,  AB_E_DENIED,
		                               AB_E_NOT_FOUND, AB_E_CONFLICT, AB_E_LIMIT,
		                               AB_E_INTERNAL };
	for (size_t i = 0; i < N (kinds); i++)
		assert_int_equal (ab_wire_code_to_kind (ab_wire_code_from_kind (kinds[i])),
		                  kinds[i]);
	assert_int_equal (ab_wire_code_from_kind (AB_E_DENIED), 3);
	assert_int_equal (ab_wire_code_to_kind (0), AB_E_INTERNAL);
	assert_int_equal (ab_wire_code_to_kind (99), AB_E_INTERNAL);
}

static void
test_frame_parse (void **state)
{
	uint8_t buf[64];
	struct ab_frame_s f;
	ab_error_t err = AB_ERROR_INIT;
	size_t flen = 0;

	ab_proto_encode_header (buf, AB_MSG_DATA, 7, 5);
	memcpy (buf + AB_PROTO_HEADER_SIZE, "hello", 5);
	for (size_t n = 0; n < AB_PROTO_HEADER_SIZE + 5; n++)
		assert_int_equal (ab_frame_parse (buf, n, &f, &flen, &err), 0);
	assert_int_equal (ab_frame_parse (buf, AB_PROTO_HEADER_SIZE + 5, &f, &flen, &err), 1);
	assert_int_equal (flen, AB_PROTO_HEADER_SIZE + 5);
	assert_int_equal (f.channel, 7);
	assert_memory_equal (f.payload, "hello", 5);
	/* Longer than the cap: refused from the header alone. */
	ab_proto_encode_header (buf, AB_MSG_DATA, 1, AB_PROTO_MAX_PAYLOAD + 1);
	assert_int_equal (ab_frame_parse (buf, AB_PROTO_HEADER_SIZE, &f, &flen, &err), -1);
	assert_int_equal (err.kind, AB_E_LIMIT);
	/* Any flag bit. */
	ab_proto_encode_header (buf, AB_MSG_DATA, 1, 0);
	buf[7] = 1;
	assert_int_equal (ab_frame_parse (buf, AB_PROTO_HEADER_SIZE, &f, &flen, &err), -1);
	assert_int_equal (err.kind, AB_E_INVALID);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_round_trip_every_type),
		cmocka_unit_test (test_round_trip_values),
		cmocka_unit_test (test_truncation_every_byte),
		cmocka_unit_test (test_bad_record_lengths),
		cmocka_unit_test (test_bad_records),
		cmocka_unit_test (test_nul_in_string_field),
		cmocka_unit_test (test_missing_required),
		cmocka_unit_test (test_unknown_types),
		cmocka_unit_test (test_nested_too_deep),
		cmocka_unit_test (test_limits),
		cmocka_unit_test (test_wire_codes),
		cmocka_unit_test (test_frame_parse),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
