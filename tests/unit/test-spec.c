/* Unit tests for spec/ab_spec_validate: the checks that stand between
 * what a user (or, later, an API client) asks for and what the backend
 * mounts.  Table driven: each case starts from a valid default spec,
 * changes one thing and names the part of the error it expects. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "spec/spec.h"

#define N(a)       (sizeof (a) / sizeof (a)[0])
#define MAX_MOUNTS 3

struct mount_case_s {
	ab_mount_kind kind;
	const char *src, *dst;
};

static const struct {
	const char *name;
	const char *argv0;    /* NULL = no argv at all */
	bool workspace;       /* a workspace is set */
	const char *workdir;  /* NULL = default */
	const char *hostname; /* NULL = default */
	struct mount_case_s mounts[MAX_MOUNTS];
	const char *error; /* NULL = valid; else a substring of the message ("" = any) */
} cases[] = {
	/* valid */
	{ "defaults", "true", true, NULL, NULL, { { 0 } }, NULL },
	{ "no workspace", "true", false, "/", NULL, { { 0 } }, NULL },
	{ "ro, rw and tmpfs mounts",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/usr/share", "/data" },
	    { AB_MOUNT_RW_BIND, "/srv", "/out" },
	    { AB_MOUNT_TMPFS, NULL, "/scratch" } },
	  NULL },
	{ "nested destinations",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/data" }, { AB_MOUNT_RO_BIND, "/b", "/data/sub" } },
	  NULL },
	{ "dotted names are not . or ..",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/.config" }, { AB_MOUNT_RO_BIND, "/b", "/x/..y/...z" } },
	  NULL },
	{ "prefix of a reserved name",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/proc2" },
	    { AB_MOUNT_RO_BIND, "/b", "/devices" },
	    { AB_MOUNT_RO_BIND, "/c", "/system" } },
	  NULL },
	{ "/workspace without a workspace",
	  "true",
	  false,
	  "/",
	  NULL,
	  { { AB_MOUNT_RW_BIND, "/srv", "/workspace" } },
	  NULL },
	{ "hostname with dot and dash", "true", true, NULL, "build-1.example", { { 0 } }, NULL },
	{ "64-character hostname",
	  "true",
	  true,
	  NULL,
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  { { 0 } },
	  NULL },

	/* command */
	{ "missing argv", NULL, true, NULL, NULL, { { 0 } }, "missing command" },
	{ "empty argv", "", true, NULL, NULL, { { 0 } }, "missing command" },

	/* working directory */
	{ "relative workdir", "true", true, "workspace", NULL, { { 0 } }, "must be absolute" },
	{ "empty workdir", "true", true, "", NULL, { { 0 } }, "must be absolute" },

	/* mount destinations */
	{ "relative destination",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "data" } },
	  "absolute" },
	{ "empty destination",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "" } },
	  "absolute" },
	{ "destination /", "true", true, NULL, NULL, { { AB_MOUNT_RO_BIND, "/a", "/" } }, "'/'" },
	/* "//" is "/", "//proc" is /proc and "/data/" is /data to the kernel: a
	 * spelling must not slip past the "/", reserved and duplicate checks */
	{ "destination //",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_TMPFS, NULL, "//" } },
	  "empty component" },
	{ "destination //proc",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RW_BIND, "/a", "//proc" } },
	  "empty component" },
	{ "destination /dev//pts",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_TMPFS, NULL, "/dev//pts" } },
	  "" },
	{ "destination /proc/",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RW_BIND, "/a", "/proc/" } },
	  "" },
	{ "trailing slash duplicates",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/data" }, { AB_MOUNT_TMPFS, NULL, "/data/" } },
	  "empty component" },
	{ "empty inner component",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/x//y" } },
	  "empty component" },
	{ "leading ..",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/../etc" } },
	  "'..'" },
	{ "inner ..",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/data/../etc" } },
	  "'..'" },
	{ "trailing ..",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/data/.." } },
	  "'..'" },
	{ "a . component",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/data/./x" } },
	  "'.'" },
	{ "trailing .",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/data/." } },
	  "'.'" },
	{ "duplicate destination",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/data" }, { AB_MOUNT_TMPFS, NULL, "/data" } },
	  "two mounts" },
	{ "third duplicates the first",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/a", "/x" },
	    { AB_MOUNT_RO_BIND, "/b", "/y" },
	    { AB_MOUNT_RW_BIND, "/c", "/x" } },
	  "two mounts" },
	{ "/proc reserved",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RW_BIND, "/proc", "/proc" } },
	  "reserved" },
	{ "below /proc reserved",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RW_BIND, "/a", "/proc/sys/kernel" } },
	  "reserved" },
	{ "/dev reserved",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_TMPFS, NULL, "/dev" } },
	  "reserved" },
	{ "below /dev reserved",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/dev/sda", "/dev/sda" } },
	  "reserved" },
	{ "/sys reserved",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, "/sys", "/sys" } },
	  "reserved" },
	{ "bind without a source",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RO_BIND, NULL, "/data" } },
	  "no source" },
	{ "bind with an empty source",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RW_BIND, "", "/data" } },
	  "no source" },
	{ "mount over the workspace",
	  "true",
	  true,
	  NULL,
	  NULL,
	  { { AB_MOUNT_RW_BIND, "/srv", "/workspace" } },
	  "workspace" },

	/* hostname */
	{ "empty hostname", "true", true, NULL, "", { { 0 } }, "1 to 64" },
	{ "65-character hostname",
	  "true",
	  true,
	  NULL,
	  "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	  { { 0 } },
	  "1 to 64" },
	{ "hostname with a space", "true", true, NULL, "my host", { { 0 } }, "invalid characters" },
	{ "hostname with a slash", "true", true, NULL, "a/b", { { 0 } }, "invalid characters" },
	{ "hostname with an underscore",
	  "true",
	  true,
	  NULL,
	  "a_b",
	  { { 0 } },
	  "invalid characters" },
	{ "hostname with a newline", "true", true, NULL, "a\nb", { { 0 } }, "invalid characters" },
	{ "hostname with UTF-8",
	  "true",
	  true,
	  NULL,
	  "h\xc3\xa9llo",
	  { { 0 } },
	  "invalid characters" },
	{ "hostname with a shell character",
	  "true",
	  true,
	  NULL,
	  "a;reboot",
	  { { 0 } },
	  "invalid characters" },
};

static void
build (size_t i, struct ab_spec_s *spec)
{
	ab_spec_init (spec);
	if (cases[i].argv0) {
		spec->argv = xcalloc (2, sizeof (char *));
		spec->argv[0] = xstrdup (cases[i].argv0);
	}
	if (cases[i].workspace)
		spec->workspace = xstrdup ("/home/user/project");
	if (cases[i].workdir) {
		free (spec->workdir);
		spec->workdir = xstrdup (cases[i].workdir);
	}
	if (cases[i].hostname) {
		free (spec->hostname);
		spec->hostname = xstrdup (cases[i].hostname);
	}
	for (size_t m = 0; m < MAX_MOUNTS && cases[i].mounts[m].dst; m++)
		ab_spec_add_mount (spec, cases[i].mounts[m].kind, cases[i].mounts[m].src,
		                   cases[i].mounts[m].dst, 0);
}

static void
test_validate (void **state)
{
	for (size_t i = 0; i < N (cases); i++) {
		struct ab_spec_s spec;
		ab_error_t err = AB_ERROR_INIT;
		int r;

		build (i, &spec);
		r = ab_spec_validate (&spec, &err);
		if (!cases[i].error && r != 0)
			fail_msg ("%s: refused: %s", cases[i].name, err.msg);
		if (cases[i].error) {
			if (r >= 0)
				fail_msg ("%s: accepted", cases[i].name);
			if (err.kind != AB_E_INVALID)
				fail_msg ("%s: kind %s, want invalid", cases[i].name,
				          ab_error_kind_name (err.kind));
			if (!strstr (err.msg, cases[i].error))
				fail_msg ("%s: message '%s' lacks '%s'", cases[i].name, err.msg,
				          cases[i].error);
		}
		ab_spec_free (&spec);
	}
}

/* The defaults are what `agentbox run` promises in its help. */
static void
test_defaults (void **state)
{
	struct ab_spec_s spec;

	ab_spec_init (&spec);
	assert_string_equal (spec.backend, "auto");
	assert_string_equal (spec.hostname, AB_DEFAULT_HOSTNAME);
	assert_string_equal (spec.workdir, AB_WORKSPACE_DIR);
	assert_int_equal (spec.network, AB_NETWORK_NONE);
	assert_true (spec.limits.memory_bytes == 2ULL << 30);
	assert_int_equal (spec.limits.pids, 512);
	assert_int_equal (spec.limits.kill_grace_ms, 5000);
	assert_int_equal (spec.limits.timeout_ms, 0);
	assert_null (spec.rootfs);
	assert_int_equal (spec.n_mounts, 0);
	ab_spec_free (&spec);
}

static void
test_add_mount_copies (void **state)
{
	struct ab_spec_s spec;
	char src[] = "/srv/data", dst[] = "/data";

	ab_spec_init (&spec);
	ab_spec_add_mount (&spec, AB_MOUNT_RO_BIND, src, dst, 0);
	ab_spec_add_mount (&spec, AB_MOUNT_TMPFS, NULL, "/tmp2", 1 << 20);
	src[1] = dst[1] = 'X'; /* the spec owns its own copies */
	assert_int_equal (spec.n_mounts, 2);
	assert_string_equal (spec.mounts[0].source, "/srv/data");
	assert_string_equal (spec.mounts[0].destination, "/data");
	assert_null (spec.mounts[1].source);
	assert_int_equal (spec.mounts[1].size, 1 << 20);
	ab_spec_free (&spec);
	assert_null (spec.mounts);
}

/* The Landlock allowlist: /tmp and /dev/shm always, the workspace when
 * there is one, every mount but a read-only bind, "/" for a writable
 * layered root. */
static void
test_rw_paths (void **state)
{
	struct ab_spec_s spec;
	size_t n = 99;

	ab_spec_init (&spec);
	{
		cleanup_strv char **v = ab_spec_rw_paths (&spec, &n);
		assert_int_equal (n, 2);
		assert_string_equal (v[0], "/tmp");
		assert_string_equal (v[1], "/dev/shm");
		assert_null (v[2]);
	}
	spec.workspace = xstrdup ("/srv/ws");
	ab_spec_add_mount (&spec, AB_MOUNT_RO_BIND, "/srv/ro", "/ro", 0);
	ab_spec_add_mount (&spec, AB_MOUNT_RW_BIND, "/srv/rw", "/rw", 0);
	ab_spec_add_mount (&spec, AB_MOUNT_TMPFS, NULL, "/scratch", 1 << 20);
	{
		cleanup_strv char **v = ab_spec_rw_paths (&spec, &n);
		assert_int_equal (n, 5);
		assert_string_equal (v[2], AB_WORKSPACE_DIR);
		assert_string_equal (v[3], "/rw");
		assert_string_equal (v[4], "/scratch");
		assert_null (v[5]);
	}
	/* A writable layered root: "/" itself, first; read-only: not. */
	ab_strv_push (&spec.root.layers, "/layers/a");
	{
		cleanup_strv char **v = ab_spec_rw_paths (&spec, &n);
		assert_int_equal (n, 6);
		assert_string_equal (v[0], "/");
		assert_string_equal (v[1], "/tmp");
	}
	spec.root.read_only = true;
	{
		cleanup_strv char **v = ab_spec_rw_paths (&spec, &n);
		assert_int_equal (n, 5);
		assert_string_equal (v[0], "/tmp");
	}
	ab_spec_free (&spec);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_validate),
		cmocka_unit_test (test_defaults),
		cmocka_unit_test (test_add_mount_copies),
		cmocka_unit_test (test_rw_paths),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
