/* The parts of the sandbox's filesystem that agentbox provides itself:
 * a minimal /dev, a fresh and masked /proc, tmpfs scratch space. */
#ifndef AB_ISOLATE_SANDBOX_FS_H
#define AB_ISOLATE_SANDBOX_FS_H

#include "base/error.h"

/* Where the new root is assembled, inside the sandbox's private mount
 * namespace (the host never sees this mount). */
#define AB_ROOT_STAGING "/tmp"

#define AB_DEV_NODES 6

/* Detached binds of the host's null, zero, full, random, urandom and tty,
 * each checked to be the character device it claims to be. */
int ab_dev_capture (int fds[AB_DEV_NODES], ab_error_t *err);
int ab_dev_setup (int root, int fds[AB_DEV_NODES], ab_error_t *err);
int ab_proc_setup (int root, ab_error_t *err);
int ab_tmpfs_setup (int root, const char *path, ab_error_t *err);

#endif
