/* Lazily armed deadlines: see lazy-timer.h. */
#include "net/lazy-timer.h"

#include "base/sys.h"

struct timeval
ab_tv_from_us (uint64_t us)
{
	struct timeval tv = { .tv_sec = (time_t)(us / 1000000u),
		              .tv_usec = (suseconds_t)(us % 1000000u) };
	return tv;
}

void
ab_lazy_timer_arm (struct event *tev, uint64_t *armed_at, uint64_t deadline)
{
	uint64_t now;
	struct timeval tv;

	if (*armed_at != 0 && *armed_at <= deadline)
		return;
	now = ab_mono_us ();
	tv = ab_tv_from_us (deadline > now ? deadline - now : 0);
	evtimer_add (tev, &tv);
	*armed_at = deadline;
}
