/* Private temporary directories, all under one base: $TMPDIR when it is an
 * absolute path, else /tmp.  Every temporary file agentbox makes on the
 * host lives in one of these, so a caller (a test, a CI job, a user with a
 * per-session TMPDIR) decides where that is and can check that nothing is
 * left there. */
#ifndef AB_BASE_TMPDIR_H
#define AB_BASE_TMPDIR_H

#include "base/error.h"

/* $TMPDIR if absolute, else "/tmp".  Not owned by the caller. */
const char *ab_tmp_dir (void);

/* mkdtemp of "BASE/PREFIX-XXXXXX" (mode 0700), BASE = ab_tmp_dir () when
 * NULL; the new path, to be freed, or NULL with err set. */
char *ab_make_temp_dir (const char *base, const char *prefix, ab_error_t *err);

#endif
