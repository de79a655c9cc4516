/* `preview-bridge websocket-framed`: a WebSocket to a server in the
 * sandbox, relayed over stdio as length-prefixed frames.
 *
 *   stdin:  one JSON line (at most 1 MiB, then '\n'):
 *             {target: {hostname, port}, path="/", headers={},
 *              maxFrameBytes=1 MiB, idleTimeoutMs=60000}
 *           then frames: uint32 big-endian length + payload, each sent
 *           upstream as one binary message
 *   stdout: 00 00 00 00 as soon as the upstream WebSocket is open, then
 *           every upstream message (text or binary) as one frame
 *
 * It stops - sending a close frame, waiting briefly for the server's, and
 * returning 0 - on an oversize frame either way (close code 1009), the
 * server's close or any upstream error, EOF on stdin, or idleTimeoutMs
 * without a frame either way.  Failing to open (a bad handshake line, a
 * target that does not connect or does not upgrade) returns -1 before the
 * zero-length frame is written. */
#ifndef AB_NET_PREVIEW_FRAMED_H
#define AB_NET_PREVIEW_FRAMED_H

#include <stdint.h>

#include "base/error.h"

#define AB_PREVIEW_HANDSHAKE_MAX     (1u << 20)
#define AB_PREVIEW_DEFAULT_MAX_FRAME (1u << 20)
#define AB_PREVIEW_DEFAULT_IDLE_MS   60000u
#define AB_PREVIEW_MAX_FRAME_LIMIT   (256u << 20)

int ab_preview_framed_run (int in_fd, int out_fd, ab_error_t *err);

#endif
