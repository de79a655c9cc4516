/* libFuzzer harness for what agentbox-agent (PID 1) decodes from its one
 * door: frame headers, TLV records and the EXEC message.  Besides "no
 * crash, no sanitizer report", it checks properties the agent relies on:
 *   - every TLV record handed out lies inside the payload, and the reader
 *     either consumes the payload exactly or reports it malformed;
 *   - a decoded EXEC has a command, NULL-terminated string vectors whose
 *     counts match, and no string longer than its record;
 *   - decode(encode(decode(x))) equals decode(x): what the host re-sends
 *     means the same to the agent.
 * Input: the first 12 bytes are also tried as a frame header; the whole
 * input is the payload.
 *
 * Build (from the repository root) and run for 60 s on a copy of the seeds:
 *   clang-14 -g -O1 -std=gnu11 -D_GNU_SOURCE -Isrc \
 *     -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
 *     tests/fuzz/fuzz-proto.c src/proto/tlv.c src/proto/exec-msg.c \
 *     src/base/error.c src/base/xalloc.c -o /tmp/fuzz-proto
 *   rm -rf /tmp/fuzz-proto-corpus && cp -r tests/fuzz/corpus/proto /tmp/fuzz-proto-corpus
 *   /tmp/fuzz-proto -max_total_time=60 -max_len=4096 /tmp/fuzz-proto-corpus
 * (a copy, so the seeds in the repository stay small) */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proto/exec-msg.h"
#include "proto/proto.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

static void
check_header (const uint8_t *data, size_t size)
{
	struct ab_frame_s f;
	ab_error_t err = AB_ERROR_INIT;
	uint8_t again[AB_PROTO_HEADER_SIZE];

	if (size < AB_PROTO_HEADER_SIZE)
		return;
	if (ab_proto_decode_header (data, &f, &err) < 0) {
		if (err.kind == AB_E_NONE)
			abort ();
		return;
	}
	if (f.length > AB_PROTO_MAX_PAYLOAD || f.flags != 0 || f.payload)
		abort ();
	ab_proto_encode_header (again, f.type, f.channel, f.length);
	if (memcmp (again, data, AB_PROTO_HEADER_SIZE) != 0)
		abort (); /* an accepted header has exactly one encoding */
}

static void
check_tlv (const uint8_t *data, size_t size)
{
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	ab_error_t err = AB_ERROR_INIT;
	size_t consumed = 0;
	int k;

	ab_tlv_reader_init (&r, data, size);
	while ((k = ab_tlv_next (&r, &t, &err)) > 0) {
		if (t.value < data || t.value + t.length > data + size)
			abort ();
		consumed += 6 + (size_t)t.length;
	}
	if (k == 0 && consumed != size)
		abort ();
	if (k < 0 && err.kind != AB_E_INVALID)
		abort ();
}

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

static int
strv_equal (char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return 0;
	for (size_t i = 0; i < na; i++)
		if (strcmp (a[i], b[i]) != 0)
			return 0;
	return 1;
}

static int
exec_equal (const struct ab_exec_msg_s *a, const struct ab_exec_msg_s *b)
{
	return strv_equal (a->argv, a->n_argv, b->argv, b->n_argv)
	       && strv_equal (a->env, a->n_env, b->env, b->n_env)
	       && strv_equal (a->rw_paths, a->n_rw_paths, b->rw_paths, b->n_rw_paths)
	       && strcmp (a->cwd, b->cwd) == 0 && a->uid == b->uid && a->gid == b->gid
	       && a->tty == b->tty && a->rows == b->rows && a->cols == b->cols
	       && a->timeout_ms == b->timeout_ms && a->grace_ms == b->grace_ms
	       && a->nofile == b->nofile;
}

static void
check_exec (const uint8_t *data, size_t size)
{
	struct ab_exec_msg_s m, again;
	struct ab_tlv_writer_s w = { 0 };
	ab_error_t err = AB_ERROR_INIT;

	if (ab_exec_msg_decode (data, size, &m, &err) < 0) {
		if (err.kind == AB_E_NONE)
			abort ();
		ab_exec_msg_free (&m); /* a failed decode may hold partial strings */
		return;
	}
	if (m.n_argv == 0 || !m.cwd || !m.env)
		abort ();
	check_strv (m.argv, m.n_argv, size);
	check_strv (m.env, m.n_env, size);
	check_strv (m.rw_paths, m.n_rw_paths, size);
	ab_exec_msg_encode (&w, &m);
	if (ab_exec_msg_decode (w.buf, w.len, &again, &err) < 0 || !exec_equal (&m, &again))
		abort ();
	ab_exec_msg_free (&again);
	ab_tlv_writer_free (&w);
	ab_exec_msg_free (&m);
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	check_header (data, size);
	check_tlv (data, size);
	check_exec (data, size);
	return 0;
}
