/* Per-connection deadlines on a libevent timer, armed lazily.
 *
 * A connection that keeps moving bytes pushes its idle deadline forward
 * many times a second; re-arming the timer each time would churn the
 * timer heap.  So the armed timer is only ever moved earlier, never later:
 * when it fires early, the owner checks the real deadline and re-arms. */
#ifndef AB_NET_LAZY_TIMER_H
#define AB_NET_LAZY_TIMER_H

#include <event2/event.h>
#include <stdint.h>
#include <sys/time.h>

/* Deadlines are base/sys.h's ab_mono_us (): they must not jump with the
 * wall clock. */
struct timeval ab_tv_from_us (uint64_t us);
/* Make tev fire no later than deadline (monotonic microseconds); *armed_at
 * is when it fires now, 0 if not armed (the timer callback resets it). */
void ab_lazy_timer_arm (struct event *tev, uint64_t *armed_at, uint64_t deadline);

#endif
