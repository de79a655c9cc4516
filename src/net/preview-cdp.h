/* `preview-bridge cdp-automation`: browser automation over the Chrome
 * DevTools Protocol needs a browser in the sandbox image; none exists
 * yet, so every request is answered with the same refusal, naming the
 * operation it was asked for ("unknown" when the document has none or is
 * not JSON):
 *   {"ok": false, "operation": OP, "error": {"code": "automation_unsupported",
 *    "message": "this sandbox image is headless; browser automation is unavailable"}} */
#ifndef AB_NET_PREVIEW_CDP_H
#define AB_NET_PREVIEW_CDP_H

#include <jansson.h>
#include <stddef.h>

/* doc may be NULL (stdin could not be read). */
json_t *ab_preview_cdp_answer (const char *doc, size_t len);

#endif
