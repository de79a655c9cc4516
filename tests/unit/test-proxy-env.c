/* Unit tests for net/proxy-env: which variables are read and in which
 * order, NO_PROXY matching (every entry form), proxy URL parsing and the
 * Basic credentials.  Table driven; the environment is a fake. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "net/proxy-env.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

/* ---- a fake environment ---------------------------------------------------- */

struct fake_env_s {
	const char *vars[12][2];
};

static const char *
fake_lookup (const char *name, void *arg)
{
	const struct fake_env_s *e = arg;

	for (size_t i = 0; i < N (e->vars) && e->vars[i][0]; i++)
		if (strcmp (e->vars[i][0], name) == 0)
			return e->vars[i][1];
	return NULL;
}

static const struct {
	struct fake_env_s env;
	const char *https; /* expected snapshot (NULL = none) */
	const char *http;
	const char *no_proxy;
} env_cases[] = {
	{ { { { NULL, NULL } } }, NULL, NULL, NULL },
	{ { { { "HTTPS_PROXY", "A" },
	      { "https_proxy", "B" },
	      { "ALL_PROXY", "C" },
	      { "all_proxy", "D" } } },
	  "A",
	  "C",
	  NULL },
	{ { { { "https_proxy", "B" }, { "ALL_PROXY", "C" }, { "all_proxy", "D" } } },
	  "B",
	  "C",
	  NULL },
	{ { { { "all_proxy", "D" } } }, "D", "D", NULL },
	/* empty values fall through to the next name */
	{ { { { "HTTPS_PROXY", "" }, { "https_proxy", "" }, { "ALL_PROXY", "C" } } },
	  "C",
	  "C",
	  NULL },
	{ { { { "HTTP_PROXY", "H" }, { "http_proxy", "h" }, { "ALL_PROXY", "C" } } },
	  "C",
	  "H",
	  NULL },
	{ { { { "http_proxy", "h" }, { "all_proxy", "d" } } }, "d", "h", NULL },
	{ { { { "HTTP_PROXY", "" }, { "http_proxy", "" } } }, NULL, NULL, NULL },
	{ { { { "NO_PROXY", "a" }, { "no_proxy", "b" } } }, NULL, NULL, "a" },
	{ { { { "NO_PROXY", "" }, { "no_proxy", "b" } } }, NULL, NULL, "b" },
	/* HTTPS_PROXY never serves http targets, nor HTTP_PROXY https ones */
	{ { { { "HTTPS_PROXY", "S" } } }, "S", NULL, NULL },
	{ { { { "HTTP_PROXY", "P" } } }, NULL, "P", NULL },
};

static void
check_str (const char *what, size_t i, const char *got, const char *want)
{
	if ((got == NULL) != (want == NULL) || (got && strcmp (got, want) != 0))
		fail_msg ("case %zu %s: got '%s', want '%s'", i, what, got ? got : "(null)",
		          want ? want : "(null)");
}

static void
test_env_order (void **state)
{
	for (size_t i = 0; i < N (env_cases); i++) {
		struct ab_proxy_env_s pe;
		ab_proxy_env_load (&pe, fake_lookup, (void *)&env_cases[i].env);
		check_str ("https", i, pe.https_proxy, env_cases[i].https);
		check_str ("http", i, pe.http_proxy, env_cases[i].http);
		check_str ("no_proxy", i, pe.no_proxy, env_cases[i].no_proxy);
		ab_proxy_env_clear (&pe);
	}
}

/* ---- NO_PROXY -------------------------------------------------------------- */

static const struct {
	const char *no_proxy;
	const char *host; /* normalised, as the caller passes it */
	uint16_t port;
	bool bypass;
} np_cases[] = {
	{ NULL, "example.com", 443, false },
	{ "", "example.com", 443, false },
	{ "*", "example.com", 443, true },
	{ "*", "10.0.0.1", 80, true },
	{ "foo.com, *", "example.com", 443, true },
	/* a domain matches itself and its subdomains, with or without the dot */
	{ "example.com", "example.com", 443, true },
	{ "example.com", "api.example.com", 443, true },
	{ "example.com", "a.b.example.com", 443, true },
	{ ".example.com", "example.com", 443, true },
	{ ".example.com", "api.example.com", 443, true },
	{ "*.example.com", "api.example.com", 443, true },
	{ "*.example.com", "example.com", 443, true },
	{ "example.com", "notexample.com", 443, false },
	{ "example.com", "example.com.evil.net", 443, false },
	{ "api.example.com", "example.com", 443, false },
	/* case, trailing dot */
	{ "EXAMPLE.Com", "api.example.com", 443, true },
	{ "example.com.", "example.com", 443, true },
	{ ".example.com.", "x.example.com", 443, true },
	/* separators: commas and spaces, empty entries ignored */
	{ "a.com,b.com", "b.com", 443, true },
	{ "a.com b.com", "b.com", 443, true },
	{ " a.com ,, b.com ", "b.com", 443, true },
	{ "a.com\tb.com", "b.com", 443, true },
	{ "a.com,b.com", "c.com", 443, false },
	/* ports */
	{ "example.com:443", "example.com", 443, true },
	{ "example.com:443", "example.com", 8443, false },
	{ "example.com:8443", "api.example.com", 8443, true },
	{ "example.com:", "example.com", 443, false },
	{ "example.com:x", "example.com", 443, false },
	{ "example.com:99999", "example.com", 443, false },
	/* IP literals: the address only, any spelling */
	{ "127.0.0.1", "127.0.0.1", 443, true },
	{ "127.0.0.1", "127.0.0.2", 443, false },
	{ "127.0.0.1:8080", "127.0.0.1", 8080, true },
	{ "127.0.0.1:8080", "127.0.0.1", 80, false },
	{ "[::1]", "::1", 443, true },
	{ "::1", "::1", 443, true },
	{ "[::1]:443", "::1", 443, true },
	{ "[::1]:443", "::1", 80, false },
	{ "[0:0::1]", "::1", 443, true },
	{ "[2001:db8::1]", "2001:db8::2", 443, false },
	{ "1.2.3.4", "x.1.2.3.4", 443, false },
	{ "[::1", "::1", 443, false },
	/* garbage entries never match and never break the others */
	{ "bad..name, example.com", "example.com", 443, true },
	{ ".", "example.com", 443, false },
	{ ":443", "example.com", 443, false },
	{ "**", "example.com", 443, false },
};

static void
test_no_proxy (void **state)
{
	for (size_t i = 0; i < N (np_cases); i++) {
		bool got = ab_no_proxy_match (np_cases[i].no_proxy, np_cases[i].host,
		                              np_cases[i].port);
		if (got != np_cases[i].bypass)
			fail_msg ("NO_PROXY='%s' host %s:%u: got %d, want %d",
			          np_cases[i].no_proxy ? np_cases[i].no_proxy : "(null)",
			          np_cases[i].host, np_cases[i].port, got, np_cases[i].bypass);
	}
}

/* ---- proxy URLs ------------------------------------------------------------ */

static const struct {
	const char *url;
	bool ok;
	const char *host;
	uint16_t port;
	const char *auth;
} url_cases[] = {
	{ "http://proxy.example:3128", true, "proxy.example", 3128, "" },
	{ "http://proxy.example", true, "proxy.example", 80, "" },
	{ "http://proxy.example/", true, "proxy.example", 80, "" },
	{ "HTTP://Proxy.Example:8080/", true, "proxy.example", 8080, "" },
	{ "proxy.example:3128", true, "proxy.example", 3128, "" },
	{ "127.0.0.1:3128", true, "127.0.0.1", 3128, "" },
	{ "http://[::1]:3128", true, "::1", 3128, "" },
	/* "Basic " + base64("user:pass") (RFC 7617) */
	{ "http://user:pass@proxy:1", true, "proxy", 1, "Basic dXNlcjpwYXNz" },
	{ "http://user@proxy:1", true, "proxy", 1, "Basic dXNlcjo=" },
	/* percent-decoded first; the last '@' ends the userinfo */
	{ "http://us%65r:p%40ss@proxy:1", true, "proxy", 1, "Basic dXNlcjpwQHNz" },
	{ "http://u:p@ss@proxy:1", true, "proxy", 1, "Basic dTpwQHNz" },
	{ "http://u:a:b@proxy:1", true, "proxy", 1, "Basic dTphOmI=" },
	{ "https://proxy:443", false, NULL, 0, NULL },
	{ "socks5://proxy:1080", false, NULL, 0, NULL },
	{ "http://", false, NULL, 0, NULL },
	{ "http://proxy:0", false, NULL, 0, NULL },
	{ "http://proxy:65536", false, NULL, 0, NULL },
	{ "http://proxy:x", false, NULL, 0, NULL },
	{ "http://proxy/path", false, NULL, 0, NULL },
	{ "http://127.1:3128", false, NULL, 0, NULL },
	{ "http://u:%zz@proxy", false, NULL, 0, NULL },
	{ "http://u:%00@proxy", false, NULL, 0, NULL },
	{ "http://u:%4@proxy", false, NULL, 0, NULL },
	{ "http://pro xy:1", false, NULL, 0, NULL },
};

static void
test_proxy_url (void **state)
{
	for (size_t i = 0; i < N (url_cases); i++) {
		struct ab_proxy_s p;
		ab_error_t err = AB_ERROR_INIT;
		int r = ab_proxy_url_parse (url_cases[i].url, &p, &err);

		if (!url_cases[i].ok) {
			if (r >= 0)
				fail_msg ("'%s' accepted", url_cases[i].url);
			/* The message never quotes the URL: it may hold a password. */
			assert_null (strstr (err.msg, url_cases[i].url));
			continue;
		}
		if (r < 0)
			fail_msg ("'%s' refused: %s", url_cases[i].url, err.msg);
		check_str ("host", i, p.hp.host, url_cases[i].host);
		assert_int_equal (p.hp.port, url_cases[i].port);
		check_str ("auth", i, p.auth, url_cases[i].auth);
	}
}

static void
test_select (void **state)
{
	struct fake_env_s env = { { { "HTTPS_PROXY", "http://s:1" },
		                    { "HTTP_PROXY", "http://h:2" },
		                    { "NO_PROXY", ".internal, 10.0.0.1" } } };
	struct fake_env_s bad = { { { "HTTPS_PROXY", "ftp://x" } } };
	struct ab_proxy_env_s pe;
	struct ab_hostport_s t;
	struct ab_proxy_s p;
	ab_error_t err = AB_ERROR_INIT;

	ab_proxy_env_load (&pe, fake_lookup, &env);
	assert_int_equal (ab_hostport_parse ("api.example.com:443", 443, &t, &err), 0);
	assert_int_equal (ab_proxy_select (&pe, true, &t, &p, &err), 1);
	assert_string_equal (p.hp.host, "s");
	assert_int_equal (ab_proxy_select (&pe, false, &t, &p, &err), 1);
	assert_string_equal (p.hp.host, "h");
	assert_int_equal (ab_hostport_parse ("db.internal:443", 443, &t, &err), 0);
	assert_int_equal (ab_proxy_select (&pe, true, &t, &p, &err), 0);
	assert_int_equal (ab_hostport_parse ("10.0.0.1:443", 443, &t, &err), 0);
	assert_int_equal (ab_proxy_select (&pe, true, &t, &p, &err), 0);
	ab_proxy_env_clear (&pe);

	ab_proxy_env_load (&pe, fake_lookup, &bad);
	assert_int_equal (ab_hostport_parse ("api.example.com", 443, &t, &err), 0);
	assert_true (ab_proxy_select (&pe, true, &t, &p, &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	/* No http proxy configured: direct, whatever HTTPS_PROXY says. */
	assert_int_equal (ab_proxy_select (&pe, false, &t, &p, &err), 0);
	ab_proxy_env_clear (&pe);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_env_order),
		cmocka_unit_test (test_no_proxy),
		cmocka_unit_test (test_proxy_url),
		cmocka_unit_test (test_select),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
