/* Unit tests for the browser's URL policy (net/browser-url.c): schemes,
 * odd text, credentials, every spelling of a literal address, names by
 * name, the sandbox's allow-cidr, and a sandbox without network.  Table
 * driven; the sandbox policy is the egress proxy's own with no host
 * addresses loaded (pure: no name is resolved; browser.bats checks the
 * resolution, in a network namespace of its own). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "net/browser-url.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

struct url_case_s {
	const char *url;
	int rc; /* 0 allowed, else -1 */
	ab_error_kind kind;
	const char *msg; /* a part of the message, or NULL */
};

static const struct url_case_s proxy_cases[] = {
	{ "http://example.com/", 0, 0, NULL },
	{ "https://example.com:8443/a?b#c", 0, 0, NULL },
	{ "HTTP://Example.COM./", 0, 0, NULL },
	{ "http://127.0.0.2:8080/", 0, 0, NULL }, /* inside allow-cidr */
	{ "file:///etc/passwd", -1, AB_E_DENIED, "blocked URL scheme: file" },
	{ "chrome://settings", -1, AB_E_DENIED, "blocked URL scheme: chrome" },
	{ "chrome-extension://x/y", -1, AB_E_DENIED, "blocked URL scheme: chrome-extension" },
	{ "data:text/html,x", -1, AB_E_DENIED, "blocked URL scheme: data" },
	{ "javascript:alert(1)", -1, AB_E_DENIED, "blocked URL scheme: javascript" },
	{ "vbscript:x", -1, AB_E_DENIED, "blocked URL scheme: vbscript" },
	{ "blob:http://example.com/x", -1, AB_E_DENIED, "blocked URL scheme: blob" },
	{ "ws://example.com/", -1, AB_E_DENIED, "blocked URL scheme: ws" },
	{ "about:blank", -1, AB_E_DENIED, "blocked URL scheme: about" },
	{ "example.com", -1, AB_E_INVALID, "not an absolute URL" },
	{ "http:example.com", -1, AB_E_INVALID, "//host" },
	{ "", -1, AB_E_INVALID, "required" },
	{ "http://exa\tmple.com/", -1, AB_E_DENIED, "control" },
	{ "http://127.0.0.\n1/", -1, AB_E_DENIED, "control" },
	{ "http://ex ample.com/", -1, AB_E_DENIED, "spaces" },
	{ "http://\xc3\xa9xample.com/", -1, AB_E_DENIED, "non-ASCII" },
	{ "http://user:pw@example.com/", -1, AB_E_DENIED, "credentials" },
	/* Chromium reads '\' as '/': the host is example.com, as here */
	{ "http://example.com\\@127.0.0.1/", 0, 0, NULL },
	{ "http://2130706433/", -1, AB_E_INVALID, "non-canonical IPv4" },
	{ "http://0x7f.1/", -1, AB_E_INVALID, "non-canonical IPv4" },
	{ "http://0x7f000001/", -1, AB_E_INVALID, "non-canonical IPv4" },
	{ "http://0177.0.0.1/", -1, AB_E_INVALID, "non-canonical IPv4" },
	{ "http://127.1/", -1, AB_E_INVALID, "non-canonical IPv4" },
	{ "http://127.000.000.001/", -1, AB_E_INVALID, "non-canonical IPv4" },
	{ "http://127.0.0.1./", -1, AB_E_INVALID, "non-canonical IPv4" },
	{ "http://%31%32%37.0.0.1/", -1, AB_E_INVALID, NULL },
	{ "http://127.0.0.1/", -1, AB_E_DENIED, "loopback" },
	{ "http://127.0.0.1\\evil.com/", -1, AB_E_DENIED, "loopback" },
	{ "http://[::1]/", -1, AB_E_DENIED, "loopback" },
	{ "http://[::ffff:127.0.0.1]/", -1, AB_E_DENIED, NULL },
	{ "http://[::ffff:a9fe:a9fe]/", -1, AB_E_DENIED, NULL },
	{ "http://[::1%25lo]/", -1, AB_E_INVALID, "zone" },
	{ "http://169.254.169.254/latest/", -1, AB_E_DENIED, NULL },
	{ "http://100.100.100.200/", -1, AB_E_DENIED, NULL },
	{ "http://10.0.0.1/", -1, AB_E_DENIED, "private" },
	{ "http://192.168.1.1/", -1, AB_E_DENIED, "private" },
	{ "http://[fd00:ec2::254]/", -1, AB_E_DENIED, NULL },
	{ "http://[64:ff9b::a9fe:a9fe]/", -1, AB_E_DENIED, NULL },
	{ "http://0.0.0.0/", -1, AB_E_DENIED, NULL },
	{ "http://localhost:8080/", -1, AB_E_DENIED, "localhost" },
	{ "http://a.localhost/", -1, AB_E_DENIED, NULL },
	{ "http://metadata.google.internal/", -1, AB_E_DENIED, "metadata" },
	{ "http://example.com:0/", -1, AB_E_DENIED, "port" },
	{ "http://example.com:99999/", -1, AB_E_INVALID, "port" },
};

static void
run_cases (const struct ab_egress_policy_s *p, const struct url_case_s *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		ab_error_t err = AB_ERROR_INIT;
		int rc = ab_browser_url_check (p, v[i].url, false, &err);
		if (rc != v[i].rc || (rc < 0 && err.kind != v[i].kind)
		    || (rc < 0 && v[i].msg && !strstr (err.msg, v[i].msg)))
			fail_msg ("%s: rc %d kind %d '%s'", v[i].url, rc, (int)err.kind, err.msg);
	}
}

static void
test_proxy (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_egress_policy_s *p = ab_egress_policy_new_sandbox ();

	(void)state;
	assert_int_equal (ab_egress_policy_add_allow_host (p, "*", &err), 0);
	assert_int_equal (ab_egress_policy_add_allow_cidr (p, "127.0.0.2/32", &err), 0);
	run_cases (p, proxy_cases, N (proxy_cases));
	ab_egress_policy_free (p);
}

static void
test_allowlist (void **state)
{
	static const struct url_case_s v[] = {
		{ "https://example.com/", 0, 0, NULL },
		{ "https://other.example/", -1, AB_E_DENIED, "not in allowlist" },
	};
	ab_error_t err = AB_ERROR_INIT;
	struct ab_egress_policy_s *p = ab_egress_policy_new_sandbox ();

	(void)state;
	assert_int_equal (ab_egress_policy_add_allow_host (p, "example.com", &err), 0);
	run_cases (p, v, N (v));
	ab_egress_policy_free (p);
}

static void
test_no_network (void **state)
{
	static const struct url_case_s v[] = {
		{ "http://127.0.0.1:8000/", 0, 0, NULL },
		{ "http://localhost:3000/app", 0, 0, NULL },
		{ "http://[::1]:8000/", 0, 0, NULL },
		{ "http://127.9.9.9/", 0, 0, NULL },
		{ "http://example.com/", -1, AB_E_DENIED, "no network" },
		{ "http://10.0.0.1/", -1, AB_E_DENIED, "no network" },
		{ "http://2130706433/", -1, AB_E_INVALID, "non-canonical" },
		{ "file:///etc/passwd", -1, AB_E_DENIED, "blocked URL scheme" },
	};

	(void)state;
	run_cases (NULL, v, N (v));
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_proxy),
		cmocka_unit_test (test_allowlist),
		cmocka_unit_test (test_no_network),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
