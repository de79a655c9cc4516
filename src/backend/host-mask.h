/* What a sandbox whose root is host root (gVisor; Docker without a user
 * namespace) gets of the host, and what it must not see of it: every
 * entry that "others" cannot read on the host (/etc/shadow, /etc/gshadow,
 * /etc/ssl/private, ...).  The native backend gets this for free from its
 * unprivileged uid range; these backends mask the entries instead, each
 * covered by a read-only bind of an empty file or directory of mode 0000
 * (struct ab_oci_mask_s). */
#ifndef AB_BACKEND_HOST_MASK_H
#define AB_BACKEND_HOST_MASK_H

#include <stddef.h>
#include <sys/types.h>
#include <time.h>

#include "backend/oci-bundle.h"
#include "base/error.h"

/* The host trees a host-root sandbox gets (those that exist), absolute,
 * NULL-terminated: the native backend's list (isolate/rootfs.c), so no
 * /root, /home, /var, /run, /tmp or host socket. */
extern const char *const ab_host_trees[];

/* Bounds on the walk: a host directory beyond them is refused (AB_E_LIMIT)
 * rather than bound half-checked.  MAX_MASKS also keeps the mounts (one
 * `docker run --mount` argument, one config.json mount each) few. */
#define AB_HOST_MASK_MAX_DEPTH   64
#define AB_HOST_MASK_MAX_ENTRIES (1 << 20)
#define AB_HOST_MASK_MAX_MASKS   256

/* A directory the walk read, with the stamps that change when an entry is
 * added, removed or renamed in it (mtime) or its own mode changes
 * (ctime): what the cache checks instead of walking again. */
struct ab_host_mask_dir_s {
	char *path;
	struct timespec mtime, ctime;
};

/* Walk `dir` (absolute; symlinks are not followed and not masked: their
 * targets are checked where they live) and append to *masks every file
 * without S_IROTH and every directory without S_IROTH or S_IXOTH (not
 * descended into; `dir` itself included), as paths under `shown_as`
 * (where the sandbox sees dir).  A missing dir has nothing to hide.
 * 0, or -1 with err. */
int ab_host_masks (const char *dir, const char *shown_as, struct ab_oci_mask_s **masks, size_t *n,
                   ab_error_t *err);
/* The same walk, also listing every directory it read (*dirs, *n_dirs;
 * free with ab_host_mask_dirs_free). */
int ab_host_masks_walk (const char *dir, const char *shown_as, struct ab_oci_mask_s **masks,
                        size_t *n, struct ab_host_mask_dir_s **dirs, size_t *n_dirs,
                        ab_error_t *err);
void ab_host_mask_dirs_free (struct ab_host_mask_dir_s *dirs, size_t n);

/* ab_host_masks (tree, tree, ...) for one of the host trees, from a cache
 * (host-mask-cache.c) when it is still true: a sandbox start must not
 * walk /usr's 170,000 entries.  The cache (a file per tree in
 * ab_backend_cache_dir) holds the masks and the stamps of every directory
 * read near the top (host-mask-cache.c says which) and of dpkg's
 * database; it is used while those stamps are unchanged and it is younger
 * than AB_HOST_MASK_CACHE_TTL_S, so a package installed or removed is
 * seen at once, and a change made by hand deep in a tree within the TTL.
 * Without a cache directory it walks every time. */
#define AB_HOST_MASK_CACHE_TTL_S 600
int ab_host_masks_cached (const char *tree, struct ab_oci_mask_s **masks, size_t *n,
                          ab_error_t *err);

void ab_host_masks_free (struct ab_oci_mask_s *masks, size_t n);

/* The covers, made in the directory dfd: `file` an empty file and `dir`
 * an empty directory, both of mode 0000 and owned by owner:owner.  Bound
 * read-only, opening a masked path then fails with EACCES for every uid
 * without CAP_DAC_OVERRIDE, the covers' owner included, as it does for
 * "others" on the host.  (A tmpfs would not do: runc gives it the mode of
 * the directory it covers.) */
int ab_host_mask_covers (int dfd, const char *file, const char *dir, uid_t owner, ab_error_t *err);

#endif
