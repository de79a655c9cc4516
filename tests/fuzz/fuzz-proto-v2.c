/* libFuzzer harness for the version 2 messages (src/proto/msg.c), which
 * the agent decodes inside PID 1 for every request of every session.
 * Besides "no crash, no sanitizer report" it checks:
 *   - a refused payload comes with an error kind;
 *   - an accepted one has what its schema requires (REQ_ID on requests),
 *     NULL-terminated vectors whose counts match, no string longer than
 *     the payload, DATA inside the payload;
 *   - encode(decode(x)) decodes again, to the same encoding (what a relay
 *     re-sends means the same);
 *   - the incremental frame parser, fed the input as a byte stream in
 *     pieces, never hands out a frame beyond what it was given.
 * Input: byte 0 picks the message type (an index into the known types),
 * the rest is the payload.
 *
 * Build (from the repository root) and run for 60 s on a copy of the seeds:
 *   clang-14 -g -O1 -std=gnu11 -D_GNU_SOURCE -Isrc \
 *     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     tests/fuzz/fuzz-proto-v2.c src/proto/msg.c src/proto/tlv.c \
 *     src/base/error.c src/base/xalloc.c -o /tmp/fuzz-proto-v2
 *   rm -rf /tmp/fuzz-v2-corpus && cp -r tests/fuzz/corpus/proto-v2 /tmp/fuzz-v2-corpus
 *   /tmp/fuzz-proto-v2 -max_total_time=60 -max_len=8192 /tmp/fuzz-v2-corpus */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/msg.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static const uint16_t types[] = {
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
	AB_MSG_PING,          AB_MSG_EGRESS_CONN,
	AB_MSG_EXEC,          AB_MSG_DATA,
};

static void
check_strv (char **v, size_t n, size_t max_len)
{
	if (n && !v)
		abort ();
	for (size_t i = 0; i < n; i++)
		if (!v[i] || strlen (v[i]) > max_len)
			abort ();
	if (v && v[n] != NULL)
		abort ();
}

static void
check_str (const char *s, size_t max_len)
{
	if (s && strlen (s) > max_len)
		abort ();
}

static void
check_msg (const struct ab_msg_s *m, const uint8_t *data, size_t size)
{
	check_strv (m->argv, m->n_argv, size);
	check_strv (m->env, m->n_env, size);
	check_strv (m->rw_paths, m->n_rw_paths, size);
	check_strv (m->roots, m->n_roots, size);
	check_str (m->cwd, size);
	check_str (m->path, size);
	check_str (m->to, size);
	check_str (m->message, size);
	check_str (m->name, size);
	if (m->data && (m->data < data || m->data + m->data_len > data + size))
		abort ();
	if ((m->n_entries && !m->entries) || (m->n_procs && !m->procs))
		abort ();
	for (size_t i = 0; i < m->n_entries; i++)
		check_msg (&m->entries[i], data, size);
	for (size_t i = 0; i < m->n_procs; i++)
		check_msg (&m->procs[i], data, size);
	if (m->type >= AB_MSG_CONFIG && m->type != AB_MSG_WINDOW && m->type != AB_MSG_RESET
	    && m->type != AB_MSG_PROC_EXIT && m->type != AB_MSG_EGRESS_CONN
	    && m->type != AB_MSG_DATA && m->type < AB_MSG_NESTED_ENTRY
	    && !ab_msg_has (m, AB_TAG_REQ_ID))
		abort (); /* every request and answer is matched by its REQ_ID */
}

static void
check_decode (uint16_t type, const uint8_t *data, size_t size)
{
	struct ab_tlv_writer_s w = { 0 }, w2 = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s m, again;

	if (ab_msg_decode (type, data, size, &m, &err) < 0) {
		if (err.kind == AB_E_NONE)
			abort ();
		ab_msg_free (&m);
		return;
	}
	check_msg (&m, data, size);
	ab_msg_encode (&w, &m);
	if (ab_msg_decode (type, w.buf, w.len, &again, &err) < 0)
		abort ();
	ab_msg_encode (&w2, &again);
	if (w2.len != w.len || (w.len && memcmp (w.buf, w2.buf, w.len) != 0))
		abort ();
	ab_msg_free (&again);
	ab_msg_free (&m);
	ab_tlv_writer_free (&w);
	ab_tlv_writer_free (&w2);
}

/* Feed the input to the frame parser in growing pieces, as recv would. */
static void
check_stream (const uint8_t *data, size_t size)
{
	size_t off = 0, avail = 0;

	while (off < size) {
		struct ab_frame_s f;
		ab_error_t err = AB_ERROR_INIT;
		size_t flen = 0;
		int k;
		avail = avail + 7 > size ? size : avail + 7;
		k = ab_frame_parse (data + off, avail - off, &f, &flen, &err);
		if (k < 0) {
			if (err.kind == AB_E_NONE)
				abort ();
			return;
		}
		if (k == 0) {
			if (avail == size)
				return;
			continue;
		}
		if (flen > avail - off || flen != AB_PROTO_HEADER_SIZE + (size_t)f.length
		    || f.length > AB_PROTO_MAX_PAYLOAD)
			abort ();
		off += flen;
	}
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	if (size < 1)
		return 0;
	check_decode (types[data[0] % (sizeof types / sizeof *types)], data + 1, size - 1);
	check_stream (data, size);
	return 0;
}
