/* The host trees and the walk behind ab_host_masks (see host-mask.h).
 * The walk is fd-relative, one directory fd at a time, and never follows
 * a symlink (fstatat AT_SYMLINK_NOFOLLOW, openat O_NOFOLLOW), so a link
 * planted in /etc cannot send it elsewhere. */
#include "backend/host-mask.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/sandbox-dir.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

const char *const ab_host_trees[] = {
	"/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc", NULL,
};

struct mask_walk_s {
	struct ab_oci_mask_s *masks;
	size_t n, cap, seen;
	struct ab_host_mask_dir_s *dirs; /* NULL = not asked for */
	size_t n_dirs, cap_dirs;
	bool want_dirs;
};

static void
add_dir (struct mask_walk_s *w, const char *path, const struct stat *st)
{
	if (!w->want_dirs)
		return;
	if (w->n_dirs == w->cap_dirs) {
		w->cap_dirs = w->cap_dirs ? w->cap_dirs * 2 : 256;
		w->dirs = xrealloc (w->dirs, w->cap_dirs * sizeof *w->dirs);
	}
	w->dirs[w->n_dirs++] =
	        (struct ab_host_mask_dir_s){ xstrdup (path), st->st_mtim, st->st_ctim };
}

static int
add (struct mask_walk_s *w, const char *path, bool dir, ab_error_t *err)
{
	if (w->n >= AB_HOST_MASK_MAX_MASKS)
		return ab_error (err, 0, AB_E_LIMIT, "more than %d entries to mask (at %s)",
		                 AB_HOST_MASK_MAX_MASKS, path);
	if (w->n == w->cap) {
		w->cap = w->cap ? w->cap * 2 : 16;
		w->masks = xrealloc (w->masks, w->cap * sizeof *w->masks);
	}
	w->masks[w->n].path = xstrdup (path);
	w->masks[w->n].dir = dir;
	w->n++;
	return 0;
}

static bool
hidden_from_others (const struct stat *st)
{
	if (S_ISDIR (st->st_mode))
		return (st->st_mode & (S_IROTH | S_IXOTH)) != (S_IROTH | S_IXOTH);
	return !(st->st_mode & S_IROTH);
}

static int walk_dir (struct mask_walk_s *w, int dfd, const char *shown, int depth, ab_error_t *err);

/* An entry that vanishes while we look (ENOENT) has nothing to hide. */
static int
visit (struct mask_walk_s *w, int dfd, const char *name, const char *shown, int depth,
       ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("%s/%s", shown, name);
	cleanup_close int sub = -1;
	struct stat st;

	if (++w->seen > AB_HOST_MASK_MAX_ENTRIES)
		return ab_error (err, 0, AB_E_LIMIT, "more than %d entries under %s",
		                 AB_HOST_MASK_MAX_ENTRIES, shown);
	if (fstatat (dfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "stat %s", path);
	if (S_ISLNK (st.st_mode))
		return 0;
	if (hidden_from_others (&st))
		return add (w, path, S_ISDIR (st.st_mode), err);
	if (!S_ISDIR (st.st_mode))
		return 0;
	if (depth >= AB_HOST_MASK_MAX_DEPTH)
		return ab_error (err, 0, AB_E_LIMIT, "%s is nested deeper than %d", path,
		                 AB_HOST_MASK_MAX_DEPTH);
	sub = openat (dfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (sub < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	add_dir (w, path, &st);
	return walk_dir (w, steal_fd (&sub), path, depth + 1, err);
}

/* Takes dfd. */
static int
walk_dir (struct mask_walk_s *w, int dfd, const char *shown, int depth, ab_error_t *err)
{
	cleanup_dir DIR *d = fdopendir (dfd);
	struct dirent *de;

	if (!d) {
		close (dfd);
		return ab_error (err, errno, AB_E_SYSTEM, "read %s", shown);
	}
	while ((errno = 0, de = readdir (d)) != NULL) {
		if (strcmp (de->d_name, ".") == 0 || strcmp (de->d_name, "..") == 0)
			continue;
		if (visit (w, dirfd (d), de->d_name, shown, depth, err) < 0)
			return -1;
	}
	return errno ? ab_error (err, errno, AB_E_SYSTEM, "read %s", shown) : 0;
}

static int
walk (struct mask_walk_s *w, const char *dir, const char *shown_as, ab_error_t *err)
{
	cleanup_close int fd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat st;

	if (fd < 0 && errno == ENOENT)
		return 0;
	if (fd < 0 || fstat (fd, &st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", dir);
	add_dir (w, shown_as, &st);
	if (hidden_from_others (&st))
		return add (w, shown_as, true, err);
	return walk_dir (w, steal_fd (&fd), shown_as, 0, err);
}

int
ab_host_masks (const char *dir, const char *shown_as, struct ab_oci_mask_s **masks, size_t *n,
               ab_error_t *err)
{
	struct mask_walk_s w = { .masks = *masks, .n = *n, .cap = *n };
	int r = walk (&w, dir, shown_as, err);

	*masks = w.masks;
	*n = w.n;
	return r;
}

int
ab_host_masks_walk (const char *dir, const char *shown_as, struct ab_oci_mask_s **masks, size_t *n,
                    struct ab_host_mask_dir_s **dirs, size_t *n_dirs, ab_error_t *err)
{
	struct mask_walk_s w = { .masks = *masks, .n = *n, .cap = *n, .want_dirs = true };
	int r = walk (&w, dir, shown_as, err);

	*masks = w.masks;
	*n = w.n;
	*dirs = w.dirs;
	*n_dirs = w.n_dirs;
	return r;
}

void
ab_host_mask_dirs_free (struct ab_host_mask_dir_s *dirs, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free (dirs[i].path);
	free (dirs);
}

void
ab_host_masks_free (struct ab_oci_mask_s *masks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free (masks[i].path);
	free (masks);
}

int
ab_host_mask_covers (int dfd, const char *file, const char *dir, uid_t owner, ab_error_t *err)
{
	if (ab_sandbox_dir_entry (dfd, file, false, 0, owner, err) < 0
	    || ab_sandbox_dir_entry (dfd, dir, true, 0, owner, err) < 0)
		return ab_error_wrap (err, "the mask covers");
	return 0;
}
