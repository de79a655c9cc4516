/* Unit tests for the exec-server's pure checks (daemon/exec-server-uri.c):
 * file:// URIs to sandbox paths and back (the workspace map), the `sandbox`
 * permission profile against what the sandbox grants, and env/envPolicy. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cleanup.h"
#include "daemon/exec-server.h"

#define N(a) (sizeof (a) / sizeof (a)[0])

static struct ab_box_s box;

static int
setup (void **state)
{
	(void)state;
	memset (&box, 0, sizeof box);
	ab_spec_init (&box.spec);
	box.spec.workspace = strdup ("/home/me/proj/");
	box.spec.network = AB_NETWORK_NONE;
	ab_strv_push (&box.spec.env, "PATH=/usr/bin:/bin");
	ab_strv_push (&box.spec.env, "HOME=/root");
	ab_strv_push (&box.spec.env, "API_KEY=secret");
	ab_strv_push (&box.spec.env, "LANG=C.UTF-8");
	return 0;
}

static int
teardown (void **state)
{
	(void)state;
	ab_spec_free (&box.spec);
	return 0;
}

static const struct {
	const char *uri;
	const char *path; /* NULL: refused with code */
	int code;
	bool host_form;
} uris[] = {
	{ "file:///workspace/a.txt", "/workspace/a.txt", 0, false },
	{ "file:///etc/os-release", "/etc/os-release", 0, false },
	{ "file://localhost/tmp/x", "/tmp/x", 0, false },
	{ "FILE:///tmp/x", "/tmp/x", 0, false },
	{ "file:///home/me/proj", "/workspace", 0, true },
	{ "file:///home/me/proj/src/m.c", "/workspace/src/m.c", 0, true },
	{ "file:///home/me/project/x", "/home/me/project/x", 0, false }, /* a prefix, not the dir */
	{ "file:///home/me/pro%6A/a", "/workspace/a", 0, true },
	{ "file:///a%20b", "/a b", 0, false },
	{ "/etc/passwd", NULL, AB_XS_BAD_PARAMS, false },
	{ "relative/path", NULL, AB_XS_BAD_PARAMS, false },
	{ "http://example.com/x", NULL, AB_XS_BAD_PARAMS, false },
	{ "data:text/plain,hi", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:/etc/passwd", NULL, AB_XS_BAD_PARAMS, false },
	{ "file://evil.example/etc/passwd", NULL, AB_XS_INVALID_REQUEST, false },
	{ "file:///workspace/../etc/passwd", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:///workspace/%2e%2e/etc/passwd", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:///workspace/./a", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:///home/me/proj/../../../etc", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:///a%00b", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:///a%zz", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:///a?q=1", NULL, AB_XS_BAD_PARAMS, false },
	{ "file:///a#frag", NULL, AB_XS_BAD_PARAMS, false },
};

static void
test_uri_path (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (uris); i++) {
		struct ab_xs_reply_s out = { 0 };
		json_t *v = json_string (uris[i].uri);
		bool host_form = false;
		char *p = ab_xs_uri_path (&box, v, "path", &host_form, &out);
		if (uris[i].path) {
			if (!p)
				fail_msg ("%s: refused: %s", uris[i].uri, out.msg);
			assert_string_equal (p, uris[i].path);
			assert_int_equal (host_form, uris[i].host_form);
		} else {
			if (p)
				fail_msg ("%s: accepted as %s", uris[i].uri, p);
			assert_int_equal (out.code, uris[i].code);
		}
		free (p);
		json_decref (v);
	}
	struct ab_xs_reply_s out = { 0 };
	bool hf;
	json_t *n = json_integer (1);
	assert_null (ab_xs_uri_path (&box, n, "path", &hf, &out));
	assert_int_equal (out.code, AB_XS_BAD_PARAMS);
	json_decref (n);
}

static void
test_path_uri (void **state)
{
	char *u;

	(void)state;
	u = ab_xs_path_uri (&box, "/workspace/a b%.txt", false);
	assert_string_equal (u, "file:///workspace/a%20b%25.txt");
	free (u);
	u = ab_xs_path_uri (&box, "/workspace/src/m.c", true);
	assert_string_equal (u, "file:///home/me/proj/src/m.c");
	free (u);
	u = ab_xs_path_uri (&box, "/workspace", true);
	assert_string_equal (u, "file:///home/me/proj");
	free (u);
	u = ab_xs_path_uri (&box, "/workspaces/x", true); /* not under /workspace */
	assert_string_equal (u, "file:///workspaces/x");
	free (u);
	u = ab_xs_path_uri (&box, "/etc/hostname", true);
	assert_string_equal (u, "file:///etc/hostname");
	free (u);
}

static const char *const granted =
        "{\"permissions\":{\"type\":\"managed\",\"file_system\":{\"type\":\"restricted\","
        "\"entries\":["
        "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"root\"}},\"access\":\"read\"},"
        "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"project_roots\"}},\"access\":"
        "\"write\"},"
        "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"slash_tmp\"}},\"access\":\"write\"},"
        "{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"tmpdir\"}},\"access\":\"write\"}"
        "%s]},\"network\":%s}}";

static int
profile (const char *extra, const char *network)
{
	char text[2048];
	struct ab_xs_reply_s out = { 0 };
	json_t *j;
	int rc;

	snprintf (text, sizeof text, granted, extra, network);
	j = json_loads (text, 0, NULL);
	assert_non_null (j);
	rc = ab_xs_check_profile (&box, j, &out);
	json_decref (j);
	return rc == 0 ? 0 : out.code;
}

static void
test_profile (void **state)
{
	struct ab_xs_reply_s out = { 0 };
	json_t *j;

	(void)state;
	assert_int_equal (ab_xs_check_profile (&box, NULL, &out), 0);
	j = json_null ();
	assert_int_equal (ab_xs_check_profile (&box, j, &out), 0);
	json_decref (j);
	j = json_pack ("{s:i}", "bogus", 1);
	assert_int_equal (ab_xs_check_profile (&box, j, &out), -1);
	assert_int_equal (out.code, AB_XS_BAD_PARAMS);
	json_decref (j);
	/* exactly what a network-none sandbox grants */
	assert_int_equal (profile ("", "\"restricted\""), 0);
	assert_int_equal (profile ("", "null"), 0);
	/* more: network the sandbox does not have */
	assert_int_equal (profile ("", "\"enabled\""), AB_XS_INVALID_REQUEST);
	/* less: a read-only .git inside the writable workspace */
	assert_int_equal (profile (",{\"path\":{\"type\":\"special\",\"value\":{\"kind\":"
	                           "\"project_roots\",\"subpath\":\".git\"}},\"access\":\"read\"}",
	                           "\"restricted\""),
	                  AB_XS_INVALID_REQUEST);
	/* more: a writable root */
	assert_int_equal (
	        profile (",{\"path\":{\"type\":\"special\",\"value\":{\"kind\":\"root\"}},"
	                 "\"access\":\"write\"}",
	                 "\"restricted\""),
	        AB_XS_INVALID_REQUEST);
	/* a path entry */
	assert_int_equal (
	        profile (",{\"path\":{\"type\":\"path\",\"path\":\"/x\"},\"access\":\"write\"}",
	                 "\"restricted\""),
	        AB_XS_INVALID_REQUEST);
	box.spec.network = AB_NETWORK_PROXY;
	assert_int_equal (profile ("", "\"enabled\""), 0);
	assert_int_equal (profile ("", "\"restricted\""), AB_XS_INVALID_REQUEST);
	box.spec.network = AB_NETWORK_NONE;
}

static bool
has (char **env, const char *kv)
{
	for (; env && *env; env++)
		if (strcmp (*env, kv) == 0)
			return true;
	return false;
}

static bool
has_key (char **env, const char *k)
{
	size_t n = strlen (k);
	for (; env && *env; env++)
		if (strncmp (*env, k, n) == 0 && (*env)[n] == '=')
			return true;
	return false;
}

static char **
env_of (const char *env, const char *policy, int *code)
{
	struct ab_xs_reply_s out = { 0 };
	json_t *e = env ? json_loads (env, JSON_ALLOW_NUL, NULL) : NULL;
	json_t *p = policy ? json_loads (policy, 0, NULL) : NULL;
	char **r = ab_xs_build_env (&box, e, p, &out);

	*code = out.code;
	json_decref (e);
	json_decref (p);
	return r;
}

static void
test_env (void **state)
{
	char **e;
	int code;

	(void)state;
	/* without a policy: exactly env */
	e = env_of ("{\"A\":\"1\"}", NULL, &code);
	assert_true (has (e, "A=1") && !has_key (e, "PATH"));
	ab_cleanup_strvp (&e);
	/* inherit all, default excludes drop *KEY* */
	e = env_of ("{\"A\":\"1\"}", "{\"inherit\":\"all\"}", &code);
	assert_true (has (e, "A=1") && has (e, "PATH=/usr/bin:/bin") && has (e, "LANG=C.UTF-8"));
	assert_false (has_key (e, "API_KEY"));
	ab_cleanup_strvp (&e);
	e = env_of (NULL, "{\"inherit\":\"all\",\"ignoreDefaultExcludes\":true}", &code);
	assert_true (has (e, "API_KEY=secret"));
	ab_cleanup_strvp (&e);
	/* core, none, exclude, set, includeOnly, env on top */
	e = env_of (NULL, "{\"inherit\":\"core\"}", &code);
	assert_true (has_key (e, "PATH") && has_key (e, "HOME") && !has_key (e, "LANG"));
	ab_cleanup_strvp (&e);
	e = env_of ("{\"Z\":\"env\"}",
	            "{\"inherit\":\"none\",\"set\":{\"Z\":\"set\",\"Y\":\"2\"},\"includeOnly\":["
	            "\"Z\"]}",
	            &code);
	assert_true (has (e, "Z=env") && !has_key (e, "Y") && !has_key (e, "PATH"));
	ab_cleanup_strvp (&e);
	e = env_of (NULL, "{\"inherit\":\"all\",\"exclude\":[\"la*\"]}", &code);
	assert_false (has_key (e, "LANG")); /* globs are case-insensitive */
	ab_cleanup_strvp (&e);
	/* refused names and values */
	static const char *const bad[] = { "{\"A-B\":\"x\"}", "{\"1A\":\"x\"}",
		                           "{\"\":\"x\"}",    "{\"A=B\":\"x\"}",
		                           "{\"A\":1}",       "{\"A\":\"a\\u0000b\"}",
		                           "[\"A=B\"]" };
	for (size_t i = 0; i < N (bad); i++) {
		e = env_of (bad[i], NULL, &code);
		if (e)
			fail_msg ("env %s accepted", bad[i]);
		assert_int_equal (code, AB_XS_BAD_PARAMS);
	}
	e = env_of (NULL, "{\"inherit\":\"some\"}", &code);
	assert_null (e);
	assert_int_equal (code, AB_XS_BAD_PARAMS);
	e = env_of (NULL, "{\"inherit\":\"all\",\"set\":{\"B C\":\"x\"}}", &code);
	assert_null (e);
	assert_int_equal (code, AB_XS_BAD_PARAMS);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_uri_path),
		cmocka_unit_test (test_path_uri),
		cmocka_unit_test (test_profile),
		cmocka_unit_test (test_env),
	};
	return cmocka_run_group_tests (tests, setup, teardown);
}
