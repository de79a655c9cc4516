/* The image store's primitives: layout, locks, verified blobs, the name
 * index and image records (layout in image/store.h, docs/images.md). */
#include "image/store.h"

#include <errno.h>
#include <fcntl.h>
#include <openssl/evp.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/fsutil.h"
#include "base/xalloc.h"
#include "image/ref.h"

static const char *const subdirs[] = { "blobs", "blobs/sha256", "tmp",    "layers",
	                               "diffs", "images",       "leases", "locks" };

static int
mkdir_p (const char *path, mode_t mode, ab_error_t *err)
{
	cleanup_free char *p = xstrdup (path);

	for (char *s = p + 1; *s; s++)
		if (*s == '/') {
			*s = '\0';
			if (mkdir (p, 0755) < 0 && errno != EEXIST)
				return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", p);
			*s = '/';
		}
	if (mkdir (p, mode) < 0 && errno != EEXIST)
		return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", p);
	return 0;
}

static int
make_layout (const char *root, ab_error_t *err)
{
	/* 0700: layers hold files owned by the image's users; nobody else on
	 * the host walks into them. */
	if (mkdir_p (root, 0700, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof subdirs / sizeof *subdirs; i++) {
		cleanup_free char *d = xasprintf ("%s/%s", root, subdirs[i]);
		if (mkdir (d, 0700) < 0 && errno != EEXIST)
			return ab_error (err, errno, AB_E_SYSTEM, "mkdir %s", d);
	}
	return 0;
}

int
ab_store_open (const char *state_dir, struct ab_store_s *st, ab_error_t *err)
{
	cleanup_free char *root = NULL;

	if (!state_dir || state_dir[0] != '/')
		return ab_error (err, 0, AB_E_INVALID,
		                 "no state directory (--state-dir, $AGENTBOX_STATE_DIR)");
	root = xasprintf ("%s/images", state_dir);
	if (make_layout (root, err) < 0)
		return -1;
	st->root_fd = open (root, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (st->root_fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", root);
	st->root = steal_pointer (&root);
	return 0;
}

void
ab_store_close (struct ab_store_s *st)
{
	if (st->root_fd >= 0)
		close (st->root_fd);
	free (st->root);
	st->root = NULL;
	st->root_fd = -1;
}

char *
ab_store_path (const struct ab_store_s *st, const char *fmt, ...)
{
	cleanup_free char *rel = NULL;
	va_list ap;

	va_start (ap, fmt);
	if (vasprintf (&rel, fmt, ap) < 0)
		abort ();
	va_end (ap);
	return xasprintf ("%s/%s", st->root, rel);
}

int
ab_store_lock (const struct ab_store_s *st, const char *name, ab_error_t *err)
{
	cleanup_free char *p = ab_store_path (st, "locks/%s", name);
	int fd = open (p, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", p);
	while (flock (fd, LOCK_EX) < 0)
		if (errno != EINTR) {
			int e = errno;
			close (fd);
			return ab_error (err, e, AB_E_SYSTEM, "flock %s", p);
		}
	return fd;
}

int
ab_store_sync_dir (const struct ab_store_s *st, const char *rel, ab_error_t *err)
{
	cleanup_close int fd = openat (st->root_fd, rel, O_RDONLY | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0 || fsync (fd) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sync %s/%s", st->root, rel);
	return 0;
}

/* --- SHA-256 --- */

void
ab_sha256_init (struct ab_sha256_s *h)
{
	h->ctx = EVP_MD_CTX_new ();
	if (!h->ctx || EVP_DigestInit_ex (h->ctx, EVP_sha256 (), NULL) != 1)
		abort ();
}

void
ab_sha256_update (struct ab_sha256_s *h, const void *p, size_t n)
{
	if (n && EVP_DigestUpdate (h->ctx, p, n) != 1)
		abort ();
}

char *
ab_sha256_final (struct ab_sha256_s *h)
{
	unsigned char md[32];
	unsigned int len = 0;
	char *out = xmalloc (7 + 64 + 1);

	if (EVP_DigestFinal_ex (h->ctx, md, &len) != 1 || len != 32)
		abort ();
	ab_sha256_drop (h);
	memcpy (out, "sha256:", 7);
	for (unsigned i = 0; i < 32; i++)
		snprintf (out + 7 + 2 * i, 3, "%02x", md[i]);
	return out;
}

void
ab_sha256_drop (struct ab_sha256_s *h)
{
	EVP_MD_CTX_free (h->ctx);
	h->ctx = NULL;
}

char *
ab_sha256_of (const void *p, size_t n)
{
	struct ab_sha256_s h;
	ab_sha256_init (&h);
	ab_sha256_update (&h, p, n);
	return ab_sha256_final (&h);
}

/* --- blobs --- */

char *
ab_store_blob_path (const struct ab_store_s *st, const char *digest)
{
	return ab_store_path (st, "blobs/sha256/%s", digest + 7);
}

bool
ab_store_has_blob (const struct ab_store_s *st, const char *digest)
{
	cleanup_free char *p = NULL;
	struct stat s;

	if (!ab_image_digest_valid (digest))
		return false;
	p = ab_store_blob_path (st, digest);
	return lstat (p, &s) == 0 && S_ISREG (s.st_mode);
}

/* Hash what a partial file already holds, to resume after it. */
static int
rehash_partial (struct ab_blob_writer_s *w, ab_error_t *err)
{
	char buf[65536];
	ssize_t n;

	if (lseek (w->fd, 0, SEEK_SET) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "seek %s", w->tmp);
	while ((n = read (w->fd, buf, sizeof buf)) > 0) {
		ab_sha256_update (&w->h, buf, (size_t)n);
		w->written += (uint64_t)n;
	}
	if (n < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "read %s", w->tmp);
	if (w->expect_size >= 0 && w->written > (uint64_t)w->expect_size)
		return ab_blob_writer_restart (w, err);
	return 0;
}

int
ab_blob_writer_open (const struct ab_store_s *st, const char *expect, int64_t size, bool resume,
                     struct ab_blob_writer_s *w, ab_error_t *err)
{
	memset (w, 0, sizeof *w);
	w->fd = -1;
	w->expect_size = size;
	if (expect) {
		w->expect = xstrdup (expect);
		/* The caller holds the blob's lock: one writer per name. */
		w->tmp = ab_store_path (st, "tmp/%s.partial", expect + 7);
		w->fd = open (w->tmp,
		              O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | (resume ? 0 : O_TRUNC),
		              0600);
	} else {
		w->tmp = ab_store_path (st, "tmp/import.XXXXXX");
		w->fd = mkostemp (w->tmp, O_CLOEXEC);
	}
	if (w->fd < 0) {
		int e = errno;
		ab_blob_writer_abort (w, false);
		return ab_error (err, e, AB_E_SYSTEM, "create a temporary blob");
	}
	ab_sha256_init (&w->h);
	if (resume && rehash_partial (w, err) < 0) {
		ab_blob_writer_abort (w, false);
		return -1;
	}
	return 0;
}

int
ab_blob_writer_write (struct ab_blob_writer_s *w, const void *p, size_t n, ab_error_t *err)
{
	if (w->expect_size >= 0 && w->written + n > (uint64_t)w->expect_size)
		return ab_error (err, 0, AB_E_INVALID, "blob %s is larger than its %lld bytes",
		                 w->expect ? w->expect : "", (long long)w->expect_size);
	if (ab_write_all (w->fd, p, n) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s", w->tmp);
	ab_sha256_update (&w->h, p, n);
	w->written += n;
	return 0;
}

int
ab_blob_writer_restart (struct ab_blob_writer_s *w, ab_error_t *err)
{
	if (ftruncate (w->fd, 0) < 0 || lseek (w->fd, 0, SEEK_SET) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "truncate %s", w->tmp);
	ab_sha256_drop (&w->h);
	ab_sha256_init (&w->h);
	w->written = 0;
	return 0;
}

int
ab_blob_writer_commit (const struct ab_store_s *st, struct ab_blob_writer_s *w, char **digest_out,
                       ab_error_t *err)
{
	cleanup_free char *got = ab_sha256_final (&w->h);
	cleanup_free char *dst = NULL;

	if (w->expect_size >= 0 && w->written != (uint64_t)w->expect_size) {
		ab_error (err, 0, AB_E_INVALID, "blob %s is truncated: %llu of %lld bytes",
		          w->expect ? w->expect : got, (unsigned long long)w->written,
		          (long long)w->expect_size);
		ab_blob_writer_abort (w, false);
		return -1;
	}
	if (w->expect && strcmp (got, w->expect) != 0) {
		ab_error (err, 0, AB_E_INVALID,
		          "blob %s does not match its digest (got %s); removed", w->expect, got);
		ab_blob_writer_abort (w, false);
		return -1;
	}
	/* Durable before it has a name: the data synced, renamed, then the
	 * directory synced, so a blob under blobs/ survives a host crash
	 * whole (docs/images.md, "Durability"). */
	if (fchmod (w->fd, 0600) < 0 || fsync (w->fd) < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "sync %s", w->tmp);
		ab_blob_writer_abort (w, false);
		return -1;
	}
	dst = ab_store_blob_path (st, got);
	if (rename (w->tmp, dst) < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "rename %s", w->tmp);
		ab_blob_writer_abort (w, false);
		return -1;
	}
	if (ab_store_sync_dir (st, "blobs/sha256", err) < 0) {
		ab_blob_writer_abort (w, false);
		return -1;
	}
	free (w->tmp);
	w->tmp = NULL;
	ab_blob_writer_abort (w, false);
	if (digest_out)
		*digest_out = steal_pointer (&got);
	return 0;
}

void
ab_blob_writer_abort (struct ab_blob_writer_s *w, bool keep)
{
	if (w->fd >= 0)
		close (w->fd);
	w->fd = -1;
	if (w->tmp && !keep)
		unlink (w->tmp);
	if (w->h.ctx)
		ab_sha256_drop (&w->h);
	free (w->tmp);
	free (w->expect);
	w->tmp = w->expect = NULL;
}

int
ab_store_ingest_fd (const struct ab_store_s *st, int fd, const char *expect, int64_t size,
                    char **digest_out, ab_error_t *err)
{
	struct ab_blob_writer_s w;
	char buf[1 << 16];
	ssize_t n;

	if (expect && ab_store_has_blob (st, expect)) {
		if (digest_out)
			*digest_out = xstrdup (expect);
		return 0;
	}
	if (ab_blob_writer_open (st, NULL, size, false, &w, err) < 0)
		return -1;
	if (expect)
		w.expect = xstrdup (expect);
	while ((n = read (fd, buf, sizeof buf)) != 0) {
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 || ab_blob_writer_write (&w, buf, (size_t)n, err) < 0) {
			if (n < 0)
				ab_error (err, errno, AB_E_SYSTEM, "read");
			ab_blob_writer_abort (&w, false);
			return -1;
		}
	}
	return ab_blob_writer_commit (st, &w, digest_out, err);
}

int
ab_store_put_bytes (const struct ab_store_s *st, const void *p, size_t n, char **digest_out,
                    ab_error_t *err)
{
	struct ab_blob_writer_s w;

	if (ab_blob_writer_open (st, NULL, (int64_t)n, false, &w, err) < 0)
		return -1;
	if (ab_blob_writer_write (&w, p, n, err) < 0) {
		ab_blob_writer_abort (&w, false);
		return -1;
	}
	return ab_blob_writer_commit (st, &w, digest_out, err);
}

int
ab_store_read_blob (const struct ab_store_s *st, const char *digest, size_t max, char **out,
                    size_t *len, ab_error_t *err)
{
	cleanup_free char *p = NULL;
	cleanup_close int fd = -1;
	struct stat s;
	char *buf;

	if (!ab_image_digest_valid (digest))
		return ab_error (err, 0, AB_E_INVALID, "bad digest '%s'", digest);
	p = ab_store_blob_path (st, digest);
	fd = open (p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
	if (fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "blob %s", digest);
	if (fstat (fd, &s) < 0 || (uint64_t)s.st_size > max)
		return ab_error (err, 0, AB_E_LIMIT, "blob %s is over %zu bytes", digest, max);
	buf = xmalloc ((size_t)s.st_size + 1);
	if (ab_read_exact (fd, buf, (size_t)s.st_size) < 0) {
		free (buf);
		return ab_error (err, errno, AB_E_SYSTEM, "read %s", p);
	}
	buf[s.st_size] = '\0';
	*out = buf;
	*len = (size_t)s.st_size;
	return 0;
}

/* --- names and records --- */

json_t *
ab_store_names (const struct ab_store_s *st, ab_error_t *err)
{
	cleanup_free char *p = ab_store_path (st, "names.json");
	json_error_t je;
	json_t *j = json_load_file (p, 0, &je);

	if (!j && access (p, F_OK) == 0) {
		ab_error (err, 0, AB_E_INTERNAL, "%s: %s", p, je.text);
		return NULL;
	}
	if (!j)
		j = json_object ();
	if (!json_is_object (j)) {
		json_decref (j);
		ab_error (err, 0, AB_E_INTERNAL, "%s is not an object", p);
		return NULL;
	}
	return j;
}

json_t *
ab_store_image_record (const struct ab_store_s *st, const char *digest, ab_error_t *err)
{
	cleanup_free char *p = NULL;
	json_error_t je;
	json_t *j;

	if (!ab_image_digest_valid (digest)) {
		ab_error (err, 0, AB_E_INVALID, "bad digest '%s'", digest);
		return NULL;
	}
	p = ab_store_path (st, "images/%s.json", digest + 7);
	j = json_load_file (p, 0, &je);
	if (!j)
		ab_error (err, 0, AB_E_NOT_FOUND, "image %s is not in the store", digest);
	return j;
}

/* Write names.json; the caller holds the "store" lock. */
static int
save_json (const struct ab_store_s *st, const char *rel, json_t *j, ab_error_t *err)
{
	cleanup_free char *p = ab_store_path (st, "%s", rel);
	cleanup_free char *text = json_dumps (j, JSON_INDENT (1) | JSON_SORT_KEYS);

	return ab_write_file_atomic (p, text, strlen (text), err);
}

int
ab_store_set_names (const struct ab_store_s *st, json_t *names, ab_error_t *err)
{
	return save_json (st, "names.json", names, err);
}

char *
ab_store_resolve (const struct ab_store_s *st, const char *name, ab_error_t *err)
{
	json_t *names = ab_store_names (st, err), *v;
	struct ab_image_ref_s ref;
	char *out = NULL;
	const char *k;

	if (!names)
		return NULL;
	if (ab_image_digest_valid (name)) {
		json_decref (names);
		cleanup_free char *p = ab_store_path (st, "images/%s.json", name + 7);
		if (access (p, F_OK) == 0)
			return xstrdup (name);
		ab_error (err, 0, AB_E_NOT_FOUND, "image %s is not in the store", name);
		return NULL;
	}
	if (ab_image_ref_parse (name, &ref, &(ab_error_t)AB_ERROR_INIT) == 0) {
		cleanup_free char *canon = ab_image_ref_name (&ref);
		v = json_object_get (names, canon);
		if (json_is_string (v))
			out = xstrdup (json_string_value (v));
		else if (ref.digest) {
			/* name@digest: the digest is the content, whatever the name. */
			cleanup_free char *p = ab_store_path (st, "images/%s.json", ref.digest + 7);
			if (access (p, F_OK) == 0)
				out = xstrdup (ref.digest);
		}
		ab_image_ref_free (&ref);
	}
	/* A digest prefix, as `podman images` prints them (12+ hex digits). */
	if (!out && strlen (name) >= 12 && strspn (name, "0123456789abcdef") == strlen (name))
		json_object_foreach (names, k, v)
		{
			const char *d = json_string_value (v);
			if (d && strncmp (d + 7, name, strlen (name)) == 0) {
				if (out && strcmp (out, d) != 0) {
					free (out);
					out = NULL;
					ab_error (err, 0, AB_E_CONFLICT,
					          "'%s' names more than one image", name);
					json_decref (names);
					return NULL;
				}
				free (out);
				out = xstrdup (d);
			}
		}
	json_decref (names);
	if (!out)
		ab_error (err, 0, AB_E_NOT_FOUND, "no image '%s' in the store", name);
	return out;
}
