/* Host names and authorities for the egress policy: parse "host:port",
 * "[v6]:port" or a bare host into a normalised form, and match host
 * patterns ("example.com", "*.example.com", "*", each with an optional
 * ":port").  Pure code, no system call, never a DNS lookup. */
#ifndef AB_POLICY_HOSTNAME_H
#define AB_POLICY_HOSTNAME_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "policy/netaddr.h"

/* RFC 1035 2.3.4: 255 octets on the wire = 253 characters of text without
 * the trailing dot.  An IPv6 literal is at most 45 characters. */
#define AB_HOST_MAX 253

typedef enum {
	AB_HOST_NAME = 0, /* a DNS name, still to be resolved */
	AB_HOST_IPV4,     /* a canonical dotted-quad literal */
	AB_HOST_IPV6,     /* an IPv6 literal (given in brackets) */
} ab_host_kind;

struct ab_hostport_s {
	/* Normalised host: ASCII lower case, no trailing dot, no brackets; IP
	 * literals in canonical text (inet_ntop), so "[0:0::1]" becomes "::1". */
	char host[AB_HOST_MAX + 1];
	ab_host_kind kind;
	struct ab_addr_s addr; /* valid when kind != AB_HOST_NAME */
	uint16_t port;         /* the given port, or default_port */
	bool has_port;         /* a port was given in the text */
};

/* Parse an authority ("host", "host:port", "[v6]", "[v6]:port").
 *
 * Rules (SECURITY.md, the network edge):
 *  - ASCII only; names are letters, digits, '-' and '_' in dot-separated
 *    labels of 1..63 characters, at most 253 characters; upper case is
 *    folded to lower case and one trailing dot is folded ("Example.COM." ->
 *    "example.com").  No userinfo, no whitespace, no percent-encoding.
 *  - IPv4 literals only in canonical dotted-quad form.  A host whose last
 *    label is numeric (all digits, or 0x + hex) is taken as an IPv4
 *    attempt, as URL parsers and inet_aton do, and refused unless it is a
 *    canonical dotted quad without trailing dot: "2130706433", "0x7f.1",
 *    "0177.0.0.1", "127.1", "127.000.000.001", "1.2.3", "127.0.0.1." never
 *    reach getaddrinfo (CVE-2021-28918, CVE-2021-29921 class).
 *  - IPv6 literals only in brackets, without zone id ("%eth0", "%25eth0").
 *  - The port is 1 to 5 decimal digits with value 0..65535 ("08" is 8; no
 *    sign, no space, no hex).  "host:" (empty port) is refused.  Port 0
 *    parses; the policy denies it ("invalid port").
 *  - Without a port, out->port = default_port and has_port = false.
 *
 * On failure returns a negative AB_E_INVALID error whose message is a short
 * stable reason usable as-is in a 403/400 body: "invalid port",
 * "empty host", "invalid host", "non-ASCII host", "host too long",
 * "non-canonical IPv4 address", "invalid IPv6 address",
 * "zone identifiers are not allowed", "IPv6 address must be in brackets". */
int ab_hostport_parse (const char *authority, uint16_t default_port, struct ab_hostport_s *out,
                       ab_error_t *err);

/* A listen address "HOST:PORT" (a server's --listen), split at the last
 * ':' so that "[::1]:8080" and ":::8080" both work; the brackets around an
 * IPv6 literal are optional here.  HOST follows ab_host_normalise's rules
 * (names, canonical IPv4 only); an empty HOST is default_host, or "empty
 * host" when that is NULL.  PORT is required and follows the port rule
 * above; 0 parses (callers that bind take it as "any free port").
 * Messages as above, plus "expected HOST:PORT" when there is no ':'. */
int ab_listen_parse (const char *text, const char *default_host, struct ab_hostport_s *out,
                     ab_error_t *err);

/* Same for a host without port (e.g. from a URL whose port is parsed
 * elsewhere): brackets optional around IPv6 here; same messages. */
int ab_host_normalise (const char *host, size_t len, struct ab_hostport_s *out, ab_error_t *err);

/* A host pattern for allow and deny lists:
 *   "example.com"        exactly that name (not its subdomains)
 *   "*.example.com"      any subdomain, at any depth, NOT example.com
 *                        itself (as in Envoy, squid's "*." ACLs and TLS
 *                        wildcards; list both to allow both)
 *   "*"                  any host (names and literals; the address check
 *                        still applies, so in sandbox mode "*" means any
 *                        public host)
 *   "10.1.2.3", "[::1]"  an IP literal, matched on its canonical text
 * each optionally followed by ":port" ("*.example.com:443", "[::1]:8080").
 * Names are normalised like hosts (case, trailing dot). */
typedef enum {
	AB_PATTERN_EXACT = 0,
	AB_PATTERN_SUBDOMAINS,
	AB_PATTERN_ANY,
} ab_pattern_kind;

struct ab_host_pattern_s {
	ab_pattern_kind kind;
	char host[AB_HOST_MAX + 1]; /* EXACT: the host; SUBDOMAINS: the parent, without "*." */
	bool has_port;
	uint16_t port;
};

int ab_host_pattern_parse (const char *text, struct ab_host_pattern_s *out, ab_error_t *err);
bool ab_host_pattern_match (const struct ab_host_pattern_s *p, const struct ab_hostport_s *hp);
/* Back to text ("*.example.com:443"); buf needs AB_HOST_PATTERN_STRLEN. */
#define AB_HOST_PATTERN_STRLEN (AB_HOST_MAX + 16)
const char *ab_host_pattern_format (const struct ab_host_pattern_s *p,
                                    char buf[AB_HOST_PATTERN_STRLEN]);

#endif
