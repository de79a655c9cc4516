/* The egress policy's fields, shared by egress-policy.c and
 * egress-policy-json.c only.  Everyone else uses egress-policy.h. */
#ifndef AB_POLICY_EGRESS_POLICY_PRIVATE_H
#define AB_POLICY_EGRESS_POLICY_PRIVATE_H

#include "policy/egress-policy.h"

struct ab_egress_policy_s {
	unsigned deny_groups; /* AB_ADDR_GROUP_* */
	bool resolve_names;
	bool implicit_any; /* standalone: no allow-host means every host */
	struct ab_host_pattern_s *allow;
	size_t n_allow;
	struct ab_host_pattern_s *deny;
	size_t n_deny;
	struct ab_cidr_s *cidrs;
	size_t n_cidrs;
	struct ab_addr_s *local; /* fixed (tests) or read at load time */
	size_t n_local;
	bool live_local; /* also the host's addresses as they are now */
};

/* A deep copy (JSON files are applied to a copy, then swapped in, so a bad
 * file leaves the policy unchanged). */
struct ab_egress_policy_s *ab_egress_policy_clone (const struct ab_egress_policy_s *p);
/* Move src's contents into dst (freeing dst's old contents) and free src. */
void ab_egress_policy_replace (struct ab_egress_policy_s *dst, struct ab_egress_policy_s *src);

#endif
