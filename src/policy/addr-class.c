/* The address classifier: one table of every special-purpose range the
 * egress proxy knows, with its RFC, decided by longest-prefix match, plus
 * the extraction of IPv4 addresses embedded in IPv6 translation forms. */
#include "policy/netaddr.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/log.h"

enum {
	LO = AB_ADDR_GROUP_LOOPBACK,
	PRIV = AB_ADDR_GROUP_PRIVATE,
	LL = AB_ADDR_GROUP_LINK_LOCAL,
	META = AB_ADDR_GROUP_METADATA,
};

struct range_s {
	const char *cidr;
	ab_addr_class cls;
	unsigned groups;
	ab_addr_form form; /* where to look for an embedded IPv4 */
	const char *rfc;
};

/* Longest prefix wins, so a metadata /32 inside 169.254/16 or fc00::/7
 * decides over its enclosing range; its groups repeat the enclosing range's
 * so --deny-link-local alone still covers 169.254.169.254.  IPv4 outside
 * every row is GLOBAL; IPv6 falls back to ::/0 (RESERVED) unless it is in
 * 2000::/3, the only block IANA allocates as global unicast.
 * ISATAP is not a prefix (any /64 with an 0[0-3]00:5efe interface id) and is
 * handled in isatap_embedded below (RFC 5214 6.1). */
static const struct range_s ranges[] = {
	/* IPv4, RFC 6890 special-purpose registry unless noted */
	{ "0.0.0.0/8", AB_ADDR_UNSPECIFIED, LO | PRIV, 0,
	  "RFC 1122 3.2.1.3 (this network; 0.0.0.0 reaches the host)" },
	{ "10.0.0.0/8", AB_ADDR_PRIVATE, PRIV, 0, "RFC 1918" },
	{ "100.64.0.0/10", AB_ADDR_CGNAT, PRIV, 0, "RFC 6598 (shared address space)" },
	{ "100.100.100.200/32", AB_ADDR_METADATA, META | PRIV, 0, "Alibaba Cloud metadata" },
	{ "127.0.0.0/8", AB_ADDR_LOOPBACK, LO, 0, "RFC 1122 3.2.1.3" },
	{ "168.63.129.16/32", AB_ADDR_METADATA, META, 0, "Azure WireServer / IMDS host" },
	{ "169.254.0.0/16", AB_ADDR_LINK_LOCAL, LL, 0, "RFC 3927" },
	{ "169.254.42.42/32", AB_ADDR_METADATA, META | LL, 0, "Scaleway metadata" },
	{ "169.254.169.254/32", AB_ADDR_METADATA, META | LL, 0,
	  "AWS/GCP/Azure/OpenStack instance metadata" },
	{ "169.254.170.2/32", AB_ADDR_METADATA, META | LL, 0, "AWS ECS task metadata" },
	{ "169.254.170.23/32", AB_ADDR_METADATA, META | LL, 0, "AWS EKS Pod Identity agent" },
	{ "172.16.0.0/12", AB_ADDR_PRIVATE, PRIV, 0, "RFC 1918" },
	{ "192.0.0.0/24", AB_ADDR_IETF_PROTOCOL, PRIV, 0,
	  "RFC 6890 2.2.2 (IETF protocol assignments)" },
	{ "192.0.0.192/32", AB_ADDR_METADATA, META | PRIV, 0, "Oracle Cloud Classic metadata" },
	{ "192.0.2.0/24", AB_ADDR_DOCUMENTATION, PRIV, 0, "RFC 5737 (TEST-NET-1)" },
	{ "192.88.99.0/24", AB_ADDR_6TO4_RELAY, PRIV, 0,
	  "RFC 7526 (deprecated 6to4 relay anycast)" },
	{ "192.168.0.0/16", AB_ADDR_PRIVATE, PRIV, 0, "RFC 1918" },
	{ "198.18.0.0/15", AB_ADDR_BENCHMARK, PRIV, 0, "RFC 2544 (benchmarking)" },
	{ "198.51.100.0/24", AB_ADDR_DOCUMENTATION, PRIV, 0, "RFC 5737 (TEST-NET-2)" },
	{ "203.0.113.0/24", AB_ADDR_DOCUMENTATION, PRIV, 0, "RFC 5737 (TEST-NET-3)" },
	{ "224.0.0.0/4", AB_ADDR_MULTICAST, PRIV, 0, "RFC 5771" },
	{ "240.0.0.0/4", AB_ADDR_RESERVED, PRIV, 0, "RFC 1112 4 (reserved for future use)" },
	{ "255.255.255.255/32", AB_ADDR_BROADCAST, LL | PRIV, 0, "RFC 919 7 (limited broadcast)" },

	/* IPv6, RFC 4291 and the IANA special-purpose registry */
	{ "::/0", AB_ADDR_RESERVED, PRIV, 0, "RFC 4291 2.4 (outside 2000::/3: reserved by IETF)" },
	{ "2000::/3", AB_ADDR_GLOBAL, 0, 0, "RFC 4291 2.4 (global unicast)" },
	{ "::/128", AB_ADDR_UNSPECIFIED, LO | PRIV, 0, "RFC 4291 2.5.2" },
	{ "::1/128", AB_ADDR_LOOPBACK, LO, 0, "RFC 4291 2.5.3" },
	{ "::/96", AB_ADDR_IPV4_COMPAT, PRIV, AB_ADDR_FORM_COMPAT,
	  "RFC 4291 2.5.5.1 (deprecated IPv4-compatible)" },
	{ "::ffff:0:0/96", AB_ADDR_IPV4_MAPPED, PRIV, AB_ADDR_FORM_MAPPED,
	  "RFC 4291 2.5.5.2 (IPv4-mapped)" },
	{ "64:ff9b::/96", AB_ADDR_NAT64, PRIV, AB_ADDR_FORM_NAT64,
	  "RFC 6052 (NAT64 well-known prefix)" },
	{ "64:ff9b:1::/48", AB_ADDR_NAT64, PRIV, AB_ADDR_FORM_NAT64,
	  "RFC 8215 (NAT64 local-use prefix)" },
	{ "100::/64", AB_ADDR_DISCARD, PRIV, 0, "RFC 6666 (discard-only)" },
	{ "2001::/23", AB_ADDR_IETF_PROTOCOL, PRIV, 0,
	  "RFC 2928, RFC 6890 (IETF protocol assignments)" },
	{ "2001::/32", AB_ADDR_TEREDO, PRIV, AB_ADDR_FORM_TEREDO, "RFC 4380 (Teredo)" },
	{ "2001:2::/48", AB_ADDR_BENCHMARK, PRIV, 0, "RFC 5180 (benchmarking)" },
	{ "2001:10::/28", AB_ADDR_ORCHID, PRIV, 0, "RFC 4843 (ORCHID, deprecated)" },
	{ "2001:20::/28", AB_ADDR_ORCHID, PRIV, 0, "RFC 7343 (ORCHIDv2)" },
	{ "2001:db8::/32", AB_ADDR_DOCUMENTATION, PRIV, 0, "RFC 3849" },
	{ "2002::/16", AB_ADDR_6TO4, PRIV, AB_ADDR_FORM_6TO4, "RFC 3056 (6to4)" },
	{ "3fff::/20", AB_ADDR_DOCUMENTATION, PRIV, 0, "RFC 9637" },
	{ "fc00::/7", AB_ADDR_UNIQUE_LOCAL, PRIV, 0, "RFC 4193 (unique local)" },
	{ "fd00:42::42/128", AB_ADDR_METADATA, META | PRIV, 0, "Scaleway metadata (IPv6)" },
	{ "fd00:ec2::23/128", AB_ADDR_METADATA, META | PRIV, 0,
	  "AWS EKS Pod Identity agent (IPv6)" },
	{ "fd00:ec2::254/128", AB_ADDR_METADATA, META | PRIV, 0, "AWS instance metadata (IPv6)" },
	{ "fd20:ce::254/128", AB_ADDR_METADATA, META | PRIV, 0, "GCP metadata (IPv6)" },
	{ "fe80::/10", AB_ADDR_LINK_LOCAL, LL, 0, "RFC 4291 2.5.6" },
	{ "fec0::/10", AB_ADDR_SITE_LOCAL, PRIV, 0, "RFC 3879 (deprecated site-local)" },
	{ "ff00::/8", AB_ADDR_MULTICAST, PRIV, 0, "RFC 4291 2.7" },
};

#define N_RANGES (sizeof ranges / sizeof ranges[0])

static struct ab_cidr_s range_cidrs[N_RANGES];
static pthread_once_t ranges_once = PTHREAD_ONCE_INIT;

/* The table is text so that it reads like the RFCs; it is parsed once.  A
 * row that does not parse is a bug in this file: abort loudly. */
static void
parse_ranges (void)
{
	for (size_t i = 0; i < N_RANGES; i++) {
		ab_error_t err = AB_ERROR_INIT;
		if (ab_cidr_parse (ranges[i].cidr, &range_cidrs[i], &err) < 0) {
			ab_log_error (AB_LOG_ERROR, &err, "bad address range table row");
			abort ();
		}
	}
}

/* Longest matching row, or NULL (IPv4 outside every row: global). */
static const struct range_s *
lookup (const struct ab_addr_s *a)
{
	const struct range_s *best = NULL;
	unsigned best_len = 0;

	pthread_once (&ranges_once, parse_ranges);
	for (size_t i = 0; i < N_RANGES; i++) {
		const struct ab_cidr_s *c = &range_cidrs[i];
		if (ab_cidr_contains (c, a) && (!best || c->prefix_len > best_len)) {
			best = &ranges[i];
			best_len = c->prefix_len;
		}
	}
	return best;
}

static void
classify_plain (const struct ab_addr_s *a, struct ab_addr_info_s *out)
{
	const struct range_s *r = lookup (a);

	memset (out, 0, sizeof *out);
	out->cls = r ? r->cls : AB_ADDR_GLOBAL;
	out->groups = r ? r->groups : 0;
	out->rfc = r ? r->rfc : "RFC 791 (global unicast)";
	out->form = r ? r->form : AB_ADDR_FORM_PLAIN;
}

/* At most: Teredo server + client, or the four RFC 6052 layouts a
 * local-use NAT64 prefix allows. */
#define EMBEDDED_MAX 4

static struct ab_addr_s
v4_at (const uint8_t *b, size_t i0, size_t i1, size_t i2, size_t i3, uint8_t xor)
{
	struct ab_addr_s v = { .family = AF_INET };

	v.bytes[0] = b[i0] ^ xor;
	v.bytes[1] = b[i1] ^ xor;
	v.bytes[2] = b[i2] ^ xor;
	v.bytes[3] = b[i3] ^ xor;
	return v;
}

static bool
bytes_zero (const uint8_t *b, size_t from, size_t to)
{
	for (size_t i = from; i < to; i++)
		if (b[i])
			return false;
	return true;
}

/* RFC 6052 2.2: where the IPv4 address sits for each NAT64 prefix length
 * (bits 64-71, byte 8, are always skipped), and from which byte on the
 * suffix must be zero for that layout to be a well-formed one. */
static const struct {
	uint8_t at[4];
	uint8_t suffix_from;
} nat64_layouts[] = {
	{ { 6, 7, 9, 10 }, 11 },    /* /48 */
	{ { 7, 9, 10, 11 }, 12 },   /* /56 */
	{ { 9, 10, 11, 12 }, 13 },  /* /64 */
	{ { 12, 13, 14, 15 }, 16 }, /* /96 */
};

/* 64:ff9b::/96 has one layout.  Inside 64:ff9b:1::/48 the operator picks
 * a prefix of 48 to 96 bits, so every well-formed layout is a candidate;
 * an all-zero candidate is dropped when another exists (it is just the zero
 * suffix of a longer layout). */
static size_t
nat64_embedded (const struct ab_addr_s *a, struct ab_addr_s *emb)
{
	const uint8_t *b = a->bytes;
	static const uint8_t wkp[12] = { 0, 0x64, 0xff, 0x9b };
	size_t n = 0, zero = 0;

	if (memcmp (b, wkp, sizeof wkp) == 0) {
		emb[0] = v4_at (b, 12, 13, 14, 15, 0);
		return 1;
	}
	for (size_t i = 0; i < sizeof nat64_layouts / sizeof nat64_layouts[0]; i++) {
		const uint8_t *at = nat64_layouts[i].at;
		if (b[8] != 0 && i < 3)
			continue;
		if (!bytes_zero (b, nat64_layouts[i].suffix_from, 16))
			continue;
		emb[n] = v4_at (b, at[0], at[1], at[2], at[3], 0);
		zero += bytes_zero (emb[n].bytes, 0, 4);
		n++;
	}
	if (n > 1 && zero > 0) {
		size_t k = 0;
		for (size_t i = 0; i < n; i++)
			if (!bytes_zero (emb[i].bytes, 0, 4))
				emb[k++] = emb[i];
		n = k;
	}
	return n;
}

static size_t
embedded_ipv4 (const struct ab_addr_s *a, ab_addr_form form, struct ab_addr_s *emb)
{
	const uint8_t *b = a->bytes;

	switch (form) {
	case AB_ADDR_FORM_MAPPED:
	case AB_ADDR_FORM_COMPAT: emb[0] = v4_at (b, 12, 13, 14, 15, 0); return 1;
	case AB_ADDR_FORM_NAT64: return nat64_embedded (a, emb);
	case AB_ADDR_FORM_6TO4: /* 2002:AABB:CCDD::/48, RFC 3056 2 */
		emb[0] = v4_at (b, 2, 3, 4, 5, 0);
		return 1;
	case AB_ADDR_FORM_TEREDO: /* 2001:0:SERVER:flags:~port:~CLIENT, RFC 4380 4 */
		emb[0] = v4_at (b, 12, 13, 14, 15, 0xff);
		emb[1] = v4_at (b, 4, 5, 6, 7, 0);
		return 2;
	case AB_ADDR_FORM_PLAIN:
	case AB_ADDR_FORM_ISATAP: break;
	}
	return 0;
}

/* RFC 5214 6.1: an ISATAP interface identifier is 0000:5efe:a.b.c.d, with
 * the u and g bits (0x02, 0x01 of byte 8) possibly set, under any /64. */
static size_t
isatap_embedded (const struct ab_addr_s *a, struct ab_addr_s *emb)
{
	const uint8_t *b = a->bytes;

	if ((b[8] & 0xfc) != 0 || b[9] != 0 || b[10] != 0x5e || b[11] != 0xfe)
		return 0;
	emb[0] = v4_at (b, 12, 13, 14, 15, 0);
	return 1;
}

/* Fold the embedded addresses' classes into *out (see netaddr.h). */
static void
merge_embedded (struct ab_addr_info_s *out, const struct ab_addr_s *emb, size_t n, bool isatap)
{
	struct ab_addr_info_s e, first = { .cls = AB_ADDR_GLOBAL };
	unsigned egroups = 0;

	out->has_embedded = true;
	out->embedded = emb[0];
	for (size_t i = 0; i < n; i++) {
		classify_plain (&emb[i], &e);
		egroups |= e.groups;
		if (e.cls != AB_ADDR_GLOBAL && first.cls == AB_ADDR_GLOBAL) {
			first = e;
			out->embedded = emb[i];
		}
	}
	if (isatap) {
		out->form = AB_ADDR_FORM_ISATAP;
		out->groups |= PRIV;
		if (out->cls == AB_ADDR_GLOBAL) {
			out->cls = AB_ADDR_ISATAP;
			out->rfc = "RFC 5214 6.1 (ISATAP interface identifier)";
		}
	}
	if (first.cls == AB_ADDR_GLOBAL)
		return;
	/* Mapped and compatible are another spelling of the IPv4 address:
	 * they take its groups only.  Tunnels and translators keep their own. */
	if (out->form == AB_ADDR_FORM_MAPPED || out->form == AB_ADDR_FORM_COMPAT)
		out->groups = egroups;
	else
		out->groups |= egroups;
	out->cls = first.cls;
	out->rfc = first.rfc;
}

void
ab_addr_classify_info (const struct ab_addr_s *a, struct ab_addr_info_s *out)
{
	struct ab_addr_s emb[EMBEDDED_MAX];
	size_t n;
	bool isatap = false;

	classify_plain (a, out);
	if (a->family != AF_INET6)
		return;
	n = embedded_ipv4 (a, out->form, emb);
	if (n == 0 && (n = isatap_embedded (a, emb)) > 0)
		isatap = true;
	if (n == 0)
		return;
	merge_embedded (out, emb, n, isatap);
}

ab_addr_class
ab_addr_classify (const struct ab_addr_s *a)
{
	struct ab_addr_info_s info;

	ab_addr_classify_info (a, &info);
	return info.cls;
}

ab_addr_class
ab_addr_classify_sockaddr (const struct sockaddr *sa)
{
	struct ab_addr_s a;

	if (ab_addr_from_sockaddr (sa, &a) < 0)
		return AB_ADDR_RESERVED;
	return ab_addr_classify (&a);
}

static const struct {
	const char *name;
	unsigned groups; /* when no more specific row refines it */
} class_info[AB_ADDR_CLASS_COUNT] = {
	[AB_ADDR_GLOBAL] = { "global", 0 },
	[AB_ADDR_UNSPECIFIED] = { "unspecified", LO | PRIV },
	[AB_ADDR_LOOPBACK] = { "loopback", LO },
	[AB_ADDR_PRIVATE] = { "private", PRIV },
	[AB_ADDR_CGNAT] = { "CGNAT", PRIV },
	[AB_ADDR_LINK_LOCAL] = { "link-local", LL },
	[AB_ADDR_METADATA] = { "metadata", META },
	[AB_ADDR_UNIQUE_LOCAL] = { "unique-local", PRIV },
	[AB_ADDR_SITE_LOCAL] = { "site-local", PRIV },
	[AB_ADDR_DOCUMENTATION] = { "documentation", PRIV },
	[AB_ADDR_BENCHMARK] = { "benchmarking", PRIV },
	[AB_ADDR_IETF_PROTOCOL] = { "IETF protocol", PRIV },
	[AB_ADDR_6TO4_RELAY] = { "6to4 relay", PRIV },
	[AB_ADDR_MULTICAST] = { "multicast", PRIV },
	[AB_ADDR_RESERVED] = { "reserved", PRIV },
	[AB_ADDR_BROADCAST] = { "broadcast", LL | PRIV },
	[AB_ADDR_DISCARD] = { "discard-only", PRIV },
	[AB_ADDR_ORCHID] = { "ORCHID", PRIV },
	[AB_ADDR_IPV4_MAPPED] = { "IPv4-mapped", PRIV },
	[AB_ADDR_IPV4_COMPAT] = { "IPv4-compatible", PRIV },
	[AB_ADDR_NAT64] = { "NAT64", PRIV },
	[AB_ADDR_6TO4] = { "6to4", PRIV },
	[AB_ADDR_TEREDO] = { "Teredo", PRIV },
	[AB_ADDR_ISATAP] = { "ISATAP", PRIV },
	[AB_ADDR_LOCAL_INTERFACE] = { "local interface", LO },
};

const char *
ab_addr_class_name (ab_addr_class cls)
{
	if ((unsigned)cls >= AB_ADDR_CLASS_COUNT)
		return "unknown";
	return class_info[cls].name;
}

unsigned
ab_addr_class_groups (ab_addr_class cls)
{
	if ((unsigned)cls >= AB_ADDR_CLASS_COUNT)
		return AB_ADDR_GROUPS_ALL;
	return class_info[cls].groups;
}

/* In the order the proxy's banner prints them. */
static const struct {
	unsigned bit;
	const char *name;
} group_names[] = {
	{ AB_ADDR_GROUP_LOOPBACK, "loopback" },
	{ AB_ADDR_GROUP_PRIVATE, "private" },
	{ AB_ADDR_GROUP_LINK_LOCAL, "link-local" },
	{ AB_ADDR_GROUP_METADATA, "metadata" },
};

const char *
ab_addr_group_name (unsigned group_bit)
{
	for (size_t i = 0; i < sizeof group_names / sizeof group_names[0]; i++)
		if (group_names[i].bit == group_bit)
			return group_names[i].name;
	return NULL;
}

unsigned
ab_addr_group_parse (const char *name)
{
	if (strcmp (name, "all") == 0)
		return AB_ADDR_GROUPS_ALL;
	for (size_t i = 0; i < sizeof group_names / sizeof group_names[0]; i++)
		if (strcmp (group_names[i].name, name) == 0)
			return group_names[i].bit;
	return 0;
}

const char *
ab_addr_groups_format (unsigned groups, char buf[AB_ADDR_GROUPS_STRLEN])
{
	size_t off = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof group_names / sizeof group_names[0]; i++) {
		if (!(groups & group_names[i].bit))
			continue;
		off += (size_t)snprintf (buf + off, AB_ADDR_GROUPS_STRLEN - off, "%s%s",
		                         off ? "," : "", group_names[i].name);
	}
	return buf;
}
