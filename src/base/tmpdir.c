#include "base/tmpdir.h"

#include <errno.h>
#include <stdlib.h>

#include "base/xalloc.h"

const char *
ab_tmp_dir (void)
{
	const char *env = getenv ("TMPDIR");
	return env && env[0] == '/' ? env : "/tmp";
}

char *
ab_make_temp_dir (const char *base, const char *prefix, ab_error_t *err)
{
	char *dir = xasprintf ("%s/%s-XXXXXX", base ? base : ab_tmp_dir (), prefix);

	if (!mkdtemp (dir)) {
		ab_error (err, errno, AB_E_SYSTEM, "mkdtemp %s", dir);
		free (dir);
		return NULL;
	}
	return dir;
}
