/* Version 2 messages (docs/protocol-v2.md): one struct for every request,
 * response and channel-control message, encoded and decoded by table.
 *
 * Each message type has a schema: the tags it may carry and the tags it
 * must carry.  Decoding refuses an unknown type, a tag outside the schema,
 * a scalar given twice, an integer of the wrong width, a boolean other than
 * 0/1, a string with a NUL, a missing required tag, nested records inside
 * nested records, and counts beyond the limits below.  Pure code, no
 * system calls: the agent links it statically and the fuzzer drives it. */
#ifndef AB_PROTO_MSG_H
#define AB_PROTO_MSG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "proto/proto.h"

#define AB_MSG_MAX_STRV   65536 /* ARG, ENV, RW_PATH, ROOT records per message */
#define AB_MSG_MAX_NESTED 16384 /* ENTRY or PROC records per message */
#define AB_MSG_MAX_PATH   4096  /* PATH, TO, CWD, NAME, ROOT, RW_PATH bytes */

/* Pseudo types for the nested records' schemas. */
#define AB_MSG_NESTED_ENTRY 0x8000
#define AB_MSG_NESTED_PROC  0x8001

struct ab_msg_s {
	uint16_t type;
	uint64_t present; /* bit (1 << tag) for every scalar field set or seen */

	uint32_t version, features, req_id, code, errnum, channel, pid, signal, uid, gid;
	uint32_t rows, cols, mode, ftype, bytes, wait_status, exec_errno, landlock_abi, port;
	bool tty, stdin_open, recursive, running, timed_out, configured, more;
	uint32_t conn;      /* TAG_CONN */
	uint32_t event;     /* TAG_EVENT */
	bool egress_stream; /* TAG_EGRESS_STREAM */
	uint64_t timeout_ms, grace_ms, nofile, size, started_ms;
	int64_t mtime_ms;

	/* Strings: encoded when non-NULL; owned after decode. */
	char *cwd, *path, *to, *message, *name;
	/* NULL-terminated vectors: encoded until NULL; owned after decode. */
	char **argv, **env, **rw_paths, **roots, **xattrs;
	size_t n_argv, n_env, n_rw_paths, n_roots, n_xattrs;
	/* Raw bytes (TAG_DATA): encoded when non-NULL; after decode they point
	 * into the payload that was decoded (not owned). */
	const uint8_t *data;
	size_t data_len;
	/* Nested records (FILE_LIST and PROC_LIST answers); owned after decode. */
	struct ab_msg_s *entries, *procs;
	size_t n_entries, n_procs;
};

/* Set a scalar field and mark it present: ab_msg_set (&m, pid, AB_TAG_PID, 7). */
#define ab_msg_set(m, field, tag, value)                                                           \
	((m)->field = (value), (m)->present |= UINT64_C (1) << (tag))
#define ab_msg_has(m, tag) (((m)->present >> (tag)) & 1U)

void ab_msg_init (struct ab_msg_s *m, uint16_t type);
/* Append the message's TLV records to w (the frame type is m->type). */
void ab_msg_encode (struct ab_tlv_writer_s *w, const struct ab_msg_s *m);
/* Decode a payload of frame type `type`.  On failure *m may hold partial
 * data: ab_msg_free it either way. */
int ab_msg_decode (uint16_t type, const uint8_t *payload, size_t len, struct ab_msg_s *m,
                   ab_error_t *err);
/* Frees what decode allocated.  A message built for encoding with borrowed
 * strings must not be passed here. */
void ab_msg_free (struct ab_msg_s *m);

/* True for types this codec knows (v2 requests, responses, channel control). */
bool ab_msg_known_type (uint16_t type);

/* Wire error codes <-> error kinds (unknown codes map to AB_E_INTERNAL). */
uint32_t ab_wire_code_from_kind (ab_error_kind kind);
ab_error_kind ab_wire_code_to_kind (uint32_t code);

/* An incremental frame parser over a receive buffer: 1 = a whole frame is
 * at buf (header decoded into *f, f->payload points into buf, *frame_len =
 * header + payload), 0 = need more bytes, -1 = malformed (too long, flags). */
int ab_frame_parse (const uint8_t *buf, size_t len, struct ab_frame_s *f, size_t *frame_len,
                    ab_error_t *err);

#endif
