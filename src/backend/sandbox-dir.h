/* The private directory a gVisor or Docker sandbox keeps next to its
 * service socket (<service_socket>.d, <service_socket>.docker; mode 0700,
 * root's): entries of an exact mode and owner in it (the agent's door
 * directory, the mask covers), and the service socket itself as a symlink
 * to the agent's socket in the door, so connecting to the service socket
 * reaches the agent. */
#ifndef AB_BACKEND_SANDBOX_DIR_H
#define AB_BACKEND_SANDBOX_DIR_H

#include <stdbool.h>
#include <sys/types.h>

#include "base/error.h"

/* mkdir path (0700) and open it (O_PATH): the fd, or -1 with err, leaving
 * nothing behind; anything already at path is AB_E_CONFLICT. */
int ab_sandbox_dir_create (const char *path, ab_error_t *err);

/* Create `name` in dfd, a directory or an empty file, of exactly `mode`
 * (whatever the umask) and owned by owner:owner.  Never follows or
 * replaces what is there (EEXIST).  0, or -1 with err. */
int ab_sandbox_dir_entry (int dfd, const char *name, bool dir, mode_t mode, uid_t owner,
                          ab_error_t *err);

/* Make room for the service socket's symlink at path: only a stale socket
 * or symlink (of a sandbox that is gone) may be replaced; anything else
 * there is AB_E_CONFLICT. */
int ab_service_link_claim (const char *path, ab_error_t *err);

/* Remove path if it is still a symlink to target (nothing else). */
void ab_service_link_remove (const char *path, const char *target);

#endif
