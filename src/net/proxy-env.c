/* Proxy selection from the environment: see proxy-env.h. */
#include "net/proxy-env.h"

#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "base/hex.h"

/* In order: the first non-empty one wins (curl's and Go's order). */
static const char *const https_vars[] = { "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy" };
static const char *const http_vars[] = { "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy" };
static const char *const no_proxy_vars[] = { "NO_PROXY", "no_proxy" };

#define USERINFO_MAX 255

static const char *
env_getenv (const char *name, void *arg)
{
	return getenv (name);
}

static char *
first_set (const char *const *names, size_t n, ab_env_lookup_fn lookup, void *arg)
{
	for (size_t i = 0; i < n; i++) {
		const char *v = lookup (names[i], arg);
		if (v != NULL && v[0] != '\0')
			return xstrdup (v);
	}
	return NULL;
}

void
ab_proxy_env_load (struct ab_proxy_env_s *pe, ab_env_lookup_fn lookup, void *arg)
{
	if (lookup == NULL)
		lookup = env_getenv;
	pe->https_proxy = first_set (https_vars, 4, lookup, arg);
	pe->http_proxy = first_set (http_vars, 4, lookup, arg);
	pe->no_proxy = first_set (no_proxy_vars, 2, lookup, arg);
}

void
ab_proxy_env_clear (struct ab_proxy_env_s *pe)
{
	free (pe->https_proxy);
	free (pe->http_proxy);
	free (pe->no_proxy);
	pe->https_proxy = pe->http_proxy = pe->no_proxy = NULL;
}

/* RFC 3986 2.1 percent-decoding of [s, s+len) into out (NUL-terminated);
 * false on a bad escape, a decoded NUL or no room. */
static bool
pct_decode (const char *s, size_t len, char *out, size_t out_len)
{
	size_t o = 0;

	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		if (c == '%') {
			int hi, lo;
			if (i + 2 >= len)
				return false;
			hi = ab_hex_digit (s[i + 1]);
			lo = ab_hex_digit (s[i + 2]);
			if (hi < 0 || lo < 0 || (hi == 0 && lo == 0))
				return false;
			c = (char)(hi * 16 + lo);
			i += 2;
		}
		if (o + 1 >= out_len)
			return false;
		out[o++] = c;
	}
	out[o] = '\0';
	return true;
}

/* "user[:password]" -> "Basic base64(user:password)" (RFC 7617). */
static int
basic_auth (const char *ui, size_t len, struct ab_proxy_s *out, ab_error_t *err)
{
	char plain[USERINFO_MAX + 1];
	const char *colon = memchr (ui, ':', len);
	size_t ulen = colon ? (size_t)(colon - ui) : len;
	size_t n;

	if (!pct_decode (ui, ulen, plain, sizeof plain))
		return ab_error (err, 0, AB_E_INVALID, "proxy URL: invalid user name");
	n = strlen (plain);
	if (colon != NULL) {
		if (n + 1 >= sizeof plain)
			return ab_error (err, 0, AB_E_INVALID, "proxy URL: credentials too long");
		plain[n++] = ':';
		if (!pct_decode (colon + 1, len - ulen - 1, plain + n, sizeof plain - n))
			return ab_error (err, 0, AB_E_INVALID, "proxy URL: invalid password");
		n += strlen (plain + n);
	} else {
		plain[n++] = ':';
		plain[n] = '\0';
	}
	memcpy (out->auth, "Basic ", 6);
	/* 4 * ceil(255 / 3) = 340 characters, well within auth[]. */
	EVP_EncodeBlock ((unsigned char *)out->auth + 6, (const unsigned char *)plain, (int)n);
	OPENSSL_cleanse (plain, sizeof plain);
	return 0;
}

int
ab_proxy_url_parse (const char *url, struct ab_proxy_s *out, ab_error_t *err)
{
	const char *p = url;
	const char *sep = strstr (url, "://");
	const char *auth_end;
	const char *at;
	char authority[AB_HOST_MAX + 16];
	size_t alen;

	memset (out, 0, sizeof *out);
	if (sep != NULL) {
		if ((size_t)(sep - url) != 4 || strncasecmp (url, "http", 4) != 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "proxy URL: only http:// proxies are supported");
		p = sep + 3;
	}
	auth_end = p + strcspn (p, "/?#");
	if (*auth_end != '\0' && strspn (auth_end, "/") != strlen (auth_end))
		return ab_error (err, 0, AB_E_INVALID, "proxy URL: a path is not allowed");
	at = memrchr (p, '@', (size_t)(auth_end - p));
	if (at != NULL) {
		if (basic_auth (p, (size_t)(at - p), out, err) < 0)
			return -1;
		p = at + 1;
	}
	alen = (size_t)(auth_end - p);
	if (alen == 0 || alen >= sizeof authority)
		return ab_error (err, 0, AB_E_INVALID, "proxy URL: invalid host");
	memcpy (authority, p, alen);
	authority[alen] = '\0';
	if (ab_hostport_parse (authority, 80, &out->hp, err) < 0)
		return ab_error_wrap (err, "proxy URL");
	if (out->hp.port == 0)
		return ab_error (err, 0, AB_E_INVALID, "proxy URL: invalid port");
	return 0;
}

/* ":port" text (without the colon) names this port. */
static bool
port_is (const char *s, size_t n, uint16_t port)
{
	unsigned v = 0;

	if (n == 0 || n > 5)
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	return v == port;
}

/* Cut an entry into host and optional port: "[v6]:p", "[v6]", "host:p",
 * "host", and a bare IPv6 literal (more than one colon: no port).  Returns
 * false when the port is present and does not match. */
static bool
entry_host (const char *e, size_t len, uint16_t port, const char **hs, size_t *hl)
{
	const char *close;
	const char *colon = memchr (e, ':', len);

	*hs = e;
	*hl = len;
	if (e[0] == '[' && (close = memchr (e, ']', len)) != NULL) {
		size_t rest = len - (size_t)(close + 1 - e);
		*hs = e + 1;
		*hl = (size_t)(close - e) - 1;
		if (rest == 0)
			return true;
		return close[1] == ':' && port_is (close + 2, rest - 1, port);
	}
	if (colon != NULL && colon == memrchr (e, ':', len)) {
		*hl = (size_t)(colon - e);
		return port_is (colon + 1, len - *hl - 1, port);
	}
	return true;
}

/* One NO_PROXY entry, already cut out of the list and non-empty. */
static bool
entry_matches (const char *e, size_t len, const char *host, uint16_t port)
{
	struct ab_hostport_s eh, th;
	ab_error_t ignored = AB_ERROR_INIT;
	const char *hs;
	size_t hl, tl;

	if (len == 1 && e[0] == '*')
		return true;
	if (!entry_host (e, len, port, &hs, &hl))
		return false;
	/* ".example.com" and "*.example.com" mean the same as "example.com". */
	if (hl >= 2 && hs[0] == '*' && hs[1] == '.') {
		hs += 2;
		hl -= 2;
	} else if (hl >= 1 && hs[0] == '.') {
		hs++;
		hl--;
	}
	if (hl > 0 && hs[hl - 1] == '.')
		hl--;
	if (hl == 0 || ab_host_normalise (hs, hl, &eh, &ignored) < 0)
		return false;
	if (eh.kind != AB_HOST_NAME) {
		/* An address matches only itself, whatever its spelling. */
		if (ab_host_normalise (host, strlen (host), &th, &ignored) < 0
		    || th.kind == AB_HOST_NAME)
			return false;
		return ab_addr_equal (&eh.addr, &th.addr);
	}
	hl = strlen (eh.host);
	tl = strlen (host);
	if (tl == hl)
		return strcmp (host, eh.host) == 0;
	return tl > hl && host[tl - hl - 1] == '.' && strcmp (host + tl - hl, eh.host) == 0;
}

bool
ab_no_proxy_match (const char *no_proxy, const char *host, uint16_t port)
{
	const char *p = no_proxy;

	if (p == NULL)
		return false;
	while (*p) {
		size_t n;
		p += strspn (p, ", \t");
		n = strcspn (p, ", \t");
		if (n > 0 && entry_matches (p, n, host, port))
			return true;
		p += n;
	}
	return false;
}

int
ab_proxy_select (const struct ab_proxy_env_s *pe, bool tls, const struct ab_hostport_s *target,
                 struct ab_proxy_s *out, ab_error_t *err)
{
	const char *url = tls ? pe->https_proxy : pe->http_proxy;

	if (url == NULL || ab_no_proxy_match (pe->no_proxy, target->host, target->port))
		return 0;
	if (ab_proxy_url_parse (url, out, err) < 0)
		return ab_error_wrap (err, "%s", tls ? "HTTPS_PROXY" : "HTTP_PROXY");
	return 1;
}
