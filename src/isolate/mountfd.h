/* Mounting through file descriptors (the new mount API), so that no path is
 * resolved twice and no mount target is followed through a symlink inside
 * a root we do not trust (runc CVE-2021-30465, CVE-2025-31133). */
#ifndef AB_ISOLATE_MOUNTFD_H
#define AB_ISOLATE_MOUNTFD_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"

/* A detached recursive copy of `path` (relative to dirfd) with the given
 * MOUNT_ATTR_* flags applied to the whole tree. */
int ab_mountfd_clone (int dirfd, const char *path, uint64_t attrs, ab_error_t *err);
/* A new detached tmpfs with options like "mode=0755,size=65536". */
int ab_mountfd_tmpfs (const char *options, uint64_t attrs, ab_error_t *err);
/* A new detached instance of `fstype` (proc, devpts) with options. */
int ab_mountfd_new (const char *fstype, const char *options, uint64_t attrs, ab_error_t *err);

/* Open (creating as needed) the directory `path` beneath root_fd: every
 * component must be a real directory (symlinks are refused). */
int ab_mkdir_beneath (int root_fd, const char *path, ab_error_t *err);
/* Same for a file mount target: parents created, the file created empty. */
int ab_mkfile_beneath (int root_fd, const char *path, ab_error_t *err);
/* Attach a detached mount at the directory or file `target_fd`. */
int ab_mount_attach (int mnt_fd, int target_fd, const char *what, ab_error_t *err);
/* Change attributes of the mount at fd (non-recursive unless recursive). */
int ab_mount_setattr_fd (int fd, uint64_t set, bool recursive, ab_error_t *err);

#endif
