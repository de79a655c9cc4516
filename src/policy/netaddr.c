/* Strict IP literal parsing, formatting and CIDR blocks. */
#include "policy/netaddr.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <string.h>

/* Canonical dotted quad only: exactly four parts, each 1-3 decimal digits,
 * no leading zero ("0" itself is fine), value <= 255.  This is what
 * inet_pton(AF_INET) accepts on glibc; we do not depend on the libc for it
 * because inet_aton-style readers accept octal, hex and short forms
 * (CVE-2021-29921 in Python's ipaddress, CVE-2021-28918 in netmask). */
bool
ab_addr_parse_ipv4 (const char *text, size_t len, struct ab_addr_s *out)
{
	struct ab_addr_s a = { .family = AF_INET };
	size_t i = 0;

	for (int part = 0; part < 4; part++) {
		unsigned v = 0;
		size_t start = i;

		if (part > 0) {
			if (i >= len || text[i] != '.')
				return false;
			start = ++i;
		}
		while (i < len && text[i] >= '0' && text[i] <= '9' && i - start < 3)
			v = v * 10 + (unsigned)(text[i++] - '0');
		if (i == start || v > 255 || (text[start] == '0' && i - start > 1))
			return false;
		a.bytes[part] = (uint8_t)v;
	}
	if (i != len)
		return false;
	*out = a;
	return true;
}

/* IPv6 text as inet_pton reads it (RFC 4291 2.2, with an embedded dotted
 * quad that must itself be canonical).  A '%' zone id is not part of an
 * address: inet_pton refuses it and so do we. */
bool
ab_addr_parse_ipv6 (const char *text, size_t len, struct ab_addr_s *out)
{
	char buf[AB_ADDR_STRLEN];
	struct ab_addr_s a = { .family = AF_INET6 };

	if (len == 0 || len >= sizeof buf || memchr (text, '\0', len))
		return false;
	memcpy (buf, text, len);
	buf[len] = '\0';
	if (inet_pton (AF_INET6, buf, a.bytes) != 1)
		return false;
	*out = a;
	return true;
}

int
ab_addr_parse (const char *text, struct ab_addr_s *out, ab_error_t *err)
{
	size_t len = strlen (text);

	if (ab_addr_parse_ipv4 (text, len, out))
		return 0;
	if (memchr (text, ':', len) && ab_addr_parse_ipv6 (text, len, out))
		return 0;
	if (memchr (text, '%', len))
		return ab_error (err, 0, AB_E_INVALID,
		                 "invalid address '%s': zone identifiers are not allowed", text);
	return ab_error (err, 0, AB_E_INVALID, "invalid address '%s'", text);
}

const char *
ab_addr_format (const struct ab_addr_s *a, char buf[AB_ADDR_STRLEN])
{
	if ((a->family != AF_INET && a->family != AF_INET6)
	    || !inet_ntop (a->family, a->bytes, buf, AB_ADDR_STRLEN))
		snprintf (buf, AB_ADDR_STRLEN, "?");
	return buf;
}

bool
ab_addr_equal (const struct ab_addr_s *a, const struct ab_addr_s *b)
{
	return a->family == b->family && memcmp (a->bytes, b->bytes, sizeof a->bytes) == 0;
}

int
ab_addr_from_sockaddr (const struct sockaddr *sa, struct ab_addr_s *out)
{
	memset (out, 0, sizeof *out);
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *sin = (const struct sockaddr_in *)sa;
		out->family = AF_INET;
		memcpy (out->bytes, &sin->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *sin6 = (const struct sockaddr_in6 *)sa;
		out->family = AF_INET6;
		memcpy (out->bytes, &sin6->sin6_addr, 16);
		return 0;
	}
	return -1;
}

socklen_t
ab_addr_to_sockaddr (const struct ab_addr_s *a, uint16_t port, struct sockaddr_storage *out)
{
	memset (out, 0, sizeof *out);
	if (a->family == AF_INET) {
		struct sockaddr_in *sin = (struct sockaddr_in *)out;
		sin->sin_family = AF_INET;
		sin->sin_port = htons (port);
		memcpy (&sin->sin_addr, a->bytes, 4);
		return sizeof *sin;
	}
	struct sockaddr_in6 *sin6 = (struct sockaddr_in6 *)out;
	sin6->sin6_family = AF_INET6;
	sin6->sin6_port = htons (port);
	memcpy (&sin6->sin6_addr, a->bytes, 16);
	return sizeof *sin6;
}

static unsigned
family_bits (int family)
{
	return family == AF_INET ? 32 : 128;
}

/* Does a match b in the first n bits? */
static bool
prefix_equal (const uint8_t *a, const uint8_t *b, unsigned n)
{
	unsigned full = n / 8, rest = n % 8;

	if (memcmp (a, b, full) != 0)
		return false;
	if (rest == 0)
		return true;
	uint8_t mask = (uint8_t)(0xff00u >> rest);
	return ((a[full] ^ b[full]) & mask) == 0;
}

static bool
host_bits_zero (const struct ab_addr_s *a, unsigned prefix_len)
{
	unsigned bits = family_bits (a->family);

	for (unsigned i = prefix_len; i < bits; i++)
		if (a->bytes[i / 8] & (0x80u >> (i % 8)))
			return false;
	return true;
}

/* Prefix length: decimal, no sign, no leading zero, <= max. */
static bool
parse_prefix_len (const char *s, unsigned max, unsigned *out)
{
	unsigned v = 0;
	size_t n = strlen (s);

	if (n == 0 || n > 3 || (s[0] == '0' && n > 1))
		return false;
	for (size_t i = 0; i < n; i++) {
		if (s[i] < '0' || s[i] > '9')
			return false;
		v = v * 10 + (unsigned)(s[i] - '0');
	}
	if (v > max)
		return false;
	*out = v;
	return true;
}

int
ab_cidr_parse (const char *text, struct ab_cidr_s *out, ab_error_t *err)
{
	const char *slash = strchr (text, '/');
	struct ab_cidr_s c;
	ab_error_t ignored = AB_ERROR_INIT;
	char addr[AB_ADDR_STRLEN];
	size_t alen;

	if (!slash)
		return ab_error (err, 0, AB_E_INVALID,
		                 "invalid CIDR '%s': expected ADDRESS/PREFIX-LENGTH", text);
	alen = (size_t)(slash - text);
	if (alen == 0 || alen >= sizeof addr)
		return ab_error (err, 0, AB_E_INVALID, "invalid CIDR '%s': bad address", text);
	memcpy (addr, text, alen);
	addr[alen] = '\0';
	if (ab_addr_parse (addr, &c.addr, &ignored) < 0)
		return ab_error (err, 0, AB_E_INVALID, "invalid CIDR '%s': bad address", text);
	if (!parse_prefix_len (slash + 1, family_bits (c.addr.family), &c.prefix_len))
		return ab_error (err, 0, AB_E_INVALID, "invalid CIDR '%s': bad prefix length",
		                 text);
	if (!host_bits_zero (&c.addr, c.prefix_len))
		return ab_error (err, 0, AB_E_INVALID, "invalid CIDR '%s': host bits set", text);
	*out = c;
	return 0;
}

bool
ab_cidr_contains (const struct ab_cidr_s *c, const struct ab_addr_s *a)
{
	return c->addr.family == a->family && prefix_equal (c->addr.bytes, a->bytes, c->prefix_len);
}

const char *
ab_cidr_format (const struct ab_cidr_s *c, char buf[AB_CIDR_STRLEN])
{
	char a[AB_ADDR_STRLEN];

	snprintf (buf, AB_CIDR_STRLEN, "%s/%u", ab_addr_format (&c->addr, a), c->prefix_len);
	return buf;
}
