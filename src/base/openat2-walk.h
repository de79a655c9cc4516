/* openat2(2) where the kernel has none: gVisor (runsc 2022-12) answers
 * ENOSYS, and the agent's file service depends on RESOLVE_BENEATH.  The
 * emulation walks the path one component at a time from the starting
 * directory fd, each step an openat(O_PATH | O_NOFOLLOW) of a single name,
 * and does itself what the kernel's path walk would: `..` moves back along
 * the directories it entered (never above the start under RESOLVE_BENEATH
 * or RESOLVE_IN_ROOT), symlinks are read and spliced into the rest of the
 * path (refused under RESOLVE_NO_SYMLINKS; absolute targets refused under
 * RESOLVE_BENEATH, resolved from the start under RESOLVE_IN_ROOT).
 * No step ever hands the kernel more than one name, so no symlink is
 * followed by the kernel and nothing can lead outside the start. */
#ifndef AB_BASE_OPENAT2_WALK_H
#define AB_BASE_OPENAT2_WALK_H

#include <stdint.h>

#include "base/compat.h"

/* The resolve flags the emulation supports; any other gives ENOSYS. */
#define AB_WALK_RESOLVE_SUPPORTED                                                                  \
	(RESOLVE_BENEATH | RESOLVE_IN_ROOT | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)

/* Like openat2(dirfd, path, {flags, mode, resolve}): an fd, or -1 with
 * errno as the kernel would set it.  Differences, all in the stricter
 * direction: a concurrent rename never gives EAGAIN (the walk keeps the
 * directories it holds); on procfs a symlink whose target is absolute or
 * names an object ("pipe:[…]") counts as a magic link. */
int ab_openat2_walk (int dirfd, const char *path, uint64_t flags, uint64_t mode, uint64_t resolve);

/* openat2 when the kernel has it, else the emulation (decided once). */
int ab_openat2_or_walk (int dirfd, const char *path, uint64_t flags, uint64_t mode,
                        uint64_t resolve);

#endif
