/* The file service's one-shot requests: stat, list (reads: anywhere the
 * sandbox sees), mkdir -p, remove (recursive, never following a symlink),
 * rename (writes: in a file root only).  Each resolves its path once
 * beneath its root (fsroot.c) and acts on (parent fd, last component) as
 * the configured sandbox user. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <limits.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "agent/service.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define LIST_MAX_ENTRIES  65536
#define LIST_PART_ENTRIES 2048
#define LIST_PART_BYTES   (512U * 1024) /* + one entry (< 300 KiB) stays under a frame */
#define REMOVE_MAX_DEPTH  128

typedef int (*file_op_fn) (struct ab_session_s *s, const struct ab_msg_s *m,
                           const struct ab_fspath_s *p, ab_error_t *err);

/* Parse, act as the sandbox user, answer FAIL on error (the op answers OK). */
static void
run_op (struct ab_session_s *s, const struct ab_msg_s *m, ab_fs_access how, file_op_fn op)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_fspath_s p;
	int r;

	if (ab_fspath_parse (m->path, how, &p, &err) < 0) {
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	ab_fs_as_user (true);
	r = op (s, m, &p, &err);
	ab_fs_as_user (false);
	ab_fspath_free (&p);
	if (r < 0)
		ab_session_fail (s, m->req_id, &err);
}

static uint32_t
wire_ftype (mode_t mode)
{
	if (S_ISREG (mode))
		return AB_WIRE_FT_FILE;
	if (S_ISDIR (mode))
		return AB_WIRE_FT_DIR;
	if (S_ISLNK (mode))
		return AB_WIRE_FT_SYMLINK;
	return AB_WIRE_FT_OTHER;
}

void
ab_stat_to_msg (const struct stat *st, struct ab_msg_s *m)
{
	ab_msg_set (m, ftype, AB_TAG_FTYPE, wire_ftype (st->st_mode));
	ab_msg_set (m, size, AB_TAG_SIZE, (uint64_t)st->st_size);
	ab_msg_set (m, mode, AB_TAG_MODE, (uint32_t)(st->st_mode & 07777));
	ab_msg_set (m, mtime_ms, AB_TAG_MTIME_MS,
	            (int64_t)st->st_mtim.tv_sec * 1000 + st->st_mtim.tv_nsec / 1000000);
	ab_msg_set (m, uid, AB_TAG_UID, (uint32_t)st->st_uid);
	ab_msg_set (m, gid, AB_TAG_GID, (uint32_t)st->st_gid);
}

/* A symlink's target into m->to (TAG_TO; the caller frees it). */
static void
link_target (int dir, const char *name, const struct stat *st, struct ab_msg_s *m)
{
	char buf[AB_MSG_MAX_PATH + 1];
	ssize_t n;

	if (!S_ISLNK (st->st_mode) || (n = readlinkat (dir, name, buf, sizeof buf - 1)) <= 0)
		return;
	buf[n] = '\0';
	m->to = xstrdup (buf);
}

#define MAX_XATTRS 64

/* The entry's user.e2b.* xattrs (envd's metadata) into m->xattrs as
 * KEY=VALUE.  By path, /proc/self/fd/DIR/NAME: DIR is the opened
 * directory whatever its path is now, NAME one component not followed
 * (l*xattr), so the lookup stays where the listing is; only files and
 * directories (no open(2) of a device or FIFO for it). */
static void
read_xattrs (int dir, const char *name, const struct stat *st, struct ab_msg_s *m)
{
	char path[64 + NAME_MAX], list[4096], val[AB_MSG_MAX_PATH - NAME_MAX];
	ssize_t n;

	if (!S_ISREG (st->st_mode) && !S_ISDIR (st->st_mode))
		return;
	snprintf (path, sizeof path, "/proc/self/fd/%d/%s", dir, name);
	if ((n = llistxattr (path, list, sizeof list)) <= 0)
		return;
	for (char *k = list; k < list + n && m->n_xattrs < MAX_XATTRS; k += strlen (k) + 1) {
		ssize_t vn;
		if (strncmp (k, "user.e2b.", 9) != 0 || !k[9]
		    || (vn = lgetxattr (path, k, val, sizeof val - 1)) < 0)
			continue;
		val[vn] = '\0';
		m->xattrs = xrealloc (m->xattrs, (m->n_xattrs + 2) * sizeof *m->xattrs);
		m->xattrs[m->n_xattrs++] = xasprintf ("%s=%s", k + 9, val);
		m->xattrs[m->n_xattrs] = NULL;
	}
}

static void
free_extras (struct ab_msg_s *m)
{
	free (m->to);
	m->to = NULL;
	ab_cleanup_strvp (&m->xattrs);
	m->xattrs = NULL;
	m->n_xattrs = 0;
}

/* lstat semantics: a symlink is reported as one. */
static int
stat_path (const struct ab_fspath_s *p, const char *shown, struct stat *st, ab_error_t *err)
{
	cleanup_close int parent = -1;

	if (!p->base)
		return fstat (p->root_fd, st) < 0 ? ab_fs_error (err, errno, "stat", shown) : 0;
	if ((parent = ab_fs_open_parent (p, shown, err)) < 0)
		return -1;
	if (fstatat (parent, p->base, st, AT_SYMLINK_NOFOLLOW) < 0)
		return ab_fs_error (err, errno, "stat", shown);
	return 0;
}

static int
op_stat (struct ab_session_s *s, const struct ab_msg_s *m, const struct ab_fspath_s *p,
         ab_error_t *err)
{
	struct ab_msg_s ok;
	struct stat st;
	cleanup_close int parent = -1;

	if (stat_path (p, m->path, &st, err) < 0)
		return -1;
	ab_msg_init (&ok, AB_MSG_OK);
	ab_stat_to_msg (&st, &ok);
	if (p->base && (parent = ab_fs_open_parent (p, m->path, &(ab_error_t)AB_ERROR_INIT)) >= 0) {
		link_target (parent, p->base, &st, &ok);
		read_xattrs (parent, p->base, &st, &ok);
	}
	ab_session_ok (s, m->req_id, &ok);
	free_extras (&ok);
	return 0;
}

void
ab_req_file_stat (struct ab_session_s *s, struct ab_msg_s *m)
{
	run_op (s, m, AB_FS_READ, op_stat);
}

/* ---- list ------------------------------------------------------------------- */

struct listing_s {
	struct ab_msg_s *recs;
	size_t n, total;
	size_t bytes; /* about what the part's records encode to */
};

static void
listing_flush (struct ab_session_s *s, uint32_t req_id, struct listing_s *l, bool more)
{
	struct ab_msg_s ok;

	ab_msg_init (&ok, AB_MSG_OK);
	ok.entries = l->recs;
	ok.n_entries = l->n;
	if (more)
		ab_msg_set (&ok, more, AB_TAG_MORE, true);
	ab_session_ok (s, req_id, &ok);
	for (size_t i = 0; i < l->n; i++) {
		free (l->recs[i].name);
		free_extras (&l->recs[i]);
	}
	l->n = 0;
	l->bytes = 0;
}

static void
listing_add (struct listing_s *l, DIR *d, const char *name)
{
	struct ab_msg_s *r = &l->recs[l->n++];
	struct stat st;

	ab_msg_init (r, AB_MSG_NESTED_ENTRY);
	r->name = xstrdup (name);
	/* Gone between readdir and stat: listed without details. */
	if (fstatat (dirfd (d), name, &st, AT_SYMLINK_NOFOLLOW) == 0) {
		ab_stat_to_msg (&st, r);
		link_target (dirfd (d), name, &st, r);
		read_xattrs (dirfd (d), name, &st, r);
	}
	l->bytes += 64 + strlen (name) + (r->to ? strlen (r->to) : 0);
	for (size_t i = 0; i < r->n_xattrs; i++)
		l->bytes += 6 + strlen (r->xattrs[i]);
}

/* Entries go out in parts of LIST_PART_ENTRIES or LIST_PART_BYTES (OK with MORE), so the
 * answer never needs a frame above the cap; past LIST_MAX_ENTRIES the
 * listing ends in FAIL (the client drops what it gathered). */
static int
list_dir (struct ab_session_s *s, const struct ab_msg_s *m, DIR *d, struct listing_s *l,
          ab_error_t *err)
{
	struct dirent *e;

	while ((e = readdir (d))) {
		if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
			continue;
		if (++l->total > LIST_MAX_ENTRIES)
			return ab_error (err, 0, AB_E_LIMIT, "%s has more than %d entries", m->path,
			                 LIST_MAX_ENTRIES);
		if (l->n == LIST_PART_ENTRIES || l->bytes > LIST_PART_BYTES)
			listing_flush (s, m->req_id, l, true);
		listing_add (l, d, e->d_name);
	}
	listing_flush (s, m->req_id, l, false);
	return 0;
}

static int
op_list (struct ab_session_s *s, const struct ab_msg_s *m, const struct ab_fspath_s *p,
         ab_error_t *err)
{
	struct listing_s l = { 0 };
	int fd = ab_fs_open (p, p->rel, O_RDONLY | O_DIRECTORY, m->path, err);
	DIR *d;
	int r;

	if (fd < 0)
		return -1;
	if (!(d = fdopendir (fd))) {
		close (fd);
		return ab_fs_error (err, errno, "list", m->path);
	}
	l.recs = xcalloc (LIST_PART_ENTRIES, sizeof *l.recs);
	r = list_dir (s, m, d, &l, err);
	closedir (d);
	for (size_t i = 0; i < l.n; i++) {
		free (l.recs[i].name);
		free_extras (&l.recs[i]);
	}
	free (l.recs);
	return r;
}

void
ab_req_file_list (struct ab_session_s *s, struct ab_msg_s *m)
{
	run_op (s, m, AB_FS_READ, op_list);
}

/* ---- mkdir -p ------------------------------------------------------------------ */

static int
op_mkdir (struct ab_session_s *s, const struct ab_msg_s *m, const struct ab_fspath_s *p,
          ab_error_t *err)
{
	mode_t mode = ab_msg_has (m, AB_TAG_MODE) && m->mode ? m->mode : 0755;
	cleanup_free char *prefix = xstrdup (p->rel);
	size_t len = strlen (prefix);
	cleanup_close int last = -1;

	/* One component at a time, each parent resolved from the root again:
	 * a component that is (or becomes) a symlink leading out is refused. */
	for (size_t i = 0; i <= len && p->base; i++) {
		cleanup_close int parent = -1;
		char *slash;
		if (prefix[i] != '/' && prefix[i] != '\0')
			continue;
		prefix[i] = '\0';
		slash = strrchr (prefix, '/');
		if (slash) {
			*slash = '\0';
			parent = ab_fs_open (p, prefix, O_PATH | O_DIRECTORY, m->path, err);
			*slash = '/';
		} else {
			parent = fcntl (p->root_fd, F_DUPFD_CLOEXEC, 3);
		}
		if (parent < 0)
			return err->kind != AB_E_NONE ? -1
			                              : ab_fs_error (err, errno, "mkdir", m->path);
		if (mkdirat (parent, slash ? slash + 1 : prefix, mode) < 0 && errno != EEXIST)
			return ab_fs_error (err, errno, "mkdir", m->path);
		if (i < len)
			prefix[i] = '/';
	}
	/* What is there now must be a directory (EEXIST may have been a file). */
	if ((last = ab_fs_open (p, p->rel, O_PATH | O_DIRECTORY, m->path, err)) < 0)
		return -1;
	ab_session_ok (s, m->req_id, NULL);
	return 0;
}

void
ab_req_file_mkdir (struct ab_session_s *s, struct ab_msg_s *m)
{
	run_op (s, m, AB_FS_WRITE, op_mkdir);
}

/* ---- remove -------------------------------------------------------------------- */

static int remove_tree (int parent, const char *name, dev_t dev, int depth, const char *shown,
                        ab_error_t *err);

static int
remove_entries (int fd, dev_t dev, int depth, const char *shown, ab_error_t *err)
{
	int dup_fd = fcntl (fd, F_DUPFD_CLOEXEC, 3);
	struct dirent *e;
	DIR *d;
	int r = 0;

	if (dup_fd < 0 || !(d = fdopendir (dup_fd))) {
		if (dup_fd >= 0)
			close (dup_fd);
		return ab_fs_error (err, errno, "remove", shown);
	}
	while (r == 0 && (e = readdir (d))) {
		struct stat st;
		if (strcmp (e->d_name, ".") == 0 || strcmp (e->d_name, "..") == 0)
			continue;
		if (fstatat (fd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) < 0)
			continue; /* already gone */
		if (S_ISDIR (st.st_mode))
			r = remove_tree (fd, e->d_name, dev, depth + 1, shown, err);
		else if (unlinkat (fd, e->d_name, 0) < 0 && errno != ENOENT)
			r = ab_fs_error (err, errno, "remove", shown);
	}
	closedir (d);
	return r;
}

/* Never follows a symlink: O_NOFOLLOW on every directory opened, and a
 * directory swapped for a symlink mid-way is unlinked as the symlink it
 * now is.  Other file systems (mounts below) are not descended into. */
static int
remove_tree (int parent, const char *name, dev_t dev, int depth, const char *shown, ab_error_t *err)
{
	cleanup_close int fd = -1;
	struct stat st;

	if (depth > REMOVE_MAX_DEPTH)
		return ab_error (err, 0, AB_E_LIMIT, "remove %s: directories nested too deep",
		                 shown);
	fd = openat (parent, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0 && (errno == ENOTDIR || errno == ELOOP))
		return unlinkat (parent, name, 0) < 0 ? ab_fs_error (err, errno, "remove", shown)
		                                      : 0;
	if (fd < 0)
		return errno == ENOENT ? 0 : ab_fs_error (err, errno, "remove", shown);
	if (fstat (fd, &st) < 0)
		return ab_fs_error (err, errno, "remove", shown);
	/* Twice: entries added while the first pass ran are taken too. */
	for (int pass = 0; st.st_dev == dev && pass < 2; pass++)
		if (remove_entries (fd, dev, depth, shown, err) < 0)
			return -1;
	if (unlinkat (parent, name, AT_REMOVEDIR) < 0 && errno != ENOENT)
		return ab_fs_error (err, errno, "remove", shown);
	return 0;
}

static int
op_remove (struct ab_session_s *s, const struct ab_msg_s *m, const struct ab_fspath_s *p,
           ab_error_t *err)
{
	cleanup_close int parent = -1;
	struct stat st;

	if (!p->base)
		return ab_error (err, 0, AB_E_DENIED, "%s is a file root; it cannot be removed",
		                 m->path);
	if ((parent = ab_fs_open_parent (p, m->path, err)) < 0)
		return -1;
	if (fstatat (parent, p->base, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return ab_fs_error (err, errno, "remove", m->path);
	if (S_ISDIR (st.st_mode) && m->recursive) {
		if (remove_tree (parent, p->base, st.st_dev, 0, m->path, err) < 0)
			return -1;
	} else if (unlinkat (parent, p->base, S_ISDIR (st.st_mode) ? AT_REMOVEDIR : 0) < 0) {
		return ab_fs_error (err, errno, "remove", m->path);
	}
	ab_session_ok (s, m->req_id, NULL);
	return 0;
}

void
ab_req_file_remove (struct ab_session_s *s, struct ab_msg_s *m)
{
	run_op (s, m, AB_FS_WRITE, op_remove);
}

/* ---- rename -------------------------------------------------------------------- */

static int
op_rename (struct ab_session_s *s, const struct ab_msg_s *m, const struct ab_fspath_s *p,
           ab_error_t *err)
{
	cleanup_close int from_dir = -1, to_dir = -1;
	struct ab_fspath_s to;
	int r = -1;

	if (!p->base)
		return ab_error (err, 0, AB_E_DENIED, "%s is a file root; it cannot be moved",
		                 m->path);
	if (ab_fspath_parse (m->to, AB_FS_WRITE, &to, err) < 0)
		return -1;
	if (!to.base)
		ab_error (err, 0, AB_E_DENIED, "%s is a file root; it cannot be replaced", m->to);
	else if ((from_dir = ab_fs_open_parent (p, m->path, err)) >= 0
	         && (to_dir = ab_fs_open_parent (&to, m->to, err)) >= 0) {
		r = renameat (from_dir, p->base, to_dir, to.base);
		if (r < 0 && errno == EXDEV)
			ab_error (err, 0, AB_E_INVALID,
			          "cannot move %s to %s: different file systems", m->path, m->to);
		else if (r < 0)
			ab_fs_error (err, errno, "rename", m->path);
	}
	ab_fspath_free (&to);
	if (r < 0)
		return -1;
	ab_session_ok (s, m->req_id, NULL);
	return 0;
}

void
ab_req_file_rename (struct ab_session_s *s, struct ab_msg_s *m)
{
	run_op (s, m, AB_FS_WRITE, op_rename);
}
