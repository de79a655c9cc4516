/* Unit tests for the clocks (base/sys.c's monotonic one agrees with itself
 * in all three units and never goes back; base/clock.c's wall clock is the
 * epoch's) and base/unix-socket.c (names that do not fit are refused,
 * never cut; a listener and a client meet; nobody listening is "not
 * found"; a path longer than sun_path is reached through its directory). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "base/clock.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/unix-socket.h"

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

static void
test_unix_addr_limits (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	struct sockaddr_un sun;
	socklen_t len = 0;
	char name[sizeof sun.sun_path + 1];
	(void)state;

	memset (name, 'a', sizeof name);
	name[sizeof sun.sun_path - 1] = '\0'; /* 107 bytes: the most that fits */
	assert_int_equal (ab_unix_addr (name, &sun, &len, &err), 0);
	assert_int_equal (err.kind, AB_E_NONE);
	assert_int_equal (sun.sun_family, AF_UNIX);
	assert_string_equal (sun.sun_path, name);
	assert_int_equal (len, sizeof sun);

	name[sizeof sun.sun_path - 1] = 'a';
	name[sizeof sun.sun_path] = '\0'; /* 108 bytes: no room for the NUL */
	assert_true (ab_unix_addr (name, &sun, &len, &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	assert_non_null (strstr (err.msg, "too long"));

	ab_error_clear (&err);
	assert_int_equal (ab_unix_abstract_addr ("agentbox-agent", &sun, &len, &err), 0);
	assert_int_equal (sun.sun_path[0], '\0');
	assert_memory_equal (sun.sun_path + 1, "agentbox-agent", 14);
	assert_int_equal (len, offsetof (struct sockaddr_un, sun_path) + 1 + 14);
	name[sizeof sun.sun_path - 1] = '\0'; /* 107 + the leading NUL */
	assert_true (ab_unix_abstract_addr (name, &sun, &len, &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
}

static void
test_unix_listen_connect (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	char dir[] = "/tmp/ab-unix-XXXXXX", path[64];
	struct stat st;
	int l, c, a;
	mode_t old;
	char b = 0;
	(void)state;

	assert_non_null (mkdtemp (dir));
	snprintf (path, sizeof path, "%s/s", dir);
	assert_true (ab_unix_connect (path, &err) < 0);
	assert_int_equal (err.kind, AB_E_NOT_FOUND);

	ab_error_clear (&err);
	old = umask (0177);
	l = ab_unix_listen (path, 4, &err);
	umask (old);
	assert_true (l >= 0);
	assert_int_equal (stat (path, &st), 0);
	assert_true (S_ISSOCK (st.st_mode));
	assert_int_equal (st.st_mode & 0777, 0600);
	c = ab_unix_connect (path, &err);
	assert_true (c >= 0);
	a = accept (l, NULL, NULL);
	assert_true (a >= 0);
	assert_int_equal (write (c, "x", 1), 1);
	assert_int_equal (read (a, &b, 1), 1);
	assert_int_equal (b, 'x');
	assert_int_equal (err.kind, AB_E_NONE);

	/* No unlink of its own: a second listener on the name fails. */
	assert_true (ab_unix_listen (path, 4, &err) < 0);
	assert_int_equal (err.kind, AB_E_SYSTEM);
	close (a);
	close (c);
	close (l);

	/* The socket file outlives its listener: connecting is refused, "not found". */
	ab_error_clear (&err);
	assert_true (ab_unix_connect (path, &err) < 0);
	assert_int_equal (err.kind, AB_E_NOT_FOUND);
	unlink (path);
	rmdir (dir);
}

/* A path longer than sun_path: listen and connect reach it through its
 * directory (/proc/self/fd), the socket file is at the path itself, and
 * a last component that cannot fit is still refused. */
static void
test_unix_long_path (void **state)
{
	ab_error_t err = AB_ERROR_INIT;
	char dir[] = "/tmp/ab-unix-XXXXXX", deep[256], path[320], bad[400];
	struct stat st;
	int l, c, a;
	(void)state;

	assert_non_null (mkdtemp (dir));
	snprintf (deep, sizeof deep, "%s/%0120d", dir, 0);
	assert_int_equal (mkdir (deep, 0700), 0);
	snprintf (path, sizeof path, "%s/agent.sock", deep);
	assert_true (strlen (path) > 108);
	assert_true (ab_unix_connect (path, &err) < 0);
	assert_int_equal (err.kind, AB_E_NOT_FOUND);

	ab_error_clear (&err);
	l = ab_unix_listen (path, 4, &err);
	assert_true (l >= 0);
	assert_int_equal (stat (path, &st), 0);
	assert_true (S_ISSOCK (st.st_mode));
	c = ab_unix_connect (path, &err);
	assert_true (c >= 0);
	a = accept (l, NULL, NULL);
	assert_true (a >= 0);
	assert_int_equal (err.kind, AB_E_NONE);
	close (a);
	close (c);
	close (l);

	snprintf (bad, sizeof bad, "%s/%0150d", deep, 0);
	assert_true (ab_unix_listen (bad, 4, &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	assert_non_null (strstr (err.msg, "last component"));
	unlink (path);
	rmdir (deep);
	rmdir (dir);
}

/* After a short write the iovec moves past what was written, across and
 * into entries. */
static void
test_iov_advance (void **state)
{
	char a[] = "abc", b[] = "de", c[] = "fghi";
	struct iovec v[3] = { { a, 3 }, { b, 2 }, { c, 4 } };
	struct iovec *iov = v;
	int n = 3;

	ab_iov_advance (&iov, &n, 0);
	assert_int_equal (n, 3);
	assert_ptr_equal (iov, v);
	ab_iov_advance (&iov, &n, 4); /* all of a, one of b */
	assert_int_equal (n, 2);
	assert_ptr_equal (iov, &v[1]);
	assert_int_equal (iov->iov_len, 1);
	assert_int_equal (*(char *)iov->iov_base, 'e');
	ab_iov_advance (&iov, &n, 3); /* the rest of b, two of c */
	assert_int_equal (n, 1);
	assert_int_equal (iov->iov_len, 2);
	assert_int_equal (*(char *)iov->iov_base, 'h');
	ab_iov_advance (&iov, &n, 2);
	assert_int_equal (n, 0);
}

/* The fields after "PID (comm) " start with the state letter, also for
 * this process; a pid that is not there is NULL. */
static void
test_proc_stat_fields (void **state)
{
	char buf[1024];
	const char *f = ab_proc_stat_fields (getpid (), buf, sizeof buf);

	assert_non_null (f);
	assert_true (f[0] == 'R' || f[0] == 'S');
	assert_true (ab_proc_start_time (getpid ()) > 0);
	assert_null (ab_proc_stat_fields (-1, buf, sizeof buf));
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_mono_units_agree),
		cmocka_unit_test (test_mono_advances),
		cmocka_unit_test (test_wall_is_epoch),
		cmocka_unit_test (test_unix_addr_limits),
		cmocka_unit_test (test_unix_listen_connect),
		cmocka_unit_test (test_unix_long_path),
		cmocka_unit_test (test_iov_advance),
		cmocka_unit_test (test_proc_stat_fields),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
