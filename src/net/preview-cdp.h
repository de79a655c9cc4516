/* `preview-bridge cdp-automation`: one browser operation on the sandbox's
 * browser, run over the Chrome DevTools Protocol from inside the sandbox.
 *
 * Input, one JSON document: {"operation": OP, "input": {...}, "timeoutMs":
 * N} (timeoutMs clamped to 1,000..60,000; 30,000 when absent).  OP is one
 * of net/cdp-ops.h's operations (camelCase spellings such as
 * waitForSelector, pageInfo and fullPage are accepted); input.session
 * names a browser session, otherwise the newest is used.
 *
 * The browser: a session the daemon launched in this sandbox (its profile
 * /tmp/agentbox-browser-<session>/DevToolsActivePort names the DevTools
 * port on the sandbox's loopback).  With none, every request is answered
 * with the same refusal as before a browser existed:
 *   {"ok": false, "operation": OP, "error": {"code": "automation_unsupported",
 *    "message": "this sandbox image is headless; browser automation is unavailable"}}
 * Otherwise {"ok": true, "operation": OP, "result": {...}} (a screenshot's
 * result is {"mimeType", "bytes", "data": base64}), or {"ok": false,
 * "operation": OP, "error": {"code", "message"}} with code invalid_input,
 * unknown_operation, blocked_url, timeout, too_large or browser_error. */
#ifndef AB_NET_PREVIEW_CDP_H
#define AB_NET_PREVIEW_CDP_H

#include <jansson.h>
#include <stddef.h>

#define AB_PREVIEW_CDP_TIMEOUT_MIN_MS     1000
#define AB_PREVIEW_CDP_TIMEOUT_MAX_MS     60000
#define AB_PREVIEW_CDP_TIMEOUT_DEFAULT_MS 30000

/* doc may be NULL (stdin could not be read).  profiles: the directory the
 * sessions' profiles are in ("/tmp" but for tests). */
json_t *ab_preview_cdp_answer (const char *doc, size_t len, const char *profiles);

#endif
