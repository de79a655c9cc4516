/* The preview bridge's side of the WebSocket opening handshake (RFC 6455
 * 4.1): the upgrade request and the checks on the server's answer (the
 * key and the accept value are the codec's, net/websocket.h).  Pure. */
#ifndef AB_NET_PREVIEW_WS_HANDSHAKE_H
#define AB_NET_PREVIEW_WS_HANDSHAKE_H

#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/preview-doc.h"
#include "net/websocket.h"

/* The GET request that asks host_header for an upgrade on path, with the
 * caller's extra fields (already filtered: AB_PREVIEW_HDRS_WEBSOCKET). */
void ab_ws_format_request (struct ab_iobuf_s *out, const char *host_header, const char *path,
                           const char *key, const struct ab_preview_headers_s *extra);

/* Check a parsed response head against our key: 101, "Upgrade: websocket",
 * a Connection field naming "upgrade", the exact Sec-WebSocket-Accept, and
 * no extension or subprotocol we did not offer (4.1, items 1-6 of the
 * client's checks).  Returns 0, or -1 with *why set to a static reason. */
int ab_ws_check_response (const struct ab_http_head_s *h, const char *key, const char **why);

#endif
