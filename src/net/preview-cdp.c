/* `preview-bridge cdp-automation`: see preview-cdp.h.  The bridge runs
 * inside the sandbox, as its user, so it reaches Chromium's DevTools on
 * the sandbox's own loopback directly; it can do nothing the sandbox's
 * own code could not.  The URL policy here gives early errors only: the
 * browser the daemon launched fetches through the egress proxy, which
 * stays the wall. */
#include "net/preview-cdp.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "net/browser-url.h"
#include "net/cdp-ops.h"
#include "net/preview-dial.h"

#define PROFILE_PREFIX  "agentbox-browser-"
#define SESSION_ID_LEN  16
#define ACTIVE_PORT_MAX 512

struct browser_s {
	uint16_t port;
};

static json_t *
refusal (const char *op, const char *code, const char *msg)
{
	return json_pack ("{s:b, s:s, s:{s:s, s:s}}", "ok", 0, "operation", op, "error", "code",
	                  code, "message", msg);
}

static json_t *
unsupported (const char *op)
{
	return refusal (op, "automation_unsupported",
	                "this sandbox image is headless; browser automation is unavailable");
}

static bool
session_id_ok (const char *s)
{
	if (strlen (s) != SESSION_ID_LEN)
		return false;
	for (; *s; s++)
		if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
			return false;
	return true;
}

/* "PORT\n/devtools/browser/UUID\n", as Chromium writes it. */
static int
read_active_port (int dirfd, const char *profile, uint16_t *port, struct timespec *mtime)
{
	cleanup_free char *path = xasprintf ("%s/DevToolsActivePort", profile);
	cleanup_close int fd = openat (dirfd, path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC);
	char buf[ACTIVE_PORT_MAX];
	struct stat st;
	unsigned p = 0;
	ssize_t n;

	if (fd < 0 || fstat (fd, &st) < 0 || !S_ISREG (st.st_mode)
	    || (n = read (fd, buf, sizeof buf - 1)) <= 0)
		return -1;
	buf[n] = '\0';
	if (sscanf (buf, "%u\n", &p) != 1 || p == 0 || p > 65535)
		return -1;
	*port = (uint16_t)p;
	*mtime = st.st_mtim;
	return 0;
}

static bool
newer (const struct timespec *a, const struct timespec *b)
{
	return a->tv_sec > b->tv_sec || (a->tv_sec == b->tv_sec && a->tv_nsec > b->tv_nsec);
}

/* The named session's browser, or the newest one's. */
static int
find_browser (const char *profiles, const char *session, struct browser_s *out)
{
	cleanup_close int dirfd = open (profiles, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct timespec best = { 0 }, t;
	DIR *d;
	struct dirent *e;
	uint16_t port;
	bool found = false;

	if (dirfd < 0)
		return -1;
	if (session) {
		cleanup_free char *name = xasprintf (PROFILE_PREFIX "%s", session);
		if (read_active_port (dirfd, name, &out->port, &t) < 0)
			return -1;
		return 0;
	}
	if (!(d = fdopendir (dup (dirfd))))
		return -1;
	while ((e = readdir (d)))
		if (strncmp (e->d_name, PROFILE_PREFIX, strlen (PROFILE_PREFIX)) == 0
		    && session_id_ok (e->d_name + strlen (PROFILE_PREFIX))
		    && read_active_port (dirfd, e->d_name, &port, &t) == 0
		    && (!found || newer (&t, &best))) {
			out->port = port;
			best = t;
			found = true;
		}
	closedir (d);
	return found ? 0 : -1;
}

static int
dial (uint16_t port, int timeout_ms, ab_error_t *err)
{
	int fd = ab_preview_dial ("127.0.0.1", port, ab_mono_ms () + (uint64_t)timeout_ms, err);
	int fl;

	/* net/cdp.c writes in blocking style and bounds its reads by poll */
	if (fd >= 0
	    && ((fl = fcntl (fd, F_GETFL)) < 0 || fcntl (fd, F_SETFL, fl & ~O_NONBLOCK) < 0)) {
		close (fd);
		return ab_error (err, 0, AB_E_SYSTEM, "the browser's DevTools socket");
	}
	return fd;
}

/* The first page target: the session's tab (the daemon's rule). */
static char *
page_path (uint16_t port, int timeout_ms, ab_error_t *err)
{
	int fd = dial (port, timeout_ms, err);
	json_t *list = fd < 0 ? NULL : ab_cdp_http_json (fd, port, "/json/list", err), *t;
	char *path = NULL;
	size_t i;

	json_array_foreach (list, i, t)
	{
		const char *ty = json_string_value (json_object_get (t, "type"));
		const char *u = json_string_value (json_object_get (t, "webSocketDebuggerUrl"));
		const char *p = u ? strstr (u, "/devtools/page/") : NULL;
		if (ty && strcmp (ty, "page") == 0 && p) {
			path = xstrdup (p);
			break;
		}
	}
	json_decref (list);
	if (!path && list)
		ab_error (err, 0, AB_E_SYSTEM, "the browser has no page");
	return path;
}

/* The sandbox's own loopback (its dev servers) and public hosts; private,
 * link-local, metadata and the other non-public classes refused, names
 * resolved and every answer checked. */
static int
url_check (void *ctx, const char *url, ab_error_t *err)
{
	struct ab_egress_policy_s *p = ctx;

	return ab_browser_url_check (p, url, true, err);
}

static struct ab_egress_policy_s *
bridge_policy (void)
{
	struct ab_egress_policy_s *p = ab_egress_policy_new_sandbox ();
	ab_error_t ignored = AB_ERROR_INIT;

	ab_egress_policy_add_allow_host (p, "*", &ignored);
	ab_egress_policy_set_deny_groups (p, ab_egress_policy_deny_groups (p)
	                                             & ~(unsigned)AB_ADDR_GROUP_LOOPBACK);
	return p;
}

static const char *
op_name (const char *op)
{
	static const char *const camel[][2] = {
		{ "waitForSelector", "wait_for_selector" },
		{ "pageInfo", "page_info" },
		{ "getPageInfo", "page_info" },
	};

	for (size_t i = 0; i < sizeof camel / sizeof *camel; i++)
		if (strcmp (op, camel[i][0]) == 0)
			return camel[i][1];
	return op;
}

/* The operation's arguments: input, its camelCase keys renamed, and the
 * document's timeout. */
static json_t *
op_args (const json_t *input, int timeout_ms)
{
	json_t *a = json_is_object (input) ? json_deep_copy (input) : json_object ();
	json_t *fp = json_object_get (a, "fullPage");

	if (fp && !json_object_get (a, "full_page"))
		json_object_set (a, "full_page", fp);
	json_object_set_new (a, "timeout", json_integer (timeout_ms));
	return a;
}

static int
doc_timeout (const json_t *doc)
{
	const json_t *t = json_object_get (doc, "timeoutMs");
	json_int_t v;

	if (!json_is_number (t))
		return AB_PREVIEW_CDP_TIMEOUT_DEFAULT_MS;
	v = json_is_integer (t) ? json_integer_value (t) : (json_int_t)json_real_value (t);
	if (v < AB_PREVIEW_CDP_TIMEOUT_MIN_MS)
		return AB_PREVIEW_CDP_TIMEOUT_MIN_MS;
	if (v > AB_PREVIEW_CDP_TIMEOUT_MAX_MS)
		return AB_PREVIEW_CDP_TIMEOUT_MAX_MS;
	return (int)v;
}

static const char *
error_code (const ab_error_t *err)
{
	switch (err->kind) {
	case AB_E_INVALID: return "invalid_input";
	case AB_E_DENIED: return "blocked_url";
	case AB_E_NOT_FOUND: return "unknown_operation";
	case AB_E_LIMIT: return strstr (err->msg, "cap") ? "too_large" : "timeout";
	default: return ab_preview_timed_out (err) ? "timeout" : "browser_error";
	}
}

static json_t *
screenshot_result (struct ab_cdp_page_s *o, ab_error_t *err)
{
	cleanup_free uint8_t *img = NULL;
	cleanup_free char *b64 = NULL;
	const char *mime = NULL;
	size_t n = 0;

	if (ab_cdp_screenshot (o, &img, &n, &mime, err) < 0)
		return NULL;
	b64 = ab_base64_encode (img, n);
	return json_pack ("{s:s,s:I,s:s}", "mimeType", mime, "bytes", (json_int_t)n, "data", b64);
}

static json_t *
run (const char *op, const json_t *doc, const struct browser_s *br, ab_error_t *err)
{
	int timeout = doc_timeout (doc);
	cleanup_free char *path = NULL;
	struct ab_cdp_page_s o = { .url_check = url_check };
	json_t *res = NULL;
	int fd;

	if (!ab_cdp_op_known (op)) {
		ab_error (err, 0, AB_E_NOT_FOUND, "no browser operation %s", op);
		return NULL;
	}
	if (!(path = page_path (br->port, timeout, err)) || (fd = dial (br->port, timeout, err)) < 0
	    || ab_cdp_attach (&o.cdp, fd, br->port, path, err) < 0)
		return NULL;
	/* a command waits at most the operation's time, and a little to
	 * answer its own timeout first */
	o.cdp.timeout_ms = timeout + 1000;
	o.args = op_args (json_object_get (doc, "input"), timeout);
	o.url_ctx = bridge_policy ();
	res = strcmp (op, "screenshot") == 0 ? screenshot_result (&o, err)
	                                     : ab_cdp_op_run (&o, op, err);
	ab_egress_policy_free (o.url_ctx);
	json_decref (o.args);
	ab_cdp_close (&o.cdp);
	return res;
}

json_t *
ab_preview_cdp_answer (const char *doc, size_t len, const char *profiles)
{
	json_t *in = doc ? json_loadb (doc, len, 0, NULL) : NULL;
	const json_t *opv = json_object_get (in, "operation");
	const char *sess =
	        json_string_value (json_object_get (json_object_get (in, "input"), "session"));
	const char *op = NULL;
	struct browser_s br;
	ab_error_t err = AB_ERROR_INIT;
	json_t *res, *out;

	if (json_is_string (opv) && strlen (json_string_value (opv)) == json_string_length (opv))
		op = json_string_value (opv);
	if ((sess && !session_id_ok (sess)) || find_browser (profiles, sess, &br) < 0)
		out = unsupported (op ? op : "unknown");
	else if (!op)
		out = refusal ("unknown", "invalid_input",
		               "the document needs an \"operation\" string");
	else if ((res = run (op_name (op), in, &br, &err)))
		out = json_pack ("{s:b, s:s, s:o}", "ok", 1, "operation", op, "result", res);
	else
		out = refusal (op, error_code (&err), err.msg);
	json_decref (in);
	return out;
}
