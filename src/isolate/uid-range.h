/* A host uid range per sandbox (issue 19 item 2): disjoint ranges of
 * AB_USERNS_RANGE ids, so uid 0 of one sandbox is never uid 0 of another. */
#ifndef AB_ISOLATE_UID_RANGE_H
#define AB_ISOLATE_UID_RANGE_H

#include <sys/types.h>

#include "base/error.h"

/* Ranges start at AB_USERNS_HOST_BASE, one after the other; slot N is
 * AB_USERNS_HOST_BASE + N * AB_USERNS_RANGE.  8192 of them end at 2^31. */
#define AB_UID_RANGE_SLOTS 8192U

/* Where the ranges' lock files live: $AGENTBOX_UID_RANGE_DIR, or
 * /run/agentbox/uid-ranges (per boot, as the sandboxes are). */
const char *ab_uid_range_dir (void);

/* Take a free range: *base is its first host id.  Returns the lock's fd,
 * held for the sandbox's life (close it, or exit, to free the range). */
int ab_uid_range_acquire (uid_t *base, ab_error_t *err);

#endif
