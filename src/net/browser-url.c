/* The URL policy of the browser's navigations: see browser-url.h.  The
 * egress proxy stays the real wall: every byte the browser fetches goes
 * through it and meets the same policy there, after its own resolution
 * (the answers may differ from ours; both are checked). */
#include "net/browser-url.h"

#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/resolve.h"
#include "policy/hostname.h"
#include "policy/netaddr.h"

/* What Chromium would take as the end of the authority: it reads '\' as
 * '/' in http(s) URLs (the URL Standard's "special" schemes). */
#define AUTHORITY_END "/\\?#"

static int
check_scheme (const char *url, size_t *rest, bool *https, ab_error_t *err)
{
	size_t n =
	        strspn (url, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789+-.");

	if (n == 0 || url[n] != ':')
		return ab_error (err, 0, AB_E_INVALID, "not an absolute URL");
	if (n == 4 && strncasecmp (url, "http", 4) == 0)
		*https = false;
	else if (n == 5 && strncasecmp (url, "https", 5) == 0)
		*https = true;
	else
		return ab_error (err, 0, AB_E_DENIED, "blocked URL scheme: %.*s",
		                 (int)(n > 32 ? 32 : n), url);
	if (strncmp (url + n + 1, "//", 2) != 0)
		return ab_error (err, 0, AB_E_INVALID, "URL needs //host after the scheme");
	*rest = n + 3;
	return 0;
}

/* Control characters, spaces and non-ASCII anywhere: Chromium strips
 * tabs and newlines inside a URL, so "127.0.0.\t1" would be read as
 * another host than the one checked here. */
static bool
clean_text (const char *url)
{
	for (const unsigned char *p = (const unsigned char *)url; *p; p++)
		if (*p <= 0x20 || *p >= 0x7f)
			return false;
	return true;
}

/* A sandbox without network reaches only its own loopback. */
static int
check_no_network (const struct ab_hostport_s *hp, ab_error_t *err)
{
	if (hp->kind == AB_HOST_NAME ? strcmp (hp->host, "localhost") == 0
	                             : ab_addr_classify (&hp->addr) == AB_ADDR_LOOPBACK)
		return 0;
	return ab_error (err, 0, AB_E_DENIED,
	                 "the sandbox has no network (only its own loopback): %s", hp->host);
}

/* Every answer of the name; one denied answer denies the URL. */
static int
check_answers (const struct ab_egress_policy_s *policy, const char *name, ab_error_t *err)
{
	struct ab_resolve_result_s res;
	ab_error_t slow = AB_ERROR_INIT;
	struct ab_egress_verdict_s v;
	int rc = 0;

	if (ab_resolve_sync (name, AB_BROWSER_URL_RESOLVE_MS, &res, &slow) < 0)
		return 0;
	for (size_t i = 0; i < res.n && rc == 0; i++)
		if (!ab_egress_check_ab_addr (policy, &res.addrs[i], &v))
			rc = ab_error (err, 0, AB_E_DENIED, "%s resolves to %s", name, v.reason);
	free (res.addrs);
	return rc;
}

int
ab_browser_url_check (const struct ab_egress_policy_s *policy, const char *url, bool resolve,
                      ab_error_t *err)
{
	struct ab_hostport_s hp;
	struct ab_egress_verdict_s v;
	cleanup_free char *auth = NULL;
	size_t start = 0, len;
	bool https = false;

	if (!url || !*url)
		return ab_error (err, 0, AB_E_INVALID, "'url' is required");
	if (strlen (url) > 8192)
		return ab_error (err, 0, AB_E_INVALID, "URL too long");
	if (!clean_text (url))
		return ab_error (err, 0, AB_E_DENIED,
		                 "URL with spaces, control or non-ASCII characters");
	if (check_scheme (url, &start, &https, err) < 0)
		return -1;
	len = strcspn (url + start, AUTHORITY_END);
	auth = xstrndup (url + start, len);
	if (strchr (auth, '@'))
		return ab_error (err, 0, AB_E_DENIED, "credentials in URLs are refused");
	if (ab_hostport_parse (auth, https ? 443 : 80, &hp, err) < 0)
		return ab_error_wrap (err, "URL host");
	if (!policy)
		return check_no_network (&hp, err);
	if (!ab_egress_check_host (policy, &hp, &v))
		return ab_error (err, 0, AB_E_DENIED, "%s", v.reason);
	if (resolve && hp.kind == AB_HOST_NAME && ab_egress_policy_resolve_names (policy))
		return check_answers (policy, hp.host, err);
	return 0;
}
