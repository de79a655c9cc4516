/* The agent wire protocol: framed messages on one reliable byte stream
 * between the host-side session and agentbox-agent (PID 1).  See
 * docs/protocol.md.  Links libc only: the agent includes it statically.
 *
 * Frame = 12-byte header (big-endian) + payload:
 *   u32 length   payload bytes, at most AB_PROTO_MAX_PAYLOAD
 *   u16 type     enum ab_msg_type
 *   u16 flags    reserved, 0
 *   u32 channel  0 = control; later issues multiplex streams on others
 * Payloads of control messages are TLV records: u16 tag, u32 length, bytes. */
#ifndef AB_PROTO_PROTO_H
#define AB_PROTO_PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_PROTO_VERSION 1
#define AB_PROTO_HEADER_SIZE 12
#define AB_PROTO_MAX_PAYLOAD (1U << 20)

enum ab_msg_type {
	AB_MSG_HELLO = 1,   /* agent -> host: TAG_VERSION */
	AB_MSG_EXEC = 2,    /* host -> agent: start the command */
	AB_MSG_STARTED = 3, /* agent -> host: TAG_PID; carries the pty master fd in tty mode */
	AB_MSG_SIGNAL = 4,  /* host -> agent: TAG_SIGNAL, delivered to the command's group */
	AB_MSG_EXIT = 5,    /* agent -> host: TAG_WAIT_STATUS, TAG_TIMED_OUT, TAG_EXEC_ERRNO */
	AB_MSG_ERROR = 6,   /* agent -> host: TAG_MESSAGE; the agent could not do what was asked */
	AB_MSG_EGRESS_LISTEN = 7, /* host -> agent, before EXEC: TAG_PORT; listen on 127.0.0.1 */
	AB_MSG_EGRESS_CONN = 8,   /* agent -> host: one accepted connection, its fd by SCM_RIGHTS */
};

enum ab_msg_tag {
	AB_TAG_VERSION = 1,
	AB_TAG_ARG = 2,         /* repeated, in order */
	AB_TAG_ENV = 3,         /* repeated KEY=VALUE */
	AB_TAG_CWD = 4,
	AB_TAG_UID = 5,
	AB_TAG_GID = 6,
	AB_TAG_TTY = 7,         /* u32 0/1 */
	AB_TAG_ROWS = 8,
	AB_TAG_COLS = 9,
	AB_TAG_TIMEOUT_MS = 10, /* u64 */
	AB_TAG_GRACE_MS = 11,   /* u64 */
	AB_TAG_NOFILE = 12,     /* u64 */
	AB_TAG_RW_PATH = 13,    /* repeated: Landlock write access beneath it */
	AB_TAG_PID = 14,
	AB_TAG_SIGNAL = 15,
	AB_TAG_WAIT_STATUS = 16,
	AB_TAG_TIMED_OUT = 17,
	AB_TAG_EXEC_ERRNO = 18,
	AB_TAG_MESSAGE = 19,
	AB_TAG_LANDLOCK_ABI = 20,
	AB_TAG_PORT = 21,
};

struct ab_frame_s {
	uint16_t type;
	uint16_t flags;
	uint32_t channel;
	uint32_t length;
	uint8_t *payload; /* owned, length bytes */
};

/* A growable TLV payload being built. */
struct ab_tlv_writer_s {
	uint8_t *buf;
	size_t len, cap;
};

/* A cursor over a received payload; every length is checked. */
struct ab_tlv_reader_s {
	const uint8_t *buf;
	size_t len, off;
};

struct ab_tlv_s {
	uint16_t tag;
	uint32_t length;
	const uint8_t *value;
};

void ab_tlv_put (struct ab_tlv_writer_s *w, uint16_t tag, const void *value, size_t len);
void ab_tlv_put_str (struct ab_tlv_writer_s *w, uint16_t tag, const char *s);
void ab_tlv_put_u32 (struct ab_tlv_writer_s *w, uint16_t tag, uint32_t v);
void ab_tlv_put_u64 (struct ab_tlv_writer_s *w, uint16_t tag, uint64_t v);
void ab_tlv_writer_free (struct ab_tlv_writer_s *w);

void ab_tlv_reader_init (struct ab_tlv_reader_s *r, const uint8_t *buf, size_t len);
/* 1 = got a record, 0 = end, -1 = malformed. */
int ab_tlv_next (struct ab_tlv_reader_s *r, struct ab_tlv_s *out, ab_error_t *err);
int ab_tlv_u32 (const struct ab_tlv_s *t, uint32_t *v, ab_error_t *err);
int ab_tlv_u64 (const struct ab_tlv_s *t, uint64_t *v, ab_error_t *err);
/* A NUL-terminated copy; embedded NULs are malformed. */
char *ab_tlv_strdup (const struct ab_tlv_s *t, ab_error_t *err);

/* Send one frame, with optional fds attached (unix sockets only). */
int ab_frame_send (int fd, uint16_t type, uint32_t channel, const void *payload, size_t len,
                   const int *fds, size_t n_fds, ab_error_t *err);
/* Receive one frame (blocking).  Returns 1 on a frame, 0 on clean EOF
 * before any byte, -1 on error.  Received fds land in fds[] (up to max_fds). */
int ab_frame_recv (int fd, struct ab_frame_s *frame, int *fds, size_t max_fds, size_t *n_fds,
                   ab_error_t *err);
void ab_frame_free (struct ab_frame_s *frame);

void ab_proto_encode_header (uint8_t out[AB_PROTO_HEADER_SIZE], uint16_t type, uint32_t channel,
                             uint32_t length);
int ab_proto_decode_header (const uint8_t in[AB_PROTO_HEADER_SIZE], struct ab_frame_s *frame,
                            ab_error_t *err);

#endif
