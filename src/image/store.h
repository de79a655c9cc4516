/* The image store's on-disk layout and its primitives (image/ only; the
 * public API is image/image.h).  Layout, under STATE/images:
 *   blobs/sha256/HEX     every manifest, config and layer blob, verified
 *   tmp/                 partial downloads (HEX.partial), unpack and import work dirs
 *   layers/HEX/          a layer unpacked (HEX = its diff_id: the uncompressed tar's digest)
 *   diffs/HEX            blob HEX's verified diff_id ("sha256:…"), written after a check
 *   images/HEX.json      one image (HEX = its manifest's digest): layers, config
 *   names.json           reference -> manifest digest
 *   leases/HOLDER        a sandbox using an image (the digest, who holds it)
 *   locks/               flock files: one per blob, per layer, and "store" */
#ifndef AB_IMAGE_STORE_H
#define AB_IMAGE_STORE_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

struct ab_store_s {
	char *root; /* STATE/images */
	int root_fd;
};

int ab_store_open (const char *state_dir, struct ab_store_s *st, ab_error_t *err);
void ab_store_close (struct ab_store_s *st);
/* STATE/images/<rel> (new string). */
char *ab_store_path (const struct ab_store_s *st, const char *fmt, ...)
        __attribute__ ((format (printf, 2, 3)));

/* fsync the directory <rel> (after a rename into it). */
int ab_store_sync_dir (const struct ab_store_s *st, const char *rel, ab_error_t *err);

/* An exclusive flock on locks/<name>; the fd, to close to release. */
int ab_store_lock (const struct ab_store_s *st, const char *name, ab_error_t *err);

/* Streaming SHA-256. */
struct ab_sha256_s {
	void *ctx; /* EVP_MD_CTX */
};
void ab_sha256_init (struct ab_sha256_s *h);
void ab_sha256_update (struct ab_sha256_s *h, const void *p, size_t n);
/* "sha256:<hex>" (new string); frees the context. */
char *ab_sha256_final (struct ab_sha256_s *h);
void ab_sha256_drop (struct ab_sha256_s *h);
char *ab_sha256_of (const void *p, size_t n);

/* Whether blobs/sha256/HEX exists. */
bool ab_store_has_blob (const struct ab_store_s *st, const char *digest);
char *ab_store_blob_path (const struct ab_store_s *st, const char *digest);

/* A blob written as it streams: to tmp/, hashed, renamed into blobs/ only
 * when the digest (and the size, when known) match.  expect = NULL:
 * whatever digest it has (a local import). */
struct ab_blob_writer_s {
	int fd;
	char *tmp;
	char *expect;
	int64_t expect_size; /* -1 = unknown */
	uint64_t written;
	struct ab_sha256_s h;
};
int ab_blob_writer_open (const struct ab_store_s *st, const char *expect, int64_t size, bool resume,
                         struct ab_blob_writer_s *w, ab_error_t *err);
int ab_blob_writer_write (struct ab_blob_writer_s *w, const void *p, size_t n, ab_error_t *err);
/* Throw away what was written (a 200 answer to a Range request). */
int ab_blob_writer_restart (struct ab_blob_writer_s *w, ab_error_t *err);
/* Verify and rename; *digest_out (may be NULL) the blob's digest.  A
 * mismatch removes the temporary file. */
int ab_blob_writer_commit (const struct ab_store_s *st, struct ab_blob_writer_s *w,
                           char **digest_out, ab_error_t *err);
/* Keep the partial file (for a resumed download) or remove it. */
void ab_blob_writer_abort (struct ab_blob_writer_s *w, bool keep);
/* Copy a local file into the store, verified. */
int ab_store_ingest_fd (const struct ab_store_s *st, int fd, const char *expect, int64_t size,
                        char **digest_out, ab_error_t *err);
int ab_store_put_bytes (const struct ab_store_s *st, const void *p, size_t n, char **digest_out,
                        ab_error_t *err);
/* A blob's bytes, at most max (manifests, configs). */
int ab_store_read_blob (const struct ab_store_s *st, const char *digest, size_t max, char **out,
                        size_t *len, ab_error_t *err);

/* layers/DIFF for layer blob `blob`, unpacked once (under the layer's
 * lock): the uncompressed stream is hashed while unpacking and must be
 * diff_id (the image config's rootfs.diff_ids entry), else the layer is
 * refused and its work directory removed.  diff_id NULL: whatever it is
 * (a plain root import: the digest is the layer's identity).  A layer
 * directory already there for diff_id serves every blob that
 * decompresses to it (checked once per blob, remembered in diffs/).
 * *diff_out (may be NULL) the layer's diff_id. */
int ab_store_unpack_layer (const struct ab_store_s *st, const char *blob, const char *diff_id,
                           char **diff_out, ab_error_t *err);
char *ab_store_layer_path (const struct ab_store_s *st, const char *diff_id);
/* An image record's layer keys (diff_ids, lowest first): its "diff_ids",
 * or for a record written before they were kept, its config's. */
json_t *ab_store_layer_keys (const struct ab_store_s *st, json_t *rec, ab_error_t *err);

/* Register an image: the manifest (already in blobs), its config and
 * layers (in blobs, unpacked here), and its names.  Last step of a pull or
 * import: before it, nothing names the image. */
int ab_store_register (const struct ab_store_s *st, const char *manifest_digest,
                       const char *const *names, ab_error_t *err);

/* names.json and images/HEX.json. */
json_t *ab_store_names (const struct ab_store_s *st, ab_error_t *err);
json_t *ab_store_image_record (const struct ab_store_s *st, const char *digest, ab_error_t *err);
/* Replace names.json; the caller holds the "store" lock. */
int ab_store_set_names (const struct ab_store_s *st, json_t *names, ab_error_t *err);
/* A name or a digest (or a unique digest prefix of 12+ hex) -> manifest digest. */
char *ab_store_resolve (const struct ab_store_s *st, const char *name, ab_error_t *err);

/* Manifests: the layers (blob digests, lowest first) and the config
 * digest of an OCI or Docker schema 2 image manifest. */
int ab_manifest_parse (const char *body, size_t len, char **config_digest, char ***layers,
                       ab_error_t *err);
/* The media type of a manifest body (its mediaType, or guessed from its
 * keys); an index or manifest list is_index. */
const char *ab_manifest_media_type (json_t *m, bool *is_index);
/* An index's entry for os/arch[/variant] ("linux/amd64"). */
char *ab_index_pick (json_t *index, const char *platform, ab_error_t *err);

#define AB_IMAGE_MAX_MANIFEST (4u << 20) /* manifests, indexes and configs */

#endif
