/* Request heads for the credential proxy, once the relay core read and
 * parsed them (strictly, http-head.h): the checks in the order the contract fixes
 * (credential-proxy.h): configuration, token, path, upstream; then the
 * head sent upstream.  Every refusal is answered before a single byte
 * goes upstream. */
#include <string.h>

#include "net/credential-internal.h"
#include "base/hex.h"
#include "net/http-relay.h"

int
ab_cp_answer (struct ab_cp_conn_s *c, int status, const char *body)
{
	ab_cp_req_release (c);
	return ab_relay_answer (&c->r, status, body);
}

/* ---- pure helpers --------------------------------------------------------- */

/* Percent-decode one byte at s[*i] (advancing *i); -1 on a bad escape. */
static int
decode_at (const char *s, size_t len, size_t *i)
{
	int hi, lo;

	if (s[*i] != '%')
		return (unsigned char)s[(*i)++];
	if (*i + 2 >= len)
		return -1;
	hi = ab_hex_digit (s[*i + 1]);
	lo = ab_hex_digit (s[*i + 2]);
	if (hi < 0 || lo < 0)
		return -1;
	*i += 3;
	return hi * 16 + lo;
}

/* RFC 3986 5.2.4 removes "." and ".." segments; an upstream (or anything
 * between us and it) that decodes "%2e%2e" or "%2f" before doing so would
 * climb out of the baseUrl's path, so the check runs on the decoded path,
 * with '\' counted as a separator too (some servers treat it as one). */
static ab_cp_target_verdict
check_segments (const char *path, size_t len)
{
	size_t i = 0;
	size_t seg = 0;        /* characters in the current segment */
	bool only_dots = true; /* and all of them are dots */
	bool end = false;

	while (!end) {
		int ch;
		if (i < len) {
			ch = decode_at (path, len, &i);
		} else {
			ch = '/'; /* the last segment ends here */
			end = true;
		}
		if (ch <= 0)
			return AB_CP_TARGET_MALFORMED; /* bad escape or %00 */
		if (ch == '/' || ch == '\\') {
			if (only_dots && (seg == 1 || seg == 2))
				return AB_CP_TARGET_TRAVERSAL;
			seg = 0;
			only_dots = true;
			continue;
		}
		seg++;
		if (ch != '.')
			only_dots = false;
	}
	return AB_CP_TARGET_OK;
}

ab_cp_target_verdict
ab_cp_parse_target (const char *target, size_t len, struct ab_cp_target_s *t)
{
	const char *q = memchr (target, '?', len);
	size_t plen = q ? (size_t)(q - target) : len;
	const char *seg_end;
	size_t seg_len, o = 0;
	ab_cp_target_verdict v;

	memset (t, 0, sizeof *t);
	t->rest = t->query = "";
	if (len == 0 || target[0] != '/' || memchr (target, '#', len) != NULL)
		return AB_CP_TARGET_MALFORMED;
	v = check_segments (target, plen);
	if (v != AB_CP_TARGET_OK)
		return v;
	seg_end = memchr (target + 1, '/', plen - 1);
	seg_len = seg_end ? (size_t)(seg_end - target - 1) : plen - 1;
	for (size_t i = 1; i < 1 + seg_len;) {
		int ch = decode_at (target, 1 + seg_len, &i);
		if (ch < 0)
			return AB_CP_TARGET_MALFORMED;
		if (o >= AB_CRED_NAME_MAX) {
			o = 0; /* too long to be a name: matches nothing */
			break;
		}
		t->name[o++] = (char)ch;
	}
	t->name[o] = '\0';
	t->rest = target + 1 + seg_len;
	t->rest_len = plen - 1 - seg_len;
	if (q != NULL) {
		t->query = q;
		t->query_len = len - plen;
	}
	return AB_CP_TARGET_OK;
}

bool
ab_cp_bearer (const struct ab_http_head_s *h, const char **tok, size_t *len)
{
	const struct ab_http_field_s *auth = NULL;
	const char *v;
	size_t n, i = 6;

	for (unsigned k = 0; k < h->n_fields; k++) {
		if (!ab_http_token_eq (h->fields[k].name, h->fields[k].name_len, "authorization"))
			continue;
		if (auth != NULL)
			return false; /* two of them: which one would the next hop read? */
		auth = &h->fields[k];
	}
	if (auth == NULL)
		return false;
	v = auth->value;
	n = auth->value_len;
	/* RFC 9110 11.1: the auth-scheme is case-insensitive. */
	if (n < 8 || !ab_http_token_eq (v, 6, "bearer") || v[6] != ' ')
		return false;
	while (i < n && v[i] == ' ')
		i++;
	if (i == n)
		return false;
	*tok = v + i;
	*len = n - i;
	return true;
}

/* Whether the client's field f is dropped on the way upstream. */
static bool
dropped (const struct ab_http_field_s *f, const struct ab_cred_config_s *cfg,
         const struct ab_cred_upstream_s *u)
{
	if (f->flags & (AB_HTTP_F_HOP | AB_HTTP_F_HOST | AB_HTTP_F_FRAMING))
		return true;
	if (ab_http_token_eq (f->name, f->name_len, "authorization"))
		return true;
	for (size_t i = 0; i < u->n_strip; i++)
		if (f->name_len == strlen (u->strip[i])
		    && strncasecmp (f->name, u->strip[i], f->name_len) == 0)
			return true;
	for (size_t i = 0; i < u->n_inject; i++)
		if (f->name_len == strlen (u->inject[i].name)
		    && strncasecmp (f->name, u->inject[i].name, f->name_len) == 0)
			return true;
	/* The thread token is for us only: a client that also put it in
	 * another field (an SDK's x-api-key, say) must not leak it upstream.
	 * Runs after the token check passed, so its timing tells nothing. */
	return memmem (f->value, f->value_len, cfg->token, strlen (cfg->token)) != NULL;
}

void
ab_cp_build_request (struct ab_iobuf_s *b, const struct ab_http_head_s *h,
                     const struct ab_cred_config_s *cfg, const struct ab_cred_upstream_s *u,
                     const struct ab_cp_target_s *t, bool absolute, const char *proxy_auth)
{
	const char *base = u->url.path;
	bool empty = base[0] == '\0' && t->rest_len == 0;

	ab_iobuf_printf (b, "%.*s %s%s%s%.*s%s%.*s HTTP/1.1\r\n", (int)h->method_len, h->method,
	                 absolute ? "http://" : "", absolute ? u->host_field : "", base,
	                 (int)t->rest_len, t->rest, empty ? "/" : "", (int)t->query_len, t->query);
	ab_iobuf_printf (b, "Host: %s\r\n", u->host_field);
	for (unsigned i = 0; i < h->n_fields; i++) {
		const struct ab_http_field_s *f = &h->fields[i];
		if (!dropped (f, cfg, u))
			ab_http_append_field (b, f);
	}
	for (size_t i = 0; i < u->n_inject; i++)
		ab_iobuf_printf (b, "%s: %s\r\n", u->inject[i].name, u->inject[i].value);
	if (proxy_auth != NULL)
		ab_iobuf_printf (b, "Proxy-Authorization: %s\r\n", proxy_auth);
	/* Framing is regenerated from what the parser understood, never
	 * copied (request smuggling). */
	ab_http_append_framing (b, h->body, h->has_content_length, h->content_length);
	ab_iobuf_append (b, "\r\n", 2);
}

/* ---- the request hook ---------------------------------------------------- */

int
ab_cp_request (struct ab_relay_conn_s *rc, const struct ab_http_head_s *h, size_t head_len)
{
	struct ab_cp_conn_s *c = ab_cp_conn (rc);
	ab_cred_proxy_t *p = ab_cp_conn_proxy (c);
	struct ab_cp_target_s t;
	const char *tok;
	size_t tok_len;
	int r;

	if (p->config == NULL)
		return ab_cp_answer (c, 503, "credential configuration is not available yet\n");
	if (!ab_cp_bearer (h, &tok, &tok_len) || !ab_cred_token_ok (p->config, tok, tok_len))
		return ab_cp_answer (c, 401, "unauthorized\n");
	switch (ab_cp_parse_target (h->target, h->target_len, &t)) {
	case AB_CP_TARGET_OK: break;
	case AB_CP_TARGET_TRAVERSAL:
		return ab_cp_answer (c, 400, "path traversal is not allowed\n");
	case AB_CP_TARGET_MALFORMED: return ab_cp_answer (c, 400, "invalid request target\n");
	}
	c->ups = ab_cred_config_find (p->config, t.name, strlen (t.name));
	if (c->ups == NULL)
		return ab_cp_answer (c, 404, "unknown upstream\n");
	c->cfg = ab_cred_config_ref (p->config);
	rc->m.is_head = ab_http_token_eq (h->method, h->method_len, "head");
	r = ab_cp_forward_start (c, h, &t);
	/* The head's bytes are not needed any more (the fields pointing into
	 * cin were copied into uout). */
	if (rc->state != AB_RELAY_ST_CLOSING)
		ab_iobuf_consume (&rc->cin, head_len);
	return r;
}
