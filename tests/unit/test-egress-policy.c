/* Unit tests for the egress policy: authority parsing and host
 * normalisation, host patterns, the two modes' decisions, the four deny
 * groups, the host's own addresses, and policy files.  Table driven. */
#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>
#include <unistd.h>

#include <cmocka.h>

#include "policy/egress-policy.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

enum {
	L = AB_ADDR_GROUP_LOOPBACK,
	P = AB_ADDR_GROUP_PRIVATE,
	LL = AB_ADDR_GROUP_LINK_LOCAL,
	M = AB_ADDR_GROUP_METADATA,
	ALL = AB_ADDR_GROUPS_ALL,
};

/* ---- ab_hostport_parse ---- */

struct hp_row_s {
	const char *in;
	const char *host;  /* expected normalised host, or NULL when refused */
	const char *error; /* expected message when refused */
	ab_host_kind kind;
	int port; /* expected port; the default is 80 */
	bool has_port;
};

#define OK(in, host, kind, port, has)                                                              \
	{                                                                                          \
		in, host, NULL, kind, port, has                                                    \
	}
#define BAD(in, error)                                                                             \
	{                                                                                          \
		in, NULL, error, 0, 0, false                                                       \
	}
#define NAME AB_HOST_NAME
#define V4   AB_HOST_IPV4
#define V6   AB_HOST_IPV6

static const struct hp_row_s hp_rows[] = {
	/* names: case, trailing dot, labels */
	OK ("example.com:443", "example.com", NAME, 443, true),
	OK ("Example.COM:443", "example.com", NAME, 443, true),
	OK ("EXAMPLE.COM.", "example.com", NAME, 80, false),
	OK ("example.com.:8080", "example.com", NAME, 8080, true),
	OK ("example.com", "example.com", NAME, 80, false),
	OK ("a.b.c.example.com:1", "a.b.c.example.com", NAME, 1, true),
	OK ("localhost:80", "localhost", NAME, 80, true),
	OK ("LocalHost.:80", "localhost", NAME, 80, true),
	OK ("a", "a", NAME, 80, false),
	OK ("my-host:22", "my-host", NAME, 22, true),
	OK ("_dmarc.example.com", "_dmarc.example.com", NAME, 80, false),
	OK ("xn--nxasmq6b.com:443", "xn--nxasmq6b.com", NAME, 443, true),
	OK ("1.2.3.4.example.com:80", "1.2.3.4.example.com", NAME, 80, true),
	OK ("0x7f.example.com", "0x7f.example.com", NAME, 80, false),
	OK ("123.example.com", "123.example.com", NAME, 80, false),
	OK ("example.1e3", "example.1e3", NAME, 80, false),
	OK ("metadata.google.internal", "metadata.google.internal", NAME, 80, false),
	/* ports */
	OK ("example.com:0", "example.com", NAME, 0, true),
	OK ("example.com:1", "example.com", NAME, 1, true),
	OK ("example.com:65535", "example.com", NAME, 65535, true),
	OK ("example.com:08", "example.com", NAME, 8, true),
	OK ("example.com:00080", "example.com", NAME, 80, true),
	BAD ("example.com:", "invalid port"),
	BAD ("example.com:65536", "invalid port"),
	BAD ("example.com:99999", "invalid port"),
	BAD ("example.com:123456", "invalid port"),
	BAD ("example.com:000080", "invalid port"),
	BAD ("example.com:-1", "invalid port"),
	BAD ("example.com:+80", "invalid port"),
	BAD ("example.com: 80", "invalid port"),
	BAD ("example.com:80 ", "invalid port"),
	BAD ("example.com:0x50", "invalid port"),
	BAD ("example.com:8a", "invalid port"),
	BAD ("example.com:http", "invalid port"),
	BAD ("example.com:4294967376", "invalid port"),
	BAD ("example.com:80:80", "invalid host"),
	/* IPv4 literals: canonical dotted quad only */
	OK ("1.2.3.4:80", "1.2.3.4", V4, 80, true),
	OK ("8.8.8.8", "8.8.8.8", V4, 80, false),
	OK ("127.0.0.1:8080", "127.0.0.1", V4, 8080, true),
	OK ("0.0.0.0:1", "0.0.0.0", V4, 1, true),
	OK ("255.255.255.255:65535", "255.255.255.255", V4, 65535, true),
	OK ("169.254.169.254", "169.254.169.254", V4, 80, false),
	BAD ("2130706433", "non-canonical IPv4 address"),
	BAD ("2130706433:80", "non-canonical IPv4 address"),
	BAD ("0x7f.1", "non-canonical IPv4 address"),
	BAD ("0x7f.1:443", "non-canonical IPv4 address"),
	BAD ("0x7f000001", "non-canonical IPv4 address"),
	BAD ("0X7F000001", "non-canonical IPv4 address"),
	BAD ("0x7f.0.0.1", "non-canonical IPv4 address"),
	BAD ("0177.0.0.1", "non-canonical IPv4 address"),
	BAD ("0177.1", "non-canonical IPv4 address"),
	BAD ("127.1", "non-canonical IPv4 address"),
	BAD ("127.0.1", "non-canonical IPv4 address"),
	BAD ("1.2.3", "non-canonical IPv4 address"),
	BAD ("127.000.000.001", "non-canonical IPv4 address"),
	BAD ("127.0.0.01", "non-canonical IPv4 address"),
	BAD ("01.2.3.4", "non-canonical IPv4 address"),
	BAD ("127.0.0.1.", "non-canonical IPv4 address"),
	BAD ("127.0.0.1.:80", "non-canonical IPv4 address"),
	BAD ("1.1.1.1.", "non-canonical IPv4 address"),
	BAD ("256.1.1.1", "non-canonical IPv4 address"),
	BAD ("1.2.3.4.5", "non-canonical IPv4 address"),
	BAD ("127.0.0.0x1", "non-canonical IPv4 address"),
	BAD ("169.254.43518", "non-canonical IPv4 address"),
	BAD ("0", "non-canonical IPv4 address"),
	BAD ("00", "non-canonical IPv4 address"),
	BAD ("0x", "non-canonical IPv4 address"),
	BAD ("4294967295", "non-canonical IPv4 address"),
	BAD ("4294967296", "non-canonical IPv4 address"),
	BAD ("example.123", "non-canonical IPv4 address"),
	BAD ("foo.0x10", "non-canonical IPv4 address"),
	BAD ("localhost.0", "non-canonical IPv4 address"),
	/* IPv6 literals: brackets, canonical text, no zone */
	OK ("[::1]:443", "::1", V6, 443, true),
	OK ("[::1]", "::1", V6, 80, false),
	OK ("[0:0:0:0:0:0:0:1]:80", "::1", V6, 80, true),
	OK ("[::FFFF:127.0.0.1]:80", "::ffff:127.0.0.1", V6, 80, true),
	OK ("[::ffff:7f00:1]:80", "::ffff:127.0.0.1", V6, 80, true),
	OK ("[2001:DB8::1]:8080", "2001:db8::1", V6, 8080, true),
	OK ("[2606:4700::1111]:443", "2606:4700::1111", V6, 443, true),
	OK ("[fd00:ec2::254]", "fd00:ec2::254", V6, 80, false),
	BAD ("::1", "IPv6 address must be in brackets"),
	BAD ("::1:80", "IPv6 address must be in brackets"),
	BAD ("2001:db8::1", "IPv6 address must be in brackets"),
	BAD ("[::1", "invalid host"),
	BAD ("[::1]80", "invalid host"),
	BAD ("[::1]:", "invalid port"),
	BAD ("[::1]:99999", "invalid port"),
	BAD ("[::1]:+1", "invalid port"),
	BAD ("[::1]:80:80", "invalid port"),
	BAD ("[fe80::1%eth0]:80", "zone identifiers are not allowed"),
	BAD ("[fe80::1%25eth0]:80", "zone identifiers are not allowed"),
	BAD ("[fe80::1%1]", "zone identifiers are not allowed"),
	BAD ("fe80::1%eth0", "zone identifiers are not allowed"),
	BAD ("[fe80::1%eth0", "zone identifiers are not allowed"),
	BAD ("[example.com]:80", "invalid IPv6 address"),
	BAD ("[1.2.3.4]:80", "invalid IPv6 address"),
	BAD ("[::ffff:127.000.0.1]", "invalid IPv6 address"),
	BAD ("[::ffff:127.1]", "invalid IPv6 address"),
	BAD ("[::1::2]", "invalid IPv6 address"),
	BAD ("[12345::1]", "invalid IPv6 address"),
	BAD ("[]:80", "invalid IPv6 address"),
	BAD ("[::g]", "invalid IPv6 address"),
	BAD ("[ ::1]", "invalid IPv6 address"),
	BAD ("[::\xc3\xa4]", "non-ASCII host"),
	/* everything else a host cannot hold */
	BAD ("", "empty host"),
	BAD (":80", "empty host"),
	BAD (" example.com:80", "invalid host"),
	BAD ("example.com :80", "invalid host"),
	BAD ("exa mple.com", "invalid host"),
	BAD ("ex\tample.com", "invalid host"),
	BAD ("example.com\r\n", "invalid host"),
	BAD ("user@example.com:80", "invalid host"),
	BAD ("user:pass@example.com:80", "invalid host"),
	BAD ("example..com", "invalid host"),
	BAD (".example.com", "invalid host"),
	BAD ("example.com..", "invalid host"),
	BAD (".", "invalid host"),
	BAD ("..", "invalid host"),
	BAD ("exa%6dple.com", "invalid host"),
	BAD ("example.com/path", "invalid host"),
	BAD ("example.com?x", "invalid host"),
	BAD ("example.com#x", "invalid host"),
	BAD ("*.example.com", "invalid host"),
	BAD ("exa\\mple.com", "invalid host"),
	BAD ("example.com,evil.com", "invalid host"),
	BAD ("ex\"ample.com", "invalid host"),
	BAD ("ex\x7f"
	     "ample.com",
	     "invalid host"),
	BAD ("ex\x01"
	     "ample.com",
	     "invalid host"),
	BAD ("ex\xc3\xa4mple.com:80", "non-ASCII host"),
	BAD ("\xe2\x80\x8b"
	     "example.com",
	     "non-ASCII host"),
	BAD ("example.xn--p1ai\xd1\x80", "non-ASCII host"),
	BAD ("ex\xef\xbc\x8e"
	     "ample.com",
	     "non-ASCII host"),
	BAD ("\xff", "non-ASCII host"),
};

/* One row against what a parser returned (r, hp, err). */
static void
check_hp_result (const struct hp_row_s *row, int r, const struct ab_hostport_s *p,
                 const ab_error_t *e)
{
	const struct ab_hostport_s hp = *p;
	const ab_error_t err = *e;

	if (!row->host) {
		if (r == 0)
			fail_msg ("'%s' should be refused (%s), got host '%s'", row->in, row->error,
			          hp.host);
		assert_int_equal (err.kind, AB_E_INVALID);
		if (strcmp (err.msg, row->error) != 0)
			fail_msg ("'%s': error '%s', expected '%s'", row->in, err.msg, row->error);
		return;
	}
	if (r < 0)
		fail_msg ("'%s' should parse: %s", row->in, err.msg);
	if (strcmp (hp.host, row->host) != 0)
		fail_msg ("'%s': host '%s', expected '%s'", row->in, hp.host, row->host);
	assert_int_equal (hp.kind, row->kind);
	assert_int_equal (hp.port, row->port);
	assert_int_equal (hp.has_port, row->has_port);
	if (hp.kind != NAME) {
		char buf[AB_ADDR_STRLEN];
		assert_string_equal (ab_addr_format (&hp.addr, buf), hp.host);
	}
}

static void
check_hp_row (const struct hp_row_s *row)
{
	struct ab_hostport_s hp;
	ab_error_t err = AB_ERROR_INIT;
	int r = ab_hostport_parse (row->in, 80, &hp, &err);

	check_hp_result (row, r, &hp, &err);
}

static void
test_hostport (void **state)
{
	for (size_t i = 0; i < N (hp_rows); i++)
		check_hp_row (&hp_rows[i]);
}

/* ab_listen_parse: a server's --listen HOST:PORT.  The port is required
 * (0 parses: any free port), the split is at the last ':' so a bare IPv6
 * literal works, an empty host is the default ("0.0.0.0" here). */
static const struct hp_row_s listen_rows[] = {
	OK ("127.0.0.1:0", "127.0.0.1", V4, 0, true),
	OK ("127.0.0.1:8080", "127.0.0.1", V4, 8080, true),
	OK ("0.0.0.0:65535", "0.0.0.0", V4, 65535, true),
	OK (":8080", "0.0.0.0", V4, 8080, true),
	OK ("[::1]:8080", "::1", V6, 8080, true),
	OK (":::8080", "::", V6, 8080, true),
	OK ("::1:80", "::1", V6, 80, true),
	OK ("[0:0::1]:1", "::1", V6, 1, true),
	OK ("LocalHost:1", "localhost", NAME, 1, true),
	OK ("127.0.0.1:08", "127.0.0.1", V4, 8, true),
	BAD ("", "expected HOST:PORT"),
	BAD ("nocolon", "expected HOST:PORT"),
	BAD ("[::1]", "invalid port"),
	BAD ("127.0.0.1:", "invalid port"),
	BAD ("127.0.0.1:65536", "invalid port"),
	BAD ("127.0.0.1:x", "invalid port"),
	BAD ("127.0.0.1:-1", "invalid port"),
	BAD ("127.0.0.1:+80", "invalid port"),
	BAD ("127.0.0.1: 80", "invalid port"),
	BAD ("127.0.0.1:000080", "invalid port"),
	BAD ("999.0.0.1:80", "non-canonical IPv4 address"),
	BAD ("127.1:80", "non-canonical IPv4 address"),
	BAD (" 127.0.0.1:80", "invalid host"),
	BAD ("a:b:80", "invalid IPv6 address"),
	BAD ("[::1:80", "invalid host"),
	BAD ("[fe80::1%25eth0]:80", "zone identifiers are not allowed"),
};

static void
test_listen_parse (void **state)
{
	for (size_t i = 0; i < N (listen_rows); i++) {
		struct ab_hostport_s hp;
		ab_error_t err = AB_ERROR_INIT;
		int r = ab_listen_parse (listen_rows[i].in, "0.0.0.0", &hp, &err);

		check_hp_result (&listen_rows[i], r, &hp, &err);
	}
}

static void
test_listen_parse_no_default (void **state)
{
	struct ab_hostport_s hp;
	ab_error_t err = AB_ERROR_INIT;

	assert_true (ab_listen_parse (":8080", NULL, &hp, &err) < 0);
	assert_string_equal (err.msg, "empty host");
	assert_true (ab_listen_parse (NULL, NULL, &hp, &err) < 0);
	assert_string_equal (err.msg, "expected HOST:PORT");
}

static void
test_hostport_lengths (void **state)
{
	char label63[64], label64[65], host[300];
	struct ab_hostport_s hp;
	ab_error_t err = AB_ERROR_INIT;

	memset (label63, 'a', 63);
	label63[63] = '\0';
	memset (label64, 'a', 64);
	label64[64] = '\0';
	assert_int_equal (ab_hostport_parse (label63, 80, &hp, &err), 0);
	assert_true (ab_hostport_parse (label64, 80, &hp, &err) < 0);
	assert_string_equal (err.msg, "invalid host");

	/* 4 x 63 + 3 dots = 255 characters: too long; 253 fits. */
	snprintf (host, sizeof host, "%s.%s.%s.%s", label63, label63, label63, label63);
	assert_true (ab_hostport_parse (host, 80, &hp, &err) < 0);
	assert_string_equal (err.msg, "host too long");
	host[253] = '\0'; /* 253 characters, ends in "aa" */
	assert_int_equal (ab_hostport_parse (host, 80, &hp, &err), 0);
	assert_int_equal (strlen (hp.host), 253);
	host[253] = '.'; /* 253 + trailing dot is still fine */
	host[254] = '\0';
	assert_int_equal (ab_hostport_parse (host, 443, &hp, &err), 0);
	assert_int_equal (strlen (hp.host), 253);
	assert_int_equal (hp.port, 443);
	host[254] = 'a'; /* 255 characters */
	host[255] = '\0';
	assert_true (ab_hostport_parse (host, 80, &hp, &err) < 0);

	assert_true (ab_hostport_parse (NULL, 80, &hp, &err) < 0);
	assert_string_equal (err.msg, "empty host");
}

static void
test_host_normalise (void **state)
{
	struct ab_hostport_s hp;
	ab_error_t err = AB_ERROR_INIT;

	assert_int_equal (ab_host_normalise ("::1", 3, &hp, &err), 0);
	assert_string_equal (hp.host, "::1");
	assert_int_equal (hp.kind, AB_HOST_IPV6);
	assert_int_equal (ab_host_normalise ("[::1]", 5, &hp, &err), 0);
	assert_string_equal (hp.host, "::1");
	assert_int_equal (ab_host_normalise ("Example.Com.", 12, &hp, &err), 0);
	assert_string_equal (hp.host, "example.com");
	/* the length bounds the input: "example.com" of "example.comX" */
	assert_int_equal (ab_host_normalise ("example.comX", 11, &hp, &err), 0);
	assert_string_equal (hp.host, "example.com");
	assert_true (ab_host_normalise ("a\0b", 3, &hp, &err) < 0);
	assert_true (ab_host_normalise ("", 0, &hp, &err) < 0);
	assert_string_equal (err.msg, "empty host");
	assert_true (ab_host_normalise ("127.1", 5, &hp, &err) < 0);
	assert_string_equal (err.msg, "non-canonical IPv4 address");
}

/* ---- host patterns ---- */

static const struct {
	const char *text;
	const char *canonical; /* NULL = refused */
} pattern_rows[] = {
	{ "example.com", "example.com" },
	{ "EXAMPLE.com.", "example.com" },
	{ "*.example.com", "*.example.com" },
	{ "*.Example.COM.", "*.example.com" },
	{ "*", "*" },
	{ "*:443", "*:443" },
	{ "*:65535", "*:65535" },
	{ "example.com:443", "example.com:443" },
	{ "*.example.com:8443", "*.example.com:8443" },
	{ "127.0.0.1", "127.0.0.1" },
	{ "127.0.0.1:8080", "127.0.0.1:8080" },
	{ "[::1]", "[::1]" },
	{ "[0::1]:8080", "[::1]:8080" },
	{ "*.com", "*.com" },
	{ "registry-1.docker.io:443", "registry-1.docker.io:443" },
	{ "", NULL },
	{ "*.", NULL },
	{ "*.*.example.com", NULL },
	{ "foo.*.com", NULL },
	{ "*example.com", NULL },
	{ "**", NULL },
	{ "*x", NULL },
	{ "*:", NULL },
	{ "*:0", NULL },
	{ "*:65536", NULL },
	{ "*:99999", NULL },
	{ "*:+1", NULL },
	{ "*:1:2", NULL },
	{ "example.com:0", NULL },
	{ "example.com:http", NULL },
	{ "*.127.0.0.1", NULL },
	{ "*.[::1]", NULL },
	{ "*.example.com:-1", NULL },
	{ " example.com", NULL },
	{ "ex\xc3\xa4mple.com", NULL },
	{ "2130706433", NULL },
	{ "127.1", NULL },
	{ "::1", NULL },
	{ "[fe80::1%eth0]", NULL },
	{ ".example.com", NULL },
	{ "example.com/", NULL },
};

static void
test_pattern_parse (void **state)
{
	for (size_t i = 0; i < N (pattern_rows); i++) {
		struct ab_host_pattern_s p;
		ab_error_t err = AB_ERROR_INIT;
		char buf[AB_HOST_PATTERN_STRLEN];
		int r = ab_host_pattern_parse (pattern_rows[i].text, &p, &err);

		if (!pattern_rows[i].canonical) {
			if (r == 0)
				fail_msg ("pattern '%s' should be refused", pattern_rows[i].text);
			assert_int_equal (err.kind, AB_E_INVALID);
			assert_non_null (strstr (err.msg, "invalid host pattern"));
			continue;
		}
		if (r < 0)
			fail_msg ("pattern '%s' should parse: %s", pattern_rows[i].text, err.msg);
		assert_string_equal (ab_host_pattern_format (&p, buf), pattern_rows[i].canonical);
	}
}

static const struct {
	const char *pattern;
	const char *authority; /* default port 443 */
	bool match;
} match_rows[] = {
	{ "example.com", "example.com:443", true },
	{ "example.com", "example.com:80", true },
	{ "example.com", "EXAMPLE.COM.:443", true },
	{ "example.com", "www.example.com", false },
	{ "example.com", "badexample.com", false },
	{ "example.com", "example.com.evil.net", false },
	{ "example.com", "example.co", false },
	{ "example.com", "xample.com", false },
	{ "*.example.com", "www.example.com", true },
	{ "*.example.com", "WWW.Example.Com.", true },
	{ "*.example.com", "a.b.example.com:8443", true },
	{ "*.example.com", "example.com", false },
	{ "*.example.com", "badexample.com", false },
	{ "*.example.com", "xexample.com", false },
	{ "*.example.com", "www.example.com.evil.net", false },
	{ "*.example.com", "www-example.com", false },
	{ "*.example.com:443", "www.example.com:443", true },
	{ "*.example.com:443", "www.example.com", true }, /* default port 443 */
	{ "*.example.com:443", "www.example.com:80", false },
	{ "example.com:443", "example.com", true },
	{ "example.com:443", "example.com:443", true },
	{ "example.com:443", "example.com:4430", false },
	{ "example.com:80", "example.com", false },
	{ "*", "example.com", true },
	{ "*", "127.0.0.1:80", true },
	{ "*", "[::1]:1", true },
	{ "*:443", "example.com", true },
	{ "*:443", "example.com:80", false },
	{ "*.com", "example.com", true },
	{ "*.com", "com", false },
	{ "127.0.0.1", "127.0.0.1:80", true },
	{ "127.0.0.1", "127.0.0.2", false },
	{ "127.0.0.1:8080", "127.0.0.1:8080", true },
	{ "127.0.0.1:8080", "127.0.0.1:8081", false },
	{ "[::1]", "[0::1]:80", true },
	{ "[::1]", "[::2]:80", false },
	{ "[::1]:8080", "[::1]:8081", false },
	{ "[::ffff:127.0.0.1]", "[::ffff:7f00:1]", true },
	{ "[::ffff:127.0.0.1]", "127.0.0.1", false },
	{ "1.2.3.4", "1.2.3.4.example.com", false },
	{ "*.example.com", "1.2.3.4", false },
	{ "*.in-addr.arpa", "1.0.0.127.in-addr.arpa", true },
};

static void
test_pattern_match (void **state)
{
	for (size_t i = 0; i < N (match_rows); i++) {
		struct ab_host_pattern_s p;
		struct ab_hostport_s hp;
		ab_error_t err = AB_ERROR_INIT;

		if (ab_host_pattern_parse (match_rows[i].pattern, &p, &err) < 0)
			fail_msg ("pattern '%s': %s", match_rows[i].pattern, err.msg);
		if (ab_hostport_parse (match_rows[i].authority, 443, &hp, &err) < 0)
			fail_msg ("authority '%s': %s", match_rows[i].authority, err.msg);
		if (ab_host_pattern_match (&p, &hp) != match_rows[i].match)
			fail_msg ("'%s' vs '%s': expected %s", match_rows[i].pattern,
			          match_rows[i].authority,
			          match_rows[i].match ? "match" : "no match");
	}
}

/* ---- decisions ---- */

/* A policy description for the decision tables. */
struct setup_s {
	bool sandbox;
	unsigned deny_groups; /* standalone only (sandbox: all) */
	bool resolve;         /* standalone only (sandbox: on) */
	const char *allow[4];
	const char *deny[4];
	const char *cidrs[4];
	const char *local[4];
};

static struct ab_egress_policy_s *
build (const struct setup_s *s)
{
	struct ab_egress_policy_s *p;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_addr_s local[4];
	size_t n_local = 0;

	if (s->sandbox)
		p = ab_egress_policy_new_sandbox ();
	else {
		p = ab_egress_policy_new_standalone ();
		ab_egress_policy_set_deny_groups (p, s->deny_groups);
		ab_egress_policy_set_resolve_names (p, s->resolve);
	}
	for (size_t i = 0; i < 4; i++) {
		if (s->allow[i] && ab_egress_policy_add_allow_host (p, s->allow[i], &err) < 0)
			fail_msg ("allow %s: %s", s->allow[i], err.msg);
		if (s->deny[i] && ab_egress_policy_add_deny_host (p, s->deny[i], &err) < 0)
			fail_msg ("deny %s: %s", s->deny[i], err.msg);
		if (s->cidrs[i] && ab_egress_policy_add_allow_cidr (p, s->cidrs[i], &err) < 0)
			fail_msg ("cidr %s: %s", s->cidrs[i], err.msg);
		if (s->local[i] && ab_addr_parse (s->local[i], &local[n_local++], &err) < 0)
			fail_msg ("local %s: %s", s->local[i], err.msg);
	}
	ab_egress_policy_set_local_addrs (p, local, n_local);
	return p;
}

static const struct setup_s standalone_none = { .deny_groups = 0 };
static const struct setup_s standalone_all = { .deny_groups = ALL };
static const struct setup_s standalone_all_resolve = { .deny_groups = ALL, .resolve = true };
static const struct setup_s standalone_loopback = { .deny_groups = L };
static const struct setup_s standalone_metadata = { .deny_groups = M };
static const struct setup_s standalone_private = { .deny_groups = P };
static const struct setup_s standalone_linklocal = { .deny_groups = LL };
static const struct setup_s standalone_allowlist = {
	.deny_groups = ALL, .resolve = true, .allow = { "example.com", "*.example.org:443" }
};
static const struct setup_s standalone_denylist = {
	.deny_groups = ALL, .resolve = true, .deny = { "*.evil.com", "bad.example.com", "9.9.9.9" }
};
static const struct setup_s standalone_cidr = { .deny_groups = ALL,
	                                        .cidrs = { "127.0.0.1/32", "::1/128" } };
static const struct setup_s standalone_local = {
	.deny_groups = L, .local = { "8.8.4.4", "10.0.0.5", "2001:4860::5" }
};
static const struct setup_s standalone_local_all = { .deny_groups = ALL,
	                                             .local = { "8.8.4.4", "10.0.0.5" },
	                                             .cidrs = { "8.8.4.4/32" } };
static const struct setup_s sandbox_default = { .sandbox = true };
static const struct setup_s sandbox_any = { .sandbox = true, .allow = { "*" } };
static const struct setup_s sandbox_any_cidr = { .sandbox = true,
	                                         .allow = { "*" },
	                                         .cidrs = { "127.0.0.1/32" } };
static const struct setup_s sandbox_cidr_only = { .sandbox = true,
	                                          .cidrs = { "10.0.0.0/8", "fd00::/8" } };
static const struct setup_s sandbox_sub = { .sandbox = true,
	                                    .allow = { "*.example.com", "api.example.net:443" },
	                                    .deny = { "bad.example.com" } };
static const struct setup_s sandbox_all_denied = { .sandbox = true,
	                                           .allow = { "*" },
	                                           .deny = { "*" } };
static const struct setup_s sandbox_literal = { .sandbox = true,
	                                        .allow = { "10.0.0.1", "8.8.8.8:53" } };
static const struct setup_s sandbox_local = { .sandbox = true,
	                                      .allow = { "*" },
	                                      .local = { "8.8.4.4" } };

struct decision_row_s {
	const struct setup_s *setup;
	const char *authority; /* default port 443 */
	bool allowed;
	ab_egress_rule rule;
	const char *reason;
};

#define ALLOW(s, a)                                                                                \
	{                                                                                          \
		&s, a, true, AB_EGRESS_ALLOW, "allowed"                                            \
	}
#define DENY(s, a, rule, reason)                                                                   \
	{                                                                                          \
		&s, a, false, rule, reason                                                         \
	}

static const struct decision_row_s decision_rows[] = {
	/* standalone, no flags: every literal passes, names need resolution */
	ALLOW (standalone_none, "8.8.8.8:443"),
	ALLOW (standalone_none, "127.0.0.1:80"),
	ALLOW (standalone_none, "169.254.169.254:80"),
	ALLOW (standalone_none, "[::1]:80"),
	DENY (standalone_none, "example.com:443", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_none, "localhost:80", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_none, "metadata:80", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_none, "example.com:0", AB_EGRESS_DENY_PORT, "invalid port"),
	DENY (standalone_none, "8.8.8.8:0", AB_EGRESS_DENY_PORT, "invalid port"),
	/* standalone, all four flags */
	DENY (standalone_all, "localhost:80", AB_EGRESS_DENY_NAME, "loopback name localhost"),
	DENY (standalone_all, "LOCALHOST.:80", AB_EGRESS_DENY_NAME, "loopback name localhost"),
	DENY (standalone_all, "foo.localhost:80", AB_EGRESS_DENY_NAME,
	      "loopback name foo.localhost"),
	DENY (standalone_all, "a.b.localhost", AB_EGRESS_DENY_NAME, "loopback name a.b.localhost"),
	DENY (standalone_all, "localhost.localdomain", AB_EGRESS_DENY_NAME,
	      "loopback name localhost.localdomain"),
	DENY (standalone_all, "ip6-localhost", AB_EGRESS_DENY_NAME, "loopback name ip6-localhost"),
	DENY (standalone_all, "localhost6", AB_EGRESS_DENY_NAME, "loopback name localhost6"),
	DENY (standalone_all, "metadata", AB_EGRESS_DENY_NAME, "metadata name metadata"),
	DENY (standalone_all, "metadata.google.internal", AB_EGRESS_DENY_NAME,
	      "metadata name metadata.google.internal"),
	DENY (standalone_all, "Metadata.Google.Internal.:80", AB_EGRESS_DENY_NAME,
	      "metadata name metadata.google.internal"),
	DENY (standalone_all, "x.metadata.google.internal", AB_EGRESS_DENY_NAME,
	      "metadata name x.metadata.google.internal"),
	DENY (standalone_all, "metadata.goog", AB_EGRESS_DENY_NAME, "metadata name metadata.goog"),
	DENY (standalone_all, "instance-data", AB_EGRESS_DENY_NAME, "metadata name instance-data"),
	DENY (standalone_all, "instance-data.ec2.internal", AB_EGRESS_DENY_NAME,
	      "metadata name instance-data.ec2.internal"),
	DENY (standalone_all, "notlocalhost:80", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_all, "localhostx:80", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_all, "localhost.example.com", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_all, "metadata.example.com", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_all, "example.com:443", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_all, "127.0.0.1:80", AB_EGRESS_DENY_ADDRESS, "loopback address 127.0.0.1"),
	DENY (standalone_all, "10.0.0.1:80", AB_EGRESS_DENY_ADDRESS, "private address 10.0.0.1"),
	DENY (standalone_all, "169.254.169.254:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address 169.254.169.254"),
	DENY (standalone_all, "169.254.1.1:80", AB_EGRESS_DENY_ADDRESS,
	      "link-local address 169.254.1.1"),
	DENY (standalone_all, "100.64.0.1:80", AB_EGRESS_DENY_ADDRESS, "CGNAT address 100.64.0.1"),
	DENY (standalone_all, "0.0.0.0:80", AB_EGRESS_DENY_ADDRESS, "unspecified address 0.0.0.0"),
	DENY (standalone_all, "[::1]:80", AB_EGRESS_DENY_ADDRESS, "loopback address ::1"),
	DENY (standalone_all, "[::]:80", AB_EGRESS_DENY_ADDRESS, "unspecified address ::"),
	DENY (standalone_all, "[::ffff:127.0.0.1]:80", AB_EGRESS_DENY_ADDRESS,
	      "loopback address ::ffff:127.0.0.1 (IPv4-mapped form of 127.0.0.1)"),
	DENY (standalone_all, "[::ffff:8.8.8.8]:80", AB_EGRESS_DENY_ADDRESS,
	      "IPv4-mapped address ::ffff:8.8.8.8"),
	DENY (standalone_all, "[64:ff9b::a9fe:a9fe]:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address 64:ff9b::a9fe:a9fe (NAT64 form of 169.254.169.254)"),
	DENY (standalone_all, "[64:ff9b::808:808]:80", AB_EGRESS_DENY_ADDRESS,
	      "NAT64 address 64:ff9b::808:808"),
	DENY (standalone_all, "[2002:7f00:1::]:80", AB_EGRESS_DENY_ADDRESS,
	      "loopback address 2002:7f00:1:: (6to4 form of 127.0.0.1)"),
	DENY (standalone_all, "[::5efe:a00:1]:80", AB_EGRESS_DENY_ADDRESS,
	      "private address ::5efe:a00:1 (ISATAP form of 10.0.0.1)"),
	DENY (standalone_all, "[fd00:ec2::254]:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address fd00:ec2::254"),
	DENY (standalone_all, "[fe80::1]:80", AB_EGRESS_DENY_ADDRESS, "link-local address fe80::1"),
	DENY (standalone_all, "[ff02::1]:80", AB_EGRESS_DENY_ADDRESS, "multicast address ff02::1"),
	DENY (standalone_all, "255.255.255.255:80", AB_EGRESS_DENY_ADDRESS,
	      "broadcast address 255.255.255.255"),
	ALLOW (standalone_all, "8.8.8.8:443"),
	ALLOW (standalone_all, "1.1.1.1:443"),
	ALLOW (standalone_all, "[2606:4700::1111]:443"),
	ALLOW (standalone_all, "[2001:4860:4860::8888]:443"),
	ALLOW (standalone_all_resolve, "example.com:443"),
	DENY (standalone_all_resolve, "localhost:443", AB_EGRESS_DENY_NAME,
	      "loopback name localhost"),
	/* one flag at a time */
	ALLOW (standalone_loopback, "10.0.0.1:80"),
	ALLOW (standalone_loopback, "169.254.169.254:80"),
	DENY (standalone_loopback, "127.0.0.1:80", AB_EGRESS_DENY_ADDRESS,
	      "loopback address 127.0.0.1"),
	DENY (standalone_loopback, "0.0.0.0:80", AB_EGRESS_DENY_ADDRESS,
	      "unspecified address 0.0.0.0"),
	DENY (standalone_loopback, "localhost:80", AB_EGRESS_DENY_NAME, "loopback name localhost"),
	DENY (standalone_loopback, "metadata:80", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_metadata, "metadata:80", AB_EGRESS_DENY_NAME, "metadata name metadata"),
	DENY (standalone_metadata, "localhost:80", AB_EGRESS_DENY_NO_RESOLVE,
	      "name resolution is disabled"),
	DENY (standalone_metadata, "169.254.169.254:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address 169.254.169.254"),
	DENY (standalone_metadata, "100.100.100.200:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address 100.100.100.200"),
	DENY (standalone_metadata, "168.63.129.16:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address 168.63.129.16"),
	ALLOW (standalone_metadata, "169.254.1.1:80"),
	ALLOW (standalone_metadata, "127.0.0.1:80"),
	ALLOW (standalone_metadata, "100.100.100.201:80"),
	DENY (standalone_private, "192.168.1.1:80", AB_EGRESS_DENY_ADDRESS,
	      "private address 192.168.1.1"),
	DENY (standalone_private, "100.100.100.200:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address 100.100.100.200"),
	DENY (standalone_private, "[64:ff9b::7f00:1]:80", AB_EGRESS_DENY_ADDRESS,
	      "loopback address 64:ff9b::7f00:1 (NAT64 form of 127.0.0.1)"),
	ALLOW (standalone_private, "127.0.0.1:80"),
	ALLOW (standalone_private, "[::ffff:127.0.0.1]:80"),
	ALLOW (standalone_private, "169.254.169.254:80"),
	DENY (standalone_linklocal, "169.254.169.254:80", AB_EGRESS_DENY_ADDRESS,
	      "metadata address 169.254.169.254"),
	DENY (standalone_linklocal, "[fe80::1]:80", AB_EGRESS_DENY_ADDRESS,
	      "link-local address fe80::1"),
	ALLOW (standalone_linklocal, "168.63.129.16:80"),
	ALLOW (standalone_linklocal, "10.0.0.1:80"),
	/* allow and deny lists */
	ALLOW (standalone_allowlist, "example.com:443"),
	ALLOW (standalone_allowlist, "example.com:80"),
	ALLOW (standalone_allowlist, "api.example.org:443"),
	DENY (standalone_allowlist, "api.example.org:80", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	DENY (standalone_allowlist, "example.org:443", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	DENY (standalone_allowlist, "www.example.com:443", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	DENY (standalone_allowlist, "8.8.8.8:443", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	DENY (standalone_denylist, "x.evil.com:443", AB_EGRESS_DENY_HOST_LIST, "host in denylist"),
	DENY (standalone_denylist, "BAD.example.com.", AB_EGRESS_DENY_HOST_LIST,
	      "host in denylist"),
	DENY (standalone_denylist, "9.9.9.9:53", AB_EGRESS_DENY_HOST_LIST, "host in denylist"),
	ALLOW (standalone_denylist, "evil.com:443"),
	ALLOW (standalone_denylist, "good.example.com:443"),
	ALLOW (standalone_denylist, "8.8.8.8:443"),
	/* allow-cidr overrides the class denial, for addresses inside only */
	{ &standalone_cidr, "127.0.0.1:8080", true, AB_EGRESS_ALLOW_CIDR,
	  "allowed by allow-cidr 127.0.0.1/32" },
	{ &standalone_cidr, "[::1]:8080", true, AB_EGRESS_ALLOW_CIDR,
	  "allowed by allow-cidr ::1/128" },
	DENY (standalone_cidr, "127.0.0.2:8080", AB_EGRESS_DENY_ADDRESS,
	      "loopback address 127.0.0.2"),
	DENY (standalone_cidr, "[::ffff:127.0.0.1]:8080", AB_EGRESS_DENY_ADDRESS,
	      "loopback address ::ffff:127.0.0.1 (IPv4-mapped form of 127.0.0.1)"),
	DENY (standalone_cidr, "localhost:8080", AB_EGRESS_DENY_NAME, "loopback name localhost"),
	/* the host's own addresses count as loopback */
	DENY (standalone_local, "8.8.4.4:80", AB_EGRESS_DENY_ADDRESS,
	      "local interface address 8.8.4.4"),
	DENY (standalone_local, "10.0.0.5:80", AB_EGRESS_DENY_ADDRESS,
	      "local interface address 10.0.0.5"),
	DENY (standalone_local, "[2001:4860::5]:80", AB_EGRESS_DENY_ADDRESS,
	      "local interface address 2001:4860::5"),
	ALLOW (standalone_local, "8.8.8.8:80"),
	ALLOW (standalone_local, "10.0.0.6:80"),
	{ &standalone_local_all, "8.8.4.4:80", true, AB_EGRESS_ALLOW_CIDR,
	  "allowed by allow-cidr 8.8.4.4/32" },
	DENY (standalone_local_all, "10.0.0.5:80", AB_EGRESS_DENY_ADDRESS,
	      "private address 10.0.0.5"),
	/* sandbox: nothing without an allowlist */
	DENY (sandbox_default, "example.com:443", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	DENY (sandbox_default, "8.8.8.8:443", AB_EGRESS_DENY_NOT_ALLOWED, "host not in allowlist"),
	DENY (sandbox_default, "localhost:443", AB_EGRESS_DENY_NAME, "loopback name localhost"),
	DENY (sandbox_default, "example.com:0", AB_EGRESS_DENY_PORT, "invalid port"),
	/* sandbox, "*": any public host */
	ALLOW (sandbox_any, "example.com:443"),
	ALLOW (sandbox_any, "8.8.8.8:443"),
	ALLOW (sandbox_any, "[2606:4700::1111]:443"),
	DENY (sandbox_any, "127.0.0.1:443", AB_EGRESS_DENY_ADDRESS, "loopback address 127.0.0.1"),
	DENY (sandbox_any, "10.0.0.1:443", AB_EGRESS_DENY_ADDRESS, "private address 10.0.0.1"),
	DENY (sandbox_any, "100.64.0.1:443", AB_EGRESS_DENY_ADDRESS, "CGNAT address 100.64.0.1"),
	DENY (sandbox_any, "localhost:443", AB_EGRESS_DENY_NAME, "loopback name localhost"),
	DENY (sandbox_any, "metadata.google.internal:80", AB_EGRESS_DENY_NAME,
	      "metadata name metadata.google.internal"),
	DENY (sandbox_any, "[2001:db8::1]:443", AB_EGRESS_DENY_ADDRESS,
	      "documentation address 2001:db8::1"),
	DENY (sandbox_any, "[2001:0:4136:e378:8000:63bf:3fff:fdd2]:443", AB_EGRESS_DENY_ADDRESS,
	      "documentation address 2001:0:4136:e378:8000:63bf:3fff:fdd2 (Teredo form of "
	      "192.0.2.45)"),
	{ &sandbox_any_cidr, "127.0.0.1:8080", true, AB_EGRESS_ALLOW_CIDR,
	  "allowed by allow-cidr 127.0.0.1/32" },
	DENY (sandbox_any_cidr, "127.0.0.2:8080", AB_EGRESS_DENY_ADDRESS,
	      "loopback address 127.0.0.2"),
	/* sandbox, CIDR only: literals inside pass the host list, names do not */
	{ &sandbox_cidr_only, "10.1.2.3:5000", true, AB_EGRESS_ALLOW_CIDR,
	  "allowed by allow-cidr 10.0.0.0/8" },
	{ &sandbox_cidr_only, "[fd00::5]:5000", true, AB_EGRESS_ALLOW_CIDR,
	  "allowed by allow-cidr fd00::/8" },
	DENY (sandbox_cidr_only, "11.1.2.3:5000", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	DENY (sandbox_cidr_only, "registry.internal:5000", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	/* sandbox, subdomains with one denied */
	ALLOW (sandbox_sub, "www.example.com:443"),
	ALLOW (sandbox_sub, "a.b.example.com:80"),
	DENY (sandbox_sub, "example.com:443", AB_EGRESS_DENY_NOT_ALLOWED, "host not in allowlist"),
	DENY (sandbox_sub, "bad.example.com:443", AB_EGRESS_DENY_HOST_LIST, "host in denylist"),
	ALLOW (sandbox_sub, "x.bad.example.com:443"),
	ALLOW (sandbox_sub, "api.example.net:443"),
	DENY (sandbox_sub, "api.example.net:80", AB_EGRESS_DENY_NOT_ALLOWED,
	      "host not in allowlist"),
	DENY (sandbox_all_denied, "example.com:443", AB_EGRESS_DENY_HOST_LIST, "host in denylist"),
	/* sandbox, literal patterns: the class check still applies */
	DENY (sandbox_literal, "10.0.0.1:80", AB_EGRESS_DENY_ADDRESS, "private address 10.0.0.1"),
	ALLOW (sandbox_literal, "8.8.8.8:53"),
	DENY (sandbox_literal, "8.8.8.8:443", AB_EGRESS_DENY_NOT_ALLOWED, "host not in allowlist"),
	DENY (sandbox_local, "8.8.4.4:443", AB_EGRESS_DENY_ADDRESS,
	      "local interface address 8.8.4.4"),
	ALLOW (sandbox_local, "8.8.8.8:443"),
};

static void
check_decision (const struct decision_row_s *row)
{
	struct ab_egress_policy_s *p = build (row->setup);
	struct ab_hostport_s hp;
	struct ab_egress_verdict_s v;
	ab_error_t err = AB_ERROR_INIT;

	if (ab_hostport_parse (row->authority, 443, &hp, &err) < 0)
		fail_msg ("'%s' does not parse: %s", row->authority, err.msg);
	bool r = ab_egress_check_host (p, &hp, &v);
	ab_egress_policy_free (p);
	if (r != row->allowed || v.allowed != row->allowed)
		fail_msg ("'%s': %s (%s), expected %s", row->authority,
		          v.allowed ? "allowed" : "denied", v.reason,
		          row->allowed ? "allowed" : "denied");
	if (strcmp (v.reason, row->reason) != 0)
		fail_msg ("'%s': reason '%s', expected '%s'", row->authority, v.reason,
		          row->reason);
	if (v.rule != row->rule)
		fail_msg ("'%s': rule %d, expected %d", row->authority, v.rule, row->rule);
}

static void
test_decisions (void **state)
{
	for (size_t i = 0; i < N (decision_rows); i++)
		check_decision (&decision_rows[i]);
}

/* Every address of the classification matrix through ab_egress_check_addr:
 * sandbox mode denies all but global, and each standalone flag alone denies
 * exactly the addresses in its group. */
static const struct {
	const char *addr;
	unsigned groups;
} group_rows[] = {
	{ "8.8.8.8", 0 },
	{ "1.1.1.1", 0 },
	{ "9.255.255.255", 0 },
	{ "11.0.0.0", 0 },
	{ "100.63.255.255", 0 },
	{ "100.128.0.0", 0 },
	{ "172.15.255.255", 0 },
	{ "172.32.0.0", 0 },
	{ "192.167.255.255", 0 },
	{ "192.169.0.0", 0 },
	{ "169.253.255.255", 0 },
	{ "198.17.255.255", 0 },
	{ "223.255.255.255", 0 },
	{ "2606:4700::1111", 0 },
	{ "2001:4860:4860::8888", 0 },
	{ "2a00:1450:4001:80b::200e", 0 },
	{ "0.0.0.0", L | P },
	{ "127.0.0.1", L },
	{ "127.255.255.255", L },
	{ "10.0.0.0", P },
	{ "10.255.255.255", P },
	{ "100.64.0.0", P },
	{ "100.127.255.255", P },
	{ "172.16.0.0", P },
	{ "172.31.255.255", P },
	{ "192.168.0.0", P },
	{ "169.254.0.1", LL },
	{ "169.254.169.254", M | LL },
	{ "169.254.170.2", M | LL },
	{ "100.100.100.200", M | P },
	{ "168.63.129.16", M },
	{ "192.0.0.1", P },
	{ "192.0.2.1", P },
	{ "192.88.99.1", P },
	{ "198.18.0.1", P },
	{ "198.51.100.1", P },
	{ "203.0.113.1", P },
	{ "224.0.0.1", P },
	{ "240.0.0.1", P },
	{ "255.255.255.255", LL | P },
	{ "::", L | P },
	{ "::1", L },
	{ "::ffff:127.0.0.1", L },
	{ "::ffff:7f00:1", L },
	{ "::127.0.0.1", L },
	{ "::ffff:8.8.8.8", P },
	{ "::ffff:169.254.169.254", M | LL },
	{ "64:ff9b::a9fe:a9fe", M | LL | P },
	{ "64:ff9b::808:808", P },
	{ "64:ff9b:1::a9fe:a9fe", M | LL | P },
	{ "2002:7f00:1::", L | P },
	{ "2002:808:808::", P },
	{ "2001:0:808:808::80ff:fffe", L | P },
	{ "2001::1", L | P },
	{ "::5efe:a00:1", P },
	{ "fe80::5efe:7f00:1", L | LL | P },
	{ "100::1", P },
	{ "2001:db8::1", P },
	{ "2001:2::1", P },
	{ "2001:10::1", P },
	{ "2001:20::1", P },
	{ "fc00::1", P },
	{ "fd00:ec2::254", M | P },
	{ "fe80::1", LL },
	{ "fec0::1", P },
	{ "ff02::1", P },
	{ "4000::1", P },
};

static void
check_group_row (const char *text, unsigned groups)
{
	struct ab_addr_s a;
	struct sockaddr_storage ss;
	struct ab_egress_verdict_s v;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_egress_policy_s *p;

	if (ab_addr_parse (text, &a, &err) < 0)
		fail_msg ("%s: %s", text, err.msg);
	ab_addr_to_sockaddr (&a, 443, &ss);

	p = ab_egress_policy_new_sandbox ();
	if (ab_egress_check_addr (p, (struct sockaddr *)&ss, &v) != (groups == 0))
		fail_msg ("sandbox %s: %s", text, v.reason);
	ab_egress_policy_free (p);

	for (unsigned g = 1; g <= AB_ADDR_GROUP_METADATA; g <<= 1) {
		p = ab_egress_policy_new_standalone ();
		ab_egress_policy_set_deny_groups (p, g);
		bool allowed = ab_egress_check_addr (p, (struct sockaddr *)&ss, &v);
		ab_egress_policy_free (p);
		if (allowed != !(groups & g))
			fail_msg ("--deny-%s %s: %s (%s)", ab_addr_group_name (g), text,
			          allowed ? "allowed" : "denied", v.reason);
		if (!allowed) {
			char prefix[64];
			snprintf (prefix, sizeof prefix, "%s address ", ab_addr_class_name (v.cls));
			assert_int_equal (strncmp (v.reason, prefix, strlen (prefix)), 0);
			assert_int_equal (v.rule, AB_EGRESS_DENY_ADDRESS);
		}
	}
	p = ab_egress_policy_new_standalone ();
	if (!ab_egress_check_addr (p, (struct sockaddr *)&ss, &v))
		fail_msg ("no flags %s: %s", text, v.reason);
	ab_egress_policy_free (p);
}

static void
test_groups_matrix (void **state)
{
	for (size_t i = 0; i < N (group_rows); i++)
		check_group_row (group_rows[i].addr, group_rows[i].groups);
}

static void
test_check_addr_family (void **state)
{
	struct ab_egress_policy_s *p = ab_egress_policy_new_standalone ();
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct ab_egress_verdict_s v;

	assert_false (ab_egress_check_addr (p, (struct sockaddr *)&un, &v));
	assert_int_equal (v.rule, AB_EGRESS_DENY_FAMILY);
	assert_string_equal (v.reason, "unsupported address family");
	ab_egress_policy_free (p);
}

static void
test_builders (void **state)
{
	cleanup_egress_policy struct ab_egress_policy_s *p = ab_egress_policy_new_standalone ();
	ab_error_t err = AB_ERROR_INIT;
	char buf[AB_ADDR_GROUPS_STRLEN];

	assert_int_equal (ab_egress_policy_deny_groups (p), 0);
	assert_false (ab_egress_policy_resolve_names (p));
	ab_egress_policy_add_deny_groups (p, L);
	ab_egress_policy_add_deny_groups (p, M | 0x100);
	assert_int_equal (ab_egress_policy_deny_groups (p), L | M);
	assert_string_equal (ab_addr_groups_format (ab_egress_policy_deny_groups (p), buf),
	                     "loopback,metadata");
	assert_true (ab_egress_policy_add_allow_host (p, "exa mple.com", &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	assert_non_null (strstr (err.msg, "exa mple.com"));
	assert_true (ab_egress_policy_add_deny_host (p, "*:0", &err) < 0);
	assert_true (ab_egress_policy_add_allow_cidr (p, "10.0.0.1/8", &err) < 0);
	assert_non_null (strstr (err.msg, "host bits set"));
	assert_int_equal (ab_egress_policy_add_allow_cidr (p, "10.0.0.0/8", &err), 0);

	cleanup_egress_policy struct ab_egress_policy_s *s = ab_egress_policy_new_sandbox ();
	assert_int_equal (ab_egress_policy_deny_groups (s), ALL);
	assert_true (ab_egress_policy_resolve_names (s));

	/* The real interface list: loopback among the host's addresses is
	 * denied as loopback whatever the list holds. */
	assert_int_equal (ab_egress_policy_load_local_addrs (s, &err), 0);
}

/* ---- policy files ---- */

static void
test_policy_json_good (void **state)
{
	cleanup_egress_policy struct ab_egress_policy_s *p = ab_egress_policy_new_standalone ();
	ab_error_t err = AB_ERROR_INIT;
	struct ab_hostport_s hp;
	struct ab_egress_verdict_s v;
	static const char doc[] =
	        "{\"version\": 1, \"comment\": \"ci runners\","
	        " \"deny_groups\": [\"loopback\", \"metadata\"],"
	        " \"resolve_names\": true,"
	        " \"allow_hosts\": [\"example.com\", \"*.example.org:443\", \"10.1.2.3\"],"
	        " \"deny_hosts\": [\"bad.example.org\"],"
	        " \"allow_cidrs\": [\"10.0.0.0/8\", \"::1/128\"]}";

	if (ab_egress_policy_load_string (p, doc, "test", &err) < 0)
		fail_msg ("%s", err.msg);
	assert_int_equal (ab_egress_policy_deny_groups (p), L | M);
	assert_true (ab_egress_policy_resolve_names (p));
	ab_hostport_parse ("www.example.org:443", 443, &hp, &err);
	assert_true (ab_egress_check_host (p, &hp, &v));
	ab_hostport_parse ("bad.example.org:443", 443, &hp, &err);
	assert_false (ab_egress_check_host (p, &hp, &v));
	assert_string_equal (v.reason, "host in denylist");
	ab_hostport_parse ("other.com:443", 443, &hp, &err);
	assert_false (ab_egress_check_host (p, &hp, &v));
	assert_string_equal (v.reason, "host not in allowlist");
	ab_hostport_parse ("10.1.2.3:443", 443, &hp, &err);
	assert_true (ab_egress_check_host (p, &hp, &v));
	assert_string_equal (v.reason, "allowed by allow-cidr 10.0.0.0/8");
	ab_hostport_parse ("[::1]:80", 443, &hp, &err);
	assert_true (ab_egress_check_host (p, &hp, &v)); /* allowlisted by CIDR as a literal */

	/* "all" and an empty document */
	assert_int_equal (
	        ab_egress_policy_load_string (p, "{\"deny_groups\": [\"all\"]}", "t", &err), 0);
	assert_int_equal (ab_egress_policy_deny_groups (p), ALL);
	assert_int_equal (ab_egress_policy_load_string (p, "{\"deny_groups\": []}", "t", &err), 0);
	assert_int_equal (ab_egress_policy_deny_groups (p), 0);
	assert_int_equal (ab_egress_policy_load_string (p, "{}", "t", &err), 0);
	assert_int_equal (ab_egress_policy_load_string (p, "{\"resolve_names\": false}", "t", &err),
	                  0);
	assert_false (ab_egress_policy_resolve_names (p));
}

static const struct {
	const char *doc;
	const char *error; /* expected substring */
} bad_docs[] = {
	{ "not json", "test: line 1" },
	{ "", "test: line 1" },
	{ "{", "test: line 1" },
	{ "{\"resolve_names\": true} x", "test: line 1" },
	{ "[]", "test: expected a JSON object" },
	{ "\"x\"", "test: line 1" },
	{ "null", "test: line 1" },
	{ "{\"allow_host\": [\"x\"]}", "test: unknown key 'allow_host'" },
	{ "{\"Allow_hosts\": [\"x\"]}", "test: unknown key 'Allow_hosts'" },
	{ "{\"allow_hosts\": \"example.com\"}",
	  "test: key 'allow_hosts': expected an array of strings" },
	{ "{\"allow_hosts\": [1]}", "test: key 'allow_hosts'[0]: expected a string" },
	{ "{\"allow_hosts\": [\"ok.com\", null]}",
	  "test: key 'allow_hosts'[1]: expected a string" },
	{ "{\"allow_hosts\": [\"exa mple.com\"]}",
	  "test: key 'allow_hosts'[0]: invalid host pattern 'exa mple.com'" },
	{ "{\"allow_hosts\": [\"127.1\"]}",
	  "test: key 'allow_hosts'[0]: invalid host pattern '127.1': non-canonical IPv4 address" },
	{ "{\"deny_hosts\": [\"*.\"]}", "test: key 'deny_hosts'[0]: invalid host pattern" },
	{ "{\"deny_hosts\": {}}", "test: key 'deny_hosts': expected an array of strings" },
	{ "{\"allow_cidrs\": [\"10.0.0.1/8\"]}",
	  "test: key 'allow_cidrs'[0]: invalid CIDR '10.0.0.1/8': host bits set" },
	{ "{\"allow_cidrs\": [\"10.0.0.0\"]}", "test: key 'allow_cidrs'[0]: invalid CIDR" },
	{ "{\"allow_cidrs\": [true]}", "test: key 'allow_cidrs'[0]: expected a string" },
	{ "{\"deny_groups\": [\"loopbacks\"]}", "test: key 'deny_groups'[0]: expected one of" },
	{ "{\"deny_groups\": [\"loopback\", 3]}", "test: key 'deny_groups'[1]: expected one of" },
	{ "{\"deny_groups\": \"all\"}",
	  "test: key 'deny_groups': expected an array of group names" },
	{ "{\"resolve_names\": \"yes\"}", "test: key 'resolve_names': expected true or false" },
	{ "{\"resolve_names\": 1}", "test: key 'resolve_names': expected true or false" },
	{ "{\"version\": 2}", "test: key 'version': expected 1" },
	{ "{\"version\": \"1\"}", "test: key 'version': expected 1" },
	{ "{\"comment\": 5}", "test: key 'comment': expected a string" },
	{ "{\"resolve_names\": true, \"resolve_names\": false}", "duplicate" },
};

static void
test_policy_json_bad (void **state)
{
	for (size_t i = 0; i < N (bad_docs); i++) {
		cleanup_egress_policy struct ab_egress_policy_s *p =
		        ab_egress_policy_new_standalone ();
		ab_error_t err = AB_ERROR_INIT;
		struct ab_hostport_s hp;
		struct ab_egress_verdict_s v;

		if (ab_egress_policy_load_string (p, bad_docs[i].doc, "test", &err) == 0)
			fail_msg ("document should be refused: %s", bad_docs[i].doc);
		assert_int_equal (err.kind, AB_E_INVALID);
		if (!strstr (err.msg, bad_docs[i].error))
			fail_msg ("document %s: error '%s', expected '%s'", bad_docs[i].doc,
			          err.msg, bad_docs[i].error);
		/* unchanged: still the standalone default */
		assert_int_equal (ab_egress_policy_deny_groups (p), 0);
		assert_false (ab_egress_policy_resolve_names (p));
		ab_hostport_parse ("8.8.8.8:443", 443, &hp, &err);
		assert_true (ab_egress_check_host (p, &hp, &v));
	}
}

/* A bad key after good ones changes nothing. */
static void
test_policy_json_atomic (void **state)
{
	cleanup_egress_policy struct ab_egress_policy_s *p = ab_egress_policy_new_sandbox ();
	ab_error_t err = AB_ERROR_INIT;
	struct ab_hostport_s hp;
	struct ab_egress_verdict_s v;

	assert_int_equal (ab_egress_policy_add_allow_host (p, "example.com", &err), 0);
	assert_true (ab_egress_policy_load_string (p,
	                                           "{\"allow_hosts\": [\"*\"], \"deny_groups\": "
	                                           "[], \"resolve_names\": false, \"x\": 1}",
	                                           "test", &err)
	             < 0);
	assert_string_equal (err.msg, "test: unknown key 'x'");
	assert_int_equal (ab_egress_policy_deny_groups (p), ALL);
	assert_true (ab_egress_policy_resolve_names (p));
	ab_hostport_parse ("other.com:443", 443, &hp, &err);
	assert_false (ab_egress_check_host (p, &hp, &v));
	ab_hostport_parse ("example.com:443", 443, &hp, &err);
	assert_true (ab_egress_check_host (p, &hp, &v));
}

static char tmpdir[64];

static int
make_tmpdir (void **state)
{
	snprintf (tmpdir, sizeof tmpdir, "/tmp/ab-test-egress-XXXXXX");
	return mkdtemp (tmpdir) ? 0 : -1;
}

static int
remove_tmpdir (void **state)
{
	char path[128];

	snprintf (path, sizeof path, "%s/good.json", tmpdir);
	unlink (path);
	snprintf (path, sizeof path, "%s/bad.json", tmpdir);
	unlink (path);
	return rmdir (tmpdir);
}

static void
write_file (const char *path, const char *text)
{
	FILE *f = fopen (path, "w");

	assert_non_null (f);
	assert_int_equal (fputs (text, f) >= 0, 1);
	assert_int_equal (fclose (f), 0);
}

static void
test_policy_file (void **state)
{
	cleanup_egress_policy struct ab_egress_policy_s *p = ab_egress_policy_new_sandbox ();
	ab_error_t err = AB_ERROR_INIT;
	char good[128], bad[128], missing[128], expect[256];

	snprintf (good, sizeof good, "%s/good.json", tmpdir);
	snprintf (bad, sizeof bad, "%s/bad.json", tmpdir);
	snprintf (missing, sizeof missing, "%s/missing.json", tmpdir);
	write_file (good,
	            "{\n  \"allow_hosts\": [\"*\"],\n  \"allow_cidrs\": [\"127.0.0.1/32\"]\n}\n");
	write_file (bad,
	            "{\n  \"allow_hosts\": [\"*\"],\n  \"allow_cidr\": [\"127.0.0.1/32\"]\n}\n");

	assert_int_equal (ab_egress_policy_load_file (p, good, &err), 0);
	assert_true (ab_egress_policy_load_file (p, bad, &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	snprintf (expect, sizeof expect, "policy file %s: unknown key 'allow_cidr'", bad);
	assert_string_equal (err.msg, expect);
	assert_true (ab_egress_policy_load_file (p, missing, &err) < 0);
	assert_int_equal (err.kind, AB_E_NOT_FOUND);
	assert_int_equal (err.errnum, ENOENT);
	write_file (bad, "{\n  \"allow_hosts\": [\"*\"\n}\n");
	assert_true (ab_egress_policy_load_file (p, bad, &err) < 0);
	snprintf (expect, sizeof expect, "policy file %s: line 3", bad);
	assert_int_equal (strncmp (err.msg, expect, strlen (expect)), 0);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_hostport),
		cmocka_unit_test (test_hostport_lengths),
		cmocka_unit_test (test_listen_parse),
		cmocka_unit_test (test_listen_parse_no_default),
		cmocka_unit_test (test_host_normalise),
		cmocka_unit_test (test_pattern_parse),
		cmocka_unit_test (test_pattern_match),
		cmocka_unit_test (test_decisions),
		cmocka_unit_test (test_groups_matrix),
		cmocka_unit_test (test_check_addr_family),
		cmocka_unit_test (test_builders),
		cmocka_unit_test (test_policy_json_good),
		cmocka_unit_test (test_policy_json_bad),
		cmocka_unit_test (test_policy_json_atomic),
		cmocka_unit_test_setup_teardown (test_policy_file, make_tmpdir, remove_tmpdir),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
