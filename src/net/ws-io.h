/* WebSocket messages (RFC 6455) over a blocking stream socket, for both
 * ends of the API's interactive sessions: the daemon (unmasked frames out,
 * masked frames required in, RFC 6455 5.1) and the CLI client (the other
 * way round).  The framing, its checks and the handshake keys are the one
 * codec's (net/websocket.h); this file only moves its frames through
 * net/http-io.h's buffered reader and a blocking write. */
#ifndef AB_NET_WS_IO_H
#define AB_NET_WS_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "net/http-io.h"
#include "net/websocket.h"

/* Messages larger than this are refused (close code 1009, AB_E_LIMIT)
 * unless io->ws was set up with another limit (ab_ws_assembler_init)
 * before the first ab_ws_recv. */
#define AB_WS_MAX_MESSAGE (1U << 20)

/* Binary messages of an exec session start with one byte naming the stream. */
enum { AB_WS_STDIN = 0, AB_WS_STDOUT = 1, AB_WS_STDERR = 2 };

/* One frame (FIN set); `mask` for a client. */
int ab_ws_send (int fd, int opcode, const void *buf, size_t len, bool mask);

struct ab_ws_msg_s {
	int opcode;    /* AB_WS_OP_TEXT, _BINARY, _CLOSE, _PING, _PONG */
	uint8_t *data; /* owned, NUL-terminated */
	size_t len;
};

/* The next message (fragments joined; a control frame between fragments
 * is returned on its own and the message goes on in the next call), read
 * through io's buffer (bytes that followed the upgrade's head are in it).
 * want_masked: a server requires masked frames, a client unmasked ones.
 * 1 = a message, 0 = EOF, -1 = error (a protocol error is AB_E_INVALID, a
 * message over the limit AB_E_LIMIT). */
int ab_ws_recv (struct ab_http_io_s *io, bool want_masked, struct ab_ws_msg_s *m, ab_error_t *err);

#endif
