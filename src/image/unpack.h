/* Unpacking a layer tar (plain, gzip or zstd) into a directory, with
 * hostile input in mind: libarchive only reads; every write is ours,
 * beneath the layer's directory fd, one name at a time, never through a
 * symlink (docs/images.md, "What unpacking refuses"). */
#ifndef AB_IMAGE_UNPACK_H
#define AB_IMAGE_UNPACK_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* Limits; $AGENTBOX_IMAGE_MAX_ENTRY / $AGENTBOX_IMAGE_MAX_LAYER (sizes as
 * "512m") lower or raise them. */
#define AB_IMAGE_MAX_ENTRY_BYTES   (UINT64_C (16) << 30) /* one file's size, holes included */
#define AB_IMAGE_MAX_LAYER_BYTES   (UINT64_C (64) << 30) /* bytes written for one layer */
#define AB_IMAGE_MAX_LAYER_ENTRIES 4000000u

struct ab_unpack_opts_s {
	bool whiteouts;                /* turn .wh. entries into overlayfs whiteouts (a layer);
	                                * false: refuse them (an import's outer archive) */
	uint64_t max_entry, max_layer; /* 0 = the defaults above (or the env) */
	char **diff_id;                /* when set: *diff_id = "sha256:…" of the uncompressed
	                                * tar stream (the OCI diff_id), a new string */
};

/* Unpack the archive read from fd into the directory dirfd (empty). */
int ab_unpack_fd (int fd, int dirfd, const struct ab_unpack_opts_s *o, ab_error_t *err);

/* The diff_id of the archive read from fd (decompressed and hashed,
 * nothing unpacked). */
int ab_unpack_digest_fd (int fd, char **diff_id, ab_error_t *err);

/* The normalised relative form of a tar name: leading '/' and "./" and
 * "." components dropped, ".." refused.  "" for the root itself. */
int ab_unpack_clean_name (const char *name, char **out, ab_error_t *err);

#endif
