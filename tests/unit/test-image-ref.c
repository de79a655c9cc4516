/* Unit tests for image/ref: references as docker and podman spell them,
 * and image/unpack's name cleaning.  Table driven. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "image/ref.h"
#include "image/unpack.h"

#define N(a) (sizeof (a) / sizeof (a)[0])
#define D64  "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

struct ref_case_s {
	const char *in;
	const char *registry, *repository, *tag, *digest; /* NULL registry: must fail */
	const char *name;
};

static const struct ref_case_s ref_cases[] = {
	{ "python:3.12-slim", "docker.io", "library/python", "3.12-slim", NULL,
	  "docker.io/library/python:3.12-slim" },
	{ "busybox", "docker.io", "library/busybox", "latest", NULL,
	  "docker.io/library/busybox:latest" },
	{ "user/app", "docker.io", "user/app", "latest", NULL, "docker.io/user/app:latest" },
	{ "docker.io/library/python@sha256:" D64, "docker.io", "library/python", NULL,
	  "sha256:" D64, "docker.io/library/python@sha256:" D64 },
	{ "localhost/x", "localhost", "x", "latest", NULL, "localhost/x:latest" },
	{ "localhost:5000/a/b:v1", "localhost:5000", "a/b", "v1", NULL, "localhost:5000/a/b:v1" },
	{ "127.0.0.1:5000/x:tag", "127.0.0.1:5000", "x", "tag", NULL, "127.0.0.1:5000/x:tag" },
	{ "ghcr.io/org/img:1.0", "ghcr.io", "org/img", "1.0", NULL, "ghcr.io/org/img:1.0" },
	{ "quay.io/a/b/c:x@sha256:" D64, "quay.io", "a/b/c", "x", "sha256:" D64,
	  "quay.io/a/b/c@sha256:" D64 },
	{ "[::1]:5000/x", "[::1]:5000", "x", "latest", NULL, "[::1]:5000/x:latest" },
	{ "a_b__c-d.e", "docker.io", "library/a_b__c-d.e", "latest", NULL, NULL },
	/* refused */
	{ "", NULL, NULL, NULL, NULL, NULL },
	{ "Upper/case", NULL, NULL, NULL, NULL, NULL },
	{ "x:", NULL, NULL, NULL, NULL, NULL },
	{ "x@sha256:abc", NULL, NULL, NULL, NULL, NULL },
	{ "x@sha512:" D64, NULL, NULL, NULL, NULL, NULL },
	{ "x/", NULL, NULL, NULL, NULL, NULL },
	{ "x//y", NULL, NULL, NULL, NULL, NULL },
	{ "-x", NULL, NULL, NULL, NULL, NULL },
	{ "x:-tag", NULL, NULL, NULL, NULL, NULL },
	{ "host:port/x", NULL, NULL, NULL, NULL, NULL },
	{ "a___b", NULL, NULL, NULL, NULL, NULL },
	{ "x:a/b", NULL, NULL, NULL, NULL, NULL },
};

static void
test_refs (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (ref_cases); i++) {
		const struct ref_case_s *c = &ref_cases[i];
		struct ab_image_ref_s r = { 0 };
		ab_error_t err = AB_ERROR_INIT;
		int rc = ab_image_ref_parse (c->in, &r, &err);
		if (!c->registry) {
			if (rc == 0)
				fail_msg ("'%s' was accepted", c->in);
			assert_int_equal (err.kind, AB_E_INVALID);
			continue;
		}
		if (rc != 0)
			fail_msg ("'%s': %s", c->in, err.msg);
		assert_string_equal (r.registry, c->registry);
		assert_string_equal (r.repository, c->repository);
		if (c->tag)
			assert_string_equal (r.tag, c->tag);
		else
			assert_null (r.tag);
		if (c->digest)
			assert_string_equal (r.digest, c->digest);
		if (c->name) {
			char *n = ab_image_ref_name (&r);
			assert_string_equal (n, c->name);
			free (n);
		}
		ab_image_ref_free (&r);
	}
}

static void
test_api_host (void **state)
{
	struct ab_image_ref_s r;
	ab_error_t err = AB_ERROR_INIT;
	(void)state;
	assert_int_equal (ab_image_ref_parse ("python", &r, &err), 0);
	assert_string_equal (ab_image_ref_api_host (&r), "registry-1.docker.io");
	ab_image_ref_free (&r);
	assert_int_equal (ab_image_ref_parse ("ghcr.io/a/b", &r, &err), 0);
	assert_string_equal (ab_image_ref_api_host (&r), "ghcr.io");
	ab_image_ref_free (&r);
}

struct name_case_s {
	const char *in, *out; /* out NULL: refused */
};

static const struct name_case_s name_cases[] = {
	{ "a/b", "a/b" },         { "./a/b", "a/b" }, { "/etc/passwd", "etc/passwd" },
	{ "a//b/./c/", "a/b/c" }, { "./", "" },       { ".", "" },
	{ "a/../b", NULL },       { "../x", NULL },   { "/..", NULL },
	{ "a/..", NULL },         { "...", "..." },   { "..a/b", "..a/b" },
};

static void
test_clean_names (void **state)
{
	(void)state;
	for (size_t i = 0; i < N (name_cases); i++) {
		char *out = NULL;
		ab_error_t err = AB_ERROR_INIT;
		int rc = ab_unpack_clean_name (name_cases[i].in, &out, &err);
		if (!name_cases[i].out) {
			if (rc == 0)
				fail_msg ("'%s' was accepted as '%s'", name_cases[i].in, out);
			assert_int_equal (err.kind, AB_E_DENIED);
			continue;
		}
		if (rc != 0)
			fail_msg ("'%s': %s", name_cases[i].in, err.msg);
		assert_string_equal (out, name_cases[i].out);
		free (out);
	}
}

static void
test_digests (void **state)
{
	(void)state;
	assert_true (ab_image_digest_valid ("sha256:" D64));
	assert_false (ab_image_digest_valid ("sha256:" D64 "0"));
	assert_false (ab_image_digest_valid (
	        "sha256:0123456789ABCDEF0123456789abcdef0123456789abcdef0123456789abcdef"));
	assert_false (ab_image_digest_valid ("md5:" D64));
	assert_false (ab_image_digest_valid (NULL));
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_refs),
		cmocka_unit_test (test_api_host),
		cmocka_unit_test (test_clean_names),
		cmocka_unit_test (test_digests),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
