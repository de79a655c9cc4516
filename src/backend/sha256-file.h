/* SHA-256 of a whole file, streamed in fixed-size chunks: a 64 GiB rootfs
 * costs the same memory as a 64 KiB one. */
#ifndef AB_BACKEND_SHA256_FILE_H
#define AB_BACKEND_SHA256_FILE_H

#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_SHA256_HEX_LEN 64
#define AB_SHA256_CHUNK   (64 * 1024)

/* What the reader did, for callers (and tests) that want to see it. */
struct ab_sha256_stats_s {
	uint64_t bytes;  /* bytes hashed */
	uint64_t reads;  /* pread calls */
	size_t max_read; /* largest single read; never above AB_SHA256_CHUNK */
};

/* Hash the regular file open at fd, from offset 0 to its size at the start
 * (pread: the fd's offset is left alone, so the caller can hand the same
 * open file to the VMM it just verified).  A file that shrinks or grows
 * while it is hashed is an error (AB_E_CONFLICT), never a silent partial
 * hash.  hex gets 64 lowercase hex digits; stats may be NULL. */
int ab_sha256_fd (int fd, char hex[AB_SHA256_HEX_LEN + 1], struct ab_sha256_stats_s *stats,
                  ab_error_t *err);

/* Open path (relative to dirfd, or absolute) read-only and hash it. */
int ab_sha256_file (int dirfd, const char *path, char hex[AB_SHA256_HEX_LEN + 1], ab_error_t *err);

#endif
