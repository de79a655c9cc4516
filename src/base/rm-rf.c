#include "base/rm-rf.h"

#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <unistd.h>

static int
rm_one (const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)st;
	(void)f;
	return (type == FTW_DP ? rmdir (path) : unlink (path)) < 0 && errno != ENOENT ? -1 : 0;
}

int
ab_rm_rf (const char *path)
{
	/* FTW_PHYS: never follow a symlink the sandbox may have planted;
	 * FTW_MOUNT: never walk into another filesystem. */
	int r = nftw (path, rm_one, 32, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
	return r < 0 && errno == ENOENT ? 0 : r;
}
