/* Outbound proxy selection from the environment, the way curl, Go and the
 * Node tooling that operators already configure read it:
 *
 *   https targets  first non-empty of HTTPS_PROXY, https_proxy, ALL_PROXY, all_proxy
 *   http targets   first non-empty of HTTP_PROXY, http_proxy, ALL_PROXY, all_proxy
 *   bypass         NO_PROXY (else no_proxy): entries split on commas and
 *                  spaces; "*" bypasses every host; ".example.com",
 *                  "*.example.com" and "example.com" all match the domain
 *                  and its subdomains; an optional ":port" must match;
 *                  brackets and one trailing dot are stripped; an IP
 *                  literal entry matches that address only.
 *
 * Only http:// proxies are understood (a value without a scheme is taken
 * as http://); an https target goes through them with CONNECT and TLS
 * inside the tunnel, an http target as an absolute-URI request.  Userinfo
 * in the proxy URL becomes "Proxy-Authorization: Basic ...".
 *
 * Pure code: the environment is read once into a snapshot, through a
 * lookup function the tests replace. */
#ifndef AB_NET_PROXY_ENV_H
#define AB_NET_PROXY_ENV_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "policy/hostname.h"

struct ab_proxy_env_s {
	char *https_proxy; /* NULL when unset or empty */
	char *http_proxy;
	char *no_proxy;
};

/* Returns the variable's value or NULL (getenv's contract). */
typedef const char *(*ab_env_lookup_fn) (const char *name, void *arg);

/* Snapshot the variables; lookup NULL means getenv(3). */
void ab_proxy_env_load (struct ab_proxy_env_s *pe, ab_env_lookup_fn lookup, void *arg);
void ab_proxy_env_clear (struct ab_proxy_env_s *pe);

/* A parsed proxy: where to connect, and the credentials for it. */
struct ab_proxy_s {
	struct ab_hostport_s hp;
	/* "Basic <base64(user:password)>" (percent-decoded first), or "" */
	char auth[512];
};

/* Parse "http://[user[:password]@]host[:port][/]" (or the same without
 * "http://"); the port defaults to 80.  Messages never quote the URL: it
 * may hold a password. */
int ab_proxy_url_parse (const char *url, struct ab_proxy_s *out, ab_error_t *err);

/* Whether no_proxy (NULL or the variable's text) exempts host:port.  host
 * is normalised (ab_hostport_s.host: lower case, no brackets, no trailing
 * dot). */
bool ab_no_proxy_match (const char *no_proxy, const char *host, uint16_t port);

/* The proxy for a target: 1 with *out filled, 0 for a direct connection,
 * or a negative error when the selected variable does not parse. */
int ab_proxy_select (const struct ab_proxy_env_s *pe, bool tls, const struct ab_hostport_s *target,
                     struct ab_proxy_s *out, ab_error_t *err);

#endif
