/* The egress policy: which (host, port) a proxy may connect to, and which
 * resolved addresses it may dial.  Built from CLI flags (the builder
 * functions) or a JSON policy file (docs/egress-policy.md); the same object
 * serves the standalone t3-egress-proxy mode and the sandbox's
 * `--network proxy` mode, which differ only in their defaults.
 *
 * How a proxy uses it (SECURITY.md, the network edge):
 *   1. ab_hostport_parse (authority) -- on failure deny with err.msg;
 *   2. ab_egress_check_host (policy, &hp, &v) -- deny if !v.allowed;
 *   3. a literal host (hp.kind != AB_HOST_NAME) was fully vetted by step
 *      2: dial hp.addr.  A name: resolve it once (bounded time), call
 *      ab_egress_check_addr for EVERY answer, deny if any is denied,
 *      then dial the first answer's literal; never resolve the name again
 *      (DNS rebinding).
 *
 * Pure code: no DNS, and no system call but one: the host's own interface
 * addresses come in through ab_egress_policy_set_local_addrs (tests inject
 * a fixed list) or ab_egress_policy_load_local_addrs (getifaddrs, then a
 * netlink socket that says when they change: policy/local-addrs.c). */
#ifndef AB_POLICY_EGRESS_POLICY_H
#define AB_POLICY_EGRESS_POLICY_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>

#include "base/error.h"
#include "policy/hostname.h"
#include "policy/netaddr.h"

struct ab_egress_policy_s; /* opaque */

/* Standalone mode (agentbox egress-proxy serve / t3-egress-proxy): nothing
 * is denied until a --deny-* flag sets a group; with no --allow-host every
 * host passes the allowlist (an implicit "*"), with some only those;
 * names are refused ("name resolution is disabled") until
 * --resolve-before-connect turns resolution on. */
struct ab_egress_policy_s *ab_egress_policy_new_standalone (void);
/* Sandbox mode (--network proxy): every non-global address denied (all four
 * groups), names resolved, only hosts matching an --allow-host pattern
 * allowed (none by default; "*" = any public host). */
struct ab_egress_policy_s *ab_egress_policy_new_sandbox (void);
void ab_egress_policy_free (struct ab_egress_policy_s *p);
void ab_cleanup_egress_policyp (struct ab_egress_policy_s **p);
#define cleanup_egress_policy __attribute__ ((cleanup (ab_cleanup_egress_policyp)))

/* Builders (CLI flags).  Patterns and CIDRs are parsed strictly (see
 * hostname.h, netaddr.h); a bad one is a negative AB_E_INVALID error naming
 * it, and the policy is unchanged. */
int ab_egress_policy_add_allow_host (struct ab_egress_policy_s *p, const char *pattern,
                                     ab_error_t *err);
int ab_egress_policy_add_deny_host (struct ab_egress_policy_s *p, const char *pattern,
                                    ab_error_t *err);
int ab_egress_policy_add_allow_cidr (struct ab_egress_policy_s *p, const char *cidr,
                                     ab_error_t *err);
/* Replace / add to the denied groups (AB_ADDR_GROUP_* bits). */
void ab_egress_policy_set_deny_groups (struct ab_egress_policy_s *p, unsigned groups);
void ab_egress_policy_add_deny_groups (struct ab_egress_policy_s *p, unsigned groups);
unsigned ab_egress_policy_deny_groups (const struct ab_egress_policy_s *p);
void ab_egress_policy_set_resolve_names (struct ab_egress_policy_s *p, bool on);
bool ab_egress_policy_resolve_names (const struct ab_egress_policy_s *p);

/* The host's own interface addresses, denied in the loopback group (a
 * connection to them reaches the host's own services).  Replaces the list
 * with a fixed one (tests) and stops following the host's. */
void ab_egress_policy_set_local_addrs (struct ab_egress_policy_s *p, const struct ab_addr_s *addrs,
                                       size_t n);
/* set_local_addrs (ab_addr_list_local ()), and from then on also every
 * address the host gains later (ab_addr_is_host_local: re-read when the
 * kernel reports a change). */
int ab_egress_policy_load_local_addrs (struct ab_egress_policy_s *p, ab_error_t *err);

/* Apply a JSON policy document on top of the policy (CLI defaults, then the
 * file, then further flags).  Unknown keys, wrong types and bad values are
 * a negative AB_E_INVALID error naming the key (and the file); on error the
 * policy is unchanged.  Format: docs/egress-policy.md. */
int ab_egress_policy_load_file (struct ab_egress_policy_s *p, const char *path, ab_error_t *err);
int ab_egress_policy_load_string (struct ab_egress_policy_s *p, const char *json,
                                  const char *origin, ab_error_t *err);

/* Which rule decided: stable codes for tests and the audit log. */
typedef enum {
	AB_EGRESS_ALLOW = 0,        /* allowed (address class or allowlist) */
	AB_EGRESS_ALLOW_CIDR,       /* allowed: inside an --allow-cidr block */
	AB_EGRESS_DENY_PORT,        /* "invalid port" */
	AB_EGRESS_DENY_HOST_LIST,   /* "host in denylist" */
	AB_EGRESS_DENY_NAME,        /* "loopback name localhost", "metadata name ..." */
	AB_EGRESS_DENY_NOT_ALLOWED, /* "host not in allowlist" */
	AB_EGRESS_DENY_NO_RESOLVE,  /* "name resolution is disabled" */
	AB_EGRESS_DENY_ADDRESS,     /* "<class> address <addr>" */
	AB_EGRESS_DENY_FAMILY,      /* "unsupported address family" */
} ab_egress_rule;

#define AB_EGRESS_REASON_MAX 320

struct ab_egress_verdict_s {
	bool allowed;
	ab_egress_rule rule;
	ab_addr_class cls; /* for address decisions; AB_ADDR_GLOBAL otherwise */
	/* Short, stable, human: "loopback address 127.0.0.1", "host not in
	 * allowlist", "invalid port", "name resolution is disabled", "private
	 * address 10.0.0.1", "allowed", "allowed by allow-cidr 127.0.0.1/32".
	 * Goes into "egress denied: <reason>" and the audit line; it contains
	 * only the host and address, never anything secret. */
	char reason[AB_EGRESS_REASON_MAX];
};

/* Before resolution: port, deny-host patterns, names by name (localhost,
 * *.localhost, localhost.localdomain, metadata, metadata.google.internal
 * ... when the loopback or metadata group is denied), allow-host patterns
 * (an IP literal inside an --allow-cidr block also passes), then for a
 * literal the address check, for a name whether resolution is on.
 * Returns v->allowed. */
bool ab_egress_check_host (const struct ab_egress_policy_s *p, const struct ab_hostport_s *hp,
                           struct ab_egress_verdict_s *v);

/* For each resolved answer (and for literals, done by check_host): inside
 * an --allow-cidr block -> allowed; else denied when the address's groups
 * (the host's own addresses count as loopback) meet the denied groups. */
bool ab_egress_check_addr (const struct ab_egress_policy_s *p, const struct sockaddr *sa,
                           struct ab_egress_verdict_s *v);
bool ab_egress_check_ab_addr (const struct ab_egress_policy_s *p, const struct ab_addr_s *a,
                              struct ab_egress_verdict_s *v);

#endif
