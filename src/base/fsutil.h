/* File helpers shared by the daemon's state and the image store. */
#ifndef AB_BASE_FSUTIL_H
#define AB_BASE_FSUTIL_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

/* path.tmp, fsync, rename over path, fsync of the directory: a reader
 * sees the old or the new content, never a torn one. */
int ab_write_file_atomic (const char *path, const char *data, size_t len, ab_error_t *err);
/* durable false: atomic against a crash of the process (the rename), not
 * of the host (no fsync); for what a host crash makes moot anyway. */
int ab_write_file_atomic_ex (const char *path, const char *data, size_t len, bool durable,
                             ab_error_t *err);
/* rm -rf that never follows a symlink nor crosses a mount; 0 if absent. */
int ab_rm_rf (const char *path);

/* The state directory (the daemon's and the image store's): $AGENTBOX_STATE_DIR,
 * else /var/lib/agentbox as root, $XDG_STATE_HOME/agentbox or
 * ~/.local/state/agentbox otherwise; NULL when none can be named. */
char *ab_default_state_dir (void);

#endif
