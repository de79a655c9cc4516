/* The host-mask cache (backend/host-mask-cache.c): used while every
 * directory's stamps hold, walked again when an entry or mode changes,
 * ignored when others could have written it. */
#include <fcntl.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/host-mask.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

static char tree[] = "/tmp/ab-host-mask-unit.XXXXXX";
static char cache[sizeof tree + 8];

static void
mk (const char *rel, mode_t mode, bool dir)
{
	cleanup_free char *p = xasprintf ("%s/%s", tree, rel);

	if (dir)
		assert_int_equal (mkdir (p, mode), 0);
	else
		close (open (p, O_CREAT | O_WRONLY | O_CLOEXEC, mode));
	assert_int_equal (chmod (p, mode), 0);
}

static bool
masked (const struct ab_oci_mask_s *m, size_t n, const char *path)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp (m[i].path, path) == 0)
			return true;
	return false;
}

/* The masks of the tree, through the cache. */
static size_t
masks (struct ab_oci_mask_s **m)
{
	ab_error_t err = AB_ERROR_INIT;
	size_t n = 0;

	*m = NULL;
	assert_int_equal (ab_host_masks_cached (tree, m, &n, &err), 0);
	return n;
}

static char *
cache_file (void)
{
	cleanup_free char *name = xstrdup (tree);
	for (char *p = name; *p; p++)
		if (*p == '/')
			*p = '_';
	return xasprintf ("%s/host-masks%s", cache, name);
}

/* A mask the walk would never find: present only when the cache was used. */
static void
plant_marker (void)
{
	cleanup_free char *f = cache_file ();
	FILE *fp = fopen (f, "ae");

	assert_non_null (fp);
	fprintf (fp, "M f 7 /marker\n");
	fclose (fp);
}

static void
test_cache (void **state)
{
	struct ab_oci_mask_s *m;
	cleanup_free char *f = cache_file ();
	cleanup_free char *secret = xasprintf ("%s/sub/secret", tree);
	cleanup_free char *later = xasprintf ("%s/sub/deeper/later", tree);
	cleanup_free char *deeper = xasprintf ("%s/sub/deeper", tree);
	size_t n;

	(void)state;
	n = masks (&m);
	assert_int_equal (n, 1);
	assert_true (masked (m, n, secret));
	ab_host_masks_free (m, n);
	assert_int_equal (access (f, F_OK), 0);

	/* Stamps unchanged: the cache answers (the marker shows it). */
	plant_marker ();
	n = masks (&m);
	assert_true (masked (m, n, "/marker"));
	ab_host_masks_free (m, n);

	/* A file added two levels down changes its directory's mtime: walked again. */
	mk ("sub/deeper/later", 0600, false);
	n = masks (&m);
	assert_false (masked (m, n, "/marker"));
	assert_true (masked (m, n, later));
	assert_int_equal (n, 2);
	ab_host_masks_free (m, n);

	/* A directory closed to others changes its ctime: walked again. */
	plant_marker ();
	assert_int_equal (chmod (deeper, 0700), 0);
	n = masks (&m);
	assert_false (masked (m, n, "/marker"));
	assert_true (masked (m, n, deeper));
	ab_host_masks_free (m, n);

	/* A cache others may write is not trusted. */
	plant_marker ();
	assert_int_equal (chmod (f, 0622), 0);
	n = masks (&m);
	assert_false (masked (m, n, "/marker"));
	ab_host_masks_free (m, n);

	/* A truncated or garbled cache is walked over, not half-used. */
	assert_int_equal (truncate (f, 30), 0);
	n = masks (&m);
	assert_true (masked (m, n, secret));
	ab_host_masks_free (m, n);
}

static int
setup (void **state)
{
	(void)state;
	if (!mkdtemp (tree) || chmod (tree, 0755) < 0)
		return -1;
	snprintf (cache, sizeof cache, "%s-cache", tree);
	setenv ("AGENTBOX_CACHE_DIR", cache, 1);
	mk ("sub", 0755, true);
	mk ("sub/deeper", 0755, true);
	mk ("sub/readable", 0644, false);
	mk ("sub/secret", 0600, false);
	return 0;
}

static int
teardown (void **state)
{
	cleanup_free char *cmd = xasprintf ("rm -rf -- '%s' '%s'", tree, cache);
	(void)state;
	return system (cmd) == 0 ? 0 : -1;
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_cache),
	};
	return cmocka_run_group_tests (tests, setup, teardown);
}
