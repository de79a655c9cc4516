/* A layered root's merged tree on the host, for the backends that copy it
 * into a form of their own (Docker's `docker import`, the microVM's ext4
 * disk): a key naming the layer list, and the tree itself, mounted for a
 * callback in a child's own mount namespace. */
#ifndef AB_BACKEND_LAYERS_TREE_H
#define AB_BACKEND_LAYERS_TREE_H

#include <stddef.h>

#include "base/error.h"

/* 32 hex digits (128 bits of a SHA-256) over each layer's real path and
 * the lstat of its top directory: layers are immutable (the store's are
 * renamed into place whole), so the list names the merged tree.  A layer
 * edited below its top directory keeps its key.  cap >= 33. */
int ab_layers_key (char *const *layers, char *hex, size_t cap, ab_error_t *err);

/* In a forked child: a mount namespace of its own, the layers' overlay
 * (read-only, whiteouts applied, isolate/overlay.c) attached at
 * scratch_dir/root, then fn (root, ctx, err) there.  The child's error
 * message comes back in err.  Needs root (the overlay's layers are root's
 * directories, mounted in the initial user namespace). */
typedef int (*ab_layers_tree_fn) (const char *root, void *ctx, ab_error_t *err);
int ab_layers_with_tree (char *const *layers, const char *scratch_dir, ab_layers_tree_fn fn,
                         void *ctx, ab_error_t *err);

#endif
