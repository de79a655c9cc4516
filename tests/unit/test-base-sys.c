/* Unit tests for the clocks: base/sys.c's monotonic one agrees with itself
 * in all three units and never goes back; base/clock.c's wall clock is the
 * epoch's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/sys.h"

static void
test_mono_units_agree (void **state)
{
	uint64_t ms0, us, ns, ms1;
	(void)state;
	ms0 = ab_mono_ms ();
	us = ab_mono_us ();
	ns = ab_mono_ns ();
	ms1 = ab_mono_ms ();
	assert_true (ms0 <= us / 1000 && us / 1000 <= ns / 1000000 && ns / 1000000 <= ms1);
}

static void
test_mono_advances (void **state)
{
	uint64_t t0 = ab_mono_ns (), t1;
	(void)state;
	usleep (20 * 1000);
	t1 = ab_mono_ns ();
	assert_true (t1 >= t0 + 20 * 1000000ULL);
}

static void
test_wall_is_epoch (void **state)
{
	time_t before = time (NULL);
	uint64_t ms = ab_unix_ms ();
	time_t after = time (NULL);
	(void)state;
	assert_true (ms / 1000 >= (uint64_t)before && ms / 1000 <= (uint64_t)after);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_mono_units_agree),
		cmocka_unit_test (test_mono_advances),
		cmocka_unit_test (test_wall_is_epoch),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
