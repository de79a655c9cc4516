/* Secrets pass through jansson (credential entries, create requests): its
 * parse buffers and string values are freed by jansson itself, so the
 * only place to wipe them is its free function.  Host-only (base/json*.c:
 * the agent build leaves it out). */
#ifndef AB_BASE_JSON_WIPE_H
#define AB_BASE_JSON_WIPE_H

/* Make every block jansson frees in this process zeroed first (its whole
 * usable size, explicit_bzero).  Installed by a constructor before main,
 * while the process has one thread; calling it again is harmless, and is
 * how a user of secrets makes sure this file is linked in. */
void ab_json_wipe_on_free (void);

#endif
