/* The registry client (OCI distribution v2 API) on libcurl: the /v2/
 * ping, anonymous and bearer-token auth from WWW-Authenticate (Docker
 * Hub, GHCR), basic auth from ~/.docker/config.json or
 * $REGISTRY_AUTH_FILE, manifests and indexes, blobs streamed into the
 * store verified (image/store.h), resumed with Range after an
 * interruption.  TLS is verified against the system roots plus --ca-file
 * (or $SSL_CERT_FILE); plain HTTP only for --insecure-registry hosts. */
#include <curl/curl.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/xalloc.h"
#include "image/image.h"
#include "image/ref.h"
#include "image/store.h"

#define MAX_TOKEN_BODY (1u << 20)

struct reg_s {
	const struct ab_store_s *st;
	const struct ab_image_pull_opts_s *o;
	struct ab_image_ref_s *ref;
	char *base;  /* https://host[:port] */
	char *auth;  /* "Authorization: ..." or NULL */
	char *basic; /* base64(user:pass) from the auth file, or NULL */
	bool insecure;
};

struct body_s {
	char *p;
	size_t n, max;
	bool over;
};

static size_t
body_cb (char *p, size_t sz, size_t n, void *u)
{
	struct body_s *b = u;
	size_t len = sz * n;

	if (b->n + len > b->max) {
		b->over = true;
		return 0;
	}
	b->p = xrealloc (b->p, b->n + len + 1);
	memcpy (b->p + b->n, p, len);
	b->n += len;
	b->p[b->n] = '\0';
	return len;
}

struct head_s {
	char *www_auth;
	char *content_type;
};

static size_t
head_cb (char *p, size_t sz, size_t n, void *u)
{
	struct head_s *h = u;
	size_t len = sz * n;
	char **slot = NULL;
	size_t k = 0;

	if (len > 17 && strncasecmp (p, "WWW-Authenticate:", 17) == 0)
		slot = &h->www_auth, k = 17;
	else if (len > 13 && strncasecmp (p, "Content-Type:", 13) == 0)
		slot = &h->content_type, k = 13;
	if (slot) {
		while (k < len && (p[k] == ' ' || p[k] == '\t'))
			k++;
		size_t e = len;
		while (e > k && (p[e - 1] == '\r' || p[e - 1] == '\n' || p[e - 1] == ' '))
			e--;
		free (*slot);
		*slot = xstrndup (p + k, e - k);
	}
	return len;
}

static void
head_free (struct head_s *h)
{
	free (h->www_auth);
	free (h->content_type);
	memset (h, 0, sizeof *h);
}

static CURL *
new_handle (struct reg_s *r, const char *url)
{
	CURL *c = curl_easy_init ();
	const char *ca = r->o->ca_file ? r->o->ca_file : getenv ("SSL_CERT_FILE");

	if (!c)
		abort ();
	curl_easy_setopt (c, CURLOPT_URL, url);
	curl_easy_setopt (c, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt (c, CURLOPT_CONNECTTIMEOUT, 30L);
	/* A stalled transfer (under 1 KiB/s for 60 s) fails; a retry resumes. */
	curl_easy_setopt (c, CURLOPT_LOW_SPEED_LIMIT, 1024L);
	curl_easy_setopt (c, CURLOPT_LOW_SPEED_TIME, 60L);
	/* Blob GETs redirect to storage (S3, a CDN).  libcurl (>= 7.58)
	 * sends no Authorization header to another host on a redirect. */
	curl_easy_setopt (c, CURLOPT_FOLLOWLOCATION, 1L);
	curl_easy_setopt (c, CURLOPT_MAXREDIRS, 5L);
	curl_easy_setopt (c, CURLOPT_PROTOCOLS_STR, r->insecure ? "http,https" : "https");
	curl_easy_setopt (c, CURLOPT_REDIR_PROTOCOLS_STR, r->insecure ? "http,https" : "https");
	curl_easy_setopt (c, CURLOPT_USERAGENT, "agentbox");
	if (ca) {
		/* The system store and the named CA both. */
		curl_easy_setopt (c, CURLOPT_CAINFO, ca);
		curl_easy_setopt (c, CURLOPT_CAPATH, "/etc/ssl/certs");
	}
	return c;
}

/* A small GET (manifests, tokens, the ping); *status the HTTP code. */
static int
get_small (struct reg_s *r, const char *url, const char *accept, bool with_auth, struct body_s *b,
           struct head_s *h, long *status, ab_error_t *err)
{
	struct curl_slist *hl = NULL;
	CURL *c = new_handle (r, url);
	cleanup_free char *acc = accept ? xasprintf ("Accept: %s", accept) : NULL;
	CURLcode cc;

	if (acc)
		hl = curl_slist_append (hl, acc);
	if (with_auth && r->auth)
		hl = curl_slist_append (hl, r->auth);
	curl_easy_setopt (c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, body_cb);
	curl_easy_setopt (c, CURLOPT_WRITEDATA, b);
	curl_easy_setopt (c, CURLOPT_HEADERFUNCTION, head_cb);
	curl_easy_setopt (c, CURLOPT_HEADERDATA, h);
	cc = curl_easy_perform (c);
	curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, status);
	curl_easy_cleanup (c);
	curl_slist_free_all (hl);
	if (b->over)
		return ab_error (err, 0, AB_E_LIMIT, "%s: answer over %zu bytes", url, b->max);
	if (cc != CURLE_OK)
		return ab_error (err, 0, AB_E_SYSTEM, "%s: %s", url, curl_easy_strerror (cc));
	return 0;
}

/* key="value" from a challenge's parameters. */
static char *
challenge_param (const char *ch, const char *key)
{
	size_t kl = strlen (key);
	for (const char *p = ch; (p = strcasestr (p, key)); p += kl) {
		if ((p != ch && p[-1] != ' ' && p[-1] != ',') || p[kl] != '=')
			continue;
		p += kl + 1;
		if (*p == '"') {
			const char *e = strchr (p + 1, '"');
			return e ? xstrndup (p + 1, (size_t)(e - p - 1)) : NULL;
		}
		return xstrndup (p, strcspn (p, ", "));
	}
	return NULL;
}

static void
load_basic (struct reg_s *r)
{
	const char *f = getenv ("REGISTRY_AUTH_FILE"), *home = getenv ("HOME");
	cleanup_free char *def = home ? xasprintf ("%s/.docker/config.json", home) : NULL;
	const char *host = r->ref->registry;
	json_t *j = json_load_file (f ? f : (def ? def : ""), 0, NULL), *auths, *e;

	auths = json_object_get (j, "auths");
	e = json_object_get (auths, host);
	if (!e && strcmp (host, "docker.io") == 0)
		e = json_object_get (auths, "https://index.docker.io/v1/");
	if (json_is_string (json_object_get (e, "auth")))
		r->basic = xstrdup (json_string_value (json_object_get (e, "auth")));
	json_decref (j);
}

static int
fetch_token (struct reg_s *r, const char *ch, ab_error_t *err)
{
	cleanup_free char *realm = challenge_param (ch, "realm");
	cleanup_free char *service = challenge_param (ch, "service");
	cleanup_free char *scope = xasprintf ("repository:%s:pull", r->ref->repository);
	cleanup_free char *url = NULL, *esc_s = NULL, *esc_sc = NULL;
	struct body_s b = { .max = MAX_TOKEN_BODY };
	struct head_s h = { 0 };
	CURL *tmp = curl_easy_init ();
	long status = 0;
	json_t *j;
	const char *tok;
	int rc;

	if (!realm || (strncmp (realm, "https://", 8) != 0 && !r->insecure)) {
		curl_easy_cleanup (tmp);
		return ab_error (err, 0, AB_E_DENIED, "bearer challenge without an https realm");
	}
	esc_s = service ? curl_easy_escape (tmp, service, 0) : NULL;
	esc_sc = curl_easy_escape (tmp, scope, 0);
	curl_easy_cleanup (tmp);
	url = xasprintf ("%s%sscope=%s%s%s", realm, strchr (realm, '?') ? "&" : "?", esc_sc,
	                 esc_s ? "&service=" : "", esc_s ? esc_s : "");
	free (r->auth);
	r->auth = r->basic ? xasprintf ("Authorization: Basic %s", r->basic) : NULL;
	rc = get_small (r, url, NULL, true, &b, &h, &status, err);
	head_free (&h);
	if (rc < 0 || status != 200) {
		free (b.p);
		free (r->auth);
		r->auth = NULL;
		return rc < 0 ? rc
		              : ab_error (err, 0, AB_E_DENIED, "token service %s: HTTP %ld", realm,
		                          status);
	}
	j = json_loadb (b.p, b.n, 0, NULL);
	free (b.p);
	tok = json_string_value (json_object_get (j, "token"));
	if (!tok)
		tok = json_string_value (json_object_get (j, "access_token"));
	free (r->auth);
	r->auth = tok ? xasprintf ("Authorization: Bearer %s", tok) : NULL;
	json_decref (j);
	return tok ? 0 : ab_error (err, 0, AB_E_DENIED, "token service answered no token");
}

/* GET /v2/: which auth the registry wants. */
static int
ping (struct reg_s *r, ab_error_t *err)
{
	cleanup_free char *url = xasprintf ("%s/v2/", r->base);
	struct body_s b = { .max = 1 << 16 };
	struct head_s h = { 0 };
	long status = 0;
	int rc = get_small (r, url, NULL, false, &b, &h, &status, err);

	free (b.p);
	if (rc == 0 && status == 401 && h.www_auth) {
		if (strncasecmp (h.www_auth, "Bearer", 6) == 0)
			rc = fetch_token (r, h.www_auth, err);
		else if (strncasecmp (h.www_auth, "Basic", 5) == 0 && r->basic)
			r->auth = xasprintf ("Authorization: Basic %s", r->basic);
		else
			rc = ab_error (
			        err, 0, AB_E_DENIED,
			        "%s wants credentials (docker login, or $REGISTRY_AUTH_FILE)",
			        r->ref->registry);
	} else if (rc == 0 && status != 200 && status != 401)
		rc = ab_error (err, 0, AB_E_SYSTEM, "%s: HTTP %ld", url, status);
	head_free (&h);
	return rc;
}

static const char accept_manifests[] = "application/vnd.oci.image.index.v1+json, "
                                       "application/vnd.docker.distribution.manifest.list.v2+json, "
                                       "application/vnd.oci.image.manifest.v1+json, "
                                       "application/vnd.docker.distribution.manifest.v2+json";

/* A manifest (or index) by tag or digest, verified when by digest, and
 * stored; *digest_out its digest, *body_out its JSON. */
static int
get_manifest (struct reg_s *r, const char *what, char **digest_out, json_t **body_out,
              ab_error_t *err)
{
	cleanup_free char *url =
	        xasprintf ("%s/v2/%s/manifests/%s", r->base, r->ref->repository, what);
	struct body_s b = { .max = AB_IMAGE_MAX_MANIFEST };
	struct head_s h = { 0 };
	long status = 0;
	cleanup_free char *d = NULL;
	int rc = get_small (r, url, accept_manifests, true, &b, &h, &status, err);

	head_free (&h);
	if (rc == 0 && status != 200)
		rc = ab_error (err, 0,
		               status == 404   ? AB_E_NOT_FOUND
		               : status == 401 ? AB_E_DENIED
		                               : AB_E_SYSTEM,
		               "manifest %s/%s:%s: HTTP %ld", r->ref->registry, r->ref->repository,
		               what, status);
	if (rc == 0) {
		d = ab_sha256_of (b.p ? b.p : "", b.n);
		if (ab_image_digest_valid (what) && strcmp (d, what) != 0)
			rc = ab_error (err, 0, AB_E_INVALID,
			               "manifest %s does not match its digest", what);
	}
	if (rc == 0 && !(*body_out = json_loadb (b.p ? b.p : "", b.n, 0, NULL)))
		rc = ab_error (err, 0, AB_E_INVALID, "manifest %s is not JSON", what);
	if (rc == 0 && ab_store_put_bytes (r->st, b.p, b.n, NULL, err) < 0)
		rc = -1;
	free (b.p);
	if (rc == 0)
		*digest_out = steal_pointer (&d);
	return rc;
}

struct blob_xfer_s {
	struct ab_blob_writer_s *w;
	ab_error_t *err;
	bool failed, checked;
	CURL *c;
	uint64_t offset;
};

static size_t
blob_cb (char *p, size_t sz, size_t n, void *u)
{
	struct blob_xfer_s *x = u;
	size_t len = sz * n;

	if (!x->checked) {
		long status = 0;
		x->checked = true;
		curl_easy_getinfo (x->c, CURLINFO_RESPONSE_CODE, &status);
		/* A 200 to a Range request is the whole blob again. */
		if (status == 200 && x->offset && ab_blob_writer_restart (x->w, x->err) < 0) {
			x->failed = true;
			return 0;
		}
	}
	if (ab_blob_writer_write (x->w, p, len, x->err) < 0) {
		x->failed = true;
		return 0;
	}
	return len;
}

struct progress_s {
	const char *what;
	int64_t total;
	uint64_t base;
};

static int
progress_cb (void *u, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ult, curl_off_t uln)
{
	struct progress_s *p = u;
	uint64_t now = p->base + (uint64_t)dlnow;
	int64_t total = p->total > 0 ? p->total : (int64_t)dltotal;

	(void)ult;
	(void)uln;
	if (total > 0)
		fprintf (stderr, "\r%.19s  %6.1f / %6.1f MiB  %3d%%", p->what, now / 1048576.0,
		         total / 1048576.0, (int)(now * 100 / (uint64_t)total));
	return 0;
}

static int
get_blob (struct reg_s *r, const char *digest, int64_t size, ab_error_t *err)
{
	cleanup_free char *url =
	        xasprintf ("%s/v2/%s/blobs/%s", r->base, r->ref->repository, digest);
	cleanup_free char *lockname = xasprintf ("blob-%s", digest + 7);
	cleanup_free char *range = NULL;
	cleanup_close int lock = -1;
	struct ab_blob_writer_s w;
	struct blob_xfer_s x = { .w = &w, .err = err };
	struct progress_s pg = { .what = digest + 7, .total = size };
	struct curl_slist *hl = NULL;
	long status = 0;
	CURLcode cc;
	CURL *c;

	if (ab_store_has_blob (r->st, digest))
		return 0;
	/* One download per blob: a concurrent pull waits here, then finds it. */
	lock = ab_store_lock (r->st, lockname, err);
	if (lock < 0)
		return -1;
	if (ab_store_has_blob (r->st, digest))
		return 0;
	if (ab_blob_writer_open (r->st, digest, size, true, &w, err) < 0)
		return -1;
	x.offset = pg.base = w.written;
	c = x.c = new_handle (r, url);
	if (r->auth)
		hl = curl_slist_append (hl, r->auth);
	if (w.written) {
		range = xasprintf ("%llu-", (unsigned long long)w.written);
		curl_easy_setopt (c, CURLOPT_RANGE, range);
	}
	curl_easy_setopt (c, CURLOPT_HTTPHEADER, hl);
	curl_easy_setopt (c, CURLOPT_WRITEFUNCTION, blob_cb);
	curl_easy_setopt (c, CURLOPT_WRITEDATA, &x);
	curl_easy_setopt (c, CURLOPT_FAILONERROR, 1L);
	curl_easy_setopt (c, CURLOPT_BUFFERSIZE, 256L * 1024);
	if (!r->o->quiet && isatty (2)) {
		curl_easy_setopt (c, CURLOPT_NOPROGRESS, 0L);
		curl_easy_setopt (c, CURLOPT_XFERINFOFUNCTION, progress_cb);
		curl_easy_setopt (c, CURLOPT_XFERINFODATA, &pg);
	}
	cc = curl_easy_perform (c);
	curl_easy_getinfo (c, CURLINFO_RESPONSE_CODE, &status);
	curl_easy_cleanup (c);
	curl_slist_free_all (hl);
	if (!r->o->quiet && isatty (2))
		fputc ('\n', stderr);
	if (x.failed) {
		ab_blob_writer_abort (&w, false);
		return ab_error_wrap (err, "blob %s", digest);
	}
	if (cc == CURLE_HTTP_RETURNED_ERROR && status == 416) {
		/* A partial file longer than the blob: start over next time. */
		ab_blob_writer_abort (&w, false);
		return ab_error (err, 0, AB_E_SYSTEM, "blob %s: HTTP 416", digest);
	}
	if (cc != CURLE_OK) {
		/* Kept: the next pull resumes after what arrived. */
		ab_blob_writer_abort (&w, true);
		return ab_error (err, 0, AB_E_SYSTEM, "blob %s: %s (HTTP %ld)", digest,
		                 curl_easy_strerror (cc), status);
	}
	return ab_blob_writer_commit (r->st, &w, NULL, err);
}

static bool
is_insecure (const struct ab_image_pull_opts_s *o, const char *host)
{
	const char *env = getenv ("AGENTBOX_INSECURE_REGISTRIES");

	for (size_t i = 0; o->insecure && o->insecure[i]; i++)
		if (strcmp (o->insecure[i], host) == 0)
			return true;
	if (env) {
		cleanup_free char *copy = xstrdup (env);
		char *save = NULL;
		for (char *t = strtok_r (copy, ",", &save); t; t = strtok_r (NULL, ",", &save))
			if (strcmp (t, host) == 0)
				return true;
	}
	return false;
}

/* The image manifest for the platform: through an index when there is one. */
static int
resolve_manifest (struct reg_s *r, char **digest, json_t **m, ab_error_t *err)
{
	bool idx;

	if (get_manifest (r, r->ref->digest ? r->ref->digest : r->ref->tag, digest, m, err) < 0)
		return -1;
	ab_manifest_media_type (*m, &idx);
	if (idx) {
		cleanup_free char *pick = ab_index_pick (*m, r->o->platform, err);
		json_decref (*m);
		*m = NULL;
		free (*digest);
		*digest = NULL;
		if (!pick || get_manifest (r, pick, digest, m, err) < 0)
			return -1;
		ab_manifest_media_type (*m, &idx);
		if (idx)
			return ab_error (err, 0, AB_E_INVALID, "an index inside an index");
	}
	return 0;
}

static int
fetch_blobs (struct reg_s *r, json_t *m, ab_error_t *err)
{
	json_t *cfg = json_object_get (m, "config"), *ls = json_object_get (m, "layers"), *l;
	size_t i;

	if (!json_is_object (cfg) || !json_is_array (ls))
		return ab_error (err, 0, AB_E_INVALID, "not an image manifest");
	if (get_blob (r, json_string_value (json_object_get (cfg, "digest")),
	              json_integer_value (json_object_get (cfg, "size")), err)
	    < 0)
		return -1;
	json_array_foreach (ls, i, l)
	{
		const char *d = json_string_value (json_object_get (l, "digest"));
		json_t *sz = json_object_get (l, "size");
		if (!ab_image_digest_valid (d))
			return ab_error (err, 0, AB_E_INVALID, "layer %zu: bad digest", i);
		if (get_blob (r, d, json_is_integer (sz) ? json_integer_value (sz) : -1, err) < 0)
			return -1;
	}
	return 0;
}

int ab_image_pull_into (const struct ab_store_s *st, const char *refstr,
                        const struct ab_image_pull_opts_s *o, char **digest_out, ab_error_t *err);
int
ab_image_pull_into (const struct ab_store_s *st, const char *refstr,
                    const struct ab_image_pull_opts_s *o, char **digest_out, ab_error_t *err)
{
	struct ab_image_ref_s ref;
	struct reg_s r = { .st = st, .o = o, .ref = &ref };
	cleanup_free char *digest = NULL, *name = NULL;
	json_t *m = NULL;
	int rc;

	if (ab_image_ref_parse (refstr, &ref, err) < 0)
		return -1;
	name = ab_image_ref_name (&ref);
	r.insecure = is_insecure (o, ref.registry);
	r.base = xasprintf ("%s://%s", r.insecure ? "http" : "https", ab_image_ref_api_host (&ref));
	curl_global_init (CURL_GLOBAL_DEFAULT);
	load_basic (&r);
	rc = ping (&r, err);
	if (rc == 0)
		rc = resolve_manifest (&r, &digest, &m, err);
	if (rc == 0)
		rc = fetch_blobs (&r, m, err);
	if (rc == 0) {
		const char *names[] = { name, NULL };
		rc = ab_store_register (st, digest, names, err);
	}
	json_decref (m);
	free (r.base);
	free (r.auth);
	free (r.basic);
	ab_image_ref_free (&ref);
	if (rc < 0)
		return ab_error_wrap (err, "pull %s", refstr);
	if (digest_out)
		*digest_out = steal_pointer (&digest);
	return 0;
}
