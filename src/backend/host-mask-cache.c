/* ab_host_masks_cached (host-mask.h): the host trees' masks, kept in a
 * file per tree so that a sandbox start checks directory stamps instead of
 * walking every entry again.  The file:
 *
 *   agentbox-host-masks 1 TREE-LEN TREE WRITTEN-AT\n
 *   M d|f LEN PATH\n                       one per mask
 *   D MSEC MNSEC CSEC CNSEC LEN PATH\n     one per directory read
 *
 * (paths length-prefixed: a host path may hold any byte but NUL).  It is
 * trusted only when it belongs to us and nobody else may write it, like
 * the probe cache beside it; anything unexpected means "walk again".
 *
 * Which stamps: checking every directory of /usr costs as much as a
 * tenth of the walk (18,000 lstat calls, 80 ms here), so the file keeps
 * those of the directories at most STAMP_DEPTH below the tree, and of
 * dpkg's database (every package install, upgrade or removal rewrites
 * it).  A change deeper down made by hand, without dpkg, is seen when
 * the cache expires (AB_HOST_MASK_CACHE_TTL_S) — the documented window. */
#include "backend/host-mask.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define CACHE_MAGIC "agentbox-host-masks 1"
#define STAMP_DEPTH 2

static const char *const package_db[] = { "/var/lib/dpkg/status", "/var/lib/dpkg/info", NULL };

static char *
cache_path (const char *dir, const char *tree)
{
	cleanup_free char *name = xstrdup (tree);

	for (char *p = name; *p; p++)
		if (*p == '/')
			*p = '_';
	return xasprintf ("%s/host-masks%s", dir, name);
}

/* LEN PATH after the fields already read; NULL when malformed. */
static char *
read_path (FILE *f)
{
	size_t len;
	char *p;

	if (fscanf (f, " %zu", &len) != 1 || fgetc (f) != ' ' || len == 0 || len > 4096)
		return NULL;
	p = xmalloc (len + 1);
	if (fread (p, 1, len, f) != len || fgetc (f) != '\n' || memchr (p, '\0', len)) {
		free (p);
		return NULL;
	}
	p[len] = '\0';
	return p;
}

static bool
same_stamps (const char *path, const struct timespec *m, const struct timespec *c)
{
	struct stat st;

	/* stat, not lstat: a tree may be a link (/lib -> usr/lib), and the
	 * walk read what it points at. */
	return stat (path, &st) == 0 && st.st_mtim.tv_sec == m->tv_sec
	       && st.st_mtim.tv_nsec == m->tv_nsec && st.st_ctim.tv_sec == c->tv_sec
	       && st.st_ctim.tv_nsec == c->tv_nsec;
}

static bool
header_ok (FILE *f, const char *tree)
{
	char magic[sizeof CACHE_MAGIC];
	cleanup_free char *t = NULL;
	long long at;
	time_t now = time (NULL);

	if (fread (magic, 1, sizeof magic - 1, f) != sizeof magic - 1)
		return false;
	magic[sizeof magic - 1] = '\0';
	if (strcmp (magic, CACHE_MAGIC) != 0 || !(t = read_path (f)) || strcmp (t, tree) != 0)
		return false;
	/* read_path ate the newline after the tree; the stamp has its own line. */
	if (fscanf (f, "%lld\n", &at) != 1)
		return false;
	return at <= now && now - at <= AB_HOST_MASK_CACHE_TTL_S;
}

/* The cached masks, when the file is ours and every stamp still holds. */
static bool
read_cache (const char *path, const char *tree, struct ab_oci_mask_s **masks, size_t *n)
{
	cleanup_file FILE *f = fopen (path, "re");
	struct stat st;
	int kind;

	if (!f || fstat (fileno (f), &st) < 0 || st.st_uid != geteuid () || (st.st_mode & 022)
	    || !header_ok (f, tree))
		return false;
	while ((kind = fgetc (f)) != EOF) {
		if (kind == 'M') {
			char type;
			char *p;
			if (fscanf (f, " %c", &type) != 1 || (type != 'd' && type != 'f')
			    || !(p = read_path (f)))
				goto bad;
			*masks = xrealloc (*masks, (*n + 1) * sizeof **masks);
			(*masks)[(*n)++] = (struct ab_oci_mask_s){ .path = p, .dir = type == 'd' };
		} else if (kind == 'D') {
			struct timespec m, c;
			cleanup_free char *p = NULL;
			if (fscanf (f, " %ld %ld %ld %ld", &m.tv_sec, &m.tv_nsec, &c.tv_sec,
			            &c.tv_nsec)
			            != 4
			    || !(p = read_path (f)) || !same_stamps (p, &m, &c))
				goto bad;
		} else
			goto bad;
	}
	return true;
bad:
	ab_host_masks_free (*masks, *n);
	*masks = NULL;
	*n = 0;
	return false;
}

/* How many levels path lies below tree (tree itself: 0). */
static int
depth_below (const char *tree, const char *path)
{
	int d = 0;

	for (const char *p = path + strlen (tree); *p; p++)
		d += *p == '/';
	return d;
}

static void
write_stamp (FILE *f, const char *path, const struct timespec *m, const struct timespec *c)
{
	fprintf (f, "D %ld %ld %ld %ld %zu %s\n", (long)m->tv_sec, m->tv_nsec, (long)c->tv_sec,
	         c->tv_nsec, strlen (path), path);
}

static void
write_cache (const char *dir, const char *path, const char *tree, const struct ab_oci_mask_s *masks,
             size_t n, const struct ab_host_mask_dir_s *dirs, size_t n_dirs)
{
	cleanup_free char *tmp = xasprintf ("%s.%d.tmp", path, (int)getpid ());
	cleanup_file FILE *f = NULL;

	if (mkdir (dir, 0700) < 0 && errno != EEXIST)
		return;
	if (!(f = fopen (tmp, "wxe")))
		return;
	fprintf (f, "%s %zu %s\n%lld\n", CACHE_MAGIC, strlen (tree), tree, (long long)time (NULL));
	for (size_t i = 0; i < n; i++)
		fprintf (f, "M %c %zu %s\n", masks[i].dir ? 'd' : 'f', strlen (masks[i].path),
		         masks[i].path);
	for (size_t i = 0; i < n_dirs; i++)
		if (depth_below (tree, dirs[i].path) <= STAMP_DEPTH)
			write_stamp (f, dirs[i].path, &dirs[i].mtime, &dirs[i].ctime);
	for (size_t i = 0; package_db[i]; i++) {
		struct stat st;
		if (stat (package_db[i], &st) == 0)
			write_stamp (f, package_db[i], &st.st_mtim, &st.st_ctim);
	}
	if (fflush (f) != 0 || rename (tmp, path) < 0)
		unlink (tmp);
}

int
ab_host_masks_cached (const char *tree, struct ab_oci_mask_s **masks, size_t *n, ab_error_t *err)
{
	cleanup_free char *dir = ab_backend_cache_dir ();
	cleanup_free char *path = dir ? cache_path (dir, tree) : NULL;
	struct ab_oci_mask_s *found = NULL;
	struct ab_host_mask_dir_s *dirs = NULL;
	size_t n_found = 0, n_dirs = 0;
	int r;

	if (path && read_cache (path, tree, &found, &n_found)) {
		r = 0;
	} else {
		r = ab_host_masks_walk (tree, tree, &found, &n_found, &dirs, &n_dirs, err);
		/* A missing tree has no stamps to check: never cached. */
		if (r == 0 && path && n_dirs > 0)
			write_cache (dir, path, tree, found, n_found, dirs, n_dirs);
		ab_host_mask_dirs_free (dirs, n_dirs);
	}
	for (size_t i = 0; r == 0 && i < n_found; i++) {
		*masks = xrealloc (*masks, (*n + 1) * sizeof **masks);
		(*masks)[(*n)++] = found[i];
		found[i].path = NULL;
	}
	ab_host_masks_free (found, n_found);
	return r;
}
