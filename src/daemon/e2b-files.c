/* envd's /files: GET streams a file's bytes, POST writes one or more
 * files (multipart/form-data, field `file`, the part's filename its path;
 * or an application/octet-stream body for ?path=), parents created, each
 * file streamed to the agent as it arrives (a 64 MiB upload costs one
 * buffer, not a copy).  Authorised by the sandbox's token or a v1_
 * signature made from it (the SDK's uploadUrl/downloadUrl). */
#include "daemon/e2b-internal.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/parse.h"
#include "base/xalloc.h"

#define MP_BUF       (256 * 1024)
#define MP_HEAD_MAX  8192
#define BOUNDARY_MAX 200
#define MAX_FILES    1000

static int
status_of_err (const ab_error_t *err)
{
	switch (err->kind) {
	case AB_E_NOT_FOUND: return 404;
	case AB_E_INVALID: return 400;
	case AB_E_DENIED: return 403;
	case AB_E_LIMIT: return err->errnum == E2BIG ? 413 : 507;
	default: return 500;
	}
}

static void
fail_err (struct ab_req_s *r, const ab_error_t *err)
{
	ab_e2b_api_fail (r, status_of_err (err), "%s", err->msg);
}

/* "v1_" + base64(sha256("path:op:user:token[:expiry]")) without padding. */
static bool
signature_ok (struct ab_e2b_call_s *call, const char *path, const char *op, const char *user)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *sig = ab_req_query (call->r, "signature", &err);
	cleanup_free char *exp = ab_req_query (call->r, "signature_expiration", &err);
	cleanup_free char *raw = NULL, *b64 = NULL;
	unsigned char dig[SHA256_DIGEST_LENGTH];
	uint64_t expiry;
	size_t n;
	bool ok;

	if (!sig || strncmp (sig, "v1_", 3) != 0)
		return false;
	if (exp
	    && (ab_parse_uint (exp, 0, UINT64_MAX, &expiry, &err) < 0
	        || expiry * 1000 < ab_unix_ms ()))
		return false;
	raw = exp ? xasprintf ("%s:%s:%s:%s:%s", path, op, user, call->token, exp)
	          : xasprintf ("%s:%s:%s:%s", path, op, user, call->token);
	SHA256 ((const unsigned char *)raw, strlen (raw), dig);
	explicit_bzero (raw, strlen (raw));
	b64 = ab_base64_encode (dig, sizeof dig);
	n = strlen (b64);
	while (n && b64[n - 1] == '=')
		n--;
	ok = strlen (sig + 3) == n && CRYPTO_memcmp (sig + 3, b64, n) == 0;
	return ok;
}

/* ---- GET ------------------------------------------------------------------ */

struct dl_s {
	struct ab_req_s *r;
	bool dir;
};

static int
dl_begin (void *ctx, const struct ab_agent_stat_s *st, ab_error_t *err)
{
	struct dl_s *d = ctx;

	if (st && st->type == AB_AGENT_FT_DIR) {
		d->dir = true;
		return ab_error (err, EISDIR, AB_E_INVALID, "path is a directory");
	}
	if (ab_resp_stream_begin (d->r, 200, "application/octet-stream") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "client went away");
	return 0;
}

static int
dl_data (void *ctx, const void *buf, size_t len, ab_error_t *err)
{
	struct dl_s *d = ctx;

	if (!d->r->streaming && dl_begin (ctx, NULL, err) < 0)
		return -1;
	if (ab_resp_stream (d->r, buf, len) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "client went away");
	return 0;
}

static void
files_get (struct ab_e2b_call_s *call, ab_agent_conn_t *c, const char *path)
{
	ab_error_t err = AB_ERROR_INIT;
	struct dl_s dl = { .r = call->r };
	struct ab_agent_file_sink_s sink = { .begin = dl_begin, .data = dl_data, .ctx = &dl };
	struct ab_agent_stat_s st;
	int rc;

	if (ab_agent_file_stat (c, path, &st, &err) < 0) {
		fail_err (call->r, &err);
		return;
	}
	if (st.type == AB_AGENT_FT_DIR) {
		ab_e2b_api_fail (call->r, 400, "%s is a directory", path);
		return;
	}
	rc = ab_agent_file_read (c, path, &sink, &err);
	if (rc == 0 && !call->r->streaming)
		rc = dl_begin (&dl, NULL, &err);
	if (rc == 0)
		ab_resp_stream_end (call->r);
	else if (call->r->streaming)
		call->r->close = true; /* a truncated body, never a short file */
	else
		fail_err (call->r, &err);
}

/* ---- POST: the multipart reader ------------------------------------------ */

struct mp_s {
	struct ab_req_s *r;
	char delim[BOUNDARY_MAX + 8]; /* "\r\n--" boundary */
	size_t dlen;
	uint8_t *buf;
	size_t off, len;
	bool eof;       /* the body is read whole */
	bool part_done; /* the current part's delimiter was reached */
	uint64_t max, total;
};

static int
mp_fill (struct mp_s *m, ab_error_t *err)
{
	ssize_t n;

	if (m->off > 0) {
		memmove (m->buf, m->buf + m->off, m->len - m->off);
		m->len -= m->off;
		m->off = 0;
	}
	if (m->eof || m->len == MP_BUF)
		return 0;
	n = ab_http_io_body_read (m->r->io, m->buf + m->len, MP_BUF - m->len, err);
	if (n < 0)
		return -1;
	if (n == 0)
		m->eof = true;
	m->len += (size_t)n;
	if (m->max && (m->total += (uint64_t)n) > m->max)
		return ab_error (err, E2BIG, AB_E_LIMIT,
		                 "upload larger than %llu bytes (--max-upload)",
		                 (unsigned long long)m->max);
	return 0;
}

/* The current part's bytes, up to its delimiter. */
static ssize_t
mp_source (void *ctx, void *out, size_t cap, ab_error_t *err)
{
	struct mp_s *m = ctx;

	for (;;) {
		size_t have = m->len - m->off, safe;
		const uint8_t *d;

		if (m->part_done)
			return 0;
		d = memmem (m->buf + m->off, have, m->delim, m->dlen);
		if (d) {
			size_t n = (size_t)(d - (m->buf + m->off));
			if (n == 0) {
				m->off += m->dlen;
				m->part_done = true;
				return 0;
			}
			n = n < cap ? n : cap;
			memcpy (out, m->buf + m->off, n);
			m->off += n;
			return (ssize_t)n;
		}
		/* Bytes that cannot start a delimiter can go now. */
		safe = have >= m->dlen ? have - (m->dlen - 1) : 0;
		if (safe > 0) {
			size_t n = safe < cap ? safe : cap;
			memcpy (out, m->buf + m->off, n);
			m->off += n;
			return (ssize_t)n;
		}
		if (m->eof)
			return ab_error (err, 0, AB_E_INVALID, "multipart body ends inside a part");
		if (mp_fill (m, err) < 0)
			return -1;
	}
}

/* At least n bytes buffered (or the body ended). */
static int
mp_need (struct mp_s *m, size_t n, ab_error_t *err)
{
	while (m->len - m->off < n && !m->eof)
		if (mp_fill (m, err) < 0)
			return -1;
	return 0;
}

/* After a delimiter: "--" ends the body, CRLF starts a part.  1 = a part. */
static int
mp_after_delim (struct mp_s *m, ab_error_t *err)
{
	if (mp_need (m, 2, err) < 0)
		return -1;
	if (m->len - m->off >= 2 && memcmp (m->buf + m->off, "--", 2) == 0)
		return 0;
	if (m->len - m->off >= 2 && memcmp (m->buf + m->off, "\r\n", 2) == 0) {
		m->off += 2;
		return 1;
	}
	return ab_error (err, 0, AB_E_INVALID, "malformed multipart delimiter");
}

/* The part's head; *filename and *is_file from Content-Disposition. */
static int
mp_part_head (struct mp_s *m, char **filename, bool *is_file, ab_error_t *err)
{
	const uint8_t *end;
	cleanup_free char *head = NULL;
	char *fn, *q;

	for (;;) {
		end = memmem (m->buf + m->off, m->len - m->off, "\r\n\r\n", 4);
		if (end)
			break;
		if (m->len - m->off > MP_HEAD_MAX || m->eof)
			return ab_error (err, 0, AB_E_INVALID, "malformed multipart part head");
		if (mp_fill (m, err) < 0)
			return -1;
	}
	head = xstrndup ((const char *)m->buf + m->off, (size_t)(end - (m->buf + m->off)));
	m->off = (size_t)(end - m->buf) + 4;
	m->part_done = false;
	*is_file = strcasestr (head, "name=\"file\"") != NULL;
	*filename = NULL;
	fn = strcasestr (head, "filename=\"");
	if (fn && (q = strchr (fn + 10, '"')))
		*filename = xstrndup (fn + 10, (size_t)(q - fn - 10));
	return 0;
}

static int
mp_begin (struct mp_s *m, ab_error_t *err)
{
	size_t len;
	const char *ct = ab_http_io_field (m->r->io, "content-type", &len);
	cleanup_free char *v = ct ? xstrndup (ct, len) : NULL;
	char *b = v ? strcasestr (v, "boundary=") : NULL;
	size_t blen;

	if (!b)
		return ab_error (err, 0, AB_E_INVALID, "multipart/form-data needs a boundary");
	b += 9;
	if (*b == '"')
		b++;
	blen = strcspn (b, "\";, ");
	if (blen == 0 || blen > BOUNDARY_MAX)
		return ab_error (err, 0, AB_E_INVALID, "a bad multipart boundary");
	m->dlen = (size_t)snprintf (m->delim, sizeof m->delim, "\r\n--%.*s", (int)blen, b);
	m->buf = xmalloc (MP_BUF);
	/* The first delimiter has no CRLF before it. */
	if (mp_need (m, m->dlen - 2, err) < 0)
		return -1;
	if (m->len - m->off < m->dlen - 2 || memcmp (m->buf, m->delim + 2, m->dlen - 2) != 0)
		return ab_error (err, 0, AB_E_INVALID, "the body does not start with the boundary");
	m->off = m->dlen - 2;
	return 0;
}

/* ---- POST: writing ----------------------------------------------------------- */

static const char *
base_name (const char *p)
{
	const char *s = strrchr (p, '/');
	return s ? s + 1 : p;
}

static int
write_one (struct ab_e2b_call_s *call, ab_agent_conn_t *c, const char *path, ab_agent_source_fn src,
           void *ctx, json_t *out, ab_error_t *err)
{
	cleanup_free char *parent = xstrdup (path);
	char *slash = strrchr (parent, '/');
	uint64_t written;

	if (slash && slash != parent) {
		*slash = '\0';
		if (ab_agent_file_mkdir (c, parent, 0755, err) < 0)
			return -1;
	}
	if (ab_agent_file_write (c, path, 0644, src, ctx, &written, err) < 0)
		return -1;
	json_array_append_new (out, json_pack ("{s:s, s:s, s:s}", "path", path, "name",
	                                       base_name (path), "type", "file"));
	return 0;
}

static ssize_t
raw_source (void *ctx, void *buf, size_t cap, ab_error_t *err)
{
	struct mp_s *m = ctx;
	ssize_t n = ab_http_io_body_read (m->r->io, buf, cap, err);

	if (n > 0 && m->max && (m->total += (uint64_t)n) > m->max)
		return ab_error (err, E2BIG, AB_E_LIMIT,
		                 "upload larger than %llu bytes (--max-upload)",
		                 (unsigned long long)m->max);
	return n;
}

static ssize_t
drain (struct mp_s *m, ab_error_t *err)
{
	char tmp[4096];
	ssize_t n;

	while ((n = mp_source (m, tmp, sizeof tmp, err)) > 0)
		;
	return n;
}

static int
multipart (struct ab_e2b_call_s *call, ab_agent_conn_t *c, const char *qpath, json_t *out,
           ab_error_t *err)
{
	struct mp_s mp = { .r = call->r }, *m = &mp;
	int more = 0, rc = 0;
	size_t files = 0;

	m->max = call->r->d->cfg->max_upload;
	if (mp_begin (m, err) < 0) {
		free (m->buf);
		return -1;
	}
	while (rc == 0 && (more = mp_after_delim (m, err)) == 1) {
		cleanup_free char *fn = NULL, *path = NULL;
		bool is_file = false;

		if (mp_part_head (m, &fn, &is_file, err) < 0) {
			rc = -1;
			break;
		}
		if (!is_file) {
			rc = drain (m, err) < 0 ? -1 : 0;
			continue;
		}
		if (++files > MAX_FILES) {
			rc = ab_error (err, 0, AB_E_LIMIT, "more than %d files", MAX_FILES);
			break;
		}
		if (call->need_signature && files > 1) {
			rc = ab_error (err, 0, AB_E_DENIED, "a signed upload writes one file");
			break;
		}
		path = ab_e2b_path (call, qpath && files == 1 ? qpath : fn);
		if (!fn && !qpath) {
			rc = ab_error (err, 0, AB_E_INVALID, "a part without a path");
			break;
		}
		rc = write_one (call, c, path, mp_source, m, out, err);
	}
	if (rc == 0 && more < 0)
		rc = -1;
	free (m->buf);
	return rc;
}

static bool
is_ctype (struct ab_req_s *r, const char *want)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, "content-type", &len);

	return v && len >= strlen (want) && strncasecmp (v, want, strlen (want)) == 0;
}

static void
files_post (struct ab_e2b_call_s *call, ab_agent_conn_t *c, const char *qpath)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *out = json_array ();
	size_t len;
	const char *enc = ab_http_io_field (call->r->io, "content-encoding", &len);
	int rc;

	if (enc && !(len == 8 && strncasecmp (enc, "identity", 8) == 0)) {
		ab_e2b_api_fail (call->r, 415, "Content-Encoding %s is not accepted", "(gzip)");
		json_decref (out);
		return;
	}
	if (ab_req_continue (call->r) < 0) {
		json_decref (out);
		return;
	}
	if (is_ctype (call->r, "multipart/form-data"))
		rc = multipart (call, c, qpath, out, &err);
	else if (!qpath)
		rc = ab_error (&err, 0, AB_E_INVALID, "an octet-stream upload needs ?path=");
	else {
		struct mp_s m = { .r = call->r, .max = call->r->d->cfg->max_upload };
		cleanup_free char *path = ab_e2b_path (call, qpath);
		rc = write_one (call, c, path, raw_source, &m, out, &err);
	}
	if (rc < 0)
		fail_err (call->r, &err);
	else if (json_array_size (out) == 0)
		ab_e2b_api_fail (call->r, 400, "%s", "no file in the request");
	else {
		ab_resp_json (call->r, 200, out);
		return;
	}
	json_decref (out);
}

void
ab_e2b_files (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_req_s *r = call->r;
	cleanup_free char *qpath = ab_req_query (r, "path", &err);
	cleanup_free char *user = ab_req_query (r, "username", &err);
	cleanup_free char *path = NULL;
	bool get = strcmp (r->method, "GET") == 0;
	ab_agent_conn_t *c;

	if (err.kind) {
		fail_err (r, &err);
		return;
	}
	if (!get && strcmp (r->method, "POST") != 0) {
		ab_e2b_api_fail (r, 405, "%s is not allowed on /files", r->method);
		return;
	}
	if (user && strcmp (user, "root") == 0)
		call->uid = call->gid = 0;
	/* A signature names one path: a signed upload writes only ?path=. */
	if (call->need_signature
	    && (!qpath
	        || !signature_ok (call, qpath ? qpath : "", get ? "read" : "write",
	                          user ? user : ""))) {
		ab_e2b_api_fail (r, 401, "%s", "missing or wrong X-Access-Token or signature");
		return;
	}
	if (get && !qpath) {
		ab_e2b_api_fail (r, 400, "%s", "?path= is required");
		return;
	}
	c = ab_box_connect (r->d, call->b, &err);
	if (!c) {
		fail_err (r, &err);
		return;
	}
	if (get) {
		path = ab_e2b_path (call, qpath);
		files_get (call, c, path);
	} else
		files_post (call, c, qpath);
	ab_agent_close (c);
}
