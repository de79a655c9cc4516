/* The E2B front end's two body parsers, pure (no sockets, no daemon
 * state) so that the fuzzers drive them as the daemon does:
 *
 *   e2b-envelope.c   Connect protocol v1 envelopes (JSON codec)
 *   e2b-multipart.c  multipart/form-data, streamed and bounded */
#ifndef AB_DAEMON_E2B_WIRE_H
#define AB_DAEMON_E2B_WIRE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

/* ---- envelopes: flags byte, 4-byte big-endian length, the message ---- */

#define AB_E2B_ENVELOPE_HEAD   5
#define AB_E2B_FLAG_COMPRESSED 0x01
#define AB_E2B_FLAG_END_STREAM 0x02

/* A received envelope's head: its message length (at most max) and
 * whether it ends the stream; compressed envelopes are refused. */
int ab_e2b_envelope_head (const uint8_t h[AB_E2B_ENVELOPE_HEAD], size_t max, size_t *len, bool *end,
                          ab_error_t *err);
/* A message: a JSON object (empty = {}), duplicate keys refused. */
int ab_e2b_envelope_json (const char *p, size_t len, json_t **msg, ab_error_t *err);
/* A server-streaming call's request body: exactly one envelope of flags 0
 * whose length is the rest of the body. */
int ab_e2b_envelope_unary (const uint8_t *body, size_t len, json_t **msg, ab_error_t *err);

/* ---- multipart/form-data -------------------------------------------------- */

#define AB_MP_BUF          (256 * 1024)
#define AB_MP_HEAD_MAX     8192
#define AB_MP_BOUNDARY_MAX 200

/* Reads the body: bytes, 0 at its end, negative on error. */
typedef ssize_t (*ab_mp_read_fn) (void *ctx, void *buf, size_t cap, ab_error_t *err);

struct ab_mp_s {
	ab_mp_read_fn read;
	void *ctx;
	char delim[AB_MP_BOUNDARY_MAX + 8]; /* "\r\n--" boundary */
	size_t dlen;
	uint8_t *buf; /* AB_MP_BUF: what is held of the body at most */
	size_t off, len;
	bool eof;       /* the body is read whole */
	bool part_done; /* the current part's delimiter was reached */
};

/* The boundary from the Content-Type value, and the body's first one. */
int ab_mp_begin (struct ab_mp_s *m, const char *content_type, size_t ct_len, ab_error_t *err);
/* The next part (what is left of the current one is skipped): 1 with its
 * Content-Disposition filename (a new string, or NULL) and whether it is
 * the field `file`, 0 after the closing delimiter. */
int ab_mp_next_part (struct ab_mp_s *m, char **filename, bool *is_file, ab_error_t *err);
/* The current part's bytes, 0 at its end (an ab_agent_source_fn). */
ssize_t ab_mp_part_read (void *m, void *out, size_t cap, ab_error_t *err);
void ab_mp_free (struct ab_mp_s *m);

#endif
