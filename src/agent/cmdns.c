/* The commands' pid namespace, where the kernel does not guard the agent
 * (SECURITY.md 17; issue 19 item 1).
 *
 * On Linux (native, Docker, the microVM's guest) the agent is non-dumpable
 * PID 1 and its commands hold no capability: the kernel refuses them the
 * agent's /proc/1/fd, environ and memory (ptrace access checks), and
 * drops SIGKILL sent to a namespace's init from inside it.  gVisor
 * (runsc 2022-12) does neither: a command running as uid 0 lists and
 * opens /proc/1/fd (the pipes that are other commands' stdio), reads
 * /proc/1/environ and maps, and `kill -9 1` ends the agent and the
 * sandbox.  There, and only where no keeper can run (agent/spawn.c: the
 * same gVisor), commands live in a pid namespace of their own, with its
 * own /proc stacked on the agent's: nothing of the agent is listed there,
 * so nothing of it can be opened or signalled.  The namespace is shared by
 * all commands (as with `docker exec`, `ps` in one exec lists the others'
 * processes and `kill` reaches them), and the pids the agent reports are
 * that namespace's, as the commands see them.
 *
 * Its init is a reaper forked here: no fd, a wiped environment, no
 * capability, nobody, no_new_privs and the commands' seccomp filter;
 * SIGCHLD set to SIG_IGN with SA_NOCLDWAIT makes the kernel reap every
 * orphan for it.  A command that kills it (gVisor lets uid 0 signal a
 * namespace's init) ends every command, itself included; the agent lives
 * on and makes a new namespace for the next command.  Commands stay the
 * agent's children (pid_for_children points at the namespace), so wait
 * statuses, process groups, the pty and the exec marks work as before. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/subtree.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/sys.h"

#define REAPER_ID 65534 /* nobody */

static struct {
	bool active;
	pid_t reaper;   /* the namespace's init, in the agent's numbering */
	int agent_proc; /* the agent's own /proc (its pid namespace's) */
	int own_pidns;  /* to come back to when the namespace is gone */
} ns = { .reaper = -1, .agent_proc = -1, .own_pidns = -1 };

int
ab_cmdns_agent_proc (void)
{
	if (ns.agent_proc < 0)
		ns.agent_proc = open ("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	return ns.agent_proc;
}

static void __attribute__ ((noreturn)) reaper_fail (int report_fd, int stage)
{
	int e[2] = { stage, errno ? errno : EIO };
	ab_write_all (report_fd, e, sizeof e);
	_exit (125);
}

/* PID 1 of the commands' namespace: mount its /proc, then give up
 * everything and only exist. */
static void __attribute__ ((noreturn)) reaper_run (int report_fd)
{
	struct sigaction ign = { .sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT };
	sigset_t none;
	int abi, null;

	extern char **environ;

	/* gVisor shows any process's environ to uid 0: leave nothing there. */
	for (char **e = environ; e && *e; e++)
		memset (*e, 0, strlen (*e));
	for (int s = 1; s < NSIG; s++)
		signal (s, SIG_DFL);
	sigemptyset (&none);
	sigprocmask (SIG_SETMASK, &none, NULL);
	if (mount ("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL) < 0)
		reaper_fail (report_fd, 1);
	if ((null = open ("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		reaper_fail (report_fd, 2);
	for (int fd = 0; fd < 3; fd++)
		dup3 (null, fd, 0);
	if (chdir ("/") < 0 || ab_confine_lock_capabilities () < 0)
		reaper_fail (report_fd, 3);
	if (ab_confine_ids (REAPER_ID, REAPER_ID) < 0 && errno != EINVAL)
		reaper_fail (report_fd, 4);
	if (ab_confine_clear_capabilities () < 0 || prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
	    || ab_confine_landlock (NULL, 0, &abi) < 0)
		reaper_fail (report_fd, 5);
	sigaction (SIGCHLD, &ign, NULL);
	ab_write_all (report_fd, (int[2]){ 0, 0 }, 2 * sizeof (int));
	ab_sys_close_range (0, INT_MAX, 0);
	if (ab_confine_seccomp () < 0)
		_exit (125);
	for (;;)
		pause ();
}

static int
start_reaper (ab_error_t *err)
{
	static const char *const stages[] = { "",
		                              "mount its /proc",
		                              "open /dev/null",
		                              "lock capabilities",
		                              "switch to nobody",
		                              "confine itself" };
	int report[2], e[2] = { 0, 0 };
	ssize_t n;
	pid_t pid;

	if (pipe2 (report, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	pid = fork ();
	if (pid == 0)
		reaper_run (report[1]);
	close (report[1]);
	if (pid < 0) {
		close (report[0]);
		return ab_error (err, errno, AB_E_SYSTEM, "fork the commands' init");
	}
	do
		n = read (report[0], e, sizeof e);
	while (n < 0 && errno == EINTR);
	close (report[0]);
	if (n == (ssize_t)sizeof e && e[0] == 0) {
		ns.reaper = pid;
		return 0;
	}
	kill (pid, SIGKILL);
	waitpid (pid, NULL, 0);
	if (n != (ssize_t)sizeof e || e[0] < 1 || e[0] > 5)
		return ab_error (err, 0, AB_E_INTERNAL, "the commands' init ended silently");
	return ab_error (err, e[1], AB_E_SYSTEM, "the commands' init cannot %s", stages[e[0]]);
}

static void
back_home (void)
{
	if (ns.own_pidns >= 0 && setns (ns.own_pidns, CLONE_NEWPID) < 0)
		ab_log (AB_LOG_ERROR, "cannot return to the agent's pid namespace: %s",
		        strerror (errno));
}

void
ab_cmdns_ensure (void)
{
	ab_error_t err = AB_ERROR_INIT;
	static bool unsupported;

	if (ns.active || unsupported)
		return;
	/* Both before the namespace's /proc hides ours. */
	if (ab_cmdns_agent_proc () < 0
	    || (ns.own_pidns < 0
	        && (ns.own_pidns = open ("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC)) < 0)) {
		unsupported = true;
		ab_log (AB_LOG_WARN, "commands share the agent's pid namespace: no /proc");
		return;
	}
	if (unshare (CLONE_NEWPID) < 0) {
		unsupported = true;
		ab_log (AB_LOG_WARN, "commands share the agent's pid namespace: %s",
		        strerror (errno));
		return;
	}
	if (start_reaper (&err) < 0) {
		back_home ();
		unsupported = true;
		ab_log (AB_LOG_WARN, "commands share the agent's pid namespace: %s", err.msg);
		return;
	}
	ns.active = true;
}

bool
ab_cmdns_active (void)
{
	return ns.active;
}

void
ab_cmdns_reaped (pid_t pid)
{
	if (!ns.active || pid != ns.reaper)
		return;
	/* Its namespace is gone with it (every command in it was killed):
	 * forks into it would fail, so the next command gets a new one, and
	 * a new /proc on top of the old one's. */
	ab_log (AB_LOG_WARN, "the commands' init ended: the next command gets a new pid namespace");
	ns.active = false;
	ns.reaper = -1;
	umount2 ("/proc", MNT_DETACH);
	back_home ();
}
