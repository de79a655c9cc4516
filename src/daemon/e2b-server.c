/* The E2B listener (docs/e2b.md): one TCP listener on the daemon's HTTP
 * server serving both of E2B's planes.  A request naming a sandbox (the
 * E2b-Sandbox-Id field that E2B_SANDBOX_URL makes the SDK send, or Host
 * 49983-<id>.<domain>) is envd's and needs that sandbox's own access
 * token; every other request is the control plane's and needs the API key
 * (X-API-KEY).  Both are compared as SHA-256 digests in constant time. */
#include "daemon/e2b-internal.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/hex.h"
#include "base/log.h"
#include "base/xalloc.h"

#define KEY_MIN_HEX 32
#define KEY_MAX     512

/* The base template: the host root, the sandbox user uid 1000; its home
 * /home/user is the workspace (e2b-control.c apply_home). */
static const char base_template[] = "{\"user\":\"1000:1000\"}";

static bool
key_valid (const char *k, size_t n)
{
	if (n < 4 + KEY_MIN_HEX || strncmp (k, "e2b_", 4) != 0)
		return false;
	for (size_t i = 4; i < n; i++)
		if (!((k[i] >= '0' && k[i] <= '9') || (k[i] >= 'a' && k[i] <= 'f')))
			return false;
	return true;
}

static int
generate_key (const char *path, ab_error_t *err)
{
	uint8_t raw[20];
	char text[4 + 2 * sizeof raw + 2];
	cleanup_close int fd =
	        open (path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return errno == EEXIST ? 0 : ab_error (err, errno, AB_E_SYSTEM, "create %s", path);
	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	memcpy (text, "e2b_", 4);
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (text + 4 + 2 * i, 3, "%02x", raw[i]);
	strcat (text, "\n");
	explicit_bzero (raw, sizeof raw);
	if (write (fd, text, strlen (text)) != (ssize_t)strlen (text)) {
		explicit_bzero (text, sizeof text);
		return ab_error (err, errno, AB_E_SYSTEM, "write %s", path);
	}
	explicit_bzero (text, sizeof text);
	ab_log (AB_LOG_INFO, "wrote a new E2B API key to %s", path);
	return 0;
}

static int
load_key (struct ab_e2b_s *e, const char *path, ab_error_t *err)
{
	char buf[KEY_MAX + 2];
	cleanup_close int fd = open (path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;
	struct stat st;

	if (fd < 0 || fstat (fd, &st) < 0 || (n = read (fd, buf, sizeof buf - 1)) < 0)
		return ab_error (err, errno, AB_E_INVALID, "--e2b-api-key-file %s", path);
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == '\r' || buf[n - 1] == ' '))
		n--;
	if (!key_valid (buf, (size_t)n)) {
		explicit_bzero (buf, sizeof buf);
		return ab_error (err, 0, AB_E_INVALID,
		                 "--e2b-api-key-file %s: the key must be e2b_ and at least %d "
		                 "lowercase hex digits (as the SDK checks)",
		                 path, KEY_MIN_HEX);
	}
	if (st.st_mode & 077)
		ab_log (AB_LOG_WARN, "%s is readable by other users (chmod 600 it)", path);
	SHA256 ((const unsigned char *)buf, (size_t)n, e->key_digest);
	explicit_bzero (buf, sizeof buf);
	return 0;
}

static int
add_template (struct ab_e2b_s *e, const char *name, const char *path, ab_error_t *err)
{
	json_error_t je;
	json_t *j = json_load_file (path, JSON_REJECT_DUPLICATES, &je);

	if (!j || !json_is_object (j)) {
		json_decref (j);
		return ab_error (err, 0, AB_E_INVALID, "--e2b-template %s: %s", path,
		                 j ? "not a JSON object" : je.text);
	}
	for (size_t i = 0; i < e->n_templates; i++)
		if (strcmp (e->templates[i].name, name) == 0) {
			json_decref (e->templates[i].req);
			e->templates[i].req = j;
			return 0;
		}
	e->templates = xrealloc (e->templates, (e->n_templates + 1) * sizeof *e->templates);
	e->templates[e->n_templates].name = xstrdup (name);
	e->templates[e->n_templates++].req = j;
	return 0;
}

static bool
name_ok (const char *n, size_t len)
{
	if (len == 0 || len > 128)
		return false;
	for (size_t i = 0; i < len; i++)
		if (!(n[i] == '-' || n[i] == '_' || n[i] == '.' || (n[i] >= '0' && n[i] <= '9')
		      || (n[i] >= 'a' && n[i] <= 'z') || (n[i] >= 'A' && n[i] <= 'Z')))
			return false;
	return true;
}

/* NAME=SPEC.json, or a directory whose NAME.json files are templates. */
static int
load_templates (struct ab_e2b_s *e, const char *arg, ab_error_t *err)
{
	const char *eq = strchr (arg, '=');
	struct stat st;
	cleanup_dir DIR *dir = NULL;
	struct dirent *de;

	if (eq) {
		cleanup_free char *name = xstrndup (arg, (size_t)(eq - arg));
		if (!name_ok (name, strlen (name)))
			return ab_error (err, 0, AB_E_INVALID, "--e2b-template %s: a bad name",
			                 arg);
		return add_template (e, name, eq + 1, err);
	}
	if (stat (arg, &st) < 0 || !S_ISDIR (st.st_mode) || !(dir = opendir (arg)))
		return ab_error (err, errno, AB_E_INVALID,
		                 "--e2b-template %s: NAME=SPEC.json or a directory", arg);
	while ((de = readdir (dir))) {
		size_t n = strlen (de->d_name);
		if (n <= 5 || strcmp (de->d_name + n - 5, ".json") != 0
		    || !name_ok (de->d_name, n - 5))
			continue;
		cleanup_free char *name = xstrndup (de->d_name, n - 5);
		cleanup_free char *path = xasprintf ("%s/%s", arg, de->d_name);
		if (add_template (e, name, path, err) < 0)
			return -1;
	}
	return 0;
}

int
ab_e2b_setup (struct ab_daemon_s *d, ab_error_t *err)
{
	const struct ab_daemon_config_s *c = d->cfg;
	struct ab_e2b_s *e;

	if (!c->e2b_listen)
		return 0;
	if (!c->e2b_key_file)
		return ab_error (err, 0, AB_E_INVALID, "--e2b-listen needs --e2b-api-key-file");
	e = xcalloc (1, sizeof *e);
	d->e2b = e;
	e->domain = xstrdup (c->e2b_domain ? c->e2b_domain : "localhost");
	e->templates = xcalloc (1, sizeof *e->templates);
	e->templates[0].name = xstrdup ("base");
	e->templates[0].req = json_loads (base_template, 0, NULL);
	e->n_templates = 1;
	if ((c->e2b_generate_key && generate_key (c->e2b_key_file, err) < 0)
	    || load_key (e, c->e2b_key_file, err) < 0)
		return -1;
	for (char **t = c->e2b_templates; t && *t; t++)
		if (load_templates (e, *t, err) < 0)
			return -1;
	return 0;
}

const struct ab_e2b_template_s *
ab_e2b_template (struct ab_daemon_s *d, const char *name)
{
	for (size_t i = 0; i < d->e2b->n_templates; i++)
		if (strcmp (d->e2b->templates[i].name, name) == 0)
			return &d->e2b->templates[i];
	return NULL;
}

/* ---- per-sandbox access tokens ------------------------------------------ */

static char *
token_path (const struct ab_box_s *b)
{
	return xasprintf ("%s/e2b.json", b->dir);
}

int
ab_e2b_token_save (const struct ab_box_s *b, const char *tok, ab_error_t *err)
{
	cleanup_free char *path = token_path (b);
	json_t *j = json_pack ("{s:s}", "token", tok);
	char *text = json_dumps (j, JSON_COMPACT);
	int r = ab_write_file_atomic (path, text, strlen (text), err);

	json_decref (j);
	explicit_bzero (text, strlen (text));
	free (text);
	return r;
}

int
ab_e2b_token_load (const struct ab_box_s *b, char tok[AB_E2B_TOKEN_LEN + 1], ab_error_t *err)
{
	cleanup_free char *path = token_path (b);
	json_t *j = json_load_file (path, 0, NULL);
	const char *t = json_string_value (json_object_get (j, "token"));
	int r = 0;

	if (!t || strlen (t) != AB_E2B_TOKEN_LEN)
		r = ab_error (err, 0, AB_E_NOT_FOUND, "sandbox %s was not made through E2B", b->id);
	else
		memcpy (tok, t, AB_E2B_TOKEN_LEN + 1);
	json_decref (j); /* base/json-wipe.c wipes the string as it is freed */
	return r;
}

static bool
digest_eq (const char *a, size_t alen, const char *b, size_t blen)
{
	uint8_t da[32], db[32];

	SHA256 ((const unsigned char *)a, alen, da);
	SHA256 ((const unsigned char *)b, blen, db);
	return CRYPTO_memcmp (da, db, sizeof da) == 0;
}

/* ---- responses ------------------------------------------------------------ */

void
ab_e2b_api_fail (struct ab_req_s *r, int status, const char *fmt, ...)
{
	char msg[AB_ERROR_MSG_MAX];
	va_list ap;

	va_start (ap, fmt);
	vsnprintf (msg, sizeof msg, fmt, ap);
	va_end (ap);
	if (!r->responded)
		ab_resp_json (r, status, json_pack ("{s:i, s:s}", "code", status, "message", msg));
}

char *
ab_e2b_path (const struct ab_e2b_call_s *call, const char *p)
{
	while (p && p[0] == '.' && p[1] == '/')
		p += 2;
	if (!p || !*p || strcmp (p, ".") == 0)
		return xstrdup (call->home);
	if (p[0] == '/')
		return xstrdup (p);
	if (p[0] == '~' && (p[1] == '/' || p[1] == '\0'))
		return xasprintf ("%s%s", call->home, p + 1);
	return xasprintf ("%s/%s", call->home, p);
}

/* ---- routing -------------------------------------------------------------- */

/* The sandbox a data-plane request names: E2b-Sandbox-Id, else a Host of
 * 49983-<id>.<domain>.  NULL for the control plane. */
static char *
sandbox_of (struct ab_req_s *r)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, "e2b-sandbox-id", &len);
	char prefix[16];
	size_t pl;

	if (v)
		return xstrndup (v, len);
	v = ab_http_io_field (r->io, "host", &len);
	pl = (size_t)snprintf (prefix, sizeof prefix, "%d-", AB_E2B_ENVD_PORT);
	if (v && len > pl && memcmp (v, prefix, pl) == 0) {
		const char *dot = memchr (v + pl, '.', len - pl);
		if (dot)
			return xstrndup (v + pl, (size_t)(dot - v - pl));
	}
	return NULL;
}

/* "Authorization: Basic base64(user:)": who the call acts as. */
static int
pick_user (struct ab_e2b_call_s *call)
{
	static const char scheme[] = "basic ";
	size_t len;
	const char *v = ab_http_io_field (call->r->io, "authorization", &len);
	cleanup_free uint8_t *dec = NULL;
	size_t dlen;

	call->uid = call->b->spec.uid;
	call->gid = call->b->spec.gid;
	call->user = call->uid == 0 ? "root" : "user";
	call->home = call->b->spec.workdir;
	if (!v)
		return 0;
	if (len <= sizeof scheme - 1 || strncasecmp (v, scheme, sizeof scheme - 1) != 0
	    || ab_base64_decode (v + 6, len - 6, &dec, &dlen) < 0)
		return -1;
	if (dlen >= 5 && memcmp (dec, "root:", 5) == 0) {
		call->uid = call->gid = 0;
		call->user = "root";
	} else if (!(dlen >= 5 && memcmp (dec, "user:", 5) == 0))
		return -1;
	return 0;
}

static bool
token_ok (struct ab_req_s *r, const char *tok)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, "x-access-token", &len);

	return v && digest_eq (v, len, tok, strlen (tok));
}

static void
envd_route (struct ab_e2b_call_s *call)
{
	struct ab_req_s *r = call->r;
	const char *p = r->path;

	if (strcmp (p, "/files") == 0) {
		ab_e2b_files (call);
		return;
	}
	if (strcmp (r->method, "POST") != 0) {
		ab_e2b_fail (call, "unimplemented", "%s %s is not an envd endpoint", r->method, p);
		return;
	}
	if (strncmp (p, "/process.Process/", 17) == 0) {
		call->service = "process.Process";
		call->method = p + 17;
		ab_e2b_process (call);
	} else if (strncmp (p, "/filesystem.Filesystem/", 23) == 0) {
		call->service = "filesystem.Filesystem";
		call->method = p + 23;
		ab_e2b_filesystem (call);
	} else
		ab_e2b_fail (call, "unimplemented", "no such procedure: %s", p);
}

/* /files may carry a v1_ signature instead of the token (e2b-files.c
 * checks it); every other envd call needs the token. */
static void
serve_envd (struct ab_req_s *r, const char *id)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_e2b_call_s call = { .r = r };
	char *tok = call.token;
	bool files = strcmp (r->path, "/files") == 0;

	call.b = ab_registry_get (r->d, id, &err);
	if (!call.b || ab_box_get_state (r->d, call.b) != AB_BOX_RUNNING
	    || ab_e2b_token_load (call.b, tok, &err) < 0) {
		/* As E2B's edge: the SDK reads 502 as "not running". */
		ab_e2b_api_fail (r, 502, "sandbox %s is not running", id);
	} else if (strcmp (r->path, "/health") == 0 && strcmp (r->method, "GET") == 0) {
		ab_resp_empty (r, 204);
	} else if (!token_ok (r, tok) && !(files && r->query && strstr (r->query, "signature="))) {
		ab_e2b_fail (&call, "unauthenticated", "missing or wrong X-Access-Token");
	} else if (pick_user (&call) < 0) {
		ab_e2b_fail (&call, "unauthenticated", "unknown user in Authorization");
	} else {
		call.need_signature = files && !token_ok (r, tok);
		envd_route (&call);
	}
	explicit_bzero (call.token, sizeof call.token);
	if (call.b)
		ab_box_unref (r->d, call.b);
}

static bool
key_ok (struct ab_req_s *r)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, "x-api-key", &len);
	uint8_t dig[32];

	if (!v)
		return false;
	SHA256 ((const unsigned char *)v, len, dig);
	return CRYPTO_memcmp (dig, r->d->e2b->key_digest, sizeof dig) == 0;
}

void
ab_e2b_serve (struct ab_req_s *r, bool target_ok)
{
	cleanup_free char *id = NULL;

	if (ab_e2b_preview (r))
		return;
	if (!target_ok) {
		ab_e2b_api_fail (r, 400, "request target must be an origin-form path");
		return;
	}
	id = sandbox_of (r);
	if (id)
		serve_envd (r, id);
	else if (!key_ok (r))
		ab_e2b_api_fail (r, 401, "missing or wrong X-API-KEY");
	else
		ab_e2b_control (r);
}
