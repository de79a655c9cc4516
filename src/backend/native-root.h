/* The layered root of a native sandbox (spec->root.layers), made by the
 * privileged monitor once init's id maps are written:
 *
 *   overlayfs  lower: every layer, idmapped through init's own user
 *              namespace (host 0..65535 seen as the sandbox's 0..65535)
 *              upper: <root dir>/upper, work: <root dir>/work
 *
 * The root directory is "<sandbox dir>/root-upper" in service mode (the
 * directory of spec->service_socket: the daemon's sandbox directory), a
 * fresh "$TMPDIR/agentbox-root-XXXXXX" for a one-shot run; none with
 * root.read_only.  Its upper directory belongs to the host id of the
 * sandbox's root, so "/" is root's inside and what the sandbox writes is
 * kept with the host ids its own ids map to.  The monitor removes it
 * when the sandbox ends (a snapshot would copy it first). */
#ifndef AB_BACKEND_NATIVE_ROOT_H
#define AB_BACKEND_NATIVE_ROOT_H

#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

/* The overlay as a detached mount fd; *dir gets the root directory made
 * for it (to remove later), or NULL.  -1 with err (nothing left). */
int ab_native_root_mount (const struct ab_spec_s *spec, pid_t init_pid, uid_t root_uid, char **dir,
                          ab_error_t *err);
/* Remove what ab_native_root_mount made (dir may be NULL). */
void ab_native_root_remove (const char *dir);

#endif
