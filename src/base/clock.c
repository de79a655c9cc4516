#include "base/clock.h"

#include <stdio.h>
#include <time.h>

uint64_t
ab_unix_ms (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

void
ab_utc_ms_format (int64_t unix_ms, char buf[AB_UTC_MS_LEN])
{
	time_t secs = (time_t)(unix_ms / 1000);
	struct tm tm;

	if (unix_ms < 0 || !gmtime_r (&secs, &tm)) {
		snprintf (buf, AB_UTC_MS_LEN, "1970-01-01T00:00:00.000Z");
		return;
	}
	snprintf (buf, AB_UTC_MS_LEN, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
	          tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec,
	          (int)(unix_ms % 1000));
}
