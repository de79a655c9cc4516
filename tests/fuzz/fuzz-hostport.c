/* libFuzzer harness for the egress policy's text parsers: authorities,
 * host patterns, CIDR blocks and address literals.  Besides "no crash, no
 * sanitizer report", it checks properties the proxy relies on:
 *   - a parsed host is lower-case ASCII from the host alphabet, never
 *     longer than AB_HOST_MAX;
 *   - parsing is idempotent: the normalised authority parses to the same
 *     result;
 *   - an IPv4 host agrees with inet_pton, and nothing that inet_aton would
 *     read as a number slips through as a name.
 * ab_listen_parse (a server's --listen) is held to the same host checks.
 * Build with clang-14 -fsanitize=fuzzer,address,undefined together with
 * every src/policy C file and base/error.c, xalloc.c, cleanup.c (-ljansson);
 * run with -max_total_time=60 on a copy of tests/fuzz/corpus/hostport. */
#include <arpa/inet.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy/egress-policy.h"

#define MAX_INPUT 1024

static void
check_host_text (const struct ab_hostport_s *hp)
{
	size_t n = strlen (hp->host);

	if (n == 0 || n > AB_HOST_MAX)
		abort ();
	for (size_t i = 0; i < n; i++) {
		char c = hp->host[i];
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'
		      || c == '.' || (hp->kind == AB_HOST_IPV6 && c == ':')))
			abort ();
	}
	if (hp->kind == AB_HOST_NAME) {
		struct in_addr in;
		/* inet_aton accepts every numeric spelling; none may be a name. */
		if (inet_aton (hp->host, &in))
			abort ();
	}
	if (hp->kind == AB_HOST_IPV4) {
		struct in_addr in;
		if (inet_pton (AF_INET, hp->host, &in) != 1 || memcmp (&in, hp->addr.bytes, 4) != 0)
			abort ();
	}
}

static void
check_idempotent (const struct ab_hostport_s *hp)
{
	char again[AB_HOST_MAX + 16];
	struct ab_hostport_s hp2;
	ab_error_t err = AB_ERROR_INIT;
	bool v6 = hp->kind == AB_HOST_IPV6;

	snprintf (again, sizeof again, "%s%s%s:%u", v6 ? "[" : "", hp->host, v6 ? "]" : "",
	          (unsigned)hp->port);
	if (ab_hostport_parse (again, 1, &hp2, &err) < 0)
		abort ();
	if (strcmp (hp->host, hp2.host) != 0 || hp->kind != hp2.kind || hp->port != hp2.port
	    || (hp->kind != AB_HOST_NAME && !ab_addr_equal (&hp->addr, &hp2.addr)))
		abort ();
}

static void
exercise_policy (const struct ab_hostport_s *hp)
{
	static struct ab_egress_policy_s *policy;
	struct ab_egress_verdict_s v;
	ab_error_t err = AB_ERROR_INIT;

	if (!policy) {
		policy = ab_egress_policy_new_sandbox ();
		ab_egress_policy_add_allow_host (policy, "*.example.com", &err);
		ab_egress_policy_add_allow_host (policy, "*:443", &err);
		ab_egress_policy_add_allow_cidr (policy, "127.0.0.1/32", &err);
	}
	ab_egress_check_host (policy, hp, &v);
	if (strlen (v.reason) == 0)
		abort ();
	/* Only global addresses (or the one allowed CIDR) may pass. */
	if (v.allowed && hp->kind != AB_HOST_NAME && v.rule != AB_EGRESS_ALLOW_CIDR
	    && ab_addr_classify (&hp->addr) != AB_ADDR_GLOBAL)
		abort ();
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	char text[MAX_INPUT + 1];
	struct ab_hostport_s hp;
	struct ab_host_pattern_s pat;
	struct ab_cidr_s cidr;
	struct ab_addr_s a;
	ab_error_t err = AB_ERROR_INIT;

	if (size > MAX_INPUT)
		return 0;
	memcpy (text, data, size);
	text[size] = '\0';

	if (ab_hostport_parse (text, 80, &hp, &err) == 0) {
		check_host_text (&hp);
		check_idempotent (&hp);
		exercise_policy (&hp);
	} else if (err.kind != AB_E_INVALID || err.msg[0] == '\0') {
		abort ();
	}
	/* A --listen address has the same host rules and a required port. */
	if (ab_listen_parse (text, "0.0.0.0", &hp, &err) == 0) {
		check_host_text (&hp);
		check_idempotent (&hp);
	} else if (err.kind != AB_E_INVALID || err.msg[0] == '\0') {
		abort ();
	}
	if (ab_host_pattern_parse (text, &pat, &err) == 0) {
		char buf[AB_HOST_PATTERN_STRLEN];
		struct ab_host_pattern_s pat2;
		ab_host_pattern_format (&pat, buf);
		if (ab_host_pattern_parse (buf, &pat2, &err) < 0
		    || memcmp (&pat, &pat2, sizeof pat) != 0)
			abort ();
	}
	if (ab_cidr_parse (text, &cidr, &err) == 0) {
		char buf[AB_CIDR_STRLEN];
		struct ab_cidr_s c2;
		if (ab_cidr_parse (ab_cidr_format (&cidr, buf), &c2, &err) < 0
		    || !ab_cidr_contains (&c2, &cidr.addr))
			abort ();
	}
	if (ab_addr_parse (text, &a, &err) == 0) {
		struct ab_addr_info_s info;
		ab_addr_classify_info (&a, &info);
		if ((info.cls == AB_ADDR_GLOBAL) != (info.groups == 0) || !info.rfc)
			abort ();
	}
	return 0;
}
