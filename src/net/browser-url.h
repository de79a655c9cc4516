/* The URL policy of a browser's navigations (docs/browser.md), for the
 * daemon's browser operations and the preview bridge's cdp-automation:
 * early, clear refusals before Chromium is asked to load anything, and
 * the check of the final URL after it (a redirect).  The egress proxy
 * stays the real wall. */
#ifndef AB_NET_BROWSER_URL_H
#define AB_NET_BROWSER_URL_H

#include <stdbool.h>

#include "base/error.h"
#include "policy/egress-policy.h"

/* How long a name's lookup may take before the check leaves the name to
 * the egress proxy. */
#define AB_BROWSER_URL_RESOLVE_MS 2000

/* Only http and https; credentials in the URL, control characters and
 * backslashes refused; the host as ab_hostport_parse reads it (canonical
 * IPv4 only: every other numeric spelling refused) and checked with
 * ab_egress_check_host against policy; a name, when `resolve` is set and
 * the policy resolves names, is resolved and every answer checked with
 * ab_egress_check_addr
 * (a name that does not resolve, or not in time, is left to the proxy,
 * which resolves it again and refuses it or fails the fetch).  policy
 * NULL: a sandbox without network, where only its own loopback can be
 * reached.  The refusal's message names the reason ("blocked URL scheme:
 * file", "loopback address 127.0.0.1", "example.test resolves to private
 * address 10.0.0.1", ...). */
int ab_browser_url_check (const struct ab_egress_policy_s *policy, const char *url, bool resolve,
                          ab_error_t *err);

#endif
