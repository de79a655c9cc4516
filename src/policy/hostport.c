/* Authority parsing and host normalisation (SECURITY.md, the network
 * edge): one canonical spelling per host, so that allow and deny lists
 * cannot be sidestepped by case, a trailing dot, brackets or an exotic IPv4
 * spelling, and nothing numeric but a canonical dotted quad ever reaches
 * the resolver. */
#include "policy/hostname.h"

#include <string.h>

#define DNS_LABEL_MAX   63
#define PORT_DIGITS_MAX 5

static int
invalid (ab_error_t *err, const char *reason)
{
	return ab_error (err, 0, AB_E_INVALID, "%s", reason);
}

static bool
has_non_ascii (const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)s[i] >= 0x80)
			return true;
	return false;
}

static bool
all_of (const char *s, size_t len, const char *set)
{
	for (size_t i = 0; i < len; i++)
		if (!s[i] || !strchr (set, s[i]))
			return false;
	return true;
}

/* WHATWG URL "ends in a number" and inet_aton agree that a host whose last
 * label is decimal or 0x-hex is an IPv4 attempt ("127.1", "0x7f.1",
 * "2130706433", "foo.0x10").  No real TLD is numeric (RFC 3696 2). */
static bool
ends_in_number (const char *name, size_t len)
{
	const char *dot = memrchr (name, '.', len);
	const char *last = dot ? dot + 1 : name;
	size_t n = len - (size_t)(last - name);

	if (n == 0)
		return false;
	if (all_of (last, n, "0123456789"))
		return true;
	return n >= 2 && last[0] == '0' && (last[1] == 'x' || last[1] == 'X')
	       && all_of (last + 2, n - 2, "0123456789abcdefABCDEF");
}

/* Labels of 1..63 letters, digits, '-' or '_' (RFC 1035 2.3.4 lengths;
 * '_' is common in real names such as _dmarc, so it is kept). */
static bool
valid_labels (const char *name, size_t len)
{
	size_t label = 0;

	for (size_t i = 0; i < len; i++) {
		char c = name[i];
		if (c == '.') {
			if (label == 0)
				return false;
			label = 0;
			continue;
		}
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' || c == '_'))
			return false;
		if (++label > DNS_LABEL_MAX)
			return false;
	}
	return label > 0;
}

static int
normalise_ipv6 (const char *s, size_t len, struct ab_hostport_s *out, ab_error_t *err)
{
	if (memchr (s, '%', len))
		return invalid (err, "zone identifiers are not allowed");
	if (has_non_ascii (s, len))
		return invalid (err, "non-ASCII host");
	if (!ab_addr_parse_ipv6 (s, len, &out->addr))
		return invalid (err, "invalid IPv6 address");
	out->kind = AB_HOST_IPV6;
	ab_addr_format (&out->addr, out->host);
	return 0;
}

static int
normalise_name (const char *s, size_t len, struct ab_hostport_s *out, ab_error_t *err)
{
	bool trailing_dot = false;

	if (has_non_ascii (s, len))
		return invalid (err, "non-ASCII host");
	if (len > 1 && s[len - 1] == '.') {
		trailing_dot = true;
		len--;
	}
	if (len > AB_HOST_MAX)
		return invalid (err, "host too long");
	for (size_t i = 0; i < len; i++) {
		char c = s[i];
		out->host[i] = (c >= 'A' && c <= 'Z') ? (char)(c - 'A' + 'a') : c;
	}
	out->host[len] = '\0';
	if (!valid_labels (out->host, len))
		return invalid (err, "invalid host");
	if (ends_in_number (out->host, len)) {
		/* "127.0.0.1." is refused too: a resolver would take it as a name
		 * and inet_aton as an address; we want exactly one reading. */
		if (trailing_dot || !ab_addr_parse_ipv4 (out->host, len, &out->addr))
			return invalid (err, "non-canonical IPv4 address");
		out->kind = AB_HOST_IPV4;
		return 0;
	}
	out->kind = AB_HOST_NAME;
	return 0;
}

int
ab_host_normalise (const char *host, size_t len, struct ab_hostport_s *out, ab_error_t *err)
{
	memset (out, 0, sizeof *out);
	if (len == 0)
		return invalid (err, "empty host");
	if (memchr (host, '\0', len))
		return invalid (err, "invalid host");
	if (host[0] == '[') {
		if (len < 2 || host[len - 1] != ']')
			return invalid (err, "invalid host");
		return normalise_ipv6 (host + 1, len - 2, out, err);
	}
	if (memchr (host, ':', len))
		return normalise_ipv6 (host, len, out, err);
	return normalise_name (host, len, out, err);
}

/* 1..5 decimal digits, value <= 65535.  Leading zeros are plain decimal
 * ("08" is 8, never octal); no sign, no space. */
static bool
parse_port (const char *s, uint16_t *out)
{
	size_t n = strlen (s);
	unsigned v = 0;

	if (n == 0 || n > PORT_DIGITS_MAX || !all_of (s, n, "0123456789"))
		return false;
	for (size_t i = 0; i < n; i++)
		v = v * 10 + (unsigned)(s[i] - '0');
	if (v > 65535)
		return false;
	*out = (uint16_t)v;
	return true;
}

/* Split "host:port" / "[v6]:port" / "host" / "[v6]"; *port_out is NULL
 * when there is no port. */
static int
split_authority (const char *a, size_t *host_len, const char **port_out, ab_error_t *err)
{
	const char *colon;

	*port_out = NULL;
	if (a[0] == '[') {
		const char *close = strchr (a, ']');
		if (!close)
			return invalid (err, memchr (a, '%', strlen (a))
			                             ? "zone identifiers are not allowed"
			                             : "invalid host");
		*host_len = (size_t)(close - a) + 1;
		if (close[1] == '\0')
			return 0;
		if (close[1] != ':')
			return invalid (err, "invalid host");
		*port_out = close + 2;
		return 0;
	}
	colon = strchr (a, ':');
	if (colon && strchr (colon + 1, ':')) {
		struct ab_addr_s ignored;
		const char *pct = strchr (a, '%');
		if (pct && ab_addr_parse_ipv6 (a, (size_t)(pct - a), &ignored))
			return invalid (err, "zone identifiers are not allowed");
		if (ab_addr_parse_ipv6 (a, strlen (a), &ignored))
			return invalid (err, "IPv6 address must be in brackets");
		return invalid (err, "invalid host");
	}
	*host_len = colon ? (size_t)(colon - a) : strlen (a);
	*port_out = colon ? colon + 1 : NULL;
	return 0;
}

int
ab_hostport_parse (const char *authority, uint16_t default_port, struct ab_hostport_s *out,
                   ab_error_t *err)
{
	const char *port = NULL;
	size_t host_len = 0;
	uint16_t port_value = default_port;

	memset (out, 0, sizeof *out);
	if (!authority || !authority[0])
		return invalid (err, "empty host");
	if (split_authority (authority, &host_len, &port, err) < 0)
		return -1;
	if (port && !parse_port (port, &port_value))
		return invalid (err, "invalid port");
	if (ab_host_normalise (authority, host_len, out, err) < 0)
		return -1;
	out->port = port_value;
	out->has_port = port != NULL;
	return 0;
}

int
ab_listen_parse (const char *text, const char *default_host, struct ab_hostport_s *out,
                 ab_error_t *err)
{
	const char *colon = text ? strrchr (text, ':') : NULL;
	uint16_t port;

	memset (out, 0, sizeof *out);
	if (!colon)
		return invalid (err, "expected HOST:PORT");
	if (!parse_port (colon + 1, &port))
		return invalid (err, "invalid port");
	if (colon == text && default_host) {
		if (ab_host_normalise (default_host, strlen (default_host), out, err) < 0)
			return -1;
	} else if (ab_host_normalise (text, (size_t)(colon - text), out, err) < 0)
		return -1;
	out->port = port;
	out->has_port = true;
	return 0;
}
