/* A layered root as one detached mount: overlayfs over read-only layer
 * directories (OCI layers already in overlay form: 0/0 character devices
 * for whiteouts, trusted.overlay.opaque=y on opaque directories), with an
 * upper and a work directory when the root is writable.  Every layer is
 * handed to overlayfs as a file descriptor ("lowerdir+", Linux 6.13), so
 * each can first become an idmapped mount: the layers are host root's,
 * and a sandbox whose root is an unprivileged host range sees them, and
 * copies them up, as its own root's. */
#ifndef AB_ISOLATE_OVERLAY_H
#define AB_ISOLATE_OVERLAY_H

#include "base/error.h"

/* layers: NULL-terminated absolute host directories, lowest first.
 * upper_fd/work_fd: directories (O_PATH is enough) on one filesystem, or
 * both -1 for a read-only root.  userns_fd: a user namespace whose map is
 * applied to every layer (MOUNT_ATTR_IDMAP), or -1 for none.  The upper
 * directory is not idmapped: what the sandbox writes lands there with
 * the host ids the sandbox's ids map to.  The result is nosuid, nodev
 * (and read-only without an upper); one layer without an upper is the
 * layer's own bind, since overlayfs wants two lower layers then. */
int ab_overlay_mount_fd (char *const *layers, int upper_fd, int work_fd, int userns_fd,
                         ab_error_t *err);

#endif
