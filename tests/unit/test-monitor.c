/* Unit tests for the backend contract (backend.h: flags agree with slots)
 * and the one sandbox monitor (monitor.c), driven by a toy backend whose
 * "sandbox" is a host child that sleeps: the same hooks a real backend
 * fills (docs/backends.md), without any isolation. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend/backend.h"
#include "backend/monitor.h"
#include "backend/service-socket.h"
#include "base/sys.h"
#include "base/xalloc.h"

static char tmp[64];

static int
make_tmp (void **state)
{
	(void)state;
	snprintf (tmp, sizeof tmp, "/tmp/ab-monitor.XXXXXX");
	return mkdtemp (tmp) ? 0 : -1;
}

static int
remove_tmp (void **state)
{
	char cmd[128];
	(void)state;
	snprintf (cmd, sizeof cmd, "rm -rf %s", tmp);
	return system (cmd) == 0 ? 0 : -1;
}

/* ---- the contract ------------------------------------------------------------ */

static void
test_every_backend_keeps_the_contract (void **state)
{
	(void)state;
	for (const struct ab_backend_ops_s *const *b = ab_backends (); *b; b++) {
		ab_error_t err = AB_ERROR_INIT;
		if (ab_backend_check (*b, &err) < 0)
			fail_msg ("%s", err.msg);
	}
}

static int
fake_pause (struct ab_sandbox_s *sb, ab_error_t *err)
{
	(void)sb, (void)err;
	return 0;
}

static void
test_flags_must_agree_with_slots (void **state)
{
	struct ab_backend_ops_s ops = *ab_backend_find ("native");
	ab_error_t err = AB_ERROR_INIT;

	(void)state;
	/* Native fills pause: a flag without its slots is the mismatch. */
	assert_non_null (ops.pause);
	ops.pause = ops.resume = NULL;
	assert_int_equal (ab_backend_check (&ops, &err), -1);
	assert_non_null (strstr (err.msg, "pause"));
	ab_error_clear (&err);
	ops.features &= ~(unsigned)AB_BACKEND_PAUSE;
	assert_int_equal (ab_backend_check (&ops, &err), 0);
	ops.features |= AB_BACKEND_PAUSE;
	assert_int_equal (ab_backend_check (&ops, &err), -1);
	assert_non_null (strstr (err.msg, "pause"));
	ab_error_clear (&err);
	ops.pause = ops.resume = fake_pause;
	assert_int_equal (ab_backend_check (&ops, &err), 0);
	ops.features &= ~(unsigned)AB_BACKEND_PAUSE;
	assert_int_equal (ab_backend_check (&ops, &err), -1);
	ab_error_clear (&err);
	ops.features |= AB_BACKEND_PAUSE;
	ops.resume = NULL;
	assert_int_equal (ab_backend_check (&ops, &err), -1);
	ab_error_clear (&err);
	ops = *ab_backend_find ("native");
	ops.features |= AB_BACKEND_SNAPSHOT;
	assert_int_equal (ab_backend_check (&ops, &err), -1);
	assert_non_null (strstr (err.msg, "snapshot"));
}

/* ---- the service socket ------------------------------------------------------ */

static void
test_service_socket (void **state)
{
	char *path = xasprintf ("%s/agent.sock", tmp);
	char *file = xasprintf ("%s/file", tmp);
	char *longp = xasprintf ("%s/%0200d", tmp, 0);
	ab_error_t err = AB_ERROR_INIT;
	struct stat st;
	int fd, fd2;

	(void)state;
	fd = ab_service_socket_listen (path, SOCK_NONBLOCK, &err);
	assert_true (fd >= 0);
	assert_int_equal (stat (path, &st), 0);
	assert_true (S_ISSOCK (st.st_mode));
	assert_int_equal (st.st_mode & 0777, 0600);
	assert_true (fcntl (fd, F_GETFD) & FD_CLOEXEC);
	assert_true (fcntl (fd, F_GETFL) & O_NONBLOCK);
	close (fd);
	/* A stale socket (its sandbox is gone) is replaced. */
	fd2 = ab_service_socket_listen (path, 0, &err);
	assert_true (fd2 >= 0);
	assert_false (fcntl (fd2, F_GETFL) & O_NONBLOCK);
	close (fd2);
	/* Anything else is never replaced. */
	close (open (file, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	assert_true (ab_service_socket_listen (file, 0, &err) < 0);
	assert_int_equal (err.kind, AB_E_CONFLICT);
	assert_int_equal (access (file, F_OK), 0);
	ab_error_clear (&err);
	assert_true (ab_service_socket_listen (longp, 0, &err) < 0);
	assert_int_equal (err.kind, AB_E_INVALID);
	unlink (path);
	unlink (file);
	free (path), free (file), free (longp);
}

/* ---- the monitor, with a toy backend ---------------------------------------- */

struct toy_s {
	bool fail_start;
	bool has_kill;
	pid_t child;
	int listen_fd;
	int marker; /* a file stop() removes: proof that stop ran */
	char marker_path[128];
	pid_t kill_caller;  /* > 0: start SIGKILLs this caller, then succeeds */
	char pid_path[128]; /* with kill_caller: the monitor writes its pid here */
};

/* The caller dies before it can hear "ready": it is gone (or a zombie). */
static void
kill_and_wait (pid_t pid)
{
	char path[64], st[256];

	kill (pid, SIGKILL);
	snprintf (path, sizeof path, "/proc/%d/stat", (int)pid);
	for (int i = 0; i < 5000; i++) {
		FILE *f = fopen (path, "re");
		bool gone = !f || !fgets (st, sizeof st, f) || strstr (st, ") Z ");
		if (f)
			fclose (f);
		if (gone)
			return;
		usleep (1000);
	}
}

static int
toy_start (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct toy_s *t = ctx;

	(void)id;
	close (open (t->marker_path, O_CREAT | O_WRONLY | O_CLOEXEC, 0600));
	if (t->kill_caller > 0) {
		FILE *f = fopen (t->pid_path, "we");
		if (f)
			fprintf (f, "%d\n", (int)getpid ()), fclose (f);
		kill_and_wait (t->kill_caller);
	}
	if (t->fail_start)
		return ab_error (err, 0, AB_E_SYSTEM, "the toy refuses to start");
	if (spec->service_socket
	    && (t->listen_fd = ab_service_socket_listen (spec->service_socket, 0, err)) < 0)
		return -1;
	t->child = fork ();
	if (t->child == 0) {
		for (;;)
			pause ();
	}
	return ab_sys_pidfd_open (t->child, 0);
}

static void
toy_kill (void *ctx)
{
	struct toy_s *t = ctx;
	if (t->child > 0)
		kill (t->child, SIGKILL);
}

static int
toy_stop (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct toy_s *t = ctx;

	(void)spec, (void)id, (void)err;
	toy_kill (t);
	if (t->child > 0)
		waitpid (t->child, NULL, 0);
	t->child = -1;
	unlink (t->marker_path);
	return 0;
}

static void
toy_stats (void *ctx, const struct ab_spec_s *spec, struct ab_sandbox_exit_s *ex, ab_error_t *err)
{
	(void)ctx, (void)spec, (void)err;
	ex->peak_memory = 42;
	ex->cpu_ms = 7;
	ex->oom_killed = true;
}

static const struct ab_monitor_ops_s toy_monitor = {
	.start = toy_start,
	.stop = toy_stop,
	.stats = toy_stats,
	.stop_timeout_ms = 5000,
};

static const struct ab_monitor_ops_s toy_monitor_kill = {
	.start = toy_start,
	.stop = toy_stop,
	.kill = toy_kill,
	.stats = toy_stats,
	.stop_timeout_ms = 5000,
};

static struct ab_backend_ops_s toy_backend = { .name = "toy", .monitor = &toy_monitor };
static struct ab_backend_ops_s toy_backend_kill = { .name = "toy", .monitor = &toy_monitor_kill };

/* One toy sandbox: its state, spec and handle. */
struct toy_run_s {
	struct toy_s t;
	struct ab_spec_s spec;
	struct ab_sandbox_s sb;
	struct ab_sandbox_exit_s ex;
	ab_error_t err;
};

static int
toy_spawn (struct toy_run_s *r, const struct ab_backend_ops_s *backend, bool service, bool tied,
           bool fail_start)
{
	memset (r, 0, sizeof *r);
	r->t.child = -1;
	r->t.listen_fd = -1;
	r->t.fail_start = fail_start;
	snprintf (r->t.marker_path, sizeof r->t.marker_path, "%s/started", tmp);
	ab_spec_init (&r->spec);
	if (service)
		r->spec.service_socket = xasprintf ("%s/agent.sock", tmp);
	r->spec.service_tied = tied;
	ab_sandbox_begin (&r->sb, backend);
	return ab_monitor_spawn (&r->spec, &r->t, NULL, 0, &r->sb, &r->err);
}

static void
test_tied_reports_stats (void **state)
{
	struct toy_run_s r;

	(void)state;
	assert_int_equal (toy_spawn (&r, &toy_backend, true, true, false), 0);
	assert_true (r.sb.monitor_pid > 0);
	assert_true (r.sb.monitor_fd >= 0);
	assert_false (r.sb.monitor_child);
	assert_int_equal (ab_sandbox_state (&r.sb), AB_SANDBOX_RUNNING);
	assert_int_equal (access (r.spec.service_socket, F_OK), 0);
	assert_int_equal (ab_monitor_destroy (&r.sb, &r.ex, &r.err), 0);
	assert_int_equal (r.ex.peak_memory, 42);
	assert_int_equal (r.ex.cpu_ms, 7);
	assert_true (r.ex.oom_killed);
	/* stop ran, and the socket is gone with it. */
	assert_int_equal (access (r.t.marker_path, F_OK), -1);
	assert_int_equal (access (r.spec.service_socket, F_OK), -1);
	ab_spec_free (&r.spec);
}

static void
test_untied_outlives_its_link (void **state)
{
	struct toy_run_s r;
	char comm[32] = "";
	char *path;
	FILE *f;

	(void)state;
	assert_int_equal (toy_spawn (&r, &toy_backend_kill, true, false, false), 0);
	assert_int_equal (r.sb.monitor_fd, -1);
	/* Re-adoption by a restarted daemon looks for this name. */
	path = xasprintf ("/proc/%d/comm", (int)r.sb.monitor_pid);
	f = fopen (path, "re");
	assert_non_null (f);
	assert_non_null (fgets (comm, sizeof comm, f));
	fclose (f);
	free (path);
	assert_string_equal (comm, "agentbox-mon\n");
	/* Not our child: the double fork re-parented it. */
	assert_int_equal (waitpid (r.sb.monitor_pid, NULL, WNOHANG), -1);
	assert_int_equal (errno, ECHILD);
	assert_int_equal (ab_monitor_kill (&r.sb, &r.err), 0);
	assert_int_equal (ab_monitor_destroy (&r.sb, &r.ex, &r.err), 0);
	assert_int_equal (r.ex.peak_memory, 0); /* nobody listened */
	assert_int_equal (access (r.t.marker_path, F_OK), -1);
	ab_spec_free (&r.spec);
}

static void
test_failed_start_says_why (void **state)
{
	struct toy_run_s r;

	(void)state;
	assert_int_equal (toy_spawn (&r, &toy_backend, true, true, true), -1);
	assert_string_equal (r.err.msg, "the toy refuses to start");
	assert_int_equal (r.sb.monitor_fd, -1);
	assert_int_equal (access (r.t.marker_path, F_OK), -1); /* stop cleaned up */
	ab_spec_free (&r.spec);
}

/* One-shot: the monitor is our child; a kill message ends the sandbox
 * and the monitor reports once it is gone. */
static void
test_oneshot_kill_and_report (void **state)
{
	struct toy_run_s r;

	(void)state;
	assert_int_equal (toy_spawn (&r, &toy_backend_kill, false, false, false), 0);
	assert_true (r.sb.monitor_child);
	assert_true (r.sb.monitor_fd >= 0);
	assert_int_equal (ab_monitor_kill (&r.sb, &r.err), 0);
	assert_int_equal (ab_monitor_destroy (&r.sb, &r.ex, &r.err), 0);
	assert_int_equal (r.ex.peak_memory, 42);
	assert_int_equal (r.sb.monitor_fd, -1);
	/* Reaped by destroy. */
	assert_int_equal (waitpid (r.sb.monitor_pid, NULL, WNOHANG), -1);
	ab_spec_free (&r.spec);
}

/* One-shot, the start failed: the error comes with the last report. */
static void
test_oneshot_failure_reported_at_destroy (void **state)
{
	struct toy_run_s r;

	(void)state;
	assert_int_equal (toy_spawn (&r, &toy_backend_kill, false, false, true), 0);
	assert_int_equal (ab_monitor_destroy (&r.sb, &r.ex, &r.err), -1);
	assert_string_equal (r.err.msg, "the toy refuses to start");
	ab_spec_free (&r.spec);
}

/* The caller's end going away (it died, even by SIGKILL) tears down. */
static void
test_caller_gone_tears_down (void **state)
{
	struct toy_run_s r;
	struct pollfd p;

	(void)state;
	assert_int_equal (toy_spawn (&r, &toy_backend_kill, true, true, false), 0);
	p.fd = ab_sys_pidfd_open (r.sb.monitor_pid, 0);
	p.events = POLLIN;
	assert_true (p.fd >= 0);
	close (r.sb.monitor_fd);
	assert_int_equal (poll (&p, 1, 5000), 1);
	close (p.fd);
	assert_int_equal (access (r.t.marker_path, F_OK), -1);
	assert_int_equal (access (r.spec.service_socket, F_OK), -1);
	ab_spec_free (&r.spec);
}

/* Untied: a caller that dies after asking for the sandbox but before it
 * heard "ready" sends no ACK, and the monitor tears the sandbox down
 * rather than live on with nobody who knows of it. */
static void
test_no_ack_tears_down (void **state)
{
	struct toy_run_s r;
	char pid_path[128];
	int status, i, mon = 0;
	pid_t caller;
	FILE *f;

	(void)state;
	snprintf (pid_path, sizeof pid_path, "%s/monitor.pid", tmp);
	caller = fork ();
	assert_true (caller >= 0);
	if (caller == 0) {
		memset (&r, 0, sizeof r);
		r.t.child = r.t.listen_fd = -1;
		r.t.kill_caller = getpid ();
		snprintf (r.t.pid_path, sizeof r.t.pid_path, "%s", pid_path);
		snprintf (r.t.marker_path, sizeof r.t.marker_path, "%s/started", tmp);
		ab_spec_init (&r.spec);
		r.spec.service_socket = xasprintf ("%s/agent.sock", tmp);
		ab_sandbox_begin (&r.sb, &toy_backend);
		ab_monitor_spawn (&r.spec, &r.t, NULL, 0, &r.sb, &r.err);
		_exit (0); /* not reached: the toy's start kills us */
	}
	assert_int_equal (waitpid (caller, &status, 0), caller);
	assert_true (WIFSIGNALED (status) && WTERMSIG (status) == SIGKILL);
	snprintf (r.t.marker_path, sizeof r.t.marker_path, "%s/started", tmp);
	f = fopen (pid_path, "re");
	assert_non_null (f);
	assert_int_equal (fscanf (f, "%d", &mon), 1);
	fclose (f);
	/* stop() removes the marker, then the monitor exits. */
	for (i = 0; i < 500 && (access (r.t.marker_path, F_OK) == 0 || kill (mon, 0) == 0); i++)
		usleep (10000);
	if (kill (mon, 0) == 0) {
		/* The test failed: SIGTERM makes the monitor stop its toy too. */
		kill (mon, SIGTERM);
		for (i = 0; i < 500 && kill (mon, 0) == 0; i++)
			usleep (10000);
		fail_msg ("the monitor lived on without its caller's ACK");
	}
	assert_int_equal (access (r.t.marker_path, F_OK), -1);
	assert_int_equal (kill (mon, 0), -1);
	unlink (pid_path);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_every_backend_keeps_the_contract),
		cmocka_unit_test (test_flags_must_agree_with_slots),
		cmocka_unit_test_setup_teardown (test_service_socket, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown (test_tied_reports_stats, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown (test_untied_outlives_its_link, make_tmp,
		                                 remove_tmp),
		cmocka_unit_test_setup_teardown (test_failed_start_says_why, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown (test_oneshot_kill_and_report, make_tmp,
		                                 remove_tmp),
		cmocka_unit_test_setup_teardown (test_oneshot_failure_reported_at_destroy, make_tmp,
		                                 remove_tmp),
		cmocka_unit_test_setup_teardown (test_caller_gone_tears_down, make_tmp, remove_tmp),
		cmocka_unit_test_setup_teardown (test_no_ack_tears_down, make_tmp, remove_tmp),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
