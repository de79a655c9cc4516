/* What a Docker sandbox on the host's trees must hide or re-protect.
 *
 * Without a user namespace (Docker's default), root in the container is
 * root on the host: with every capability dropped it still owns every
 * root-owned file, so /etc/shadow (root:shadow 0640) would be readable.
 * The native sandbox runs as an unprivileged host uid, for which such a
 * file is unreadable; to give the same view, every entry of /etc that
 * "others" cannot read is masked (the walk is gVisor's too: host-mask.c).
 * And Docker's read-only binds are not recursively read-only (before
 * Engine 25), so a mount below /usr or /etc would be writable: each gets a
 * read-only bind of its own. */
#include "backend/docker-internal.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "backend/host-mask.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

char **
ab_docker_existing_trees (void)
{
	char **v = xcalloc (1, sizeof *v);
	struct stat st;

	for (size_t i = 0; ab_host_trees[i]; i++)
		if (stat (ab_host_trees[i], &st) == 0 && S_ISDIR (st.st_mode))
			ab_strv_push (&v, ab_host_trees[i]);
	return v;
}

int
ab_docker_scan_unreadable (const char *dir, char ***files, char ***dirs, ab_error_t *err)
{
	struct ab_oci_mask_s *masks = NULL;
	size_t n = 0;
	int r = ab_host_masks_cached (dir, &masks, &n, err);

	if (!*files)
		*files = xcalloc (1, sizeof **files);
	if (!*dirs)
		*dirs = xcalloc (1, sizeof **dirs);
	for (size_t i = 0; r == 0 && i < n; i++)
		ab_strv_push (masks[i].dir ? dirs : files, masks[i].path);
	ab_host_masks_free (masks, n);
	return r;
}

/* mountinfo escapes space, tab, newline and backslash as \ooo. */
static void
unescape (char *s)
{
	char *o = s;
	for (; *s; s++) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '3' && s[2] >= '0' && s[2] <= '7'
		    && s[3] >= '0' && s[3] <= '7') {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 3;
		} else {
			*o++ = *s;
		}
	}
	*o = '\0';
}

static void
add_below (const char *mnt, char **trees, char ***src, char ***dst)
{
	char real[PATH_MAX];

	for (char **t = trees; *t; t++) {
		size_t n;
		if (!realpath (*t, real))
			continue;
		n = strlen (real);
		if (strncmp (mnt, real, n) != 0 || mnt[n] != '/' || mnt[n + 1] == '\0')
			continue;
		cleanup_free char *d = xasprintf ("%s%s", *t, mnt + n);
		ab_strv_push (src, mnt);
		ab_strv_push (dst, d);
	}
}

int
ab_docker_submounts (char **trees, char ***src, char ***dst, ab_error_t *err)
{
	cleanup_file FILE *f = fopen ("/proc/self/mountinfo", "re");
	cleanup_free char *line = NULL;
	size_t cap = 0;

	*src = xcalloc (1, sizeof **src);
	*dst = xcalloc (1, sizeof **dst);
	if (!f)
		return ab_error (err, errno, AB_E_SYSTEM, "open /proc/self/mountinfo");
	while (getline (&line, &cap, f) > 0) {
		char mnt[PATH_MAX];
		/* id parent major:minor root mount-point ... */
		if (sscanf (line, "%*s %*s %*s %*s %4095s", mnt) != 1)
			continue;
		unescape (mnt);
		add_below (mnt, trees, src, dst);
	}
	return 0;
}
