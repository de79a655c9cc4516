/* A client of Chromium's DevTools protocol (CDP) over one connected stream
 * socket: an HTTP GET of its JSON endpoints, or a WebSocket to a target,
 * blocking, every read under a deadline.  The stream is the caller's to
 * open: the daemon's is an agent port stream into the sandbox
 * (daemon/browser-cdp.c), the preview bridge's a TCP connection on the
 * sandbox's own loopback (net/preview-cdp.c).  The WebSocket is the one
 * codec (net/websocket.c through net/ws-io.c). */
#ifndef AB_NET_CDP_H
#define AB_NET_CDP_H

#include <jansson.h>
#include <stdint.h>

#include "base/error.h"
#include "net/http-io.h"

/* A screenshot's base64 (10 MB of image) and the JSON around it. */
#define AB_CDP_SHOT_MAX    (10 * 1024 * 1024)
#define AB_CDP_MESSAGE_MAX (AB_CDP_SHOT_MAX / 3 * 4 + 64 * 1024)

struct ab_cdp_s {
	struct ab_http_io_s io;
	int fd;
	int next_id;
	int timeout_ms;
};

/* The WebSocket handshake for path (a DevTools endpoint) over fd, which
 * reaches Chromium's listener on port; c owns fd from here on, also when
 * this fails (it is closed). */
int ab_cdp_attach (struct ab_cdp_s *c, int fd, uint16_t port, const char *path, ab_error_t *err);
void ab_cdp_close (struct ab_cdp_s *c);
/* One command; *result is the answer's "result" (owned), events between
 * are skipped.  An error answer is AB_E_INVALID with its message. */
int ab_cdp_call (struct ab_cdp_s *c, const char *method, json_t *params /* stolen */,
                 json_t **result, ab_error_t *err);
/* Runtime.evaluate of expr (awaiting a promise), the value as JSON; a
 * thrown exception is AB_E_INVALID with its text. */
json_t *ab_cdp_eval (struct ab_cdp_s *c, const char *expr, ab_error_t *err);
/* GET path over fd (closed here), its JSON body. */
json_t *ab_cdp_http_json (int fd, uint16_t port, const char *path, ab_error_t *err);

#endif
