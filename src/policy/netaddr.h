/* IP addresses for the egress policy: strict literal parsing, CIDR blocks,
 * and the classifier that maps every special-purpose range of SECURITY.md to
 * a class and to the deny groups behind the proxy's four flags.
 *
 * Everything here is pure (no system call): inet_pton/inet_ntop are only
 * used for IPv6 text, and IPv4 text is parsed by our own strict
 * dotted-quad reader so the rules do not depend on the libc. */
#ifndef AB_POLICY_NETADDR_H
#define AB_POLICY_NETADDR_H

#include <netinet/in.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/socket.h>

#include "base/error.h"

/* An IPv4 or IPv6 address, without port or zone.  IPv4 uses bytes[0..3]
 * (network order); the rest is zero so two equal addresses compare equal
 * with memcmp. */
struct ab_addr_s {
	int family; /* AF_INET or AF_INET6 */
	uint8_t bytes[16];
};

/* Big enough for any text ab_addr_format writes (INET6_ADDRSTRLEN). */
#define AB_ADDR_STRLEN 46

/* Parse a literal: canonical dotted-quad IPv4 ("127.0.0.1"; no leading
 * zeros, exactly four decimal parts 0-255) or IPv6 without brackets and
 * without a zone id.  Case-insensitive hex.  Returns 0 or a negative
 * AB_E_INVALID error. */
int ab_addr_parse (const char *text, struct ab_addr_s *out, ab_error_t *err);

/* Same, but only IPv4 (canonical dotted quad) resp. only IPv6. */
bool ab_addr_parse_ipv4 (const char *text, size_t len, struct ab_addr_s *out);
bool ab_addr_parse_ipv6 (const char *text, size_t len, struct ab_addr_s *out);

/* Canonical text (inet_ntop: "127.0.0.1", "::1", "::ffff:127.0.0.1");
 * returns buf. */
const char *ab_addr_format (const struct ab_addr_s *a, char buf[AB_ADDR_STRLEN]);

bool ab_addr_equal (const struct ab_addr_s *a, const struct ab_addr_s *b);

/* sockaddr_in / sockaddr_in6 <-> ab_addr_s.  from_sockaddr fails (-1) for
 * any other family; the port and the IPv6 scope id are not kept. */
int ab_addr_from_sockaddr (const struct sockaddr *sa, struct ab_addr_s *out);
socklen_t ab_addr_to_sockaddr (const struct ab_addr_s *a, uint16_t port,
                               struct sockaddr_storage *out);

/* A CIDR block.  Parsing is strict: "ADDR/LEN" with a canonical literal as
 * above, LEN decimal without leading zeros and at most 32 (IPv4) or 128
 * (IPv6), and no host bits set ("10.0.0.1/8" is refused: it is almost
 * always a typo for 10.0.0.1/32 or 10.0.0.0/8).  A block matches only
 * addresses of its own family: 127.0.0.0/8 does not match ::ffff:127.0.0.1. */
struct ab_cidr_s {
	struct ab_addr_s addr;
	unsigned prefix_len;
};

int ab_cidr_parse (const char *text, struct ab_cidr_s *out, ab_error_t *err);
bool ab_cidr_contains (const struct ab_cidr_s *c, const struct ab_addr_s *a);
/* "10.0.0.0/8"; buf needs AB_ADDR_STRLEN + 4 bytes. */
#define AB_CIDR_STRLEN (AB_ADDR_STRLEN + 4)
const char *ab_cidr_format (const struct ab_cidr_s *c, char buf[AB_CIDR_STRLEN]);

/* Address classes.  GLOBAL is ordinary global unicast (IPv4 outside every
 * special range; IPv6 inside 2000::/3 outside every special range); every
 * other class is denied by at least one of the four groups below.  The
 * ranges and their RFCs are in one table in addr-class.c. */
typedef enum {
	AB_ADDR_GLOBAL = 0,
	AB_ADDR_UNSPECIFIED,     /* 0.0.0.0/8, :: */
	AB_ADDR_LOOPBACK,        /* 127/8, ::1 */
	AB_ADDR_PRIVATE,         /* 10/8, 172.16/12, 192.168/16 */
	AB_ADDR_CGNAT,           /* 100.64/10 */
	AB_ADDR_LINK_LOCAL,      /* 169.254/16, fe80::/10 */
	AB_ADDR_METADATA,        /* cloud instance metadata endpoints */
	AB_ADDR_UNIQUE_LOCAL,    /* fc00::/7 */
	AB_ADDR_SITE_LOCAL,      /* fec0::/10 (deprecated) */
	AB_ADDR_DOCUMENTATION,   /* TEST-NET-1/2/3, 2001:db8::/32, 3fff::/20 */
	AB_ADDR_BENCHMARK,       /* 198.18/15, 2001:2::/48 */
	AB_ADDR_IETF_PROTOCOL,   /* 192.0.0/24 */
	AB_ADDR_6TO4_RELAY,      /* 192.88.99/24 */
	AB_ADDR_MULTICAST,       /* 224/4, ff00::/8 */
	AB_ADDR_RESERVED,        /* 240/4; IPv6 outside 2000::/3 */
	AB_ADDR_BROADCAST,       /* 255.255.255.255 */
	AB_ADDR_DISCARD,         /* 100::/64 */
	AB_ADDR_ORCHID,          /* 2001:10::/28, 2001:20::/28 */
	AB_ADDR_IPV4_MAPPED,     /* ::ffff:0:0/96 embedding a global IPv4 */
	AB_ADDR_IPV4_COMPAT,     /* ::/96 embedding a global IPv4 */
	AB_ADDR_NAT64,           /* 64:ff9b::/96, 64:ff9b:1::/48 */
	AB_ADDR_6TO4,            /* 2002::/16 */
	AB_ADDR_TEREDO,          /* 2001::/32 */
	AB_ADDR_ISATAP,          /* interface id 0[0-3]00:5efe:a.b.c.d */
	AB_ADDR_LOCAL_INTERFACE, /* an address of the host's own interfaces */
	AB_ADDR_CLASS_COUNT,
} ab_addr_class;

/* Deny groups: the standalone proxy's --deny-loopback, --deny-private,
 * --deny-link-local and --deny-metadata.  Each class belongs to one or more
 * groups (docs/egress-policy.md has the full mapping):
 *   loopback:   loopback, unspecified, the host's own interface addresses
 *   link-local: link-local (incl. 169.254 metadata), broadcast
 *   metadata:   the metadata endpoints, wherever they live
 *   private:    every other non-global class (RFC 1918, CGNAT, ULA,
 *               site-local, documentation, benchmarking, IETF, 6to4 relay,
 *               multicast, reserved, discard, ORCHID, unspecified,
 *               and every translation form: mapped, compatible, NAT64,
 *               6to4, Teredo, ISATAP)
 * With all four on, every class but GLOBAL is denied. */
enum {
	AB_ADDR_GROUP_LOOPBACK = 1u << 0,
	AB_ADDR_GROUP_PRIVATE = 1u << 1,
	AB_ADDR_GROUP_LINK_LOCAL = 1u << 2,
	AB_ADDR_GROUP_METADATA = 1u << 3,
	AB_ADDR_GROUPS_ALL = (1u << 4) - 1,
};

/* Translation forms: IPv6 addresses that carry an IPv4 address. */
typedef enum {
	AB_ADDR_FORM_PLAIN = 0,
	AB_ADDR_FORM_MAPPED, /* ::ffff:a.b.c.d, RFC 4291 2.5.5.2 */
	AB_ADDR_FORM_COMPAT, /* ::a.b.c.d, RFC 4291 2.5.5.1 */
	AB_ADDR_FORM_NAT64,  /* RFC 6052, RFC 8215 */
	AB_ADDR_FORM_6TO4,   /* RFC 3056 */
	AB_ADDR_FORM_TEREDO, /* RFC 4380 */
	AB_ADDR_FORM_ISATAP, /* RFC 5214 */
} ab_addr_form;

struct ab_addr_info_s {
	ab_addr_class cls; /* the class that decides (see below) */
	unsigned groups;   /* AB_ADDR_GROUP_* bits: deny if any is denied */
	const char *rfc;   /* reference of the deciding table row */
	ab_addr_form form;
	bool has_embedded;
	struct ab_addr_s embedded; /* the (first non-global) embedded IPv4 */
};

/* Classify an address.  For a translation form, the embedded IPv4 is
 * classified too: when it is not GLOBAL, its class is reported (so
 * ::ffff:127.0.0.1 is LOOPBACK and 64:ff9b::169.254.169.254 is METADATA)
 * and its groups are added; when it is GLOBAL, the translation form's own
 * class is reported (::ffff:8.8.8.8 is IPV4_MAPPED, in the private group).
 * Mapped and compatible forms add no group of their own when the embedded
 * address is non-global (they are another spelling of the same
 * destination); NAT64, 6to4, Teredo and ISATAP always add the private
 * group (they cross a translator or tunnel we cannot see). */
void ab_addr_classify_info (const struct ab_addr_s *a, struct ab_addr_info_s *out);
ab_addr_class ab_addr_classify (const struct ab_addr_s *a);
/* AB_ADDR_RESERVED for a family other than AF_INET/AF_INET6. */
ab_addr_class ab_addr_classify_sockaddr (const struct sockaddr *sa);

/* "loopback", "private", "link-local", "metadata", "CGNAT",
 * "IPv4-mapped", ...: used in verdict reasons ("<name> address <addr>"). */
const char *ab_addr_class_name (ab_addr_class cls);
/* The groups of a class when it is not refined by a more specific row
 * (metadata rows add the group of their enclosing range). */
unsigned ab_addr_class_groups (ab_addr_class cls);

/* Group names: "loopback", "private", "link-local", "metadata". */
const char *ab_addr_group_name (unsigned group_bit);
/* Parse one group name (or "all"); returns the bits or 0 if unknown. */
unsigned ab_addr_group_parse (const char *name);
/* "loopback,private,link-local,metadata" for the bits set (in that order),
 * "" for none.  buf needs AB_ADDR_GROUPS_STRLEN bytes. */
#define AB_ADDR_GROUPS_STRLEN 48
const char *ab_addr_groups_format (unsigned groups, char buf[AB_ADDR_GROUPS_STRLEN]);

/* The host's own interface addresses (getifaddrs; the one system call of
 * this layer, in local-addrs.c).  *out is xmalloc'ed; free it. */
int ab_addr_list_local (struct ab_addr_s **out, size_t *n_out, ab_error_t *err);
/* Whether a is one of the host's interface addresses now: a process-wide
 * list, read again whenever the kernel reports an address change (a
 * netlink socket, drained without blocking at each call), so an address
 * added after start counts at once.  False when the list cannot be read
 * (err says why; the policy's other checks still hold). */
bool ab_addr_is_host_local (const struct ab_addr_s *a, ab_error_t *err);

#endif
