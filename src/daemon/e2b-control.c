/* The E2B control plane (REST, the shapes of E2B's spec/openapi.yml):
 * sandboxes made here are ordinary daemon sandboxes, labelled with their
 * template (AB_E2B_LABEL) and the request's metadata, so `agentbox ls`
 * shows them; their access token lives in <dir>/e2b.json (0600), never in
 * state.json or any listing but the create and connect answers. */
#include "daemon/e2b-internal.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/pct.h"
#include "base/xalloc.h"

#define DEFAULT_TIMEOUT_S 300
#define MAX_TIMEOUT_S     (24 * 3600)
#define LIST_LIMIT_MAX    1000

static void
token_new (char tok[AB_E2B_TOKEN_LEN + 1])
{
	uint8_t raw[AB_E2B_TOKEN_LEN / 2];

	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		abort (); /* the kernel's CSPRNG does not fail once booted */
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (tok + 2 * i, 3, "%02x", raw[i]);
	explicit_bzero (raw, sizeof raw);
}

static json_t *
metadata_of (const struct ab_box_s *b)
{
	json_t *m = json_deep_copy (b->labels ? b->labels : json_object ());

	json_object_del (m, AB_E2B_LABEL);
	return m;
}

static json_t *
iso (int64_t ms)
{
	char buf[AB_UTC_MS_LEN];

	ab_utc_ms_format (ms, buf);
	return json_string (buf);
}

/* The envdVersion of b's sandbox: the SDK's gates follow it. */
static const char *
envd_version (const struct ab_box_s *b)
{
	return strcmp (b->backend, "native") == 0 ? AB_E2B_ENVD_VERSION : AB_E2B_ENVD_VERSION_BASE;
}

/* The Sandbox (create, connect: with the token) or SandboxDetail body. */
static json_t *
sandbox_json (struct ab_daemon_s *d, struct ab_box_s *b, const char *token, bool detail)
{
	const char *tmpl = json_string_value (json_object_get (b->labels, AB_E2B_LABEL));
	json_t *j = json_pack ("{s:s, s:s, s:s, s:s, s:s}", "sandboxID", b->id, "templateID",
	                       tmpl ? tmpl : "base", "clientID", "agentbox", "envdVersion",
	                       envd_version (b), "domain", d->e2b->domain);

	if (token)
		json_object_set_new (j, "envdAccessToken", json_string (token));
	if (detail) {
		int64_t end;
		pthread_mutex_lock (&d->lock);
		end = b->expires_ms;
		pthread_mutex_unlock (&d->lock);
		json_object_set_new (j, "alias", json_string (tmpl ? tmpl : "base"));
		json_object_set_new (j, "startedAt", iso (b->created_ms));
		json_object_set_new (j, "endAt",
		                     iso (end ? end : b->created_ms + 365LL * 86400000));
		json_object_set_new (j, "state",
		                     json_string (ab_box_is_paused (d, b) ? "paused" : "running"));
		json_object_set_new (j, "cpuCount",
		                     json_integer ((json_int_t)(b->spec.limits.cpu_millis
		                                                        ? (b->spec.limits.cpu_millis
		                                                           + 999) / 1000
		                                                        : 1)));
		json_object_set_new (
		        j, "memoryMB",
		        json_integer ((json_int_t)(b->spec.limits.memory_bytes >> 20)));
		json_object_set_new (j, "diskSizeMB", json_integer (0));
		json_object_set_new (j, "metadata", metadata_of (b));
	}
	return j;
}

/* ---- create ----------------------------------------------------------------- */

static bool
is_cidr_or_ip (const char *s)
{
	char buf[64];
	const char *slash = strchr (s, '/');
	size_t n = slash ? (size_t)(slash - s) : strlen (s);
	uint8_t a[16];

	if (n >= sizeof buf)
		return false;
	memcpy (buf, s, n);
	buf[n] = '\0';
	return inet_pton (AF_INET, buf, a) == 1 || inet_pton (AF_INET6, buf, a) == 1;
}

static void
push_str (json_t *egress, const char *key, const char *v)
{
	json_t *arr = json_object_get (egress, key);

	if (!arr) {
		arr = json_array ();
		json_object_set_new (egress, key, arr);
	}
	json_array_append_new (arr, json_string (v));
}

/* allow_internet_access and network {allowOut, denyOut} onto our egress
 * policy: true = network proxy, every public host allowed (the proxy
 * denies every non-public address unless a CIDR allows it). */
static int
apply_network (json_t *req, const json_t *body, ab_error_t *err)
{
	json_t *allow = json_object_get (body, "allow_internet_access");
	json_t *net = json_object_get (body, "network");
	json_t *out = json_object_get (net, "allowOut"), *deny = json_object_get (net, "denyOut");
	json_t *egress, *v;
	bool deny_all = false;
	size_t i;

	if (json_is_false (allow)) {
		json_object_set_new (req, "network", json_string ("none"));
		json_object_del (req, "egress");
		return 0;
	}
	if (!json_is_true (allow) && !out && !deny)
		return 0; /* the template's policy */
	json_object_set_new (req, "network", json_string ("proxy"));
	egress = json_object_get (req, "egress");
	if (!egress) {
		egress = json_object ();
		json_object_set_new (req, "egress", egress);
	}
	json_array_foreach (deny, i, v)
	{
		const char *s = json_string_value (v);
		if (!s)
			return ab_error (err, 0, AB_E_INVALID, "network.denyOut: strings");
		if (strcmp (s, "0.0.0.0/0") == 0 || strcmp (s, "::/0") == 0)
			deny_all = true;
		else if (is_cidr_or_ip (s))
			return ab_error (err, 0, AB_E_INVALID,
			                 "network.denyOut: only 0.0.0.0/0 or host names (%s)", s);
		else
			push_str (egress, "deny_hosts", s);
	}
	json_array_foreach (out, i, v)
	{
		const char *s = json_string_value (v);
		if (!s)
			return ab_error (err, 0, AB_E_INVALID, "network.allowOut: strings");
		push_str (egress, is_cidr_or_ip (s) ? "allow_cidrs" : "allow_hosts", s);
	}
	if (!deny_all)
		push_str (egress, "allow_hosts", "*");
	return 0;
}

static int
merge_object (json_t *req, const char *key, const json_t *add, const char *what, ab_error_t *err)
{
	json_t *dst;

	if (!add || json_is_null (add))
		return 0;
	if (!json_is_object (add))
		return ab_error (err, 0, AB_E_INVALID, "'%s' must be an object of strings", what);
	dst = json_object_get (req, key);
	if (!dst) {
		dst = json_object ();
		json_object_set_new (req, key, dst);
	}
	return json_object_update (dst, (json_t *)add) < 0
	               ? ab_error (err, 0, AB_E_INVALID, "'%s'", what)
	               : 0;
}

/* E2B's home: /home/user is the workspace (bound there as well as at
 * /workspace, our other APIs' path) and the working directory, so
 * relative paths and HOME land in it.  A template that names its own
 * workdir, workspace_mounts or image (whose WORKDIR counts), or no
 * workspace at all, keeps what it says. */
static void
apply_home (json_t *req)
{
	json_t *ws = json_object_get (req, "workspace");

	if (json_object_get (req, "workdir") || json_object_get (req, "workspace_mounts")
	    || json_object_get (req, "image") || (ws && json_is_null (ws)))
		return;
	json_object_set_new (req, "workdir", json_string (AB_E2B_HOME));
	json_object_set_new (req, "workspace_mounts", json_pack ("[s]", AB_E2B_HOME));
}

/* The daemon create request for an E2B one. */
static json_t *
create_request (struct ab_daemon_s *d, const json_t *body, const char **tmpl_name, int *status,
                ab_error_t *err)
{
	const char *name = json_string_value (json_object_get (body, "templateID"));
	json_t *timeout = json_object_get (body, "timeout");
	const struct ab_e2b_template_s *t;
	json_int_t secs = DEFAULT_TIMEOUT_S;
	json_t *req, *labels;

	*status = 400;
	if (!name)
		name = "base";
	if (!(t = ab_e2b_template (d, name))) {
		*status = 404;
		ab_error (err, 0, AB_E_NOT_FOUND, "template '%s' not found", name);
		return NULL;
	}
	if (timeout) {
		if (!json_is_integer (timeout) || json_integer_value (timeout) < 0
		    || json_integer_value (timeout) > MAX_TIMEOUT_S) {
			ab_error (err, 0, AB_E_INVALID, "'timeout' must be seconds in 0..%d",
			          MAX_TIMEOUT_S);
			return NULL;
		}
		secs = json_integer_value (timeout);
	}
	req = json_deep_copy (t->req);
	apply_home (req);
	json_object_set_new (req, "ttl", json_integer (secs ? secs : DEFAULT_TIMEOUT_S));
	labels = json_object_get (req, "labels");
	if (!labels) {
		labels = json_object ();
		json_object_set_new (req, "labels", labels);
	}
	if (merge_object (req, "labels", json_object_get (body, "metadata"), "metadata", err) < 0
	    || merge_object (req, "env", json_object_get (body, "envVars"), "envVars", err) < 0
	    || apply_network (req, body, err) < 0) {
		json_decref (req);
		return NULL;
	}
	json_object_set_new (json_object_get (req, "labels"), AB_E2B_LABEL, json_string (name));
	*tmpl_name = t->name;
	return req;
}

static void
create (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *body = NULL, *req;
	struct ab_box_s *b;
	const char *tmpl;
	char tok[AB_E2B_TOKEN_LEN + 1];
	int status;

	if (ab_req_body_json (r, &body, &err) < 0) {
		ab_e2b_api_fail (r, ab_status_of (&err), "%s", err.msg);
		return;
	}
	req = create_request (r->d, body, &tmpl, &status, &err);
	json_decref (body);
	if (!req) {
		ab_e2b_api_fail (r, status, "%s", err.msg);
		return;
	}
	if (ab_box_create (r->d, req, &b, &err) < 0) {
		json_decref (req);
		ab_e2b_api_fail (r, ab_status_of (&err), "%s", err.msg);
		return;
	}
	json_decref (req);
	token_new (tok);
	if (ab_e2b_token_save (b, tok, &err) < 0) {
		ab_box_destroy (r->d, b, true, &(ab_error_t)AB_ERROR_INIT);
		ab_e2b_api_fail (r, 500, "%s", err.msg);
	} else
		ab_resp_json (r, 201, sandbox_json (r->d, b, tok, false));
	explicit_bzero (tok, sizeof tok);
	ab_box_unref (r->d, b);
}

/* ---- one sandbox ------------------------------------------------------------------ */

/* The E2B sandbox `id`, running (a reference), or an answer sent. */
static struct ab_box_s *
e2b_box (struct ab_req_s *r, const char *id, char tok[AB_E2B_TOKEN_LEN + 1])
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_registry_get (r->d, id, &err);
	char scratch[AB_E2B_TOKEN_LEN + 1];

	if (b && ab_box_get_state (r->d, b) == AB_BOX_RUNNING
	    && ab_e2b_token_load (b, tok ? tok : scratch, &err) == 0) {
		explicit_bzero (scratch, sizeof scratch);
		return b;
	}
	if (b)
		ab_box_unref (r->d, b);
	ab_e2b_api_fail (r, 404, "sandbox %s not found", id);
	return NULL;
}

static int
set_timeout (struct ab_req_s *r, struct ab_box_s *b, bool need, ab_error_t *err)
{
	json_t *body = NULL, *t;
	json_int_t secs;

	if (ab_req_body_json (r, &body, err) < 0)
		return -1;
	t = json_object_get (body, "timeout");
	if (!t && !need) {
		json_decref (body);
		return 0;
	}
	if (!json_is_integer (t) || json_integer_value (t) < 0
	    || json_integer_value (t) > MAX_TIMEOUT_S) {
		json_decref (body);
		return ab_error (err, 0, AB_E_INVALID, "'timeout' must be seconds in 0..%d",
		                 MAX_TIMEOUT_S);
	}
	secs = json_integer_value (t);
	json_decref (body);
	pthread_mutex_lock (&r->d->lock);
	b->ttl_ms = secs * 1000;
	b->expires_ms = (int64_t)ab_unix_ms () + secs * 1000;
	pthread_mutex_unlock (&r->d->lock);
	return ab_box_save (r->d, b, err);
}

static void
one (struct ab_req_s *r, const char *id, const char *action)
{
	ab_error_t err = AB_ERROR_INIT;
	char tok[AB_E2B_TOKEN_LEN + 1];
	struct ab_box_s *b;

	if (!(b = e2b_box (r, id, tok)))
		return;
	if (action && strcmp (action, "pause") == 0 && strcmp (r->method, "POST") == 0) {
		/* E2B: 204, and 409 when it is paused already. */
		if (ab_box_is_paused (r->d, b))
			ab_e2b_api_fail (r, 409, "sandbox %s is already paused", id);
		else if (ab_box_pause (r->d, b, &err) < 0)
			ab_e2b_api_fail (r, ab_status_of (&err), "%s", err.msg);
		else
			ab_resp_empty (r, 204);
		explicit_bzero (tok, sizeof tok);
		ab_box_unref (r->d, b);
		return;
	}
	if (!action && strcmp (r->method, "GET") == 0)
		ab_resp_json (r, 200, sandbox_json (r->d, b, NULL, true));
	else if (!action && strcmp (r->method, "DELETE") == 0) {
		if (ab_box_destroy (r->d, b, true, &err) < 0)
			ab_e2b_api_fail (r, ab_status_of (&err), "%s", err.msg);
		else
			ab_resp_empty (r, 204);
	} else if (action && strcmp (action, "timeout") == 0 && strcmp (r->method, "POST") == 0) {
		if (set_timeout (r, b, true, &err) < 0)
			ab_e2b_api_fail (r, ab_status_of (&err), "%s", err.msg);
		else
			ab_resp_empty (r, 204);
	} else if (action && (strcmp (action, "connect") == 0 || strcmp (action, "resume") == 0)
	           && strcmp (r->method, "POST") == 0) {
		/* connect (and the older resume) resume a paused sandbox: 201
		 * then, 200 when it was running. */
		bool was_paused = ab_box_is_paused (r->d, b);
		if (was_paused && ab_box_resume (r->d, b, &err) < 0)
			ab_e2b_api_fail (r, ab_status_of (&err), "%s", err.msg);
		else if (set_timeout (r, b, false, &err) < 0)
			ab_e2b_api_fail (r, ab_status_of (&err), "%s", err.msg);
		else
			ab_resp_json (r, was_paused ? 201 : 200,
			              sandbox_json (r->d, b, tok, false));
	} else
		ab_e2b_api_fail (r, 404, "no such endpoint: %s %s", r->method, r->path);
	explicit_bzero (tok, sizeof tok);
	ab_box_unref (r->d, b);
}

/* ---- list ------------------------------------------------------------------------ */

/* ?metadata=k%3Dv%26k2%3Dv2 (URLSearchParams, then percent-encoded again). */
static bool
metadata_match (const json_t *labels, const char *filter)
{
	const char *p = filter;

	while (p && *p) {
		const char *end = strchrnul (p, '&');
		const char *eq = memchr (p, '=', (size_t)(end - p));
		cleanup_free char *k = NULL, *v = NULL;
		const char *have;

		if (!eq)
			return false;
		k = ab_pct_decode (p, (size_t)(eq - p), true);
		v = ab_pct_decode (eq + 1, (size_t)(end - eq - 1), true);
		have = json_string_value (json_object_get (labels, k ? k : ""));
		if (!k || !v || !have || strcmp (have, v) != 0)
			return false;
		p = *end ? end + 1 : end;
	}
	return true;
}

static void
list (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *meta = ab_req_query (r, "metadata", &err);
	cleanup_free char *limit_s = ab_req_query (r, "limit", &err);
	cleanup_free char *next = ab_req_query (r, "nextToken", &err);
	cleanup_strv char **states = ab_req_query_all (r, "state", &err);
	cleanup_free char *hdr = NULL;
	long limit = limit_s ? strtol (limit_s, NULL, 10) : LIST_LIMIT_MAX;
	bool want_running = !states || !states[0], want_paused = want_running;
	struct ab_box_s **v;
	size_t n, shown = 0;
	json_t *arr = json_array ();
	const char *last = NULL;

	for (char **s = states; s && *s; s++) {
		want_running |= strstr (*s, "running") != NULL;
		want_paused |= strstr (*s, "paused") != NULL;
	}
	if (limit <= 0 || limit > LIST_LIMIT_MAX)
		limit = LIST_LIMIT_MAX;
	v = ab_registry_all (r->d, &n);
	for (size_t i = 0; i < n; i++) {
		char tok[AB_E2B_TOKEN_LEN + 1];
		ab_error_t e = AB_ERROR_INIT;
		bool paused = ab_box_is_paused (r->d, v[i]);
		if (ab_box_get_state (r->d, v[i]) != AB_BOX_RUNNING || (paused && !want_paused)
		    || (!paused && !want_running) || ab_e2b_token_load (v[i], tok, &e) < 0)
			continue;
		explicit_bzero (tok, sizeof tok);
		if ((next && strcmp (v[i]->id, next) <= 0)
		    || (meta && !metadata_match (v[i]->labels, meta)))
			continue;
		if (shown == (size_t)limit) {
			hdr = xasprintf ("X-Next-Token: %s\r\n", last);
			break;
		}
		json_array_append_new (arr, sandbox_json (r->d, v[i], NULL, true));
		last = v[i]->id;
		shown++;
	}
	r->resp_headers = hdr;
	ab_resp_json (r, 200, arr);
	r->resp_headers = NULL;
	ab_registry_release (r->d, v, n);
}

void
ab_e2b_control (struct ab_req_s *r)
{
	const char *p = r->path;
	bool post = strcmp (r->method, "POST") == 0;
	cleanup_free char *id = NULL;
	const char *rest, *slash;

	if (strncmp (p, "/v2/", 4) == 0)
		p += 3;
	if (strcmp (p, "/sandboxes") == 0) {
		if (post)
			create (r);
		else if (strcmp (r->method, "GET") == 0)
			list (r);
		else
			ab_e2b_api_fail (r, 405, "%s is not allowed on %s", r->method, r->path);
		return;
	}
	if (strncmp (p, "/sandboxes/", 11) != 0 || !p[11]) {
		ab_e2b_api_fail (r, 404, "no such endpoint: %s", r->path);
		return;
	}
	rest = p + 11;
	slash = strchr (rest, '/');
	id = slash ? xstrndup (rest, (size_t)(slash - rest)) : xstrdup (rest);
	if (slash && strchr (slash + 1, '/')) {
		ab_e2b_api_fail (r, 404, "no such endpoint: %s", r->path);
		return;
	}
	one (r, id, slash ? slash + 1 : NULL);
}
