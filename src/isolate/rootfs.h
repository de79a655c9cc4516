/* The sandbox's root filesystem, built in the sandbox's own user and mount
 * namespaces by its first process.
 *
 * Two phases, because the new root hides the host: `capture` takes a
 * detached mount fd of every source while host paths are still visible;
 * `enter` builds a fresh tmpfs root, attaches everything through fds,
 * mounts /proc, /dev, /tmp, masks what must not be seen, makes the root
 * read-only and pivots into it. */
#ifndef AB_ISOLATE_ROOTFS_H
#define AB_ISOLATE_ROOTFS_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "spec/spec.h"

struct ab_root_entry_s {
	char *name;        /* top-level name, e.g. "usr" */
	char *link_target; /* for a symlink: recreated as such */
	int mnt_fd;        /* for a directory or file: a read-only bind */
};

struct ab_rootfs_s {
	struct ab_root_entry_s *entries;
	size_t n_entries;
	int workspace_fd; /* detached workspace mount, -1 = none */
	int *mount_fds;   /* one per spec mount; -1 for tmpfs */
	int dev_fds[6];   /* verified host device nodes, see dev table */
	int root_fd;      /* the new root, between build and finish */
	int overlay_fd;   /* a writable layered root: its overlay, the root itself */
};

/* `binds_later`: the workspace and bind mounts will be handed over by the
 * privileged monitor (idmapped) and stored into rf->workspace_fd and
 * rf->mount_fds[] before ab_rootfs_finish; otherwise they are bound here.
 * `image_mnt`: --rootfs as a detached read-only mount made on the host, or
 * -1 to open spec->rootfs here; with spec->root.layers, the layers'
 * overlay (isolate/overlay.h).  A read-only layered root is used like a
 * --rootfs (its entries on a read-only tmpfs); a writable one becomes the
 * root itself, its mount points (/dev, /proc, /tmp, /workspace...) made
 * in its upper layer. */
int ab_rootfs_capture (const struct ab_spec_s *spec, bool binds_later, int image_mnt,
                       struct ab_rootfs_s *rf, ab_error_t *err);
/* Phase one: the tmpfs (or writable overlay) root with the image or host
 * entries, /dev, /proc, /tmp. */
int ab_rootfs_build (const struct ab_spec_s *spec, struct ab_rootfs_s *rf, ab_error_t *err);
/* Phase two: the workspace and the user's mounts, a read-only root (but a
 * writable layered one), pivot_root. */
int ab_rootfs_finish (const struct ab_spec_s *spec, struct ab_rootfs_s *rf, ab_error_t *err);

#endif
