/* The egress policy object: construction, builders and the two checks. */
#include "policy/egress-policy-private.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

static struct ab_egress_policy_s *
policy_new (unsigned deny_groups, bool resolve_names, bool implicit_any)
{
	struct ab_egress_policy_s *p = xcalloc (1, sizeof *p);

	p->deny_groups = deny_groups;
	p->resolve_names = resolve_names;
	p->implicit_any = implicit_any;
	return p;
}

struct ab_egress_policy_s *
ab_egress_policy_new_standalone (void)
{
	return policy_new (0, false, true);
}

struct ab_egress_policy_s *
ab_egress_policy_new_sandbox (void)
{
	return policy_new (AB_ADDR_GROUPS_ALL, true, false);
}

static void
policy_clear (struct ab_egress_policy_s *p)
{
	free (p->allow);
	free (p->deny);
	free (p->cidrs);
	free (p->local);
}

void
ab_egress_policy_free (struct ab_egress_policy_s *p)
{
	if (!p)
		return;
	policy_clear (p);
	free (p);
}

void
ab_cleanup_egress_policyp (struct ab_egress_policy_s **p)
{
	ab_egress_policy_free (*p);
	*p = NULL;
}

static void *
dup_array (const void *src, size_t n, size_t size)
{
	void *dst;

	if (n == 0)
		return NULL;
	dst = xcalloc (n, size);
	memcpy (dst, src, n * size);
	return dst;
}

struct ab_egress_policy_s *
ab_egress_policy_clone (const struct ab_egress_policy_s *p)
{
	struct ab_egress_policy_s *c = xmalloc (sizeof *c);

	*c = *p;
	c->allow = dup_array (p->allow, p->n_allow, sizeof *p->allow);
	c->deny = dup_array (p->deny, p->n_deny, sizeof *p->deny);
	c->cidrs = dup_array (p->cidrs, p->n_cidrs, sizeof *p->cidrs);
	c->local = dup_array (p->local, p->n_local, sizeof *p->local);
	return c;
}

void
ab_egress_policy_replace (struct ab_egress_policy_s *dst, struct ab_egress_policy_s *src)
{
	policy_clear (dst);
	*dst = *src;
	free (src);
}

static int
add_pattern (struct ab_host_pattern_s **list, size_t *n, const char *text, ab_error_t *err)
{
	struct ab_host_pattern_s pat;

	if (ab_host_pattern_parse (text, &pat, err) < 0)
		return -1;
	*list = xrealloc (*list, (*n + 1) * sizeof **list);
	(*list)[(*n)++] = pat;
	return 0;
}

int
ab_egress_policy_add_allow_host (struct ab_egress_policy_s *p, const char *pattern, ab_error_t *err)
{
	return add_pattern (&p->allow, &p->n_allow, pattern, err);
}

int
ab_egress_policy_add_deny_host (struct ab_egress_policy_s *p, const char *pattern, ab_error_t *err)
{
	return add_pattern (&p->deny, &p->n_deny, pattern, err);
}

int
ab_egress_policy_add_allow_cidr (struct ab_egress_policy_s *p, const char *cidr, ab_error_t *err)
{
	struct ab_cidr_s c;

	if (ab_cidr_parse (cidr, &c, err) < 0)
		return -1;
	p->cidrs = xrealloc (p->cidrs, (p->n_cidrs + 1) * sizeof *p->cidrs);
	p->cidrs[p->n_cidrs++] = c;
	return 0;
}

void
ab_egress_policy_set_deny_groups (struct ab_egress_policy_s *p, unsigned groups)
{
	p->deny_groups = groups & AB_ADDR_GROUPS_ALL;
}

void
ab_egress_policy_add_deny_groups (struct ab_egress_policy_s *p, unsigned groups)
{
	p->deny_groups |= groups & AB_ADDR_GROUPS_ALL;
}

unsigned
ab_egress_policy_deny_groups (const struct ab_egress_policy_s *p)
{
	return p->deny_groups;
}

void
ab_egress_policy_set_resolve_names (struct ab_egress_policy_s *p, bool on)
{
	p->resolve_names = on;
}

bool
ab_egress_policy_resolve_names (const struct ab_egress_policy_s *p)
{
	return p->resolve_names;
}

void
ab_egress_policy_set_local_addrs (struct ab_egress_policy_s *p, const struct ab_addr_s *addrs,
                                  size_t n)
{
	free (p->local);
	p->local = dup_array (addrs, n, sizeof *addrs);
	p->n_local = n;
	p->live_local = false;
}

int
ab_egress_policy_load_local_addrs (struct ab_egress_policy_s *p, ab_error_t *err)
{
	cleanup_free struct ab_addr_s *list = NULL;
	size_t n = 0;

	if (ab_addr_list_local (&list, &n, err) < 0)
		return ab_error_wrap (err, "listing the host's interface addresses");
	free (p->local);
	p->local = steal_pointer (&list);
	p->n_local = n;
	p->live_local = true;
	return 0;
}

/* ---- decisions ---- */

static bool verdict (struct ab_egress_verdict_s *v, bool allowed, ab_egress_rule rule,
                     ab_addr_class cls, const char *fmt, ...)
        __attribute__ ((format (printf, 5, 6)));

static bool
verdict (struct ab_egress_verdict_s *v, bool allowed, ab_egress_rule rule, ab_addr_class cls,
         const char *fmt, ...)
{
	va_list ap;

	v->allowed = allowed;
	v->rule = rule;
	v->cls = cls;
	va_start (ap, fmt);
	vsnprintf (v->reason, sizeof v->reason, fmt, ap);
	va_end (ap);
	return allowed;
}

/* Names that always mean this host or a metadata service, denied by name
 * when their group is denied (defence in depth: the address check is the
 * real wall, but a resolver with a hostile /etc/hosts or search domain
 * should not get a say).  RFC 6761 6.3: localhost and *.localhost are
 * loopback; the rest are what distributions and clouds ship. */
static const struct {
	const char *name;
	bool subdomains; /* also *.name */
	unsigned group;
} reserved_names[] = {
	{ "localhost", true, AB_ADDR_GROUP_LOOPBACK },
	{ "localhost.localdomain", false, AB_ADDR_GROUP_LOOPBACK },
	{ "localhost4", false, AB_ADDR_GROUP_LOOPBACK },
	{ "localhost4.localdomain4", false, AB_ADDR_GROUP_LOOPBACK },
	{ "localhost6", false, AB_ADDR_GROUP_LOOPBACK },
	{ "localhost6.localdomain6", false, AB_ADDR_GROUP_LOOPBACK },
	{ "ip6-localhost", false, AB_ADDR_GROUP_LOOPBACK },
	{ "ip6-loopback", false, AB_ADDR_GROUP_LOOPBACK },
	{ "metadata", false, AB_ADDR_GROUP_METADATA },
	{ "metadata.google.internal", true, AB_ADDR_GROUP_METADATA },
	{ "metadata.goog", true, AB_ADDR_GROUP_METADATA },
	{ "instance-data", false, AB_ADDR_GROUP_METADATA },
	{ "instance-data.ec2.internal", false, AB_ADDR_GROUP_METADATA },
};

static bool
name_matches (const char *host, const char *name, bool subdomains)
{
	size_t h = strlen (host), n = strlen (name);

	if (strcmp (host, name) == 0)
		return true;
	return subdomains && h > n + 1 && host[h - n - 1] == '.'
	       && strcmp (host + h - n, name) == 0;
}

static bool
check_reserved_name (const struct ab_egress_policy_s *p, const char *host,
                     struct ab_egress_verdict_s *v)
{
	for (size_t i = 0; i < sizeof reserved_names / sizeof reserved_names[0]; i++) {
		unsigned g = reserved_names[i].group;
		if ((p->deny_groups & g)
		    && name_matches (host, reserved_names[i].name, reserved_names[i].subdomains)) {
			verdict (v, false, AB_EGRESS_DENY_NAME,
			         g == AB_ADDR_GROUP_LOOPBACK ? AB_ADDR_LOOPBACK : AB_ADDR_METADATA,
			         "%s name %s", ab_addr_group_name (g), host);
			return true;
		}
	}
	return false;
}

static bool
in_cidrs (const struct ab_egress_policy_s *p, const struct ab_addr_s *a, size_t *which)
{
	for (size_t i = 0; i < p->n_cidrs; i++)
		if (ab_cidr_contains (&p->cidrs[i], a)) {
			*which = i;
			return true;
		}
	return false;
}

static bool
host_allowed (const struct ab_egress_policy_s *p, const struct ab_hostport_s *hp)
{
	size_t ignored;

	if (p->n_allow == 0 && p->implicit_any)
		return true;
	for (size_t i = 0; i < p->n_allow; i++)
		if (ab_host_pattern_match (&p->allow[i], hp))
			return true;
	/* An operator who wrote --allow-cidr 10.1.2.0/24 named those addresses:
	 * a literal inside passes the host list too. */
	return hp->kind != AB_HOST_NAME && in_cidrs (p, &hp->addr, &ignored);
}

/* Order: port, deny list, reserved names, allow list, then the address
 * (literals) or the resolution switch (names).  Deny before allow, so a
 * deny-host always wins over a broader allow-host. */
bool
ab_egress_check_host (const struct ab_egress_policy_s *p, const struct ab_hostport_s *hp,
                      struct ab_egress_verdict_s *v)
{
	memset (v, 0, sizeof *v);
	if (hp->port == 0)
		return verdict (v, false, AB_EGRESS_DENY_PORT, AB_ADDR_GLOBAL, "invalid port");
	for (size_t i = 0; i < p->n_deny; i++)
		if (ab_host_pattern_match (&p->deny[i], hp))
			return verdict (v, false, AB_EGRESS_DENY_HOST_LIST, AB_ADDR_GLOBAL,
			                "host in denylist");
	if (hp->kind == AB_HOST_NAME && check_reserved_name (p, hp->host, v))
		return false;
	if (!host_allowed (p, hp))
		return verdict (v, false, AB_EGRESS_DENY_NOT_ALLOWED, AB_ADDR_GLOBAL,
		                "host not in allowlist");
	if (hp->kind != AB_HOST_NAME)
		return ab_egress_check_ab_addr (p, &hp->addr, v);
	if (!p->resolve_names)
		return verdict (v, false, AB_EGRESS_DENY_NO_RESOLVE, AB_ADDR_GLOBAL,
		                "name resolution is disabled");
	return verdict (v, true, AB_EGRESS_ALLOW, AB_ADDR_GLOBAL, "allowed");
}

/* An address the host had at load time, or has now (one added later,
 * such as a new interface, reaches the host's services as well). */
static bool
is_local (const struct ab_egress_policy_s *p, const struct ab_addr_s *a)
{
	ab_error_t err = AB_ERROR_INIT;

	for (size_t i = 0; i < p->n_local; i++)
		if (ab_addr_equal (&p->local[i], a))
			return true;
	return p->live_local && ab_addr_is_host_local (a, &err);
}

static const char *const form_names[] = {
	[AB_ADDR_FORM_PLAIN] = "",
	[AB_ADDR_FORM_MAPPED] = "IPv4-mapped",
	[AB_ADDR_FORM_COMPAT] = "IPv4-compatible",
	[AB_ADDR_FORM_NAT64] = "NAT64",
	[AB_ADDR_FORM_6TO4] = "6to4",
	[AB_ADDR_FORM_TEREDO] = "Teredo",
	[AB_ADDR_FORM_ISATAP] = "ISATAP",
};

static bool
class_is_translation (ab_addr_class cls)
{
	return cls == AB_ADDR_IPV4_MAPPED || cls == AB_ADDR_IPV4_COMPAT || cls == AB_ADDR_NAT64
	       || cls == AB_ADDR_6TO4 || cls == AB_ADDR_TEREDO || cls == AB_ADDR_ISATAP;
}

/* "loopback address 127.0.0.1", "metadata address 64:ff9b::a9fe:a9fe
 * (NAT64 form of 169.254.169.254)". */
static bool
deny_address (struct ab_egress_verdict_s *v, const struct ab_addr_s *a,
              const struct ab_addr_info_s *info, ab_addr_class cls)
{
	char text[AB_ADDR_STRLEN], emb[AB_ADDR_STRLEN];

	ab_addr_format (a, text);
	if (cls == info->cls && info->has_embedded && !class_is_translation (cls))
		return verdict (v, false, AB_EGRESS_DENY_ADDRESS, cls,
		                "%s address %s (%s form of %s)", ab_addr_class_name (cls), text,
		                form_names[info->form], ab_addr_format (&info->embedded, emb));
	return verdict (v, false, AB_EGRESS_DENY_ADDRESS, cls, "%s address %s",
	                ab_addr_class_name (cls), text);
}

bool
ab_egress_check_ab_addr (const struct ab_egress_policy_s *p, const struct ab_addr_s *a,
                         struct ab_egress_verdict_s *v)
{
	struct ab_addr_info_s info;
	size_t which;

	memset (v, 0, sizeof *v);
	if (in_cidrs (p, a, &which)) {
		char c[AB_CIDR_STRLEN];
		return verdict (v, true, AB_EGRESS_ALLOW_CIDR, ab_addr_classify (a),
		                "allowed by allow-cidr %s", ab_cidr_format (&p->cidrs[which], c));
	}
	ab_addr_classify_info (a, &info);
	if (info.groups & p->deny_groups)
		return deny_address (v, a, &info, info.cls);
	if ((p->deny_groups & AB_ADDR_GROUP_LOOPBACK) && is_local (p, a))
		return deny_address (v, a, &info, AB_ADDR_LOCAL_INTERFACE);
	return verdict (v, true, AB_EGRESS_ALLOW, info.cls, "allowed");
}

bool
ab_egress_check_addr (const struct ab_egress_policy_s *p, const struct sockaddr *sa,
                      struct ab_egress_verdict_s *v)
{
	struct ab_addr_s a;

	if (ab_addr_from_sockaddr (sa, &a) < 0) {
		memset (v, 0, sizeof *v);
		return verdict (v, false, AB_EGRESS_DENY_FAMILY, AB_ADDR_RESERVED,
		                "unsupported address family");
	}
	return ab_egress_check_ab_addr (p, &a, v);
}
