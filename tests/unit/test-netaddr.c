/* Unit tests for policy/netaddr: literal parsing, CIDR blocks and the
 * address classifier, table driven. */
#include <arpa/inet.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include <cmocka.h>

#include "policy/netaddr.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

enum {
	L = AB_ADDR_GROUP_LOOPBACK,
	P = AB_ADDR_GROUP_PRIVATE,
	LL = AB_ADDR_GROUP_LINK_LOCAL,
	M = AB_ADDR_GROUP_METADATA,
};

static struct ab_addr_s
addr (const char *text)
{
	struct ab_addr_s a;
	ab_error_t err = AB_ERROR_INIT;

	if (ab_addr_parse (text, &a, &err) < 0)
		fail_msg ("test address '%s' does not parse: %s", text, err.msg);
	return a;
}

/* ---- literal parsing ---- */

static const struct {
	const char *text;
	int family; /* 0 = refused */
	const char *canonical;
} literal_rows[] = {
	{ "0.0.0.0", AF_INET, "0.0.0.0" },
	{ "127.0.0.1", AF_INET, "127.0.0.1" },
	{ "255.255.255.255", AF_INET, "255.255.255.255" },
	{ "8.8.8.8", AF_INET, "8.8.8.8" },
	{ "10.0.0.0", AF_INET, "10.0.0.0" },
	{ "192.168.100.200", AF_INET, "192.168.100.200" },
	{ "1.0.0.0", AF_INET, "1.0.0.0" },
	/* every other IPv4 spelling is refused */
	{ "2130706433", 0, NULL },
	{ "0x7f000001", 0, NULL },
	{ "0x7f.1", 0, NULL },
	{ "0x7f.0.0.1", 0, NULL },
	{ "0177.0.0.1", 0, NULL },
	{ "0177.1", 0, NULL },
	{ "127.1", 0, NULL },
	{ "127.0.1", 0, NULL },
	{ "1.2.3", 0, NULL },
	{ "127.000.000.001", 0, NULL },
	{ "127.0.0.01", 0, NULL },
	{ "01.2.3.4", 0, NULL },
	{ "00.0.0.0", 0, NULL },
	{ "127.0.0.1.", 0, NULL },
	{ ".127.0.0.1", 0, NULL },
	{ "127..0.1", 0, NULL },
	{ "256.0.0.1", 0, NULL },
	{ "1.2.3.256", 0, NULL },
	{ "1.2.3.4.5", 0, NULL },
	{ "1.2.3.-4", 0, NULL },
	{ "+1.2.3.4", 0, NULL },
	{ " 1.2.3.4", 0, NULL },
	{ "1.2.3.4 ", 0, NULL },
	{ "1.2.3.4\n", 0, NULL },
	{ "1.2.3.1000", 0, NULL },
	{ "1.2.3.0x4", 0, NULL },
	{ "", 0, NULL },
	{ ".", 0, NULL },
	{ "localhost", 0, NULL },
	/* IPv6 */
	{ "::", AF_INET6, "::" },
	{ "::1", AF_INET6, "::1" },
	{ "0:0:0:0:0:0:0:1", AF_INET6, "::1" },
	{ "0000:0000:0000:0000:0000:0000:0000:0001", AF_INET6, "::1" },
	{ "2001:DB8::1", AF_INET6, "2001:db8::1" },
	{ "2606:4700::1111", AF_INET6, "2606:4700::1111" },
	{ "::ffff:127.0.0.1", AF_INET6, "::ffff:127.0.0.1" },
	{ "::FFFF:7F00:1", AF_INET6, "::ffff:127.0.0.1" },
	{ "::127.0.0.1", AF_INET6, "::127.0.0.1" },
	{ "64:ff9b::169.254.169.254", AF_INET6, "64:ff9b::a9fe:a9fe" },
	{ "fe80::1%eth0", 0, NULL },
	{ "fe80::1%25eth0", 0, NULL },
	{ "fe80::1%1", 0, NULL },
	{ "[::1]", 0, NULL },
	{ "::1::2", 0, NULL },
	{ "12345::1", 0, NULL },
	{ "::ffff:127.0.0.01", 0, NULL },
	{ "::ffff:127.1", 0, NULL },
	{ "1:2:3:4:5:6:7:8:9", 0, NULL },
	{ "::g", 0, NULL },
	{ ":::", 0, NULL },
	{ "1:2:3:4:5:6:7", 0, NULL },
};

static void
test_literals (void **state)
{
	for (size_t i = 0; i < N (literal_rows); i++) {
		struct ab_addr_s a;
		ab_error_t err = AB_ERROR_INIT;
		char buf[AB_ADDR_STRLEN];
		int r = ab_addr_parse (literal_rows[i].text, &a, &err);

		if (literal_rows[i].family == 0) {
			if (r == 0)
				fail_msg ("'%s' should be refused", literal_rows[i].text);
			assert_int_equal (err.kind, AB_E_INVALID);
			continue;
		}
		if (r < 0)
			fail_msg ("'%s' should parse: %s", literal_rows[i].text, err.msg);
		assert_int_equal (a.family, literal_rows[i].family);
		assert_string_equal (ab_addr_format (&a, buf), literal_rows[i].canonical);
	}
}

/* Our dotted-quad reader and glibc's inet_pton(AF_INET) agree on every
 * string of up to 6 characters over a small alphabet (bounded: 9^6). */
static void
test_ipv4_matches_inet_pton (void **state)
{
	static const char alphabet[] = "0123.x5a";
	const size_t k = sizeof alphabet - 1;
	char s[8];

	for (size_t len = 1; len <= 6; len++) {
		size_t total = 1;
		for (size_t i = 0; i < len; i++)
			total *= k;
		for (size_t n = 0; n < total; n++) {
			size_t v = n;
			struct ab_addr_s a;
			struct in_addr in;
			for (size_t i = 0; i < len; i++, v /= k)
				s[i] = alphabet[v % k];
			s[len] = '\0';
			bool ours = ab_addr_parse_ipv4 (s, len, &a);
			bool libc = inet_pton (AF_INET, s, &in) == 1;
			if (ours != libc)
				fail_msg ("'%s': ours %d, inet_pton %d", s, ours, libc);
			if (ours)
				assert_memory_equal (a.bytes, &in, 4);
		}
	}
}

/* ---- CIDR ---- */

static const struct {
	const char *text;
	const char *canonical; /* NULL = refused */
} cidr_rows[] = {
	{ "127.0.0.1/32", "127.0.0.1/32" },
	{ "10.0.0.0/8", "10.0.0.0/8" },
	{ "0.0.0.0/0", "0.0.0.0/0" },
	{ "192.168.0.0/16", "192.168.0.0/16" },
	{ "172.16.0.0/12", "172.16.0.0/12" },
	{ "::1/128", "::1/128" },
	{ "::/0", "::/0" },
	{ "FD00::/8", "fd00::/8" },
	{ "2001:db8::/32", "2001:db8::/32" },
	{ "10.0.0.1/8", NULL }, /* host bits */
	{ "10.0.0.0/33", NULL },
	{ "10.0.0.0/-1", NULL },
	{ "10.0.0.0/+8", NULL },
	{ "10.0.0.0/08", NULL },
	{ "10.0.0.0/", NULL },
	{ "10.0.0.0", NULL },
	{ "/8", NULL },
	{ "10/8", NULL },
	{ "010.0.0.0/8", NULL },
	{ "10.0.0.0/8 ", NULL },
	{ "10.0.0.0/8/8", NULL },
	{ "10.0.0.0/0x8", NULL },
	{ "::1/129", NULL },
	{ "::1/127", NULL },
	{ "fe80::%eth0/64", NULL },
	{ "[::1]/128", NULL },
	{ "localhost/32", NULL },
	{ "1.2.3.4/1000", NULL },
};

static void
test_cidr_parse (void **state)
{
	for (size_t i = 0; i < N (cidr_rows); i++) {
		struct ab_cidr_s c;
		ab_error_t err = AB_ERROR_INIT;
		char buf[AB_CIDR_STRLEN];
		int r = ab_cidr_parse (cidr_rows[i].text, &c, &err);

		if (!cidr_rows[i].canonical) {
			if (r == 0)
				fail_msg ("CIDR '%s' should be refused", cidr_rows[i].text);
			assert_int_equal (err.kind, AB_E_INVALID);
			assert_non_null (strstr (err.msg, cidr_rows[i].text));
			continue;
		}
		if (r < 0)
			fail_msg ("CIDR '%s' should parse: %s", cidr_rows[i].text, err.msg);
		assert_string_equal (ab_cidr_format (&c, buf), cidr_rows[i].canonical);
	}
}

static const struct {
	const char *cidr;
	const char *addr;
	bool inside;
} contains_rows[] = {
	{ "10.0.0.0/8", "10.0.0.0", true },
	{ "10.0.0.0/8", "10.255.255.255", true },
	{ "10.0.0.0/8", "9.255.255.255", false },
	{ "10.0.0.0/8", "11.0.0.0", false },
	{ "127.0.0.1/32", "127.0.0.1", true },
	{ "127.0.0.1/32", "127.0.0.2", false },
	{ "127.0.0.0/8", "::ffff:127.0.0.1", false }, /* families never mix */
	{ "0.0.0.0/0", "1.2.3.4", true },
	{ "0.0.0.0/0", "::1", false },
	{ "172.16.0.0/12", "172.31.255.255", true },
	{ "172.16.0.0/12", "172.32.0.0", false },
	{ "192.168.1.128/25", "192.168.1.127", false },
	{ "192.168.1.128/25", "192.168.1.128", true },
	{ "::1/128", "::1", true },
	{ "::1/128", "::2", false },
	{ "fc00::/7", "fdff:ffff::1", true },
	{ "fc00::/7", "fe00::1", false },
	{ "2001:db8::/33", "2001:db8:7fff::1", true },
	{ "2001:db8::/33", "2001:db8:8000::1", false },
	{ "::/0", "2606:4700::1111", true },
	{ "::/0", "8.8.8.8", false },
};

static void
test_cidr_contains (void **state)
{
	for (size_t i = 0; i < N (contains_rows); i++) {
		struct ab_cidr_s c;
		ab_error_t err = AB_ERROR_INIT;
		struct ab_addr_s a = addr (contains_rows[i].addr);

		assert_int_equal (ab_cidr_parse (contains_rows[i].cidr, &c, &err), 0);
		if (ab_cidr_contains (&c, &a) != contains_rows[i].inside)
			fail_msg ("%s in %s: expected %d", contains_rows[i].addr,
			          contains_rows[i].cidr, contains_rows[i].inside);
	}
}

/* ---- classification ---- */

struct class_row_s {
	const char *addr;
	ab_addr_class cls;
	unsigned groups;
};

static const struct class_row_s class_rows[] = {
	/* ordinary global unicast, including both sides of every boundary */
	{ "8.8.8.8", AB_ADDR_GLOBAL, 0 },
	{ "8.8.4.4", AB_ADDR_GLOBAL, 0 },
	{ "1.1.1.1", AB_ADDR_GLOBAL, 0 },
	{ "1.0.0.1", AB_ADDR_GLOBAL, 0 },
	{ "9.9.9.9", AB_ADDR_GLOBAL, 0 },
	{ "93.184.216.34", AB_ADDR_GLOBAL, 0 },
	{ "140.82.112.3", AB_ADDR_GLOBAL, 0 },
	{ "1.0.0.0", AB_ADDR_GLOBAL, 0 },
	{ "9.255.255.255", AB_ADDR_GLOBAL, 0 },
	{ "11.0.0.0", AB_ADDR_GLOBAL, 0 },
	{ "100.63.255.255", AB_ADDR_GLOBAL, 0 },
	{ "100.128.0.0", AB_ADDR_GLOBAL, 0 },
	{ "126.255.255.255", AB_ADDR_GLOBAL, 0 },
	{ "128.0.0.0", AB_ADDR_GLOBAL, 0 },
	{ "168.63.129.15", AB_ADDR_GLOBAL, 0 },
	{ "168.63.129.17", AB_ADDR_GLOBAL, 0 },
	{ "169.253.255.255", AB_ADDR_GLOBAL, 0 },
	{ "169.255.0.0", AB_ADDR_GLOBAL, 0 },
	{ "172.15.255.255", AB_ADDR_GLOBAL, 0 },
	{ "172.32.0.0", AB_ADDR_GLOBAL, 0 },
	{ "191.255.255.255", AB_ADDR_GLOBAL, 0 },
	{ "192.0.1.255", AB_ADDR_GLOBAL, 0 },
	{ "192.0.3.0", AB_ADDR_GLOBAL, 0 },
	{ "192.88.98.255", AB_ADDR_GLOBAL, 0 },
	{ "192.88.100.0", AB_ADDR_GLOBAL, 0 },
	{ "192.167.255.255", AB_ADDR_GLOBAL, 0 },
	{ "192.169.0.0", AB_ADDR_GLOBAL, 0 },
	{ "198.17.255.255", AB_ADDR_GLOBAL, 0 },
	{ "198.20.0.0", AB_ADDR_GLOBAL, 0 },
	{ "198.51.99.255", AB_ADDR_GLOBAL, 0 },
	{ "198.51.101.0", AB_ADDR_GLOBAL, 0 },
	{ "203.0.112.255", AB_ADDR_GLOBAL, 0 },
	{ "203.0.114.0", AB_ADDR_GLOBAL, 0 },
	{ "223.255.255.255", AB_ADDR_GLOBAL, 0 },
	{ "192.31.196.1", AB_ADDR_GLOBAL, 0 },
	{ "192.175.48.1", AB_ADDR_GLOBAL, 0 },
	/* unspecified / this network */
	{ "0.0.0.0", AB_ADDR_UNSPECIFIED, L | P },
	{ "0.0.0.1", AB_ADDR_UNSPECIFIED, L | P },
	{ "0.255.255.255", AB_ADDR_UNSPECIFIED, L | P },
	/* loopback */
	{ "127.0.0.0", AB_ADDR_LOOPBACK, L },
	{ "127.0.0.1", AB_ADDR_LOOPBACK, L },
	{ "127.1.2.3", AB_ADDR_LOOPBACK, L },
	{ "127.255.255.255", AB_ADDR_LOOPBACK, L },
	/* RFC 1918 */
	{ "10.0.0.0", AB_ADDR_PRIVATE, P },
	{ "10.0.0.1", AB_ADDR_PRIVATE, P },
	{ "10.255.255.255", AB_ADDR_PRIVATE, P },
	{ "172.16.0.0", AB_ADDR_PRIVATE, P },
	{ "172.20.1.1", AB_ADDR_PRIVATE, P },
	{ "172.31.255.255", AB_ADDR_PRIVATE, P },
	{ "192.168.0.0", AB_ADDR_PRIVATE, P },
	{ "192.168.1.1", AB_ADDR_PRIVATE, P },
	{ "192.168.255.255", AB_ADDR_PRIVATE, P },
	/* CGNAT */
	{ "100.64.0.0", AB_ADDR_CGNAT, P },
	{ "100.64.0.1", AB_ADDR_CGNAT, P },
	{ "100.100.100.199", AB_ADDR_CGNAT, P },
	{ "100.100.100.201", AB_ADDR_CGNAT, P },
	{ "100.127.255.255", AB_ADDR_CGNAT, P },
	/* link-local */
	{ "169.254.0.0", AB_ADDR_LINK_LOCAL, LL },
	{ "169.254.0.1", AB_ADDR_LINK_LOCAL, LL },
	{ "169.254.169.253", AB_ADDR_LINK_LOCAL, LL },
	{ "169.254.169.255", AB_ADDR_LINK_LOCAL, LL },
	{ "169.254.170.1", AB_ADDR_LINK_LOCAL, LL },
	{ "169.254.170.3", AB_ADDR_LINK_LOCAL, LL },
	{ "169.254.255.255", AB_ADDR_LINK_LOCAL, LL },
	/* metadata */
	{ "169.254.169.254", AB_ADDR_METADATA, M | LL },
	{ "169.254.170.2", AB_ADDR_METADATA, M | LL },
	{ "169.254.170.23", AB_ADDR_METADATA, M | LL },
	{ "169.254.42.42", AB_ADDR_METADATA, M | LL },
	{ "100.100.100.200", AB_ADDR_METADATA, M | P },
	{ "168.63.129.16", AB_ADDR_METADATA, M },
	{ "192.0.0.192", AB_ADDR_METADATA, M | P },
	/* special purpose */
	{ "192.0.0.0", AB_ADDR_IETF_PROTOCOL, P },
	{ "192.0.0.8", AB_ADDR_IETF_PROTOCOL, P },
	{ "192.0.0.9", AB_ADDR_IETF_PROTOCOL, P },
	{ "192.0.0.170", AB_ADDR_IETF_PROTOCOL, P },
	{ "192.0.0.255", AB_ADDR_IETF_PROTOCOL, P },
	{ "192.0.2.0", AB_ADDR_DOCUMENTATION, P },
	{ "192.0.2.1", AB_ADDR_DOCUMENTATION, P },
	{ "192.0.2.255", AB_ADDR_DOCUMENTATION, P },
	{ "198.51.100.0", AB_ADDR_DOCUMENTATION, P },
	{ "198.51.100.7", AB_ADDR_DOCUMENTATION, P },
	{ "203.0.113.1", AB_ADDR_DOCUMENTATION, P },
	{ "203.0.113.255", AB_ADDR_DOCUMENTATION, P },
	{ "192.88.99.0", AB_ADDR_6TO4_RELAY, P },
	{ "192.88.99.1", AB_ADDR_6TO4_RELAY, P },
	{ "192.88.99.255", AB_ADDR_6TO4_RELAY, P },
	{ "198.18.0.0", AB_ADDR_BENCHMARK, P },
	{ "198.18.0.1", AB_ADDR_BENCHMARK, P },
	{ "198.19.255.255", AB_ADDR_BENCHMARK, P },
	{ "224.0.0.0", AB_ADDR_MULTICAST, P },
	{ "224.0.0.1", AB_ADDR_MULTICAST, P },
	{ "239.255.255.250", AB_ADDR_MULTICAST, P },
	{ "239.255.255.255", AB_ADDR_MULTICAST, P },
	{ "240.0.0.0", AB_ADDR_RESERVED, P },
	{ "250.1.2.3", AB_ADDR_RESERVED, P },
	{ "255.255.255.254", AB_ADDR_RESERVED, P },
	{ "255.255.255.255", AB_ADDR_BROADCAST, LL | P },

	/* IPv6 global unicast */
	{ "2606:4700::1111", AB_ADDR_GLOBAL, 0 },
	{ "2606:4700:4700::1111", AB_ADDR_GLOBAL, 0 },
	{ "2001:4860:4860::8888", AB_ADDR_GLOBAL, 0 },
	{ "2001:4860:4860::8844", AB_ADDR_GLOBAL, 0 },
	{ "2a00:1450:4001:80b::200e", AB_ADDR_GLOBAL, 0 },
	{ "2620:fe::fe", AB_ADDR_GLOBAL, 0 },
	{ "2000::", AB_ADDR_GLOBAL, 0 },
	{ "2000::1", AB_ADDR_GLOBAL, 0 },
	{ "2001:200::1", AB_ADDR_GLOBAL, 0 },
	{ "2001:db7:ffff::1", AB_ADDR_GLOBAL, 0 },
	{ "2001:db9::1", AB_ADDR_GLOBAL, 0 },
	{ "2001:4860::400:5efe:7f00:1", AB_ADDR_GLOBAL, 0 }, /* not an ISATAP id */
	{ "2001:4860::5eff:7f00:1", AB_ADDR_GLOBAL, 0 },
	{ "2003::1", AB_ADDR_GLOBAL, 0 },
	{ "2001:ffff::1", AB_ADDR_GLOBAL, 0 },
	{ "3fff:1000::1", AB_ADDR_GLOBAL, 0 },
	{ "3fff:ffff::1", AB_ADDR_GLOBAL, 0 },
	{ "3ffe::1", AB_ADDR_GLOBAL, 0 },
	{ "3fff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AB_ADDR_GLOBAL, 0 },
	/* unspecified, loopback */
	{ "::", AB_ADDR_UNSPECIFIED, L | P },
	{ "::1", AB_ADDR_LOOPBACK, L },
	/* IPv4-mapped: the embedded address decides */
	{ "::ffff:127.0.0.1", AB_ADDR_LOOPBACK, L },
	{ "::ffff:7f00:1", AB_ADDR_LOOPBACK, L },
	{ "::ffff:127.255.255.255", AB_ADDR_LOOPBACK, L },
	{ "::ffff:0.0.0.0", AB_ADDR_UNSPECIFIED, L | P },
	{ "::ffff:10.0.0.1", AB_ADDR_PRIVATE, P },
	{ "::ffff:a00:1", AB_ADDR_PRIVATE, P },
	{ "::ffff:192.168.1.1", AB_ADDR_PRIVATE, P },
	{ "::ffff:100.64.0.1", AB_ADDR_CGNAT, P },
	{ "::ffff:169.254.169.254", AB_ADDR_METADATA, M | LL },
	{ "::ffff:a9fe:a9fe", AB_ADDR_METADATA, M | LL },
	{ "::ffff:169.254.1.1", AB_ADDR_LINK_LOCAL, LL },
	{ "::ffff:255.255.255.255", AB_ADDR_BROADCAST, LL | P },
	{ "::ffff:224.0.0.1", AB_ADDR_MULTICAST, P },
	{ "::ffff:8.8.8.8", AB_ADDR_IPV4_MAPPED, P },
	{ "::ffff:1.1.1.1", AB_ADDR_IPV4_MAPPED, P },
	/* IPv4-compatible (deprecated) */
	{ "::127.0.0.1", AB_ADDR_LOOPBACK, L },
	{ "::7f00:1", AB_ADDR_LOOPBACK, L },
	{ "::10.0.0.1", AB_ADDR_PRIVATE, P },
	{ "::169.254.169.254", AB_ADDR_METADATA, M | LL },
	{ "::0.0.0.2", AB_ADDR_UNSPECIFIED, L | P },
	{ "::2:1", AB_ADDR_UNSPECIFIED, L | P },
	{ "::8.8.8.8", AB_ADDR_IPV4_COMPAT, P },
	/* NAT64 well-known and local-use prefixes */
	{ "64:ff9b::8.8.8.8", AB_ADDR_NAT64, P },
	{ "64:ff9b::808:808", AB_ADDR_NAT64, P },
	{ "64:ff9b::127.0.0.1", AB_ADDR_LOOPBACK, L | P },
	{ "64:ff9b::7f00:1", AB_ADDR_LOOPBACK, L | P },
	{ "64:ff9b::169.254.169.254", AB_ADDR_METADATA, M | LL | P },
	{ "64:ff9b::a9fe:a9fe", AB_ADDR_METADATA, M | LL | P },
	{ "64:ff9b::10.0.0.1", AB_ADDR_PRIVATE, P },
	{ "64:ff9b::100.100.100.200", AB_ADDR_METADATA, M | P },
	{ "64:ff9b::0.0.0.0", AB_ADDR_UNSPECIFIED, L | P },
	{ "64:ff9b:1::8.8.8.8", AB_ADDR_NAT64, P },
	{ "64:ff9b:1::a9fe:a9fe", AB_ADDR_METADATA, M | LL | P },
	{ "64:ff9b:1:a9fe:a9:fe00::", AB_ADDR_METADATA, M | LL | P }, /* /48 layout */
	{ "64:ff9b:1:7f:0:1::", AB_ADDR_LOOPBACK, L | P },            /* /56 layout */
	{ "64:ff9b:1:0:a:0:100:0", AB_ADDR_PRIVATE, P },              /* /64 layout of 10.0.0.1 */
	{ "64:ff9b:1:808:8:800::", AB_ADDR_NAT64, P },                /* /48 layout of 8.8.8.8 */
	{ "64:ff9b:1:ffff::808:808", AB_ADDR_NAT64, P },
	{ "64:ff9b:1:ffff::1", AB_ADDR_UNSPECIFIED, L | P }, /* /96 layout: 0.0.0.1 */
	{ "64:ff9a::1", AB_ADDR_RESERVED, P },
	{ "64:ff9b:2::1", AB_ADDR_RESERVED, P },
	{ "64:ff9b::1:0:0:1", AB_ADDR_RESERVED, P },
	/* 6to4 */
	{ "2002:7f00:1::", AB_ADDR_LOOPBACK, L | P },
	{ "2002:7f00:1::1", AB_ADDR_LOOPBACK, L | P },
	{ "2002:a9fe:a9fe::1", AB_ADDR_METADATA, M | LL | P },
	{ "2002:a00:1::1", AB_ADDR_PRIVATE, P },
	{ "2002:c000:204::1", AB_ADDR_DOCUMENTATION, P },
	{ "2002::", AB_ADDR_UNSPECIFIED, L | P },
	{ "2002:808:808::1", AB_ADDR_6TO4, P },
	{ "2002:ffff:ffff::1", AB_ADDR_BROADCAST, LL | P },
	/* Teredo: server in bytes 4-7, client obfuscated in the last 32 bits */
	{ "2001:0:4136:e378:8000:63bf:3fff:fdd2", AB_ADDR_DOCUMENTATION,
	  P }, /* RFC 4380 example: 192.0.2.45 */
	{ "2001:0:808:808::80ff:fffe", AB_ADDR_LOOPBACK, L | P },
	{ "2001:0:808:808::5601:5601", AB_ADDR_METADATA, M | LL | P },
	{ "2001:0:a00:1::f7f7:f7f7", AB_ADDR_PRIVATE, P },
	{ "2001:0:808:808::f7f7:f7f7", AB_ADDR_TEREDO, P },
	/* client ~0.0.0.1 = 255.255.255.254 (reserved), server 0.0.0.0 */
	{ "2001::1", AB_ADDR_RESERVED, L | P },
	/* IETF protocol assignments 2001::/23 and its sub-blocks */
	{ "2001:1::1", AB_ADDR_IETF_PROTOCOL, P },
	{ "2001:3::1", AB_ADDR_IETF_PROTOCOL, P },
	{ "2001:1ff:ffff::1", AB_ADDR_IETF_PROTOCOL, P },
	{ "2001:2::", AB_ADDR_BENCHMARK, P },
	{ "2001:2::1", AB_ADDR_BENCHMARK, P },
	{ "2001:2:0:ffff::1", AB_ADDR_BENCHMARK, P },
	{ "2001:2:1::1", AB_ADDR_IETF_PROTOCOL, P },
	{ "2001:10::1", AB_ADDR_ORCHID, P },
	{ "2001:1f:ffff::1", AB_ADDR_ORCHID, P },
	{ "2001:20::1", AB_ADDR_ORCHID, P },
	{ "2001:2f:ffff::1", AB_ADDR_ORCHID, P },
	{ "2001:30::1", AB_ADDR_IETF_PROTOCOL, P },
	/* documentation */
	{ "2001:db8::", AB_ADDR_DOCUMENTATION, P },
	{ "2001:db8::1", AB_ADDR_DOCUMENTATION, P },
	{ "2001:db8:ffff:ffff:ffff:ffff:ffff:ffff", AB_ADDR_DOCUMENTATION, P },
	{ "3fff::1", AB_ADDR_DOCUMENTATION, P },
	{ "3fff:fff:ffff::1", AB_ADDR_DOCUMENTATION, P },
	/* discard */
	{ "100::", AB_ADDR_DISCARD, P },
	{ "100::1", AB_ADDR_DISCARD, P },
	{ "100::ffff:ffff:ffff:ffff", AB_ADDR_DISCARD, P },
	{ "100:0:0:1::1", AB_ADDR_RESERVED, P },
	/* unique local, with the metadata endpoints inside */
	{ "fc00::", AB_ADDR_UNIQUE_LOCAL, P },
	{ "fc00::1", AB_ADDR_UNIQUE_LOCAL, P },
	{ "fd00::1", AB_ADDR_UNIQUE_LOCAL, P },
	{ "fd12:3456:789a::1", AB_ADDR_UNIQUE_LOCAL, P },
	{ "fdff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AB_ADDR_UNIQUE_LOCAL, P },
	{ "fd00:ec2::253", AB_ADDR_UNIQUE_LOCAL, P },
	{ "fd00:ec2::254", AB_ADDR_METADATA, M | P },
	{ "fd00:ec2::23", AB_ADDR_METADATA, M | P },
	{ "fd20:ce::254", AB_ADDR_METADATA, M | P },
	{ "fd00:42::42", AB_ADDR_METADATA, M | P },
	/* link-local, site-local, multicast */
	{ "fe80::", AB_ADDR_LINK_LOCAL, LL },
	{ "fe80::1", AB_ADDR_LINK_LOCAL, LL },
	{ "fe80::1:2:3:4", AB_ADDR_LINK_LOCAL, LL },
	{ "febf:ffff::1", AB_ADDR_LINK_LOCAL, LL },
	{ "fec0::", AB_ADDR_SITE_LOCAL, P },
	{ "fec0::1", AB_ADDR_SITE_LOCAL, P },
	{ "feff:ffff::1", AB_ADDR_SITE_LOCAL, P },
	{ "ff00::", AB_ADDR_MULTICAST, P },
	{ "ff02::1", AB_ADDR_MULTICAST, P },
	{ "ff05::2", AB_ADDR_MULTICAST, P },
	{ "ff0e::1", AB_ADDR_MULTICAST, P },
	{ "ffff:ffff:ffff:ffff:ffff:ffff:ffff:ffff", AB_ADDR_MULTICAST, P },
	/* outside 2000::/3 and every special block: reserved */
	{ "1::1", AB_ADDR_RESERVED, P },
	{ "1fff:ffff::1", AB_ADDR_RESERVED, P },
	{ "4000::1", AB_ADDR_RESERVED, P },
	{ "8000::1", AB_ADDR_RESERVED, P },
	{ "e000::1", AB_ADDR_RESERVED, P },
	{ "fb00::1", AB_ADDR_RESERVED, P },
	{ "fe00::1", AB_ADDR_RESERVED, P },
	{ "::1:0:0:1", AB_ADDR_RESERVED, P },
	{ "::ffff:0:127.0.0.1", AB_ADDR_RESERVED, P },
	{ "5f00::1", AB_ADDR_RESERVED, P },
	/* ISATAP interface ids, under any prefix */
	{ "::5efe:a00:1", AB_ADDR_PRIVATE, P },
	{ "::5efe:10.0.0.1", AB_ADDR_PRIVATE, P },
	{ "::200:5efe:7f00:1", AB_ADDR_LOOPBACK, L | P },
	{ "fe80::5efe:a00:1", AB_ADDR_PRIVATE, LL | P },
	{ "fe80::200:5efe:a9fe:a9fe", AB_ADDR_METADATA, M | LL | P },
	{ "fe80::5efe:808:808", AB_ADDR_LINK_LOCAL, LL | P },
	{ "2001:4860::5efe:808:808", AB_ADDR_ISATAP, P },
	{ "2001:4860::200:5efe:808:808", AB_ADDR_ISATAP, P },
	{ "2001:4860::200:5efe:7f00:1", AB_ADDR_LOOPBACK, L | P },
	{ "2001:4860::300:5efe:7f00:1", AB_ADDR_LOOPBACK, L | P },
	{ "2001:4860::100:5efe:a9fe:a9fe", AB_ADDR_METADATA, M | LL | P },
	{ "2600::5efe:c0a8:101", AB_ADDR_PRIVATE, P },
};

static void
check_class_row (const struct class_row_s *row)
{
	struct ab_addr_s a = addr (row->addr);
	struct ab_addr_info_s info;

	ab_addr_classify_info (&a, &info);
	if (info.cls != row->cls)
		fail_msg ("%s: class %s, expected %s", row->addr, ab_addr_class_name (info.cls),
		          ab_addr_class_name (row->cls));
	if (info.groups != row->groups)
		fail_msg ("%s: groups %#x, expected %#x", row->addr, info.groups, row->groups);
	assert_int_equal (ab_addr_classify (&a), row->cls);
	assert_non_null (info.rfc);
	/* Every non-global class is denied with all four groups on. */
	assert_true ((row->cls == AB_ADDR_GLOBAL) == (info.groups == 0));
}

static void
test_classify (void **state)
{
	for (size_t i = 0; i < N (class_rows); i++)
		check_class_row (&class_rows[i]);
}

/* Embedded-address details for the translation forms. */
static const struct {
	const char *addr;
	ab_addr_form form;
	const char *embedded;
} embedded_rows[] = {
	{ "::ffff:127.0.0.1", AB_ADDR_FORM_MAPPED, "127.0.0.1" },
	{ "::ffff:8.8.8.8", AB_ADDR_FORM_MAPPED, "8.8.8.8" },
	{ "::127.0.0.1", AB_ADDR_FORM_COMPAT, "127.0.0.1" },
	{ "64:ff9b::a9fe:a9fe", AB_ADDR_FORM_NAT64, "169.254.169.254" },
	{ "64:ff9b:1:a9fe:a9:fe00::", AB_ADDR_FORM_NAT64, "169.254.169.254" },
	{ "2002:7f00:1::", AB_ADDR_FORM_6TO4, "127.0.0.1" },
	{ "2001:0:4136:e378:8000:63bf:3fff:fdd2", AB_ADDR_FORM_TEREDO, "192.0.2.45" },
	{ "2001:0:a00:1::f7f7:f7f7", AB_ADDR_FORM_TEREDO, "10.0.0.1" },
	{ "::5efe:a00:1", AB_ADDR_FORM_ISATAP, "10.0.0.1" },
	{ "2001:4860::5efe:808:808", AB_ADDR_FORM_ISATAP, "8.8.8.8" },
};

static void
test_embedded (void **state)
{
	for (size_t i = 0; i < N (embedded_rows); i++) {
		struct ab_addr_s a = addr (embedded_rows[i].addr);
		struct ab_addr_info_s info;
		char buf[AB_ADDR_STRLEN];

		ab_addr_classify_info (&a, &info);
		assert_true (info.has_embedded);
		if (info.form != embedded_rows[i].form)
			fail_msg ("%s: form %d, expected %d", embedded_rows[i].addr, info.form,
			          embedded_rows[i].form);
		assert_string_equal (ab_addr_format (&info.embedded, buf),
		                     embedded_rows[i].embedded);
	}
	{
		struct ab_addr_s a = addr ("8.8.8.8");
		struct ab_addr_info_s info;
		ab_addr_classify_info (&a, &info);
		assert_false (info.has_embedded);
		assert_int_equal (info.form, AB_ADDR_FORM_PLAIN);
	}
}

static void
test_sockaddr (void **state)
{
	struct sockaddr_storage ss;
	struct ab_addr_s a = addr ("169.254.169.254"), back;
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	socklen_t len;

	len = ab_addr_to_sockaddr (&a, 80, &ss);
	assert_int_equal (len, sizeof (struct sockaddr_in));
	assert_int_equal (ntohs (((struct sockaddr_in *)&ss)->sin_port), 80);
	assert_int_equal (ab_addr_classify_sockaddr ((struct sockaddr *)&ss), AB_ADDR_METADATA);
	assert_int_equal (ab_addr_from_sockaddr ((struct sockaddr *)&ss, &back), 0);
	assert_true (ab_addr_equal (&a, &back));

	a = addr ("::1");
	len = ab_addr_to_sockaddr (&a, 443, &ss);
	assert_int_equal (len, sizeof (struct sockaddr_in6));
	assert_int_equal (ab_addr_classify_sockaddr ((struct sockaddr *)&ss), AB_ADDR_LOOPBACK);

	assert_int_equal (ab_addr_from_sockaddr ((struct sockaddr *)&un, &back), -1);
	assert_int_equal (ab_addr_classify_sockaddr ((struct sockaddr *)&un), AB_ADDR_RESERVED);
}

static void
test_groups (void **state)
{
	char buf[AB_ADDR_GROUPS_STRLEN];

	assert_string_equal (ab_addr_groups_format (AB_ADDR_GROUPS_ALL, buf),
	                     "loopback,private,link-local,metadata");
	assert_string_equal (ab_addr_groups_format (0, buf), "");
	assert_string_equal (ab_addr_groups_format (L | M, buf), "loopback,metadata");
	assert_int_equal (ab_addr_group_parse ("loopback"), L);
	assert_int_equal (ab_addr_group_parse ("private"), P);
	assert_int_equal (ab_addr_group_parse ("link-local"), LL);
	assert_int_equal (ab_addr_group_parse ("metadata"), M);
	assert_int_equal (ab_addr_group_parse ("all"), AB_ADDR_GROUPS_ALL);
	assert_int_equal (ab_addr_group_parse ("Loopback"), 0);
	assert_int_equal (ab_addr_group_parse ("link_local"), 0);
	assert_int_equal (ab_addr_group_parse (""), 0);
	/* Every class but GLOBAL belongs to at least one group. */
	for (int c = 0; c < AB_ADDR_CLASS_COUNT; c++) {
		assert_non_null (ab_addr_class_name ((ab_addr_class)c));
		assert_true ((c == AB_ADDR_GLOBAL)
		             == (ab_addr_class_groups ((ab_addr_class)c) == 0));
	}
}

/* The one system call: whatever the host has, loopback is among it and
 * every entry is IPv4 or IPv6. */
static void
test_local_addrs (void **state)
{
	struct ab_addr_s *list = NULL;
	size_t n = 0;
	ab_error_t err = AB_ERROR_INIT;
	bool saw_loopback = false;

	assert_int_equal (ab_addr_list_local (&list, &n, &err), 0);
	for (size_t i = 0; i < n; i++) {
		assert_true (list[i].family == AF_INET || list[i].family == AF_INET6);
		if (ab_addr_classify (&list[i]) == AB_ADDR_LOOPBACK)
			saw_loopback = true;
	}
	assert_true (saw_loopback);
	free (list);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_literals),    cmocka_unit_test (test_ipv4_matches_inet_pton),
		cmocka_unit_test (test_cidr_parse),  cmocka_unit_test (test_cidr_contains),
		cmocka_unit_test (test_classify),    cmocka_unit_test (test_embedded),
		cmocka_unit_test (test_sockaddr),    cmocka_unit_test (test_groups),
		cmocka_unit_test (test_local_addrs),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
