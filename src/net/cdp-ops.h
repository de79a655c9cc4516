/* The operations on a browser tab: navigate {url, timeout} -> {url, title};
 * click, type {selector, text}; evaluate {expression} -> {value}; extract
 * {selector} -> {text, html}; wait_for_selector {selector, timeout};
 * page_info; screenshot {full_page, format png|jpeg, quality} -> the
 * image, at most AB_CDP_SHOT_MAX bytes (docs/browser.md).  One caller's
 * door is the daemon's REST API, the other's the preview bridge. */
#ifndef AB_NET_CDP_OPS_H
#define AB_NET_CDP_OPS_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"
#include "net/cdp.h"

struct ab_cdp_page_s {
	struct ab_cdp_s cdp; /* attached to the tab's page target */
	json_t *args;        /* the operation's input object (borrowed; may be NULL) */
	/* The URL policy, before a navigation and on its final URL: a refusal
	 * is AB_E_DENIED with the reason. */
	int (*url_check) (void *ctx, const char *url, ab_error_t *err);
	void *url_ctx;
	unsigned width, height; /* the viewport */
};

/* Whether name is an operation (screenshot included). */
bool ab_cdp_op_known (const char *name);
/* Every operation but screenshot: its answer, or NULL with the error
 * (AB_E_NOTFOUND for an unknown name). */
json_t *ab_cdp_op_run (struct ab_cdp_page_s *o, const char *name, ab_error_t *err);
/* The image, owned by the caller, and its media type; AB_E_LIMIT past the
 * cap. */
int ab_cdp_screenshot (struct ab_cdp_page_s *o, uint8_t **img, size_t *n, const char **mime,
                       ab_error_t *err);
/* An override lasts as long as the DevTools connection that set it, so
 * each connection sets it again before an operation. */
int ab_cdp_viewport (struct ab_cdp_page_s *o, ab_error_t *err);

#endif
