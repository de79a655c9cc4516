/* The WebSocket framing (RFC 6455) the API's interactive sessions use,
 * for both ends: the daemon (unmasked frames out, masked frames required
 * in, RFC 6455 5.1) and the CLI client (the other way round). */
#ifndef AB_DAEMON_WEBSOCKET_H
#define AB_DAEMON_WEBSOCKET_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "daemon/http-io.h"

enum {
	AB_WS_CONT = 0x0,
	AB_WS_TEXT = 0x1,
	AB_WS_BINARY = 0x2,
	AB_WS_CLOSE = 0x8,
	AB_WS_PING = 0x9,
	AB_WS_PONG = 0xa,
};

/* Messages larger than this are refused (close code 1009). */
#define AB_WS_MAX_MESSAGE (1U << 20)

/* Binary messages of an exec session start with one byte naming the stream. */
enum { AB_WS_STDIN = 0, AB_WS_STDOUT = 1, AB_WS_STDERR = 2 };

/* base64(SHA-1(key + the RFC's GUID)), NUL-terminated (29 bytes). */
void ab_ws_accept_key (const char *key, size_t len, char out[29]);

/* One frame (FIN set); `mask` for a client. */
int ab_ws_send (int fd, int opcode, const void *buf, size_t len, bool mask);

struct ab_ws_msg_s {
	int opcode;    /* TEXT, BINARY, CLOSE, PING, PONG */
	uint8_t *data; /* owned, NUL-terminated */
	size_t len;
};

/* The next message (fragments joined), read through io's buffer (bytes
 * that followed the upgrade's head are in it).  want_masked: a server
 * requires masked frames, a client unmasked ones.  1 = a message, 0 = EOF,
 * -1 = error (a protocol error is AB_E_INVALID). */
int ab_ws_recv (struct ab_http_io_s *io, bool want_masked, struct ab_ws_msg_s *m, ab_error_t *err);

#endif
