/* The client side of the WebSocket opening handshake (RFC 6455 4.1):
 * a fresh random key per connection, the upgrade request, and the checks
 * on the server's answer.  Pure apart from the random key. */
#ifndef AB_NET_PREVIEW_WS_HANDSHAKE_H
#define AB_NET_PREVIEW_WS_HANDSHAKE_H

#include "net/http-head.h"
#include "net/iobuf.h"
#include "net/preview-doc.h"

/* base64 of 16 bytes (24 characters) and of a SHA-1 digest (28). */
#define AB_WS_KEY_LEN    24
#define AB_WS_ACCEPT_LEN 28

/* A key from 16 bytes of getrandom(2) (4.1: "randomly selected ... for
 * each connection").  Returns 0 or -1 with errno. */
int ab_ws_make_key (char key[AB_WS_KEY_LEN + 1]);

/* base64(SHA-1(key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11")) (4.2.2). */
void ab_ws_accept_for_key (const char *key, char accept[AB_WS_ACCEPT_LEN + 1]);

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
