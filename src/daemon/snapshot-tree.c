/* Copying a sandbox's workspace into a snapshot and back, and the
 * manifest that pins a snapshot's content.
 *
 * The tree belongs to the sandbox, so it is hostile: every step is
 * relative to a directory fd, nothing is followed (O_NOFOLLOW,
 * AT_SYMLINK_NOFOLLOW: a symlink is copied as a symlink), the walk stays
 * on one file system and is bounded in depth and entries.  Regular files
 * are cloned (FICLONE: shared extents, O(1) on btrfs and XFS) and, where
 * the file system cannot (ext4: EOPNOTSUPP), copied in the kernel with
 * holes kept (ab_jail_copy_data).  Directories, files and symlinks keep
 * mode, owner and mtime; fifos, sockets and devices are skipped; hard
 * links become separate files.
 *
 * The manifest is one line per entry in name order: type, mode, uid, gid,
 * size, mtime (ns; not for directories, whose mtime the copy itself
 * changes), escaped path.  Its SHA-256 goes into the snapshot's metadata,
 * so a file added, removed, resized or retouched in the stored tree is a
 * mismatch at restore. */
#include "daemon/snapshot-tree.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/jail.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define MAX_DEPTH   64
#define MAX_ENTRIES 1000000

struct walk_s {
	int dev_set;
	dev_t dev;
	size_t entries;
	struct ab_tree_stats_s *stats;
	FILE *manifest;
};

static int
cmp_names (const void *a, const void *b)
{
	return strcmp (*(char *const *)a, *(char *const *)b);
}

/* The entries of an open directory, sorted (the manifest's order must not
 * depend on the file system's). */
static char **
list_dir (int dfd, size_t *n, ab_error_t *err)
{
	int fd = dup (dfd);
	DIR *dir;
	struct dirent *e;
	char **v = NULL;
	size_t cap = 0;

	*n = 0;
	if (fd < 0 || !(dir = fdopendir (fd))) {
		if (fd >= 0)
			close (fd);
		return ab_error (err, errno, AB_E_SYSTEM, "open directory"), NULL;
	}
	rewinddir (dir);
	while ((e = readdir (dir))) {
		if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
			continue;
		if (*n + 1 >= cap) {
			cap = cap ? 2 * cap : 64;
			v = xrealloc (v, cap * sizeof *v);
		}
		v[(*n)++] = xstrdup (e->d_name);
	}
	closedir (dir);
	if (!v)
		v = xcalloc (1, sizeof *v);
	v[*n] = NULL;
	qsort (v, *n, sizeof *v, cmp_names);
	return v;
}

static void
free_list (char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free (v[i]);
	free (v);
}

static void
manifest_line (struct walk_s *w, const char *path, const struct stat *st)
{
	char type = S_ISDIR (st->st_mode) ? 'd' : S_ISLNK (st->st_mode) ? 'l' : 'f';
	int64_t mt = S_ISDIR (st->st_mode)
	                     ? 0
	                     : (int64_t)st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec;

	if (!w->manifest)
		return;
	fprintf (w->manifest, "%c %04o %u %u %" PRIu64 " %" PRId64 " ", type,
	         (unsigned)(st->st_mode & 07777), (unsigned)st->st_uid, (unsigned)st->st_gid,
	         S_ISDIR (st->st_mode) ? (uint64_t)0 : (uint64_t)st->st_size, mt);
	for (const unsigned char *p = (const unsigned char *)path; *p; p++)
		if (*p <= ' ' || *p == '\\' || *p >= 0x7f)
			fprintf (w->manifest, "\\x%02x", *p);
		else
			fputc (*p, w->manifest);
	fputc ('\n', w->manifest);
}

static int
copy_file (int sdir, int ddir, const char *name, const struct stat *st,
           struct ab_tree_stats_s *stats, ab_error_t *err)
{
	/* O_NONBLOCK: an entry swapped for a fifo since the fstatat (a host
	 * workspace is not frozen) must not hang us; the fstat below says
	 * whether it is still the regular file we saw. */
	cleanup_close int in =
	        openat (sdir, name, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	cleanup_close int out = -1;
	struct timespec ts[2] = { st->st_atim, st->st_mtim };
	struct stat now;

	if (in < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", name);
	if (fstat (in, &now) < 0 || !S_ISREG (now.st_mode) || now.st_ino != st->st_ino
	    || now.st_dev != st->st_dev)
		return ab_error (err, 0, AB_E_CONFLICT, "%s changed while it was copied", name);
	out = openat (ddir, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (out < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", name);
	if (ioctl (out, FICLONE, in) == 0)
		stats->cloned++;
	else if (ab_jail_copy_data (in, out, (uint64_t)st->st_size, AB_JAIL_COPY_AUTO, err) < 0)
		return ab_error_wrap (err, "copy %s", name);
	else
		stats->copied_bytes += (uint64_t)st->st_size;
	if (fchown (out, st->st_uid, st->st_gid) < 0 && errno != EPERM)
		return ab_error (err, errno, AB_E_SYSTEM, "chown %s", name);
	if (fchmod (out, st->st_mode & 07777) < 0 || futimens (out, ts) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "chmod %s", name);
	return 0;
}

static int
copy_link (int sdir, int ddir, const char *name, const struct stat *st, ab_error_t *err)
{
	char target[4096];
	ssize_t n = readlinkat (sdir, name, target, sizeof target - 1);
	struct timespec ts[2] = { st->st_atim, st->st_mtim };

	if (n < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "readlink %s", name);
	target[n] = '\0';
	if (symlinkat (target, ddir, name) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "symlink %s", name);
	if (fchownat (ddir, name, st->st_uid, st->st_gid, AT_SYMLINK_NOFOLLOW) < 0
	    && errno != EPERM)
		return ab_error (err, errno, AB_E_SYSTEM, "chown %s", name);
	utimensat (ddir, name, ts, AT_SYMLINK_NOFOLLOW);
	return 0;
}

static int walk (struct walk_s *w, int sdir, int ddir, const char *rel, int depth, ab_error_t *err);

static int
walk_entry (struct walk_s *w, int sdir, int ddir, const char *rel, const char *name, int depth,
            ab_error_t *err)
{
	cleanup_free char *path = rel[0] ? xasprintf ("%s/%s", rel, name) : xstrdup (name);
	struct stat st;

	if (++w->entries > MAX_ENTRIES)
		return ab_error (err, 0, AB_E_LIMIT, "more than %d entries", MAX_ENTRIES);
	if (fstatat (sdir, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "stat %s", path);
	if (!S_ISDIR (st.st_mode) && !S_ISREG (st.st_mode) && !S_ISLNK (st.st_mode)) {
		w->stats->skipped++;
		return 0;
	}
	if (S_ISDIR (st.st_mode) && st.st_dev != w->dev) {
		w->stats->skipped++; /* another file system mounted inside */
		return 0;
	}
	manifest_line (w, path, &st);
	if (S_ISREG (st.st_mode)) {
		w->stats->files++;
		w->stats->bytes += (uint64_t)st.st_size;
		return ddir < 0 ? 0 : copy_file (sdir, ddir, name, &st, w->stats, err);
	}
	if (S_ISLNK (st.st_mode))
		return ddir < 0 ? 0 : copy_link (sdir, ddir, name, &st, err);
	cleanup_close int sub =
	        openat (sdir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	cleanup_close int dsub = -1;
	if (sub < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	if (ddir >= 0) {
		if (mkdirat (ddir, name, 0700) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", path);
		dsub = openat (ddir, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (dsub < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "open %s", path);
	}
	w->stats->dirs++;
	if (walk (w, sub, dsub, path, depth + 1, err) < 0)
		return -1;
	if (dsub >= 0) {
		struct timespec ts[2] = { st.st_atim, st.st_mtim };
		if (fchown (dsub, st.st_uid, st.st_gid) < 0 && errno != EPERM)
			return ab_error (err, errno, AB_E_SYSTEM, "chown %s", path);
		if (fchmod (dsub, st.st_mode & 07777) < 0 || futimens (dsub, ts) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "chmod %s", path);
	}
	return 0;
}

static int
walk (struct walk_s *w, int sdir, int ddir, const char *rel, int depth, ab_error_t *err)
{
	size_t n;
	char **names;
	int r = 0;

	if (depth > MAX_DEPTH)
		return ab_error (err, 0, AB_E_LIMIT, "%s: deeper than %d directories", rel,
		                 MAX_DEPTH);
	if (!(names = list_dir (sdir, &n, err)))
		return ab_error_wrap (err, "%s", rel[0] ? rel : ".");
	for (size_t i = 0; i < n && r == 0; i++)
		r = walk_entry (w, sdir, ddir, rel, names[i], depth, err);
	free_list (names, n);
	return r;
}

int
ab_tree_copy (int src_dirfd, int dst_dirfd, FILE *manifest, struct ab_tree_stats_s *stats,
              ab_error_t *err)
{
	struct walk_s w = { .stats = stats, .manifest = manifest };
	struct stat st;

	memset (stats, 0, sizeof *stats);
	if (fstat (src_dirfd, &st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "stat the tree");
	w.dev = st.st_dev;
	if (walk (&w, src_dirfd, dst_dirfd, "", 0, err) < 0)
		return -1;
	/* The top directory too, last (its children changed its mtime). */
	if (dst_dirfd >= 0) {
		struct timespec ts[2] = { st.st_atim, st.st_mtim };
		if (fchown (dst_dirfd, st.st_uid, st.st_gid) < 0 && errno != EPERM)
			return ab_error (err, errno, AB_E_SYSTEM, "chown the tree");
		if (fchmod (dst_dirfd, st.st_mode & 07777) < 0 || futimens (dst_dirfd, ts) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "chmod the tree");
	}
	return 0;
}
