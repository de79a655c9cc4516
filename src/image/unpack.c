/* Hostile-input-safe layer unpacking (image/unpack.h).
 *
 * libarchive parses the tar and decompresses; it never touches the file
 * system (no archive_write_disk: its protections are flags on a
 * path-based writer).  Each entry is written by us: the parent directory
 * is reached one component at a time with openat2(RESOLVE_BENEATH |
 * RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV) from the
 * layer's own fd, so a symlink an earlier entry planted (the
 * directory-to-symlink swap of CVE-2019-14271 / CVE-2024-1753, tar-slip)
 * is never followed, and the leaf is created with O_EXCL | O_NOFOLLOW
 * after removing whatever the layer had there, so no write goes through a
 * link into another file. */
#include "image/unpack.h"

#include <archive.h>
#include <archive_entry.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/compat.h"
#include "base/openat2-walk.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "image/store.h"

#define RESOLVE_SAFE                                                                               \
	(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV)
#define WH_PREFIX ".wh."
#define WH_OPAQUE ".wh..wh..opq"
#define MAX_DEPTH 256

struct dirmode_s {
	char *path;
	mode_t mode;
	struct timespec mtime;
};

struct unpack_s {
	int root;
	bool privileged; /* euid 0: owners kept, trusted.* xattrs */
	bool whiteouts;
	uint64_t max_entry, max_layer, written, entries;
	struct dirmode_s *dirs;
	size_t n_dirs;
};

int
ab_unpack_clean_name (const char *name, char **out, ab_error_t *err)
{
	size_t len = strlen (name);
	char *res = xmalloc (len + 1), *o = res;
	const char *p = name;

	if (len >= PATH_MAX) {
		free (res);
		return ab_error (err, 0, AB_E_INVALID, "entry name over %d bytes", PATH_MAX);
	}
	while (*p) {
		size_t n = strcspn (p, "/");
		if (n == 2 && p[0] == '.' && p[1] == '.') {
			free (res);
			return ab_error (err, 0, AB_E_DENIED, "entry '%s' has a '..' component",
			                 name);
		}
		if (n > NAME_MAX) {
			free (res);
			return ab_error (err, 0, AB_E_INVALID, "entry '%s': a name over %d bytes",
			                 name, NAME_MAX);
		}
		if (n > 0 && !(n == 1 && p[0] == '.')) {
			if (o != res)
				*o++ = '/';
			memcpy (o, p, n);
			o += n;
		}
		p += n;
		while (*p == '/')
			p++;
	}
	*o = '\0';
	*out = res;
	return 0;
}

/* One name beneath dirfd, never through a symlink. */
static int
open_one (int dirfd, const char *name, int flags)
{
	return ab_openat2_or_walk (dirfd, name, (uint64_t)(flags | O_CLOEXEC), 0, RESOLVE_SAFE);
}

/* The directory rel ("a/b"; "" = the layer) as an fd; missing
 * directories are created (0700 until the end: modes are applied last)
 * when create. */
static int
open_dir (struct unpack_s *u, const char *rel, bool create, ab_error_t *err)
{
	cleanup_free char *copy = xstrdup (rel);
	cleanup_close int cur = fcntl (u->root, F_DUPFD_CLOEXEC, 3);
	char *save = NULL;

	for (char *c = strtok_r (copy, "/", &save); c; c = strtok_r (NULL, "/", &save)) {
		int next = open_one (cur, c, O_RDONLY | O_DIRECTORY);
		if (next < 0 && errno == ENOENT && create) {
			if (mkdirat (cur, c, 0700) < 0 && errno != EEXIST)
				return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", rel);
			next = open_one (cur, c, O_RDONLY | O_DIRECTORY);
		}
		if (next < 0) {
			int e = errno;
			if (e == ELOOP || e == ENOTDIR || e == EXDEV)
				return ab_error (err, e, AB_E_DENIED,
				                 "'%s' goes through a symlink or a non-directory "
				                 "('%s')",
				                 rel, c);
			return ab_error (err, e, e == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
			                 "open %s", rel);
		}
		close (cur);
		cur = next;
	}
	return steal_fd (&cur);
}

/* Remove name beneath dirfd, a whole tree for a directory, following
 * nothing. */
static int
rm_tree_at (int pfd, const char *name, int depth)
{
	cleanup_dir DIR *d = NULL;
	struct dirent *de;
	int fd;

	if (unlinkat (pfd, name, 0) == 0 || errno == ENOENT)
		return 0;
	if (errno != EISDIR && errno != EPERM)
		return -1;
	if (unlinkat (pfd, name, AT_REMOVEDIR) == 0)
		return 0;
	if ((errno != ENOTEMPTY && errno != EEXIST) || depth > MAX_DEPTH)
		return -1;
	fd = openat (pfd, name, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -1;
	d = fdopendir (fd);
	if (!d) {
		close (fd);
		return -1;
	}
	while ((de = readdir (d)))
		if (strcmp (de->d_name, ".") != 0 && strcmp (de->d_name, "..") != 0
		    && rm_tree_at (dirfd (d), de->d_name, depth + 1) < 0)
			return -1;
	return unlinkat (pfd, name, AT_REMOVEDIR);
}

/* Split rel into its parent's fd and the last name (a pointer into rel). */
static int
open_parent (struct unpack_s *u, char *rel, const char **leaf, bool create, ab_error_t *err)
{
	char *slash = strrchr (rel, '/');
	int fd;

	if (!slash) {
		*leaf = rel;
		return open_dir (u, "", false, err);
	}
	*slash = '\0';
	fd = open_dir (u, rel, create, err);
	*slash = '/';
	*leaf = slash + 1;
	return fd;
}

/* Make room for a new entry: anything but a directory kept for a
 * directory goes (tar order: the later entry wins). */
static int
clear_leaf (int pfd, const char *name, bool keep_dir, ab_error_t *err)
{
	struct stat st;

	if (fstatat (pfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 0 : ab_error (err, errno, AB_E_SYSTEM, "stat %s", name);
	if (keep_dir && S_ISDIR (st.st_mode))
		return 1;
	if (rm_tree_at (pfd, name, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "replace %s", name);
	return 0;
}

/* setuid and setgid are dropped: a layer directory is a host directory,
 * and a setuid-root file in it is one on the host too (docs/images.md). */
static mode_t
safe_mode (mode_t m)
{
	return m & 01777;
}

static void
set_owner_times (struct unpack_s *u, int pfd, const char *name, struct archive_entry *e)
{
	struct timespec ts[2] = { { archive_entry_mtime (e), archive_entry_mtime_nsec (e) },
		                  { archive_entry_mtime (e), archive_entry_mtime_nsec (e) } };
	int64_t uid = archive_entry_uid (e), gid = archive_entry_gid (e);

	if (u->privileged && uid >= 0 && gid >= 0 && uid < UINT32_MAX && gid < UINT32_MAX)
		if (fchownat (pfd, name, (uid_t)uid, (gid_t)gid, AT_SYMLINK_NOFOLLOW) < 0)
			errno = 0; /* best effort: an id the file system refuses keeps ours */
	(void)utimensat (pfd, name, ts, AT_SYMLINK_NOFOLLOW);
}

static int
write_data (struct unpack_s *u, struct archive *a, int fd, const char *name, int64_t size,
            ab_error_t *err)
{
	const void *buf;
	size_t len;
	la_int64_t off;
	uint64_t end = 0;
	int r;

	if (size < 0 || (uint64_t)size > u->max_entry)
		return ab_error (err, 0, AB_E_LIMIT, "entry '%s' is over the %llu-byte entry limit",
		                 name, (unsigned long long)u->max_entry);
	while ((r = archive_read_data_block (a, &buf, &len, &off)) == ARCHIVE_OK) {
		if (off < 0 || (uint64_t)off + len > u->max_entry)
			return ab_error (err, 0, AB_E_LIMIT, "entry '%s' is over the entry limit",
			                 name);
		u->written += len;
		if (u->written > u->max_layer)
			return ab_error (err, 0, AB_E_LIMIT,
			                 "the layer is over its %llu-byte limit",
			                 (unsigned long long)u->max_layer);
		/* A sparse entry's holes are skipped, never written: pwrite
		 * at the offset leaves them holes on disk. */
		for (size_t done = 0; done < len;) {
			ssize_t n = pwrite (fd, (const char *)buf + done, len - done,
			                    (off_t)((uint64_t)off + done));
			if (n < 0 && errno == EINTR)
				continue;
			if (n <= 0)
				return ab_error (err, errno, AB_E_SYSTEM, "write %s", name);
			done += (size_t)n;
		}
		end = (uint64_t)off + len;
	}
	if (r != ARCHIVE_EOF)
		return ab_error (err, 0, AB_E_INVALID, "entry '%s': %s", name,
		                 archive_error_string (a) ? archive_error_string (a) : "bad data");
	if ((uint64_t)size > end && ftruncate (fd, (off_t)size) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "truncate %s", name);
	return 0;
}

static int
make_file (struct unpack_s *u, struct archive *a, struct archive_entry *e, int pfd,
           const char *name, const char *full, ab_error_t *err)
{
	cleanup_close int fd = -1;

	if (clear_leaf (pfd, name, false, err) < 0)
		return -1;
	fd = openat (pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0600);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "create %s", full);
	if (write_data (u, a, fd, full, archive_entry_size (e), err) < 0)
		return -1;
	if (fchmod (fd, safe_mode (archive_entry_perm (e))) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "chmod %s", full);
	set_owner_times (u, pfd, name, e);
	return 0;
}

static int
make_dir (struct unpack_s *u, struct archive_entry *e, int pfd, const char *name, const char *full,
          ab_error_t *err)
{
	struct dirmode_s *dm;
	int r = clear_leaf (pfd, name, true, err);

	if (r < 0)
		return -1;
	if (r == 0 && mkdirat (pfd, name, 0700) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", full);
	set_owner_times (u, pfd, name, e);
	u->dirs = xrealloc (u->dirs, (u->n_dirs + 1) * sizeof *u->dirs);
	dm = &u->dirs[u->n_dirs++];
	dm->path = xstrdup (full);
	dm->mode = safe_mode (archive_entry_perm (e));
	dm->mtime.tv_sec = archive_entry_mtime (e);
	dm->mtime.tv_nsec = archive_entry_mtime_nsec (e);
	return 0;
}

/* Hard links: the target must already be in this layer (a name beneath
 * it, not a directory); linkat without AT_SYMLINK_FOLLOW links a symlink
 * itself, never what it points at. */
static int
make_hardlink (struct unpack_s *u, const char *target, int pfd, const char *name, const char *full,
               ab_error_t *err)
{
	cleanup_free char *t = NULL;
	cleanup_close int tfd = -1;
	const char *tleaf;
	struct stat st;

	if (ab_unpack_clean_name (target, &t, err) < 0)
		return ab_error_wrap (err, "hard link %s", full);
	if (!*t)
		return ab_error (err, 0, AB_E_DENIED, "hard link %s to the layer's root", full);
	tfd = open_parent (u, t, &tleaf, false, err);
	if (tfd < 0 || fstatat (tfd, tleaf, &st, AT_SYMLINK_NOFOLLOW) < 0) {
		ab_error_clear (err);
		return ab_error (err, 0, AB_E_DENIED,
		                 "hard link %s -> %s: the target is not (yet) in the layer", full,
		                 target);
	}
	if (S_ISDIR (st.st_mode))
		return ab_error (err, 0, AB_E_DENIED, "hard link %s to a directory", full);
	if (strcmp (t, full) == 0)
		return 0;
	if (clear_leaf (pfd, name, false, err) < 0)
		return -1;
	if (linkat (tfd, tleaf, pfd, name, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "link %s", full);
	return 0;
}

static int
set_xattr (int fd, const char *key, const char *v)
{
	return fsetxattr (fd, key, v, strlen (v), 0);
}

/* An opaque directory: both overlayfs spellings, trusted.overlay.* (read
 * by a mount in the initial user namespace) when we may write it, and
 * user.overlay.* (read by a "userxattr" mount, the one a user namespace
 * makes). */
static int
make_opaque (struct unpack_s *u, int pfd, const char *parent, ab_error_t *err)
{
	bool ok = false;

	if (u->privileged)
		ok = set_xattr (pfd, "trusted.overlay.opaque", "y") == 0;
	ok = set_xattr (pfd, "user.overlay.opaque", "y") == 0 || ok;
	if (!ok)
		return ab_error (err, errno, AB_E_SYSTEM, "mark %s opaque (xattrs)",
		                 *parent ? parent : "/");
	return 0;
}

/* A whiteout: overlayfs's char 0/0 device (mknod of it needs no
 * CAP_MKNOD since Linux 5.8), else an empty file with
 * user.overlay.whiteout (overlayfs 6.7+, "xwhiteouts") in a directory
 * marked user.overlay.whiteouts. */
static int
make_whiteout (struct unpack_s *u, int pfd, const char *name, const char *full, ab_error_t *err)
{
	cleanup_close int fd = -1;

	if (!*name || strcmp (name, ".") == 0 || strcmp (name, "..") == 0)
		return ab_error (err, 0, AB_E_INVALID, "bad whiteout %s", full);
	if (clear_leaf (pfd, name, false, err) < 0)
		return -1;
	if (mknodat (pfd, name, S_IFCHR | 0, makedev (0, 0)) == 0)
		return 0;
	fd = openat (pfd, name, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0000);
	if (fd < 0 || set_xattr (fd, "user.overlay.whiteout", "y") < 0
	    || set_xattr (pfd, "user.overlay.whiteouts", "y") < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "whiteout %s", full);
	(void)u;
	return 0;
}

static int
unpack_entry (struct unpack_s *u, struct archive *a, struct archive_entry *e, ab_error_t *err)
{
	cleanup_free char *rel = NULL;
	cleanup_close int pfd = -1;
	const char *leaf, *hl = archive_entry_hardlink (e), *sym = archive_entry_symlink (e);
	mode_t type = archive_entry_filetype (e);
	const char *raw = archive_entry_pathname (e);

	if (!raw)
		return ab_error (err, 0, AB_E_INVALID, "an entry without a name");
	if (ab_unpack_clean_name (raw, &rel, err) < 0)
		return -1;
	if (!*rel)
		return 0; /* "./": the layer's root keeps its own mode */
	pfd = open_parent (u, rel, &leaf, true, err);
	if (pfd < 0)
		return -1;
	if (strncmp (leaf, WH_PREFIX, strlen (WH_PREFIX)) == 0) {
		if (!u->whiteouts)
			return ab_error (err, 0, AB_E_INVALID, "whiteout %s outside a layer", rel);
		if (strcmp (leaf, WH_OPAQUE) == 0)
			return make_opaque (u, pfd, rel, err);
		if (strncmp (leaf, ".wh..wh.", 8) == 0)
			return 0; /* aufs's own bookkeeping (.wh..wh.plnk, .wh..wh.aufs) */
		return make_whiteout (u, pfd, leaf + strlen (WH_PREFIX), rel, err);
	}
	if (hl)
		return make_hardlink (u, hl, pfd, leaf, rel, err);
	switch (type) {
	case AE_IFREG: return make_file (u, a, e, pfd, leaf, rel, err);
	case AE_IFDIR: return make_dir (u, e, pfd, leaf, rel, err);
	case AE_IFLNK:
		if (!sym || !*sym)
			return ab_error (err, 0, AB_E_INVALID, "symlink %s without a target", rel);
		if (clear_leaf (pfd, leaf, false, err) < 0)
			return -1;
		/* Stored as it is: it is resolved only inside the sandbox's
		 * root, and we never follow it here. */
		if (symlinkat (sym, pfd, leaf) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "symlink %s", rel);
		set_owner_times (u, pfd, leaf, e);
		return 0;
	case AE_IFIFO:
		if (clear_leaf (pfd, leaf, false, err) < 0)
			return -1;
		if (mkfifoat (pfd, leaf, safe_mode (archive_entry_perm (e))) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "mkfifo %s", rel);
		set_owner_times (u, pfd, leaf, e);
		return 0;
	default:
		/* Device nodes (and sockets) are not created: /dev is the
		 * sandbox's own (SECURITY.md), and a device node in a host
		 * directory is a door to that device. */
		return 0;
	}
}

/* Directory modes and times last: a 0555 directory would refuse its own
 * entries, and every entry would bump its mtime.  Children first. */
static int
apply_dir_modes (struct unpack_s *u, ab_error_t *err)
{
	for (size_t i = u->n_dirs; i-- > 0;) {
		struct dirmode_s *dm = &u->dirs[i];
		struct timespec ts[2] = { dm->mtime, dm->mtime };
		cleanup_close int fd = open_dir (u, dm->path, false, err);
		mode_t m = dm->mode;
		if (fd < 0) {
			if (err->kind != AB_E_NOT_FOUND)
				return -1;
			ab_error_clear (err); /* replaced by a later entry */
			continue;
		}
		/* Without privileges the store must stay removable by us. */
		if (!u->privileged)
			m |= 0700;
		if (fchmod (fd, m) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "chmod %s", dm->path);
		(void)futimens (fd, ts);
	}
	return 0;
}

static uint64_t
limit_from_env (const char *name, uint64_t given, uint64_t def)
{
	const char *v = getenv (name);
	uint64_t n;

	if (given)
		return given;
	if (v && ab_parse_size (v, &n, &(ab_error_t)AB_ERROR_INIT) == 0 && n > 0)
		return n;
	return def;
}

/* Only in-process decompressors (no external programs). */
static void
support_filters (struct archive *a)
{
	archive_read_support_filter_gzip (a);
	archive_read_support_filter_zstd (a);
	archive_read_support_filter_xz (a);
	archive_read_support_filter_none (a);
}

/* The diff_id: the decompressing reader (format "raw": the bytes after
 * the filters) feeds the tar reader through read_cb, hashing what
 * passes, so the digest covers exactly the bytes that were unpacked. */
struct plain_s {
	struct archive *raw;
	struct ab_sha256_s h;
	char buf[1 << 16];
	uint64_t total, max; /* bytes of the uncompressed stream, and the bound */
	bool failed;
};

/* Bytes the stream may have past the tar's end (tar pads to its 10 KiB
 * record; some writers add more zeros). */
#define MAX_TAIL (UINT64_C (1) << 20)

static int
plain_open (struct plain_s *p, int fd, ab_error_t *err)
{
	struct archive_entry *e;

	p->raw = archive_read_new ();
	support_filters (p->raw);
	archive_read_support_format_raw (p->raw);
	if (archive_read_open_fd (p->raw, fd, 1 << 16) != ARCHIVE_OK
	    || archive_read_next_header (p->raw, &e) != ARCHIVE_OK)
		return ab_error (err, 0, AB_E_INVALID, "not a layer: %s",
		                 archive_error_string (p->raw) ? archive_error_string (p->raw)
		                                               : "empty");
	ab_sha256_init (&p->h);
	return 0;
}

static la_ssize_t
plain_read (struct archive *a, void *u, const void **out)
{
	struct plain_s *p = u;
	la_ssize_t n = archive_read_data (p->raw, p->buf, sizeof p->buf);

	if (n > 0 && (p->total += (uint64_t)n) > p->max) {
		archive_set_error (a, EFBIG, "the uncompressed layer is over %llu bytes",
		                   (unsigned long long)p->max);
		return -1;
	}
	if (n < 0) {
		p->failed = true;
		archive_set_error (a, EIO, "decompress: %s",
		                   archive_error_string (p->raw) ? archive_error_string (p->raw)
		                                                 : "?");
		return -1;
	}
	ab_sha256_update (&p->h, p->buf, (size_t)n);
	*out = p->buf;
	return n;
}

/* The rest of the stream (the tar reader stops after its end blocks;
 * the diff_id is of every byte), then the digest. */
static int
plain_finish (struct plain_s *p, bool after_tar, char **diff_id, ab_error_t *err)
{
	la_ssize_t n;

	if (after_tar && p->total + MAX_TAIL < p->max)
		p->max = p->total + MAX_TAIL;
	while ((n = archive_read_data (p->raw, p->buf, sizeof p->buf)) > 0) {
		if ((p->total += (uint64_t)n) > p->max)
			return ab_error (err, 0, AB_E_LIMIT,
			                 "the uncompressed layer is over %llu bytes (or has over "
			                 "%llu bytes after the tar's end)",
			                 (unsigned long long)p->max, (unsigned long long)MAX_TAIL);
		ab_sha256_update (&p->h, p->buf, (size_t)n);
	}
	if (n < 0)
		return ab_error (err, 0, AB_E_INVALID, "decompress: %s",
		                 archive_error_string (p->raw) ? archive_error_string (p->raw)
		                                               : "?");
	*diff_id = ab_sha256_final (&p->h);
	return 0;
}

static void
plain_close (struct plain_s *p)
{
	if (p->h.ctx)
		ab_sha256_drop (&p->h);
	if (p->raw)
		archive_read_free (p->raw);
	p->raw = NULL;
}

static int
read_entries (struct unpack_s *u, struct archive *a, int fd, struct plain_s *p, ab_error_t *err)
{
	struct archive_entry *e;
	int ar;

	archive_read_support_format_tar (a);
	if (p) {
		archive_read_support_filter_none (a);
		ar = archive_read_open (a, p, NULL, plain_read, NULL);
	} else {
		support_filters (a);
		ar = archive_read_open_fd (a, fd, 1 << 16);
	}
	if (ar != ARCHIVE_OK)
		return ab_error (err, 0, AB_E_INVALID, "not a tar archive: %s",
		                 archive_error_string (a) ? archive_error_string (a) : "?");
	while ((ar = archive_read_next_header (a, &e)) == ARCHIVE_OK || ar == ARCHIVE_WARN) {
		if (++u->entries > AB_IMAGE_MAX_LAYER_ENTRIES)
			return ab_error (err, 0, AB_E_LIMIT, "over %u entries",
			                 AB_IMAGE_MAX_LAYER_ENTRIES);
		if (unpack_entry (u, a, e, err) < 0)
			return -1;
	}
	if (ar != ARCHIVE_EOF)
		return ab_error (err, 0, AB_E_INVALID, "bad tar archive: %s",
		                 archive_error_string (a) ? archive_error_string (a) : "?");
	return apply_dir_modes (u, err);
}

int
ab_unpack_digest_fd (int fd, char **diff_id, ab_error_t *err)
{
	struct plain_s *p = xcalloc (1, sizeof *p);
	int r = plain_open (p, fd, err);

	/* No tar reader here: the bound is the layer's data limit plus a
	 * header's 1 KiB for each entry the unpacker would allow. */
	p->max = limit_from_env ("AGENTBOX_IMAGE_MAX_LAYER", 0, AB_IMAGE_MAX_LAYER_BYTES)
	         + (uint64_t)AB_IMAGE_MAX_LAYER_ENTRIES * 1024;
	p->total = 0;
	if (r == 0)
		r = plain_finish (p, false, diff_id, err);
	plain_close (p);
	free (p);
	return r;
}

int
ab_unpack_fd (int fd, int dirfd, const struct ab_unpack_opts_s *o, ab_error_t *err)
{
	struct unpack_s u = { .root = dirfd,
		              .privileged = geteuid () == 0,
		              .whiteouts = o->whiteouts };
	struct archive *a = archive_read_new ();
	struct plain_s *p = NULL;
	int r = 0;

	u.max_entry =
	        limit_from_env ("AGENTBOX_IMAGE_MAX_ENTRY", o->max_entry, AB_IMAGE_MAX_ENTRY_BYTES);
	u.max_layer =
	        limit_from_env ("AGENTBOX_IMAGE_MAX_LAYER", o->max_layer, AB_IMAGE_MAX_LAYER_BYTES);
	if (o->diff_id) {
		p = xcalloc (1, sizeof *p);
		p->max = u.max_layer + (uint64_t)AB_IMAGE_MAX_LAYER_ENTRIES * 1024;
		r = plain_open (p, fd, err);
	}
	if (r == 0)
		r = read_entries (&u, a, fd, p, err);
	archive_read_free (a);
	if (r == 0 && p)
		r = plain_finish (p, true, o->diff_id, err);
	if (p) {
		plain_close (p);
		free (p);
	}
	for (size_t i = 0; i < u.n_dirs; i++)
		free (u.dirs[i].path);
	free (u.dirs);
	return r;
}
