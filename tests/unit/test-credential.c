/* Unit tests for the credential proxy's pure parts: the configuration
 * document's validation, the token check, request-target splitting with
 * the traversal rule, the Bearer field, and the exact head sent upstream.
 * Table driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "net/credential-internal.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

/* ---- configuration --------------------------------------------------------- */

#define UP(name, url) "{\"name\": \"" name "\", \"baseUrl\": \"" url "\"}"
#define DOC(ups)      "{\"threadToken\": \"tok\", \"upstreams\": [" ups "]}"

static const struct {
	const char *doc;
	bool ok;
} config_cases[] = {
	{ DOC (""), true },
	{ DOC (UP ("a", "https://api.example.com")), true },
	{ DOC (UP ("A9_.-z", "https://api.example.com/v1/")), true },
	{ DOC (UP ("a", "https://127.0.0.1:8443")), true },
	{ DOC (UP ("a", "https://[::1]:8443/x")), true },
	{ DOC (UP ("a", "http://127.0.0.1:8080")), true },
	{ DOC (UP ("a", "http://127.9.9.9")), true },
	{ DOC (UP ("a", "http://[::1]:1")), true },
	{ DOC (UP ("a", "http://localhost:1")), true },
	{ DOC (UP ("a", "https://a.example") "," UP ("b", "https://b.example")), true },
	/* names */
	{ DOC (UP ("", "https://a.example")), false },
	{ DOC (UP ("_a", "https://a.example")), false },
	{ DOC (UP (".a", "https://a.example")), false },
	{ DOC (UP ("a b", "https://a.example")), false },
	{ DOC (UP ("a/b", "https://a.example")), false },
	{ DOC (UP ("a%b", "https://a.example")), false },
	{ DOC (UP ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	           "https://a.example")),
	  true },
	{ DOC (UP ("aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	           "https://a.example")),
	  false },
	{ DOC (UP ("a", "https://a.example") "," UP ("a", "https://b.example")), false },
	/* base URLs */
	{ DOC (UP ("a", "http://api.example.com")), false },
	{ DOC (UP ("a", "http://10.0.0.1")), false },
	{ DOC (UP ("a", "ftp://a.example")), false },
	{ DOC (UP ("a", "https://")), false },
	{ DOC (UP ("a", "https://u@a.example")), false },
	{ DOC (UP ("a", "https://a.example/?q=1")), false },
	{ DOC (UP ("a", "https://a.example/#f")), false },
	{ DOC (UP ("a", "https://a.example:0")), false },
	{ DOC (UP ("a", "https://a.example:99999")), false },
	{ DOC (UP ("a", "https://0x7f.1")), false },
	{ DOC (UP ("a", "https://a.example/sp ace")), false },
	{ DOC ("{\"name\": \"a\"}"), false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": 5}"), false },
	{ DOC ("\"a\""), false },
	/* inject and strip */
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x-api-key\", \"value\": \"v\"}]}"),
	  true },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"authorization\", \"value\": \"Bearer v\"}]}"),
	  true },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x\", \"value\": \"\"}]}"),
	  true },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x\", \"value\": \"a\\nb\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x\", \"value\": \"a\\rb\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x\", \"value\": \"a\\u0000b\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x\", \"value\": \" lead\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x\", \"value\": \"\\u00e9\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x y\", \"value\": \"v\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x:\", \"value\": \"v\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"Host\", \"value\": \"v\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"transfer-encoding\", \"value\": \"v\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"Connection\", \"value\": \"v\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [{\"header\": "
	       "\"x\"}]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": {}}"), false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"inject\": [\"x\"]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"stripRequestHeaders\": "
	       "[\"x-a\", \"Cookie\"]}"),
	  true },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"stripRequestHeaders\": "
	       "[\"x a\"]}"),
	  false },
	{ DOC ("{\"name\": \"a\", \"baseUrl\": \"https://a.example\", \"stripRequestHeaders\": "
	       "\"x\"}"),
	  false },
	/* the document */
	{ "", false },
	{ "[]", false },
	{ "{}", false },
	{ "{\"threadToken\": \"tok\"}", false },
	{ "{\"threadToken\": \"\", \"upstreams\": []}", false },
	{ "{\"threadToken\": \"a b\", \"upstreams\": []}", false },
	{ "{\"threadToken\": 5, \"upstreams\": []}", false },
	{ "{\"threadToken\": \"tok\", \"upstreams\": null}", false },
	{ "{\"threadToken\": \"tok\", \"upstreams\": [], \"threadToken\": \"x\"}", false },
	{ "{\"threadToken\": \"tok\", \"upstreams\": [], \"future\": {\"x\": 1}}", true },
	{ "{\"threadToken\": \"tok\", \"upstreams\": []} trailing", false },
};

static void
test_config_validation (void **state)
{
	for (size_t i = 0; i < N (config_cases); i++) {
		ab_error_t err = AB_ERROR_INIT;
		const char *d = config_cases[i].doc;
		struct ab_cred_config_s *c = ab_cred_config_parse (d, strlen (d), &err);

		if (config_cases[i].ok && c == NULL)
			fail_msg ("case %zu refused: %s\n  %s", i, err.msg, d);
		if (!config_cases[i].ok && c != NULL)
			fail_msg ("case %zu accepted:\n  %s", i, d);
		if (c == NULL)
			assert_int_equal (err.kind, AB_E_INVALID);
		ab_cred_config_unref (c);
	}
}

static void
test_config_contents (void **state)
{
	static const char doc[] =
	        "{\"threadToken\": \"tok-123\", \"upstreams\": ["
	        "{\"name\": \"b\", \"baseUrl\": \"https://API.example.com:443/v1//\","
	        " \"inject\": [{\"header\": \"x-api-key\", \"value\": \"SECRET\"}],"
	        " \"stripRequestHeaders\": [\"x-a\"]},"
	        "{\"name\": \"a\", \"baseUrl\": \"https://[::1]:8443\"}]}";
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cred_config_s *c = ab_cred_config_parse (doc, strlen (doc), &err);
	const struct ab_cred_upstream_s *u;
	char *names;

	assert_non_null (c);
	names = ab_cred_config_names (c);
	assert_string_equal (names, "b,a");
	free (names);
	u = ab_cred_config_find (c, "b", 1);
	assert_non_null (u);
	assert_true (u->url.tls);
	assert_string_equal (u->url.hp.host, "api.example.com");
	assert_string_equal (u->url.path, "/v1");
	assert_string_equal (u->host_field, "api.example.com");
	assert_int_equal (u->n_inject, 1);
	assert_string_equal (u->inject[0].value, "SECRET");
	assert_int_equal (u->n_strip, 1);
	u = ab_cred_config_find (c, "a", 1);
	assert_string_equal (u->host_field, "[::1]:8443");
	assert_string_equal (u->url.path, "");
	assert_null (ab_cred_config_find (c, "c", 1));
	assert_null (ab_cred_config_find (c, "B", 1));
	/* references: the last unref frees (ASan checks) */
	assert_ptr_equal (ab_cred_config_ref (c), c);
	ab_cred_config_unref (c);
	ab_cred_config_unref (c);
}

static void
test_token (void **state)
{
	static const char doc[] = "{\"threadToken\": \"secret-token-1\", \"upstreams\": []}";
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cred_config_s *c = ab_cred_config_parse (doc, strlen (doc), &err);

	assert_non_null (c);
	assert_true (ab_cred_token_ok (c, "secret-token-1", 14));
	assert_false (ab_cred_token_ok (c, "secret-token-2", 14)); /* same length */
	assert_false (ab_cred_token_ok (c, "secret-token-1x", 15));
	assert_false (ab_cred_token_ok (c, "secret-token-", 13));
	assert_false (ab_cred_token_ok (c, "", 0));
	assert_false (ab_cred_token_ok (c, "SECRET-TOKEN-1", 14));
	ab_cred_config_unref (c);
}

/* ---- request targets ------------------------------------------------------- */

static const struct {
	const char *target;
	ab_cp_target_verdict v;
	const char *name;
	const char *rest;
	const char *query;
} target_cases[] = {
	{ "/openai/v1/chat", AB_CP_TARGET_OK, "openai", "/v1/chat", "" },
	{ "/openai", AB_CP_TARGET_OK, "openai", "", "" },
	{ "/openai/", AB_CP_TARGET_OK, "openai", "/", "" },
	{ "/openai?x=1", AB_CP_TARGET_OK, "openai", "", "?x=1" },
	{ "/openai/v1?x=/../&y=%2e%2e", AB_CP_TARGET_OK, "openai", "/v1", "?x=/../&y=%2e%2e" },
	{ "/", AB_CP_TARGET_OK, "", "", "" },
	{ "/%6fpenai/v1", AB_CP_TARGET_OK, "openai", "/v1", "" },
	{ "/a%2fb/c", AB_CP_TARGET_OK, "a/b", "/c", "" },
	{ "/openai/v1/...", AB_CP_TARGET_OK, "openai", "/v1/...", "" },
	{ "/openai/v1/.x/x./a..b", AB_CP_TARGET_OK, "openai", "/v1/.x/x./a..b", "" },
	{ "/openai//v1", AB_CP_TARGET_OK, "openai", "//v1", "" },
	/* traversal, every spelling */
	{ "/openai/../x", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/./x", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/..", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/.", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/..", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/./openai", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/%2e%2e/x", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/%2E%2E/x", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/.%2e/x", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/%2e./x", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/%2e/x", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/a%2f..%2fb", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/a%2F%2e%2e", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/..%5cx", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/a\\..\\b", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/openai/..?x=1", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	{ "/%2e%2e/openai", AB_CP_TARGET_TRAVERSAL, NULL, NULL, NULL },
	/* malformed */
	{ "", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "openai/v1", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "http://x/openai", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "*", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "/openai/%zz", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "/openai/%2", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "/openai/%", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "/openai/a%00b", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "/open%zzai", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
	{ "/openai#frag", AB_CP_TARGET_MALFORMED, NULL, NULL, NULL },
};

static void
test_targets (void **state)
{
	for (size_t i = 0; i < N (target_cases); i++) {
		struct ab_cp_target_s t;
		const char *s = target_cases[i].target;
		ab_cp_target_verdict v = ab_cp_parse_target (s, strlen (s), &t);

		if (v != target_cases[i].v)
			fail_msg ("'%s': verdict %d, want %d", s, v, target_cases[i].v);
		if (v != AB_CP_TARGET_OK)
			continue;
		assert_string_equal (t.name, target_cases[i].name);
		if (t.rest_len != strlen (target_cases[i].rest)
		    || memcmp (t.rest, target_cases[i].rest, t.rest_len) != 0)
			fail_msg ("'%s': rest '%.*s', want '%s'", s, (int)t.rest_len, t.rest,
			          target_cases[i].rest);
		if (t.query_len != strlen (target_cases[i].query)
		    || memcmp (t.query, target_cases[i].query, t.query_len) != 0)
			fail_msg ("'%s': query '%.*s', want '%s'", s, (int)t.query_len, t.query,
			          target_cases[i].query);
	}
}

/* ---- heads ------------------------------------------------------------------ */

static struct ab_http_field_s fields[100];
static const struct ab_http_limits_s limits = { .max_head = 65536, .max_fields = 100 };

static void
parse_head (const char *raw, struct ab_http_head_s *h)
{
	struct ab_http_error_s e;

	h->fields = fields;
	if (ab_http_parse_request (raw, strlen (raw), &limits, h, &e) < 0)
		fail_msg ("test head does not parse: %s", e.reason);
}

static const struct {
	const char *fields; /* after "GET / HTTP/1.1\r\nHost: x\r\n" */
	bool ok;
	const char *token;
} bearer_cases[] = {
	{ "Authorization: Bearer abc\r\n", true, "abc" },
	{ "authorization: bearer abc\r\n", true, "abc" },
	{ "AUTHORIZATION: BEARER   abc\r\n", true, "abc" },
	{ "Authorization: Bearer a b\r\n", true, "a b" },
	{ "", false, NULL },
	{ "Authorization: Basic abc\r\n", false, NULL },
	{ "Authorization: Bearer\r\n", false, NULL },
	{ "Authorization: Bearer \r\n", false, NULL },
	{ "Authorization: Bearerabc\r\n", false, NULL },
	{ "Authorization: abc\r\n", false, NULL },
	{ "Authorization: Bearer abc\r\nAuthorization: Bearer abc\r\n", false, NULL },
	{ "X-Authorization: Bearer abc\r\n", false, NULL },
};

static void
test_bearer (void **state)
{
	for (size_t i = 0; i < N (bearer_cases); i++) {
		char raw[512];
		struct ab_http_head_s h;
		const char *tok = NULL;
		size_t len = 0;
		bool ok;

		snprintf (raw, sizeof raw, "GET / HTTP/1.1\r\nHost: x\r\n%s\r\n",
		          bearer_cases[i].fields);
		parse_head (raw, &h);
		ok = ab_cp_bearer (&h, &tok, &len);
		if (ok != bearer_cases[i].ok)
			fail_msg ("case %zu: got %d", i, ok);
		if (ok
		    && (len != strlen (bearer_cases[i].token)
		        || memcmp (tok, bearer_cases[i].token, len)))
			fail_msg ("case %zu: token '%.*s'", i, (int)len, tok);
	}
}

static void
test_build_request (void **state)
{
	static const char doc[] =
	        "{\"threadToken\": \"tok-0123456789\", \"upstreams\": ["
	        "{\"name\": \"up\", \"baseUrl\": \"https://api.example.com:8443/v1\","
	        " \"inject\": [{\"header\": \"x-api-key\", \"value\": \"SECRET\"}],"
	        " \"stripRequestHeaders\": [\"X-Strip\"]},"
	        "{\"name\": \"root\", \"baseUrl\": \"http://127.0.0.1\"}]}";
	static const char raw[] = "POST /up/messages?stream=1 HTTP/1.1\r\n"
	                          "Host: 127.0.0.1:8288\r\n"
	                          "Authorization: Bearer tok-0123456789\r\n"
	                          "X-Api-Key: client\r\n"
	                          "x-strip: 1\r\n"
	                          "Connection: keep-alive, x-hop\r\n"
	                          "x-hop: 1\r\n"
	                          "Proxy-Authorization: Basic eA==\r\n"
	                          "x-leak: a tok-0123456789 b\r\n"
	                          "Content-Type: application/json\r\n"
	                          "Content-Length: 2\r\n"
	                          "\r\n";
	static const char want[] = "POST /v1/messages?stream=1 HTTP/1.1\r\n"
	                           "Host: api.example.com:8443\r\n"
	                           "Content-Type: application/json\r\n"
	                           "x-api-key: SECRET\r\n"
	                           "Content-Length: 2\r\n"
	                           "\r\n";
	static const char want_abs[] = "GET http://127.0.0.1/ HTTP/1.1\r\n"
	                               "Host: 127.0.0.1\r\n"
	                               "Proxy-Authorization: Basic dTpw\r\n"
	                               "\r\n";
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cred_config_s *c = ab_cred_config_parse (doc, strlen (doc), &err);
	struct ab_http_head_s h;
	struct ab_cp_target_s t;
	struct ab_iobuf_s b = { 0 };

	assert_non_null (c);
	parse_head (raw, &h);
	assert_int_equal (ab_cp_parse_target (h.target, h.target_len, &t), AB_CP_TARGET_OK);
	ab_cp_build_request (&b, &h, c, ab_cred_config_find (c, "up", 2), &t, false, NULL);
	ab_iobuf_append (&b, "", 1);
	assert_string_equal (ab_iobuf_peek (&b), want);
	ab_iobuf_free (&b);

	parse_head ("GET /root HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer t\r\n\r\n", &h);
	assert_int_equal (ab_cp_parse_target (h.target, h.target_len, &t), AB_CP_TARGET_OK);
	ab_cp_build_request (&b, &h, c, ab_cred_config_find (c, "root", 4), &t, true, "Basic dTpw");
	ab_iobuf_append (&b, "", 1);
	assert_string_equal (ab_iobuf_peek (&b), want_abs);
	ab_iobuf_free (&b);

	/* chunked requests are re-framed as chunked, never with the client's field */
	parse_head ("PUT /up HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", &h);
	assert_int_equal (ab_cp_parse_target (h.target, h.target_len, &t), AB_CP_TARGET_OK);
	ab_cp_build_request (&b, &h, c, ab_cred_config_find (c, "up", 2), &t, false, NULL);
	ab_iobuf_append (&b, "", 1);
	assert_string_equal (ab_iobuf_peek (&b),
	                     "PUT /v1 HTTP/1.1\r\nHost: api.example.com:8443\r\n"
	                     "x-api-key: SECRET\r\nTransfer-Encoding: chunked\r\n\r\n");
	ab_iobuf_free (&b);
	ab_cred_config_unref (c);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_config_validation),
		cmocka_unit_test (test_config_contents),
		cmocka_unit_test (test_token),
		cmocka_unit_test (test_targets),
		cmocka_unit_test (test_bearer),
		cmocka_unit_test (test_build_request),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
