/* A sandbox tree copied safely, and its manifest (snapshot-tree.c). */
#ifndef AB_DAEMON_SNAPSHOT_TREE_H
#define AB_DAEMON_SNAPSHOT_TREE_H

#include <stdint.h>
#include <stdio.h>

#include "base/error.h"

struct ab_tree_stats_s {
	uint64_t files, dirs, bytes, skipped;
	uint64_t cloned;       /* files cloned with FICLONE (shared extents) */
	uint64_t copied_bytes; /* bytes of the rest, copied in the kernel */
};

/* Copy the tree below src_dirfd into the empty directory dst_dirfd (-1:
 * copy nothing, only walk), writing the manifest to `manifest` (may be
 * NULL).  Nothing is followed; see the file's comment. */
int ab_tree_copy (int src_dirfd, int dst_dirfd, FILE *manifest, struct ab_tree_stats_s *stats,
                  ab_error_t *err);

#endif
