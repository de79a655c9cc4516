/* Wall-clock time: the stamps that leave the process (log lines, audit
 * records, the API's created_at).  Deadlines use CLOCK_MONOTONIC instead
 * (ab_mono_us in base/sys.h). */
#ifndef AB_BASE_CLOCK_H
#define AB_BASE_CLOCK_H

#include <stdint.h>

/* CLOCK_REALTIME in milliseconds since the Unix epoch. */
uint64_t ab_unix_ms (void);

/* "2025-01-31T12:34:56.789Z" (RFC 3339, UTC, milliseconds) plus a NUL. */
#define AB_UTC_MS_LEN 32
void ab_utc_ms_format (int64_t unix_ms, char buf[AB_UTC_MS_LEN]);

#endif
