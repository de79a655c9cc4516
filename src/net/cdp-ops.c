/* The operations on a browser tab (docs/browser.md), each a short series of
 * CDP commands on the tab's page target, for the daemon's REST operations
 * (daemon/browser-ops.c) and the preview bridge's cdp-automation
 * (net/preview-cdp.c).  Selectors and text reach the page as JSON string
 * literals (jansson's encoding), never spliced. */
#include "net/cdp-ops.h"

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define OP_TIMEOUT_DEFAULT_MS 30000
#define OP_TIMEOUT_MIN_MS     100
#define OP_TIMEOUT_MAX_MS     120000
#define POLL_MS               100

static const char *
arg_str (const struct ab_cdp_page_s *o, const char *name)
{
	return json_string_value (json_object_get (o->args, name));
}

static int
arg_timeout (const struct ab_cdp_page_s *o, int *ms, ab_error_t *err)
{
	json_t *t = json_object_get (o->args, "timeout");

	*ms = OP_TIMEOUT_DEFAULT_MS;
	if (!t)
		return 0;
	if (!json_is_integer (t) || json_integer_value (t) < OP_TIMEOUT_MIN_MS
	    || json_integer_value (t) > OP_TIMEOUT_MAX_MS)
		return ab_error (err, 0, AB_E_INVALID, "'timeout' is %d..%d ms", OP_TIMEOUT_MIN_MS,
		                 OP_TIMEOUT_MAX_MS);
	*ms = (int)json_integer_value (t);
	return 0;
}

/* A JavaScript string literal of s. */
static char *
js_str (const char *s)
{
	json_t *j = json_string (s);
	char *t = json_dumps (j, JSON_ENCODE_ANY | JSON_COMPACT);

	json_decref (j);
	return t;
}

static int
need_selector (const struct ab_cdp_page_s *o, const char **sel, ab_error_t *err)
{
	if (!(*sel = arg_str (o, "selector")) || !**sel)
		return ab_error (err, 0, AB_E_INVALID, "'selector' is required");
	return 0;
}

/* --- navigation ------------------------------------------------------------ */

static int
url_check (struct ab_cdp_page_s *o, const char *url, ab_error_t *err)
{
	return o->url_check (o->url_ctx, url, err);
}

/* The URL the tab is on or tried last (a failed load's URL, not
 * chrome-error://). */
static char *
current_url (struct ab_cdp_page_s *o, ab_error_t *err)
{
	json_t *h = NULL, *e;
	char *u = NULL;

	if (ab_cdp_call (&o->cdp, "Page.getNavigationHistory", NULL, &h, err) < 0)
		return NULL;
	e = json_array_get (json_object_get (h, "entries"),
	                    (size_t)json_integer_value (json_object_get (h, "currentIndex")));
	u = xstrdup (json_string_value (json_object_get (e, "url")) ?: "about:blank");
	json_decref (h);
	return u;
}

/* Until document.readyState is "complete".  Errors while the tab swaps
 * its renderer (a cross-site navigation: "Not attached to an active
 * page", a destroyed context) are retried until the deadline. */
static int
wait_loaded (struct ab_cdp_page_s *o, int timeout_ms, ab_error_t *err)
{
	uint64_t until = ab_mono_ms () + (uint64_t)timeout_ms;

	for (;;) {
		ab_error_t e = AB_ERROR_INIT;
		json_t *v = ab_cdp_eval (&o->cdp, "document.readyState", &e);
		bool done =
		        v && json_is_string (v) && strcmp (json_string_value (v), "complete") == 0;
		json_decref (v);
		if (done)
			return 0;
		if (!v && e.kind != AB_E_INVALID) {
			*err = e;
			return -1;
		}
		if (ab_mono_ms () >= until)
			return ab_error (err, 0, AB_E_LIMIT, "the page did not load within %d ms",
			                 timeout_ms);
		usleep (POLL_MS * 1000);
	}
}

static int
blank (struct ab_cdp_page_s *o)
{
	ab_error_t ignored = AB_ERROR_INIT;
	json_t *res = NULL;
	int rc = ab_cdp_call (&o->cdp, "Page.navigate", json_pack ("{s:s}", "url", "about:blank"),
	                      &res, &ignored);

	json_decref (res);
	return rc;
}

static json_t *
page_info (struct ab_cdp_page_s *o, ab_error_t *err)
{
	cleanup_free char *u = current_url (o, err);
	json_t *t = u ? ab_cdp_eval (&o->cdp, "document.title", err) : NULL;
	json_t *j;

	if (!t)
		return NULL;
	j = json_pack ("{s:s,s:s}", "url", u, "title", json_string_value (t) ?: "");
	json_decref (t);
	return j;
}

/* The URL policy before; the final URL (after redirects) checked again:
 * a blocked one leaves the tab at about:blank. */
static json_t *
op_navigate (struct ab_cdp_page_s *o, ab_error_t *err)
{
	const char *url = arg_str (o, "url"), *failed;
	cleanup_free char *final = NULL;
	json_t *res = NULL, *info;
	int timeout;
	ab_error_t why = AB_ERROR_INIT;

	if (arg_timeout (o, &timeout, err) < 0 || url_check (o, url, err) < 0)
		return NULL;
	o->cdp.timeout_ms = timeout;
	if (ab_cdp_call (&o->cdp, "Page.navigate", json_pack ("{s:s}", "url", url), &res, err) < 0)
		return NULL;
	failed = json_string_value (json_object_get (res, "errorText"));
	if (!failed && wait_loaded (o, timeout, err) < 0)
		goto fail;
	if (!(final = current_url (o, err)))
		goto fail;
	if (strcmp (final, url) != 0 && url_check (o, final, &why) < 0) {
		blank (o);
		ab_error (err, 0, AB_E_DENIED, "blocked redirect URL: %s (%s)", final, why.msg);
		goto fail;
	}
	if (failed) {
		ab_error (err, 0, AB_E_SYSTEM, "navigation failed: %s", failed);
		goto fail;
	}
	json_decref (res);
	info = page_info (o, err);
	return info;
fail:
	json_decref (res);
	return NULL;
}

/* --- elements -------------------------------------------------------------- */

static json_t *
eval_on (struct ab_cdp_page_s *o, const char *sel, const char *body, ab_error_t *err)
{
	cleanup_free char *lit = js_str (sel);
	cleanup_free char *expr =
	        xasprintf ("(() => { const e = document.querySelector(%s);"
	                   " if (!e) throw new Error('no element matches the selector'); %s })()",
	                   lit, body);

	return ab_cdp_eval (&o->cdp, expr, err);
}

static json_t *
op_click (struct ab_cdp_page_s *o, ab_error_t *err)
{
	const char *sel;
	json_t *v;

	if (need_selector (o, &sel, err) < 0
	    || !(v = eval_on (o, sel,
	                      "e.scrollIntoView({block: 'center'}); e.click(); return true;", err)))
		return NULL;
	json_decref (v);
	return json_pack ("{s:b}", "clicked", 1);
}

/* Focus, then Input.insertText: the page sees input events as from a
 * keyboard's IME, not a script setting .value. */
static json_t *
op_type (struct ab_cdp_page_s *o, ab_error_t *err)
{
	const char *sel, *text = arg_str (o, "text");
	json_t *v, *res = NULL;

	if (need_selector (o, &sel, err) < 0)
		return NULL;
	if (!text) {
		ab_error (err, 0, AB_E_INVALID, "'text' is required");
		return NULL;
	}
	if (!(v = eval_on (o, sel, "e.focus(); return document.activeElement === e;", err)))
		return NULL;
	json_decref (v);
	if (ab_cdp_call (&o->cdp, "Input.insertText", json_pack ("{s:s}", "text", text), &res, err)
	    < 0)
		return NULL;
	json_decref (res);
	return json_pack ("{s:b}", "typed", 1);
}

static json_t *
op_evaluate (struct ab_cdp_page_s *o, ab_error_t *err)
{
	const char *expr = arg_str (o, "expression");
	json_t *v;

	if (!expr || !*expr) {
		ab_error (err, 0, AB_E_INVALID, "'expression' is required");
		return NULL;
	}
	if (!(v = ab_cdp_eval (&o->cdp, expr, err)))
		return NULL;
	return json_pack ("{s:o}", "value", v);
}

static json_t *
op_extract (struct ab_cdp_page_s *o, ab_error_t *err)
{
	const char *sel = arg_str (o, "selector");

	return eval_on (o, sel && *sel ? sel : "body",
	                "return {text: e.innerText, html: e.outerHTML};", err);
}

static json_t *
op_wait (struct ab_cdp_page_s *o, ab_error_t *err)
{
	const char *sel;
	cleanup_free char *lit = NULL, *expr = NULL;
	uint64_t until;
	int timeout;

	if (need_selector (o, &sel, err) < 0 || arg_timeout (o, &timeout, err) < 0)
		return NULL;
	lit = js_str (sel);
	expr = xasprintf ("document.querySelector(%s) !== null", lit);
	until = ab_mono_ms () + (uint64_t)timeout;
	for (;;) {
		json_t *v = ab_cdp_eval (&o->cdp, expr, err);
		bool found = json_is_true (v);
		json_decref (v);
		if (!v)
			return NULL;
		if (found)
			return json_pack ("{s:b}", "found", 1);
		if (ab_mono_ms () >= until) {
			ab_error (err, 0, AB_E_LIMIT, "no element matched within %d ms", timeout);
			return NULL;
		}
		usleep (POLL_MS * 1000);
	}
}

/* --- screenshot ------------------------------------------------------------ */

static json_t *
shot_params (struct ab_cdp_page_s *o, ab_error_t *err)
{
	const char *fmt = arg_str (o, "format") ?: "png";
	json_t *q = json_object_get (o->args, "quality");
	json_t *p;

	if (strcmp (fmt, "png") != 0 && strcmp (fmt, "jpeg") != 0) {
		ab_error (err, 0, AB_E_INVALID, "'format' is png or jpeg");
		return NULL;
	}
	if (q
	    && (!json_is_integer (q) || json_integer_value (q) < 0
	        || json_integer_value (q) > 100)) {
		ab_error (err, 0, AB_E_INVALID, "'quality' is 0..100");
		return NULL;
	}
	p = json_pack ("{s:s}", "format", fmt);
	if (q && strcmp (fmt, "jpeg") == 0)
		json_object_set (p, "quality", q);
	if (json_is_true (json_object_get (o->args, "full_page"))) {
		json_t *m = NULL, *cs;
		if (ab_cdp_call (&o->cdp, "Page.getLayoutMetrics", NULL, &m, err) < 0) {
			json_decref (p);
			return NULL;
		}
		cs = json_object_get (m, "cssContentSize");
		json_object_set_new (p, "captureBeyondViewport", json_true ());
		json_object_set_new (p, "clip",
		                     json_pack ("{s:i,s:i,s:O,s:O,s:i}", "x", 0, "y", 0, "width",
		                                json_object_get (cs, "width"), "height",
		                                json_object_get (cs, "height"), "scale", 1));
		json_decref (m);
	}
	return p;
}

/* The image, decoded; over the cap is AB_E_LIMIT (the DevTools message
 * itself is bounded, so nothing grows past it). */
int
ab_cdp_screenshot (struct ab_cdp_page_s *o, uint8_t **img, size_t *n, const char **mime,
                   ab_error_t *err)
{
	json_t *p = shot_params (o, err), *res = NULL;
	const char *data;
	int rc = -1;

	*img = NULL;
	*n = 0;
	if (!p)
		return -1;
	if (ab_cdp_call (&o->cdp, "Page.captureScreenshot", p, &res, err) < 0) {
		if (err->kind == AB_E_LIMIT)
			ab_error (err, 0, AB_E_LIMIT, "screenshot exceeds the %d MB cap",
			          AB_CDP_SHOT_MAX / (1024 * 1024));
		return -1;
	}
	data = json_string_value (json_object_get (res, "data"));
	if (!data || ab_base64_decode (data, strlen (data), img, n) < 0)
		ab_error (err, 0, AB_E_SYSTEM, "the browser sent no image");
	else if (*n > AB_CDP_SHOT_MAX)
		ab_error (err, 0, AB_E_LIMIT, "screenshot exceeds the %d MB cap",
		          AB_CDP_SHOT_MAX / (1024 * 1024));
	else {
		*mime = strcmp (arg_str (o, "format") ?: "png", "jpeg") == 0 ? "image/jpeg"
		                                                             : "image/png";
		rc = 0;
	}
	if (rc < 0) {
		free (*img);
		*img = NULL;
		*n = 0;
	}
	json_decref (res);
	return rc;
}

/* The session's viewport: an override lasts as long as the DevTools
 * connection that set it, so each operation sets it again. */
int
ab_cdp_viewport (struct ab_cdp_page_s *o, ab_error_t *err)
{
	json_t *res = NULL;
	int rc = ab_cdp_call (&o->cdp, "Emulation.setDeviceMetricsOverride",
	                      json_pack ("{s:i,s:i,s:i,s:b}", "width", (int)o->width, "height",
	                                 (int)o->height, "deviceScaleFactor", 1, "mobile", 0),
	                      &res, err);

	json_decref (res);
	return rc;
}

/* --- dispatch -------------------------------------------------------------- */

static const struct {
	const char *name;
	json_t *(*fn) (struct ab_cdp_page_s *o, ab_error_t *err);
} ops[] = {
	{ "navigate", op_navigate }, { "click", op_click },     { "type", op_type },
	{ "evaluate", op_evaluate }, { "extract", op_extract }, { "wait_for_selector", op_wait },
	{ "page_info", page_info },
};

bool
ab_cdp_op_known (const char *name)
{
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
		if (strcmp (ops[i].name, name) == 0)
			return true;
	return strcmp (name, "screenshot") == 0;
}

json_t *
ab_cdp_op_run (struct ab_cdp_page_s *o, const char *name, ab_error_t *err)
{
	for (size_t i = 0; i < sizeof ops / sizeof *ops; i++)
		if (strcmp (ops[i].name, name) == 0)
			return ops[i].fn (o, err);
	ab_error (err, 0, AB_E_NOT_FOUND, "no browser operation %s", name);
	return NULL;
}
