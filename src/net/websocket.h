/* The WebSocket codec (RFC 6455), pure code: frame headers in and out,
 * masking, message reassembly from fragments, control frames, the close
 * handshake's payload, and the opening handshake's key and accept value.
 * No socket, no allocation besides the reassembly buffer; the preview
 * bridge's relay (preview-framed.c), the daemon's WebSocket sessions and
 * the CLI's client (daemon/websocket.c, over blocking sockets) and the
 * unit tests drive it.
 *
 * The decoder is strict where a lax reading would let the two ends
 * disagree about where a message starts or ends: reserved bits (no
 * extension is ever negotiated), reserved opcodes, fragmented or long
 * control frames, lengths not in their minimal form or with the top bit
 * set, masking in the wrong direction (5.1: a client MUST close on a
 * masked frame from the server), continuation frames outside a message,
 * a new message inside a fragmented one, and text that is not UTF-8
 * (8.1) all fail the connection with the close code 7.4.1 names.  Sizes
 * are checked from the header, before the payload is buffered. */
#ifndef AB_NET_WEBSOCKET_H
#define AB_NET_WEBSOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "net/iobuf.h"

enum {
	AB_WS_OP_CONT = 0x0,
	AB_WS_OP_TEXT = 0x1,
	AB_WS_OP_BINARY = 0x2,
	AB_WS_OP_CLOSE = 0x8,
	AB_WS_OP_PING = 0x9,
	AB_WS_OP_PONG = 0xA,
};

/* Close codes (RFC 6455 7.4.1). */
enum {
	AB_WS_CLOSE_NORMAL = 1000,
	AB_WS_CLOSE_GOING_AWAY = 1001,
	AB_WS_CLOSE_PROTOCOL = 1002,
	AB_WS_CLOSE_NO_STATUS = 1005, /* never sent: "the close frame had no code" */
	AB_WS_CLOSE_BAD_DATA = 1007,
	AB_WS_CLOSE_TOO_BIG = 1009,
};

/* base64 of 16 bytes (24 characters) and of a SHA-1 digest (28). */
#define AB_WS_KEY_LEN    24
#define AB_WS_ACCEPT_LEN 28

/* A client's key from 16 bytes of getrandom(2) (4.1: "randomly selected
 * ... for each connection").  Returns 0 or -1 with errno. */
int ab_ws_make_key (char key[AB_WS_KEY_LEN + 1]);

/* base64(SHA-1(key[0..len) + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11"))
 * (4.2.2), NUL-terminated: what the server answers, what the client
 * checks. */
void ab_ws_accept_key (const char *key, size_t len, char accept[AB_WS_ACCEPT_LEN + 1]);

/* Largest frame header: 2 + 8 (64-bit length) + 4 (mask). */
#define AB_WS_MAX_HEADER 14
/* Control frames carry at most 125 bytes (5.5). */
#define AB_WS_MAX_CONTROL 125

struct ab_ws_frame_s {
	bool fin;
	uint8_t opcode;
	bool masked;
	uint8_t mask[4];
	size_t header_len;
	uint64_t payload_len;
	uint8_t *payload; /* inside the caller's buffer, unmasked in place */
};

/* Write a frame header for a payload of len bytes; mask NULL = unmasked
 * (server to client), else the 4-byte key (client to server; the caller
 * masks the payload with ab_ws_mask).  Returns the header's length. */
size_t ab_ws_encode_header (uint8_t out[AB_WS_MAX_HEADER], bool fin, uint8_t opcode, uint64_t len,
                            const uint8_t *mask);

/* XOR p[0..n) with the key, starting at key position offset % 4 (so a
 * payload can be masked in pieces). */
void ab_ws_mask (uint8_t *p, size_t n, const uint8_t key[4], size_t offset);

/* The length of the header that starts with these two bytes (2 to 14):
 * how many bytes a blocking reader reads before ab_ws_decode_header. */
size_t ab_ws_header_len (const uint8_t first[2]);

/* Decode one frame's header at the start of buf[0..len), with the same
 * checks and arguments as ab_ws_decode_frame, before any of the payload
 * is read.  Returns the header's length with *f filled (payload NULL), 0
 * when more bytes are needed, -1 with *close_code. */
ssize_t ab_ws_decode_header (const uint8_t *buf, size_t len, bool expect_masked,
                             uint64_t max_payload, struct ab_ws_frame_s *f, uint16_t *close_code);

/* Decode one frame at the start of buf[0..len).  expect_masked: true when
 * reading a client (we are the server), false when reading a server.
 * max_payload bounds a data frame's payload (control frames: 125).
 * Returns the frame's total length (header + payload) with *f filled and a
 * masked payload unmasked in place; 0 when more bytes are needed; -1 with
 * *close_code (1002 or 1009) when the connection must fail.  A frame too
 * big is refused as soon as its header is complete. */
ssize_t ab_ws_decode_frame (uint8_t *buf, size_t len, bool expect_masked, uint64_t max_payload,
                            struct ab_ws_frame_s *f, uint16_t *close_code);

/* Reassembly of data frames into messages (5.4). */
struct ab_ws_assembler_s {
	uint64_t max_message; /* bytes of one message, all fragments together */
	bool active;          /* inside a fragmented message */
	uint8_t opcode;       /* its opcode (text or binary) */
	struct ab_iobuf_s buf;
};

typedef enum {
	AB_WS_EV_NONE = 0, /* a fragment was stored; nothing to deliver yet */
	AB_WS_EV_MESSAGE,  /* a whole text or binary message */
	AB_WS_EV_PING,
	AB_WS_EV_PONG,
	AB_WS_EV_CLOSE,
} ab_ws_event_kind;

struct ab_ws_event_s {
	ab_ws_event_kind kind;
	uint8_t opcode;      /* MESSAGE: AB_WS_OP_TEXT or AB_WS_OP_BINARY */
	const uint8_t *data; /* MESSAGE, PING, PONG: the payload */
	size_t len;
	uint16_t close_code; /* CLOSE: the peer's code, or 1005 when it gave none */
	const char *reason;  /* CLOSE: not NUL-terminated */
	size_t reason_len;
};

void ab_ws_assembler_init (struct ab_ws_assembler_s *a, uint64_t max_message);
void ab_ws_assembler_free (struct ab_ws_assembler_s *a);

/* Feed one decoded frame.  Returns 0 with *ev filled (data may point into
 * the frame or into the assembler's buffer: valid until the next call), or
 * -1 with *close_code when the connection must fail. */
int ab_ws_assemble (struct ab_ws_assembler_s *a, const struct ab_ws_frame_s *f,
                    struct ab_ws_event_s *ev, uint16_t *close_code);

/* A close frame's payload (5.5.1): code (big-endian) and a UTF-8 reason.
 * Returns 0, or -1 with *close_code = 1002 (a 1-byte payload, a code that
 * must not be sent) or 1007 (the reason is not UTF-8). */
int ab_ws_parse_close (const uint8_t *p, size_t n, uint16_t *code, const char **reason,
                       size_t *reason_len, uint16_t *close_code);

/* A code a peer may put in a close frame (7.4.1, 7.4.2). */
bool ab_ws_close_code_valid (uint16_t code);

/* Well-formed UTF-8 (RFC 3629: no overlong forms, no surrogates, nothing
 * above U+10FFFF). */
bool ab_ws_utf8_valid (const uint8_t *p, size_t n);

#endif
