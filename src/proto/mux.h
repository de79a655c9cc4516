/* The microVM's stream multiplexer (docs/microvm.md): one byte stream
 * between the host and the guest (a virtio-serial port) carries many
 * independent connections, each with its own credit so that one slow
 * connection never blocks the others.  This file is the pure part: the
 * frame format, encoding and strict decoding.  Libc only: the agent (guest)
 * and the host's monitor both link it.
 *
 * A frame is a 9-byte header, big-endian, then `len` bytes of payload:
 *
 *   u8 type | u32 id | u32 len | payload
 *
 *   HELLO  id 0, payload u32 magic "ABMX", u32 version
 *   OPEN   id > 0, no payload: a new connection (ids are never reused)
 *   DATA   id > 0, 1..AB_MUX_MAX_DATA bytes, never more than the credit
 *   EOF    id > 0, no payload: the sender sends no more DATA on id
 *   CLOSE  id > 0, no payload: the sender released id (both directions)
 *   CREDIT id > 0, payload u32 n > 0: the receiver may send n more bytes */
#ifndef AB_PROTO_MUX_H
#define AB_PROTO_MUX_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_MUX_HEADER   9
#define AB_MUX_MAX_DATA 65536
/* What each side may send on a new connection before the first CREDIT;
 * also the most credit a side may ever hold on one connection. */
#define AB_MUX_WINDOW  (256U * 1024)
#define AB_MUX_MAGIC   0x41424d58U /* "ABMX" */
#define AB_MUX_VERSION 1U
/* Largest frame on the wire. */
#define AB_MUX_FRAME_MAX (AB_MUX_HEADER + AB_MUX_MAX_DATA)

enum ab_mux_type {
	AB_MUX_HELLO = 1,
	AB_MUX_OPEN = 2,
	AB_MUX_DATA = 3,
	AB_MUX_EOF = 4,
	AB_MUX_CLOSE = 5,
	AB_MUX_CREDIT = 6,
};

struct ab_mux_frame_s {
	uint8_t type;
	uint32_t id;
	uint32_t len;           /* payload length */
	const uint8_t *payload; /* DATA: into the decoded buffer */
	uint32_t value;         /* HELLO: version; CREDIT: n */
};

/* Decode the first frame of buf[0..n).  1: *f filled and *used bytes
 * consumed; 0: more bytes are needed (nothing consumed); -1: the stream is
 * invalid (err says why; no frame after this can be trusted).  A header
 * announcing a payload that is too long is refused before its payload
 * arrives. */
int ab_mux_decode (const uint8_t *buf, size_t n, struct ab_mux_frame_s *f, size_t *used,
                   ab_error_t *err);

/* Encoders: write one frame header (plus the fixed payload of HELLO and
 * CREDIT) into out, which has room for AB_MUX_HEADER + 8 bytes; return the
 * number of bytes written.  DATA's payload follows its header. */
size_t ab_mux_put_header (uint8_t *out, uint8_t type, uint32_t id, uint32_t len);
size_t ab_mux_put_hello (uint8_t *out);
size_t ab_mux_put_credit (uint8_t *out, uint32_t id, uint32_t n);

const char *ab_mux_type_name (uint8_t type);

#endif
