/* Metadata written next to a microVM snapshot and checked before restore.
 *
 * A snapshot is guest memory and device state that assumes one exact disk
 * and kernel: restoring it over a changed rootfs corrupts the guest's file
 * system (its page cache and journal describe the old image), and a snapshot
 * written by another agentbox version may describe state this one does not
 * set up.  So the metadata pins the format version, the backend, the VM's
 * shape and the SHA-256 of the rootfs and the kernel, and every field is
 * checked again before a restore (docs/microvm-firecracker.md).
 *
 * JSON, one object, every key required, no other key, no duplicate:
 *   {"format_version": 1, "backend": "microvm", "vcpu_count": 2,
 *    "mem_size_mib": 512, "rootfs_sha256": "<64 hex>",
 *    "kernel_sha256": "<64 hex>", "created_at": 1767225600} */
#ifndef AB_BACKEND_SNAPSHOT_META_H
#define AB_BACKEND_SNAPSHOT_META_H

#include <stdbool.h>
#include <stdint.h>

#include <jansson.h>

#include "backend/sha256-file.h"
#include "base/error.h"

/* Bump on any change to what a snapshot contains or how it is restored:
 * every older snapshot then reads as stale and is refused. */
#define AB_SNAPSHOT_META_FORMAT 1
#define AB_SNAPSHOT_META_NAME   "snapshot.json"
#define AB_SNAPSHOT_META_MAX    (16 * 1024) /* bytes; ours is ~300 */
#define AB_SNAPSHOT_VCPU_MIN    1
#define AB_SNAPSHOT_VCPU_MAX    32
#define AB_SNAPSHOT_MEM_MIB_MIN 128
#define AB_SNAPSHOT_MEM_MIB_MAX 65536
#define AB_SNAPSHOT_BACKEND_MAX 31

struct ab_snapshot_meta_s {
	uint32_t format_version;
	char backend[AB_SNAPSHOT_BACKEND_MAX + 1]; /* [a-z0-9-]+ */
	uint32_t vcpu_count;
	uint32_t mem_size_mib;
	char rootfs_sha256[AB_SHA256_HEX_LEN + 1]; /* lowercase hex */
	char kernel_sha256[AB_SHA256_HEX_LEN + 1];
	int64_t created_at; /* seconds since the epoch, UTC */
};

/* Fill m for a snapshot being taken now: ranges checked, both files hashed
 * (streamed) from the open fds. */
int ab_snapshot_meta_init (struct ab_snapshot_meta_s *m, const char *backend, uint32_t vcpu_count,
                           uint32_t mem_size_mib, int rootfs_fd, int kernel_fd, ab_error_t *err);

/* Every field's own rule (ranges, hex, name); the same check on write and read. */
int ab_snapshot_meta_check (const struct ab_snapshot_meta_s *m, ab_error_t *err);

/* JSON text <-> struct.  Parsing refuses: not an object, a duplicate key,
 * an unknown or missing key, a wrong type (a number as a string, 2.0 for an
 * integer, a bool), a value out of range; a format_version other than
 * AB_SNAPSHOT_META_FORMAT is AB_E_CONFLICT ("stale"), checked first so an
 * old layout gets that message and not "unknown key". */
int ab_snapshot_meta_parse (const char *text, size_t len, struct ab_snapshot_meta_s *m,
                            ab_error_t *err);
json_t *ab_snapshot_meta_to_json (const struct ab_snapshot_meta_s *m, ab_error_t *err);

/* Atomic write into dirfd: name.tmp-PID (O_EXCL), fsync, rename over name,
 * fsync the directory.  A crash leaves either the old file or the new one. */
int ab_snapshot_meta_write (int dirfd, const char *name, const struct ab_snapshot_meta_s *m,
                            ab_error_t *err);
/* The same, without either fsync when !durable: for a snapshot that lives
 * for one request (a fork's), which no crash must keep. */
int ab_snapshot_meta_write_ex (int dirfd, const char *name, const struct ab_snapshot_meta_s *m,
                               bool durable, ab_error_t *err);
/* Read (O_NOFOLLOW, regular file, at most AB_SNAPSHOT_META_MAX bytes) and parse. */
int ab_snapshot_meta_read (int dirfd, const char *name, struct ab_snapshot_meta_s *m,
                           ab_error_t *err);

/* Before restore: the backend must be `backend`, and the rootfs and kernel
 * open at the fds must hash to what was recorded (recomputed now, streamed).
 * Mismatch = AB_E_CONFLICT naming the file and both hashes.  Hand the same
 * fds to the VMM afterwards so what was verified is what is booted. */
int ab_snapshot_meta_verify (const struct ab_snapshot_meta_s *m, const char *backend, int rootfs_fd,
                             int kernel_fd, ab_error_t *err);

#endif
