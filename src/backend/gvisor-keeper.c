/* The keeper: a small child of the monitor (comm "agentbox-runsc") that
 * holds `runsc run` (not detached: runsc then ties its sandbox and gofer
 * processes to its own life) and undoes what runsc made, whoever ends
 * first:
 *
 *   - runsc ends (the agent, PID 1, exited or the sandbox was OOM-killed):
 *     `runsc delete -force` (state, cgroups); the monitor sees us exit and
 *     removes the directory;
 *   - SIGTERM from the monitor (destroy), or the monitor's death, even by
 *     SIGKILL (PR_SET_PDEATHSIG): `runsc kill`, `runsc delete -force`, and
 *     the private directory and socket link too, since a killed monitor
 *     cannot.
 *
 * `runsc run` itself gets PR_SET_PDEATHSIG(SIGKILL): if the keeper is
 * killed, runsc dies, and with it (measured) the sandbox and the gofer.
 * Single-threaded, so the parent-death signals fire when they should.
 *
 * runsc enters the sandbox's cgroup (g->cgroup) before it execs, so all it
 * starts is charged there from its first page (v1 does not move charges
 * made before a move); the keeper stays outside, never counted, never
 * killed with the group.  The monitor owns the group; when the monitor is
 * gone the keeper removes it (its copy of the handle holds the same lock,
 * so no sweeper takes the group from under us meanwhile). */
#include "backend/gvisor-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define RUNSC_EXIT_MS 5000

static void __attribute__ ((noreturn))
exec_runsc (char **argv, int log, pid_t keeper, ab_cgroup_t *cgroup)
{
	ab_error_t err = AB_ERROR_INIT;
	sigset_t none;
	int null = open ("/dev/null", O_RDONLY | O_CLOEXEC);

	prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	if (getppid () != keeper)
		_exit (127); /* the keeper is already gone */
	/* Never run without the limits: the start then fails, with why in
	 * runsc.log (the tail the caller's error shows). */
	if (cgroup && ab_cgroup_enter (cgroup, getpid (), &err) < 0) {
		dprintf (log, "agentbox: %s\n", err.msg);
		_exit (127);
	}
	sigemptyset (&none);
	sigprocmask (SIG_SETMASK, &none, NULL);
	if (null < 0 || dup2 (null, 0) < 0 || dup2 (log, 1) < 0 || dup2 (log, 2) < 0)
		_exit (127);
	ab_sys_close_range (3, INT_MAX, 0);
	/* runsc mounts its sandbox process's chroot (a tmpfs) over $TMPDIR,
	 * which that unprivileged process must reach: a caller's private
	 * TMPDIR (below a 0700 directory) makes every start fail with
	 * "cannot read client sync file".  Its default, /tmp, always works,
	 * and the mount happens in the sandbox's own mount namespace. */
	unsetenv ("TMPDIR");
	execv (argv[0], argv);
	_exit (127);
}

/* Until runsc ends (false) or we are told to stop (true). */
static bool
wait_for_end (int runsc_pidfd, int term_fd)
{
	struct pollfd p[2] = { { .fd = runsc_pidfd, .events = POLLIN },
		               { .fd = term_fd, .events = POLLIN } };

	for (;;) {
		int n = poll (p, 2, -1);
		if (n < 0 && errno == EINTR)
			continue;
		return n > 0 && p[1].revents != 0;
	}
}

static void
end_runsc (const struct ab_gvisor_s *g, pid_t runsc, int runsc_pidfd)
{
	struct pollfd p = { .fd = runsc_pidfd, .events = POLLIN };

	if (runsc > 0 && poll (&p, 1, 0) == 0) {
		ab_runsc_kill (g);
		if (poll (&p, 1, RUNSC_EXIT_MS) != 1)
			kill (runsc, SIGKILL); /* and its PDEATHSIG children with it */
	}
	if (runsc > 0)
		while (waitpid (runsc, NULL, 0) < 0 && errno == EINTR)
			;
	ab_runsc_delete (g);
}

static void __attribute__ ((noreturn))
keeper_main (const struct ab_gvisor_s *g, const struct ab_spec_s *spec, char **argv, int log,
             pid_t monitor)
{
	int term_fd = ab_termination_signalfd ();
	pid_t runsc = -1;
	int runsc_pidfd = -1;
	bool asked = true, orphan;

	prctl (PR_SET_NAME, "agentbox-runsc", 0, 0, 0);
	/* The monitor's end, even by SIGKILL, becomes our SIGTERM. */
	prctl (PR_SET_PDEATHSIG, SIGTERM, 0, 0, 0);
	if (getppid () == monitor && term_fd >= 0) {
		runsc = fork ();
		if (runsc == 0)
			exec_runsc (argv, log, getppid (), g->cgroup);
		runsc_pidfd = runsc > 0 ? ab_sys_pidfd_open (runsc, 0) : -1;
		if (runsc_pidfd >= 0)
			asked = wait_for_end (runsc_pidfd, term_fd);
	}
	end_runsc (g, runsc, runsc_pidfd);
	ab_gvisor_sweep_cgroups ();
	/* Orphaned (the monitor was killed): nobody else will remove the
	 * group, nor a tied caller's socket directory, which the caller
	 * (gone at the sandbox's end) found still holding our directory. */
	orphan = getppid () != monitor;
	if (orphan)
		ab_cgroup_destroy (g->cgroup, &(ab_error_t)AB_ERROR_INIT);
	if (asked) {
		ab_gvisor_remove_link (g, spec);
		ab_gvisor_remove_dir (g);
	}
	if (asked && orphan)
		ab_monitor_remove_socket (spec);
	_exit (0);
}

int
ab_gvisor_keeper_start (struct ab_gvisor_s *g, const struct ab_spec_s *spec, ab_error_t *err)
{
	cleanup_free char *log_path = xasprintf ("%s/%s", g->dir, AB_GVISOR_LOG);
	const char *const run[] = { "run", "-bundle", g->dir, g->cid, NULL };
	cleanup_strv char **argv = ab_runsc_argv (g, run);
	cleanup_close int log = -1;
	pid_t monitor = getpid ();

	log = open (log_path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_NOFOLLOW | O_CLOEXEC,
	            0600);
	if (log < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open %s", log_path);
	g->keeper = fork ();
	if (g->keeper < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fork");
	if (g->keeper == 0)
		keeper_main (g, spec, argv, log, monitor);
	g->keeper_pidfd = ab_sys_pidfd_open (g->keeper, 0);
	if (g->keeper_pidfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pidfd_open");
	return 0;
}

void
ab_gvisor_keeper_stop (struct ab_gvisor_s *g)
{
	struct pollfd p = { .fd = g->keeper_pidfd, .events = POLLIN };
	int status = 0;

	if (g->keeper <= 0)
		return;
	kill (g->keeper, SIGTERM);
	if (g->keeper_pidfd >= 0 && poll (&p, 1, AB_GVISOR_STOP_TIMEOUT_MS) != 1)
		kill (g->keeper, SIGKILL); /* stuck in runsc */
	while (waitpid (g->keeper, &status, 0) < 0 && errno == EINTR)
		;
	g->keeper = -1;
	/* Killed before it could delete the container (its runsc died with
	 * it, but runsc's cgroups and state stay): undo them here. */
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
		ab_runsc_kill (g);
		ab_runsc_delete (g);
	}
}
