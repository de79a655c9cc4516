/* envd's /files: GET streams a file's bytes, POST writes one or more
 * files (multipart/form-data, field `file`, the part's filename its path;
 * or an application/octet-stream body for ?path=), parents created, each
 * file streamed to the agent as it arrives (a 64 MiB upload costs one
 * buffer, not a copy).  A `Content-Encoding: gzip` body is inflated as
 * it is read, and --max-upload bounds what it inflates to: a gzip bomb
 * ends in 413 at the limit, and the agent's write, cancelled, leaves no
 * file (nor a part of one) behind.  Authorised by the sandbox's token or a v1_
 * signature made from it (the SDK's uploadUrl/downloadUrl). */
#include "daemon/e2b-internal.h"
#include "daemon/e2b-wire.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <zlib.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/clock.h"
#include "base/parse.h"
#include "base/xalloc.h"

#define MAX_FILES 1000

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

/* ---- POST: reading the body ----------------------------------------------- */

/* The request body as read for writing: inflated when gzip, counted. */
struct mp_s {
	struct ab_req_s *r;
	struct ab_mp_s mp;   /* multipart/form-data over body_read (e2b-multipart.c) */
	uint64_t max, total; /* total: body bytes as written (inflated) */
	bool gzip;           /* Content-Encoding: gzip */
	bool z_init, z_member_end;
	z_stream z;
	uint8_t *zin;
};

#define GZ_IN 65536

/* Inflated bytes of a gzip body (several members are one stream, as
 * gzip(1) reads them); 0 at its end. */
static ssize_t
gunzip_read (struct mp_s *m, void *buf, size_t cap, ab_error_t *err)
{
	uInt want = (uInt)(cap > GZ_IN ? GZ_IN : cap);
	int zr;

	if (!m->z_init) {
		if (inflateInit2 (&m->z, 16 + MAX_WBITS) != Z_OK)
			return ab_error (err, 0, AB_E_INTERNAL, "inflateInit2");
		m->z_init = true;
		m->zin = xmalloc (GZ_IN);
	}
	m->z.next_out = buf;
	m->z.avail_out = want;
	while (m->z.avail_out == want) {
		if (m->z.avail_in == 0) {
			ssize_t k = ab_http_io_body_read (m->r->io, m->zin, GZ_IN, err);
			if (k < 0)
				return -1;
			if (k == 0 && m->z_member_end)
				return 0;
			if (k == 0)
				return ab_error (err, 0, AB_E_INVALID, "the gzip body ends early");
			m->z.next_in = m->zin;
			m->z.avail_in = (uInt)k;
		}
		if (m->z_member_end) {
			inflateReset (&m->z);
			m->z_member_end = false;
		}
		zr = inflate (&m->z, Z_NO_FLUSH);
		if (zr == Z_STREAM_END)
			m->z_member_end = true;
		else if (zr != Z_OK && zr != Z_BUF_ERROR)
			return ab_error (err, 0, AB_E_INVALID, "a bad gzip body: %s",
			                 m->z.msg ? m->z.msg : "inflate failed");
	}
	return (ssize_t)(want - m->z.avail_out);
}

/* The next body bytes (inflated when gzip), counted against --max-upload. */
static ssize_t
body_read (void *ctx, void *buf, size_t cap, ab_error_t *err)
{
	struct mp_s *m = ctx;
	ssize_t n = m->gzip ? gunzip_read (m, buf, cap, err)
	                    : ab_http_io_body_read (m->r->io, buf, cap, err);

	if (n > 0 && m->max && (m->total += (uint64_t)n) > m->max)
		return ab_error (err, E2BIG, AB_E_LIMIT,
		                 "upload larger than %llu bytes%s (--max-upload)",
		                 (unsigned long long)m->max, m->gzip ? " once decompressed" : "");
	return n;
}

static void
mp_end (struct mp_s *m)
{
	if (m->z_init)
		inflateEnd (&m->z);
	free (m->zin);
	ab_mp_free (&m->mp);
}

/* ---- POST: writing ----------------------------------------------------------- */

static const char *
base_name (const char *p)
{
	const char *s = strrchr (p, '/');
	return s ? s + 1 : p;
}

#define METADATA_PREFIX "x-metadata-"

/* envd's X-Metadata-KEY: VALUE headers (>= 0.6.2) as KEY=VALUE, the
 * user.e2b.KEY xattrs of every file written; NULL without any. */
static char **
metadata_of (struct ab_req_s *r)
{
	const struct ab_http_head_s *h = &r->io->head;
	const size_t pl = sizeof METADATA_PREFIX - 1;
	char **v = NULL;

	for (unsigned i = 0; i < h->n_fields; i++) {
		const struct ab_http_field_s *f = &h->fields[i];
		if (f->name_len <= pl || strncasecmp (f->name, METADATA_PREFIX, pl) != 0)
			continue;
		cleanup_free char *kv = xasprintf ("%.*s=%.*s", (int)(f->name_len - pl),
		                                   f->name + pl, (int)f->value_len, f->value);
		ab_strv_push (&v, kv);
	}
	return v;
}

static int
write_one (struct ab_e2b_call_s *call, ab_agent_conn_t *c, const char *path, ab_agent_source_fn src,
           void *ctx, json_t *out, ab_error_t *err)
{
	cleanup_free char *parent = xstrdup (path);
	cleanup_strv char **md = metadata_of (call->r);
	char *slash = strrchr (parent, '/');
	uint64_t written;

	if (slash && slash != parent) {
		*slash = '\0';
		if (ab_agent_file_mkdir (c, parent, 0755, err) < 0)
			return -1;
	}
	if (ab_agent_file_write_meta (c, path, 0644, md, src, ctx, &written, err) < 0)
		return -1;
	json_array_append_new (out, json_pack ("{s:s, s:s, s:s}", "path", path, "name",
	                                       base_name (path), "type", "file"));
	return 0;
}

static int
multipart (struct ab_e2b_call_s *call, ab_agent_conn_t *c, const char *qpath, bool gzip,
           json_t *out, ab_error_t *err)
{
	struct mp_s mp = { .r = call->r, .gzip = gzip }, *m = &mp;
	size_t files = 0, ct_len;
	const char *ct = ab_http_io_field (call->r->io, "content-type", &ct_len);
	int more = 0, rc = 0;

	m->max = call->r->d->cfg->max_upload;
	m->mp.read = body_read;
	m->mp.ctx = m;
	if (ab_mp_begin (&m->mp, ct, ct ? ct_len : 0, err) < 0) {
		mp_end (m);
		return -1;
	}
	while (rc == 0) {
		cleanup_free char *fn = NULL, *path = NULL;
		bool is_file = false;

		if ((more = ab_mp_next_part (&m->mp, &fn, &is_file, err)) <= 0)
			break;
		if (!is_file)
			continue;
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
		rc = write_one (call, c, path, ab_mp_part_read, &m->mp, out, err);
	}
	if (rc == 0 && more < 0)
		rc = -1;
	mp_end (m);
	return rc;
}

static bool
is_ctype (struct ab_req_s *r, const char *want)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, "content-type", &len);

	return v && len >= strlen (want) && strncasecmp (v, want, strlen (want)) == 0;
}

/* Content-Encoding: none or identity (0), gzip (1), anything else (-1). */
static int
encoding (struct ab_req_s *r)
{
	size_t len;
	const char *enc = ab_http_io_field (r->io, "content-encoding", &len);

	if (!enc || (len == 8 && strncasecmp (enc, "identity", 8) == 0))
		return 0;
	if ((len == 4 && strncasecmp (enc, "gzip", 4) == 0)
	    || (len == 6 && strncasecmp (enc, "x-gzip", 6) == 0))
		return 1;
	return -1;
}

static void
files_post (struct ab_e2b_call_s *call, ab_agent_conn_t *c, const char *qpath)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *out = json_array ();
	int gzip = encoding (call->r);
	int rc;

	if (gzip < 0) {
		ab_e2b_api_fail (call->r, 415, "%s",
		                 "Content-Encoding: only gzip (or identity) is accepted");
		json_decref (out);
		return;
	}
	if (ab_req_continue (call->r) < 0) {
		json_decref (out);
		return;
	}
	if (is_ctype (call->r, "multipart/form-data"))
		rc = multipart (call, c, qpath, gzip == 1, out, &err);
	else if (!qpath)
		rc = ab_error (&err, 0, AB_E_INVALID, "an octet-stream upload needs ?path=");
	else {
		struct mp_s m = { .r = call->r,
			          .max = call->r->d->cfg->max_upload,
			          .gzip = gzip == 1 };
		cleanup_free char *path = ab_e2b_path (call, qpath);
		rc = write_one (call, c, path, body_read, &m, out, &err);
		mp_end (&m);
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
