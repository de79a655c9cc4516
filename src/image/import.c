/* Import: an OCI image layout (directory or tar), a docker/podman save
 * archive (manifest.json form), or a plain root (directory or tar) as a
 * one-layer image.  An archive is first unpacked by the layer unpacker
 * (whiteouts refused) into a work directory; every file of a layout is
 * then opened beneath it with RESOLVE_IN_ROOT, so a symlink in a hostile
 * archive cannot bring a host file into the store. */
#include <archive.h>
#include <archive_entry.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/compat.h"
#include "base/fsutil.h"
#include "base/openat2-walk.h"
#include "base/xalloc.h"
#include "image/image.h"
#include "image/ref.h"
#include "image/store.h"
#include "image/unpack.h"

static int
open_in (int dirfd, const char *rel, ab_error_t *err)
{
	int fd = ab_openat2_or_walk (dirfd, rel, O_RDONLY | O_CLOEXEC, 0,
	                             RESOLVE_IN_ROOT | RESOLVE_NO_MAGICLINKS | RESOLVE_NO_XDEV);
	if (fd < 0)
		return ab_error (err, errno, AB_E_INVALID, "%s in the image archive", rel);
	return fd;
}

static json_t *
load_json_in (int dirfd, const char *rel, ab_error_t *err)
{
	cleanup_close int fd = open_in (dirfd, rel, err);
	json_error_t je;
	json_t *j;

	if (fd < 0)
		return NULL;
	j = json_loadfd (fd, 0, &je);
	if (!j)
		ab_error (err, 0, AB_E_INVALID, "%s: %s", rel, je.text);
	return j;
}

/* A file of the archive into the store; expect NULL = its own digest. */
static int
ingest_in (const struct ab_store_s *st, int dirfd, const char *rel, const char *expect,
           char **digest, int64_t *size, ab_error_t *err)
{
	cleanup_close int fd = open_in (dirfd, rel, err);
	struct stat s;

	if (fd < 0)
		return -1;
	if (fstat (fd, &s) < 0 || !S_ISREG (s.st_mode))
		return ab_error (err, 0, AB_E_INVALID, "%s is not a regular file", rel);
	if (size)
		*size = s.st_size;
	return ab_store_ingest_fd (st, fd, expect, s.st_size, digest, err);
}

static int
ingest_blob (const struct ab_store_s *st, int dirfd, const char *digest, ab_error_t *err)
{
	cleanup_free char *rel = NULL;

	if (!ab_image_digest_valid (digest))
		return ab_error (err, 0, AB_E_INVALID, "bad digest '%s'", digest ? digest : "");
	rel = xasprintf ("blobs/sha256/%s", digest + 7);
	return ingest_in (st, dirfd, rel, digest, NULL, NULL, err);
}

static char *
name_from (const char *given, const char *annotated, const char *digest)
{
	struct ab_image_ref_s ref;
	char *out;

	if (!given && annotated
	    && ab_image_ref_parse (annotated, &ref, &(ab_error_t)AB_ERROR_INIT) == 0
	    && strchr (annotated, '/')) {
		out = ab_image_ref_name (&ref);
		ab_image_ref_free (&ref);
		return out;
	}
	if (!given)
		return xasprintf ("localhost/import:%.12s", digest + 7);
	if (ab_image_ref_parse (given, &ref, &(ab_error_t)AB_ERROR_INIT) < 0)
		return NULL;
	out = ab_image_ref_name (&ref);
	ab_image_ref_free (&ref);
	return out;
}

static int
register_named (const struct ab_store_s *st, const char *digest, const char *name,
                char **digest_out, ab_error_t *err)
{
	const char *names[] = { name, NULL };

	if (ab_store_register (st, digest, names, err) < 0)
		return -1;
	if (digest_out)
		*digest_out = xstrdup (digest);
	return 0;
}

static int
import_oci (const struct ab_store_s *st, int dirfd, const char *name, char **digest_out,
            ab_error_t *err)
{
	json_t *idx = load_json_in (dirfd, "index.json", err), *m, *man = NULL, *l;
	cleanup_free char *mdig = NULL, *body = NULL, *nm = NULL;
	const char *annot;
	size_t len, i;
	bool is_index;
	int r = -1;

	if (!idx)
		return -1;
	m = json_array_get (json_object_get (idx, "manifests"), 0);
	annot = json_string_value (json_object_get (json_object_get (m, "annotations"),
	                                            "org.opencontainers.image.ref.name"));
	mdig = xstrdup (json_string_value (json_object_get (m, "digest")) ?: "");
	for (int depth = 0; depth < 2; depth++) {
		if (ingest_blob (st, dirfd, mdig, err) < 0
		    || ab_store_read_blob (st, mdig, AB_IMAGE_MAX_MANIFEST, &body, &len, err) < 0)
			goto out;
		json_decref (man);
		man = json_loadb (body, len, 0, NULL);
		free (body);
		body = NULL;
		ab_manifest_media_type (man, &is_index);
		if (!is_index)
			break;
		free (mdig);
		if (!(mdig = ab_index_pick (man, NULL, err)))
			goto out;
	}
	if (ingest_blob (
	            st, dirfd,
	            json_string_value (json_object_get (json_object_get (man, "config"), "digest")),
	            err)
	    < 0)
		goto out;
	json_array_foreach (json_object_get (man, "layers"), i,
	                    l) if (ingest_blob (st, dirfd,
	                                        json_string_value (json_object_get (l, "digest")),
	                                        err)
	                           < 0) goto out;
	nm = name_from (name, annot, mdig);
	if (!nm)
		r = ab_error (err, 0, AB_E_INVALID, "bad image name '%s'", name);
	else
		r = register_named (st, mdig, nm, digest_out, err);
out:
	json_decref (man);
	json_decref (idx);
	return r;
}

static json_t *
descriptor (const char *type, const char *digest, int64_t size)
{
	return json_pack ("{s:s, s:s, s:I}", "mediaType", type, "digest", digest, "size",
	                  (json_int_t)size);
}

/* A manifest for a config and layers already in the store. */
static int
put_manifest (const struct ab_store_s *st, const char *cdig, int64_t csize, json_t *layers,
              char **mdig, ab_error_t *err)
{
	json_t *m = json_pack ("{s:i, s:s, s:o, s:O}", "schemaVersion", 2, "mediaType",
	                       "application/vnd.oci.image.manifest.v1+json", "config",
	                       descriptor ("application/vnd.oci.image.config.v1+json", cdig, csize),
	                       "layers", layers);
	cleanup_free char *text = json_dumps (m, JSON_COMPACT | JSON_SORT_KEYS);

	json_decref (m);
	return ab_store_put_bytes (st, text, strlen (text), mdig, err);
}

static int
import_docker (const struct ab_store_s *st, int dirfd, const char *name, char **digest_out,
               ab_error_t *err)
{
	json_t *mf = load_json_in (dirfd, "manifest.json", err), *e, *l, *layers;
	cleanup_free char *cdig = NULL, *mdig = NULL, *nm = NULL;
	int64_t csize = 0;
	size_t i;
	int r = -1;

	if (!mf)
		return -1;
	e = json_array_get (mf, 0);
	if (!json_is_string (json_object_get (e, "Config"))) {
		json_decref (mf);
		return ab_error (err, 0, AB_E_INVALID, "manifest.json has no Config");
	}
	if (ingest_in (st, dirfd, json_string_value (json_object_get (e, "Config")), NULL, &cdig,
	               &csize, err)
	    < 0)
		goto out;
	layers = json_array ();
	json_array_foreach (json_object_get (e, "Layers"), i, l)
	{
		cleanup_free char *ld = NULL;
		int64_t lsize = 0;
		if (!json_is_string (l)
		    || ingest_in (st, dirfd, json_string_value (l), NULL, &ld, &lsize, err) < 0) {
			json_decref (layers);
			if (!json_is_string (l))
				ab_error (err, 0, AB_E_INVALID, "manifest.json: bad layer %zu", i);
			goto out;
		}
		json_array_append_new (
		        layers, descriptor ("application/vnd.oci.image.layer.v1.tar", ld, lsize));
	}
	r = put_manifest (st, cdig, csize, layers, &mdig, err);
	json_decref (layers);
	if (r == 0) {
		nm = name_from (
		        name,
		        json_string_value (json_array_get (json_object_get (e, "RepoTags"), 0)),
		        mdig);
		r = nm ? register_named (st, mdig, nm, digest_out, err)
		       : ab_error (err, 0, AB_E_INVALID, "bad image name '%s'", name);
	}
out:
	json_decref (mf);
	return r;
}

/* A plain root tar (blob already in the store) as a one-layer image: it
 * is unpacked first, and the diff_id computed then is the layer's
 * identity in the config (the blob may be compressed). */
static int
import_layer_blob (const struct ab_store_s *st, const char *ldig, int64_t lsize, const char *name,
                   char **digest_out, ab_error_t *err)
{
	cleanup_free char *diff = NULL, *text = NULL;
	cleanup_free char *cdig = NULL, *mdig = NULL, *nm = NULL;
	json_t *cfg, *layers;

	if (ab_store_unpack_layer (st, ldig, NULL, &diff, err) < 0)
		return -1;
	cfg = json_pack ("{s:s, s:s, s:{}, s:{s:s, s:[s]}}", "architecture", "amd64", "os", "linux",
	                 "config", "rootfs", "type", "layers", "diff_ids", diff);
	text = json_dumps (cfg, JSON_COMPACT | JSON_SORT_KEYS);
	json_decref (cfg);
	if (ab_store_put_bytes (st, text, strlen (text), &cdig, err) < 0)
		return -1;
	layers = json_pack ("[o]",
	                    descriptor ("application/vnd.oci.image.layer.v1.tar", ldig, lsize));
	if (put_manifest (st, cdig, (int64_t)strlen (text), layers, &mdig, err) < 0) {
		json_decref (layers);
		return -1;
	}
	json_decref (layers);
	nm = name_from (name, NULL, mdig);
	if (!nm)
		return ab_error (err, 0, AB_E_INVALID, "bad image name '%s'", name);
	return register_named (st, mdig, nm, digest_out, err);
}

struct tar_out_s {
	struct ab_blob_writer_s w;
	ab_error_t *err;
	bool failed;
};

static la_ssize_t
tar_write_cb (struct archive *a, void *u, const void *buf, size_t n)
{
	struct tar_out_s *t = u;
	(void)a;
	if (ab_blob_writer_write (&t->w, buf, n, t->err) < 0) {
		t->failed = true;
		return -1;
	}
	return (la_ssize_t)n;
}

/* A plain root directory as a tar blob (symlinks stored, not followed). */
static int
tar_dir (const struct ab_store_s *st, const char *src, char **digest, int64_t *size,
         ab_error_t *err)
{
	struct archive *disk = archive_read_disk_new (), *out = archive_write_new ();
	struct archive_entry *e;
	struct tar_out_s t = { .err = err };
	size_t plen = strlen (src);
	int r = 0, ar;

	if (ab_blob_writer_open (st, NULL, -1, false, &t.w, err) < 0) {
		archive_read_free (disk);
		archive_write_free (out);
		return -1;
	}
	archive_read_disk_set_symlink_physical (disk);
	archive_read_disk_set_standard_lookup (disk);
	archive_write_set_format_pax_restricted (out);
	archive_write_open (out, &t, NULL, tar_write_cb, NULL);
	if (archive_read_disk_open (disk, src) != ARCHIVE_OK)
		r = ab_error (err, 0, AB_E_INVALID, "%s: %s", src, archive_error_string (disk));
	while (r == 0 && (e = archive_entry_new ())
	       && ((ar = archive_read_next_header2 (disk, e)) == ARCHIVE_OK
	           || (archive_entry_free (e), 0))) {
		cleanup_free char *p = xstrdup (archive_entry_pathname (e));
		cleanup_free char *rel = xasprintf (".%s", p + plen);
		archive_read_disk_descend (disk);
		archive_entry_set_pathname (e, rel);
		if (archive_write_header (out, e) != ARCHIVE_OK)
			r = ab_error (err, 0, AB_E_SYSTEM, "tar %s: %s", p,
			              archive_error_string (out));
		if (r == 0 && archive_entry_filetype (e) == AE_IFREG
		    && archive_entry_size (e) > 0) {
			cleanup_close int fd = open (p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW);
			char buf[1 << 16];
			ssize_t n;
			while (fd >= 0 && (n = read (fd, buf, sizeof buf)) > 0)
				if (archive_write_data (out, buf, (size_t)n) < 0) {
					r = ab_error (err, 0, AB_E_SYSTEM, "tar %s", p);
					break;
				}
		}
		archive_entry_free (e);
	}
	archive_read_free (disk);
	if (archive_write_close (out) != ARCHIVE_OK && r == 0)
		r = ab_error (err, 0, AB_E_SYSTEM, "tar: %s", archive_error_string (out));
	archive_write_free (out);
	if (r < 0 || t.failed) {
		ab_blob_writer_abort (&t.w, false);
		return -1;
	}
	*size = (int64_t)t.w.written;
	return ab_blob_writer_commit (st, &t.w, digest, err);
}

/* Which kind of archive: a layout ("oci-layout"), a save ("manifest.json")
 * or a plain root, from the top-level names. */
static int
archive_kind (const char *path, ab_error_t *err)
{
	struct archive *a = archive_read_new ();
	struct archive_entry *e;
	int kind = 0, n = 0;

	archive_read_support_filter_gzip (a);
	archive_read_support_filter_zstd (a);
	archive_read_support_filter_none (a);
	archive_read_support_format_tar (a);
	if (archive_read_open_filename (a, path, 1 << 16) != ARCHIVE_OK) {
		ab_error (err, 0, AB_E_INVALID, "%s: %s", path, archive_error_string (a));
		archive_read_free (a);
		return -1;
	}
	while (kind == 0 && n++ < 100000 && archive_read_next_header (a, &e) == ARCHIVE_OK) {
		const char *p = archive_entry_pathname (e);
		if (strncmp (p, "./", 2) == 0)
			p += 2;
		if (strcmp (p, "oci-layout") == 0)
			kind = 1;
		else if (strcmp (p, "manifest.json") == 0)
			kind = 2;
	}
	archive_read_free (a);
	return kind;
}

static int
import_from_dir (const struct ab_store_s *st, const char *dir, const char *name, char **digest_out,
                 ab_error_t *err)
{
	cleanup_close int dfd = open (dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	struct stat s;

	if (dfd < 0)
		return ab_error (err, errno, AB_E_INVALID, "%s", dir);
	if (fstatat (dfd, "oci-layout", &s, AT_SYMLINK_NOFOLLOW) == 0)
		return import_oci (st, dfd, name, digest_out, err);
	if (fstatat (dfd, "manifest.json", &s, AT_SYMLINK_NOFOLLOW) == 0)
		return import_docker (st, dfd, name, digest_out, err);
	return 1; /* a plain root */
}

static int
import_archive (const struct ab_store_s *st, const char *src, const char *name, char **digest_out,
                ab_error_t *err)
{
	int kind = archive_kind (src, err);
	cleanup_free char *work = NULL, *ldig = NULL;
	cleanup_close int fd = -1, dfd = -1;
	struct ab_unpack_opts_s o = { .whiteouts = false };
	int64_t size = 0;
	int r;

	if (kind < 0)
		return -1;
	fd = open (src, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ab_error (err, errno, AB_E_INVALID, "%s", src);
	if (kind == 0) {
		struct stat s;
		if (fstat (fd, &s) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "stat %s", src);
		size = s.st_size;
		if (ab_store_ingest_fd (st, fd, NULL, size, &ldig, err) < 0)
			return -1;
		return import_layer_blob (st, ldig, size, name, digest_out, err);
	}
	work = ab_store_path (st, "tmp/import.XXXXXX");
	if (!mkdtemp (work))
		return ab_error (err, errno, AB_E_SYSTEM, "mkdtemp %s", work);
	dfd = open (work, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	r = dfd < 0 ? ab_error (err, errno, AB_E_SYSTEM, "open %s", work)
	            : ab_unpack_fd (fd, dfd, &o, err);
	if (r == 0)
		r = import_from_dir (st, work, name, digest_out, err);
	ab_rm_rf (work);
	return r;
}

int
ab_image_import (const char *state_dir, const char *src, const char *name, char **digest_out,
                 ab_error_t *err)
{
	struct ab_store_s st;
	struct stat s;
	int r;

	if (stat (src, &s) < 0)
		return ab_error (err, errno, AB_E_INVALID, "import %s", src);
	if (ab_store_open (state_dir, &st, err) < 0)
		return -1;
	if (S_ISDIR (s.st_mode)) {
		r = import_from_dir (&st, src, name, digest_out, err);
		if (r == 1) {
			cleanup_free char *ldig = NULL, *real = realpath (src, NULL);
			int64_t size = 0;
			r = !real ? ab_error (err, errno, AB_E_INVALID, "%s", src)
			          : tar_dir (&st, real, &ldig, &size, err);
			if (r == 0)
				r = import_layer_blob (&st, ldig, size, name, digest_out, err);
		}
	} else
		r = import_archive (&st, src, name, digest_out, err);
	ab_store_close (&st);
	return r < 0 ? ab_error_wrap (err, "import %s", src) : 0;
}
