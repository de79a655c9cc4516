/* The REST operations of a browser session (docs/browser.md): each runs on
 * the session's page over a fresh DevTools WebSocket through the agent's
 * port relay; the operations themselves are net/cdp-ops.c. */
#include "daemon/browser.h"

#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "net/cdp-ops.h"
#include "session/egress-relay.h"

/* The sandbox's own egress policy when it has network "proxy"; otherwise
 * (NULL) only its loopback. */
static int
url_check (void *ctx, const char *url, ab_error_t *err)
{
	struct ab_box_s *b = ctx;
	struct ab_egress_policy_s *p = NULL;
	int rc;

	if (b->spec.network == AB_NETWORK_PROXY
	    && !(p = ab_egress_policy_from_spec (&b->spec.egress, err)))
		return -1;
	rc = ab_browser_url_check (p, url, true, err);
	if (p)
		ab_egress_policy_free (p);
	return rc;
}

/* The image in chunks of 64 KiB; over the cap is 413 before the first
 * byte. */
static void
screenshot (struct ab_req_s *r, struct ab_cdp_page_s *o)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free uint8_t *img = NULL;
	const char *mime = NULL;
	size_t n = 0;

	if (ab_cdp_screenshot (o, &img, &n, &mime, &err) < 0) {
		if (err.kind == AB_E_LIMIT)
			ab_resp_fail (r, 413, "too_large", "%s", err.msg);
		else
			ab_resp_error (r, &err);
		return;
	}
	if (ab_resp_stream_begin (r, 200, mime) < 0)
		return;
	for (size_t off = 0; off < n; off += AB_BROWSER_SHOT_CHUNK)
		if (ab_resp_stream (r, img + off,
		                    n - off < AB_BROWSER_SHOT_CHUNK ? n - off
		                                                    : AB_BROWSER_SHOT_CHUNK)
		    < 0)
			break;
	ab_resp_stream_end (r);
}

void
ab_browser_run_op (struct ab_req_s *r, struct ab_box_s *b, struct ab_browser_s *s, const char *op,
                   json_t *args)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cdp_page_s o = {
		.args = args,
		.url_check = url_check,
		.url_ctx = b,
		.width = s->width,
		.height = s->height,
	};
	json_t *out;

	if (strcmp (op, "close") == 0) {
		ab_browser_end (r->d, b, s);
		ab_resp_json (r, 200, json_pack ("{s:b}", "closed", 1));
		return;
	}
	if (!ab_cdp_op_known (op)) {
		ab_resp_fail (r, 404, "not_found", "no browser operation %s", op);
		return;
	}
	if (args && !json_is_object (args)) {
		ab_resp_fail (r, 400, "invalid", "the operation's body must be a JSON object");
		return;
	}
	if (ab_browser_cdp_open (r->d, b, s->port, s->page_path, &o.cdp, &err) < 0) {
		ab_resp_error (r, &err);
		return;
	}
	if (ab_cdp_viewport (&o, &err) < 0)
		ab_resp_error (r, &err);
	else if (strcmp (op, "screenshot") == 0)
		screenshot (r, &o);
	else if ((out = ab_cdp_op_run (&o, op, &err)))
		ab_resp_json (r, 200, out);
	else
		ab_resp_error (r, &err);
	ab_cdp_close (&o.cdp);
}
