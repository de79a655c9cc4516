/* The commands' pid namespace (SECURITY.md 17; issue 19, items 1 and 4).
 *
 * Commands never share a pid namespace with the agent.  At start the agent
 * makes one child pid namespace for all of them (as `docker exec` or E2B,
 * processes of different execs see each other with `ps`) and a fresh /proc
 * for it, stacked on the agent's own: a command's /proc lists only the
 * commands, so nothing of the agent can be listed, opened, traced or
 * signalled, whatever the backend does with PR_SET_DUMPABLE (gVisor
 * ignores it).  The namespace's init is a tiny reaper forked here, not the
 * agent: it holds no fd and no capability, runs under the commands'
 * seccomp filter and Landlock domain as nobody, and SIGCHLD set to SIG_IGN
 * makes the kernel reap every orphan for it.  Commands stay the agent's
 * children (vfork with pid_for_children pointing at the namespace), so
 * wait statuses, process groups and the pty work as before; pids the agent
 * reports are its own namespace's (what kill(2) from the agent means).
 *
 * Each exec also gets a mark, inherited by every process the command
 * forks, also one that calls setsid, and that no command can shed: a UTS
 * namespace of its own (copied from the agent's; sethostname and unshare
 * need CAP_SYS_ADMIN), told apart by /proc/PID/ns/uts; on gVisor, whose
 * /proc has no ns/uts, a cgroup of its own in a cpuacct hierarchy of
 * gVisor's cgroupfs (pids-limit.c, behind the pids limit's guard).  A timeout or an explicit
 * KILL/TERM finds them all by it (ab_cmdns_kill_exec).  The agent holds a reference to the mark
 * (the namespace, or the group's directory), so it is not reused while the
 * exec is known.
 *
 * Where the agent cannot make namespaces (Docker drops CAP_SYS_ADMIN) the
 * commands run in the agent's namespace as before: there the kernel is a
 * real Linux, which honours PR_SET_DUMPABLE, and kills reach the process
 * group only. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/vm.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/sys.h"

#define REAPER_ID 65534 /* nobody */
/* Rounds of "find the exec's processes and SIGKILL them" (a process may
 * fork while a round runs); each round finds fewer. */
#define KILL_ROUNDS 16

enum mark_kind { MARK_NONE, MARK_UTS, MARK_CGROUP };

static struct {
	bool active;
	pid_t reaper;   /* the namespace's init, in the agent's numbering */
	int agent_proc; /* the agent's own /proc (its pid namespace's) */
	int own_pidns;  /* to come back to if the setup fails */
	enum mark_kind kind;
	int cgroups;      /* MARK_CGROUP: where the execs' groups go */
	unsigned next_id; /* MARK_CGROUP: the next exec's group name */
	int own_uts;      /* MARK_UTS: the agent's own UTS namespace */
	int join_fd;      /* between begin and end: the child's cgroup.procs */
	int mark_fd;      /* between begin and end (MARK_UTS): the new mark */
	bool pending;     /* between begin and end: the child takes a mark */
} ns = { .reaper = -1,
	 .agent_proc = -1,
	 .own_pidns = -1,
	 .cgroups = -1,
	 .own_uts = -1,
	 .join_fd = -1,
	 .mark_fd = -1 };

static void __attribute__ ((noreturn)) reaper_fail (int report_fd, int stage)
{
	int e[2] = { stage, errno ? errno : EIO };
	ab_write_all (report_fd, e, sizeof e);
	_exit (125);
}

/* The commands' /proc, masked as the agent's own (vm-root.c); gVisor has
 * no openat2 (and no host kernel state in its /proc to mask): there, the
 * plain mount. */
static int
mount_proc (ab_error_t *err)
{
	if (ab_vm_mount_proc (err) == 0)
		return 0;
	if (ab_sys_openat2 (AT_FDCWD, "/", O_PATH | O_CLOEXEC, 0) >= 0 || errno != ENOSYS)
		return -1;
	return mount ("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, NULL);
}

/* PID 1 of the commands' namespace: mount its /proc, then give up
 * everything and only exist (the kernel reaps orphans for it). */
static void __attribute__ ((noreturn)) reaper_run (int report_fd)
{
	ab_error_t err = AB_ERROR_INIT;
	struct sigaction ign = { .sa_handler = SIG_IGN, .sa_flags = SA_NOCLDWAIT };
	sigset_t none;
	int abi, null;

	extern char **environ;

	/* Where non-dumpable is ignored (gVisor), uid 0 reads our environ. */
	for (char **e = environ; e && *e; e++)
		memset (*e, 0, strlen (*e));
	for (int s = 1; s < NSIG; s++)
		signal (s, SIG_DFL);
	sigemptyset (&none);
	sigprocmask (SIG_SETMASK, &none, NULL);
	if (mount_proc (&err) < 0)
		reaper_fail (report_fd, 1);
	if ((null = open ("/dev/null", O_RDWR | O_CLOEXEC)) < 0)
		reaper_fail (report_fd, 2);
	for (int fd = 0; fd < 3; fd++)
		dup3 (null, fd, 0);
	if (chdir ("/") < 0 || ab_confine_lock_capabilities () < 0)
		reaper_fail (report_fd, 3);
	/* Not uid 0: a command running as root cannot open this process's
	 * /proc entries even where dumpable is ignored.  An unmapped nobody
	 * (EINVAL) keeps uid 0, with no capability. */
	if (ab_confine_ids (REAPER_ID, REAPER_ID) < 0 && errno != EINVAL)
		reaper_fail (report_fd, 4);
	if (ab_confine_clear_capabilities () < 0 || prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0
	    || ab_confine_landlock (NULL, 0, &abi) < 0)
		reaper_fail (report_fd, 5);
	sigaction (SIGCHLD, &ign, NULL);
	ab_write_all (report_fd, (int[2]){ 0, 0 }, 2 * sizeof (int));
	if (ab_sys_close_range (0, INT_MAX, 0) < 0)
		for (int fd = 0; fd < 1024; fd++)
			close (fd);
	if (ab_confine_seccomp () < 0)
		_exit (125);
	for (;;)
		pause ();
}

static void
undo (void)
{
	if (ns.own_pidns >= 0 && setns (ns.own_pidns, CLONE_NEWPID) < 0)
		ab_log (AB_LOG_ERROR, "cannot return to the agent's pid namespace: %s",
		        strerror (errno));
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
choose_mark (void)
{
	if (ns.kind != MARK_NONE)
		return;
	if ((ns.own_uts = openat (ns.agent_proc, "self/ns/uts", O_RDONLY | O_CLOEXEC)) >= 0)
		ns.kind = MARK_UTS;
	else if ((ns.cgroups = ab_agent_exec_cgroups ()) >= 0)
		ns.kind = MARK_CGROUP;
	else
		ab_log (AB_LOG_WARN, "no mark for execs: kills reach the process group only");
}

void
ab_cmdns_setup (void)
{
	ab_error_t err = AB_ERROR_INIT;

	if (ns.agent_proc < 0)
		ns.agent_proc = open ("/proc", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (ns.own_pidns < 0)
		ns.own_pidns = open ("/proc/self/ns/pid", O_RDONLY | O_CLOEXEC);
	if (ns.agent_proc < 0 || ns.own_pidns < 0) {
		ab_log (AB_LOG_WARN, "commands share the agent's pid namespace: no /proc");
		return;
	}
	if (unshare (CLONE_NEWPID) < 0) {
		/* Docker: no CAP_SYS_ADMIN; a real kernel, where the agent is
		 * non-dumpable, stands in. */
		ab_log (AB_LOG_INFO, "commands share the agent's pid namespace: %s",
		        strerror (errno));
		return;
	}
	if (start_reaper (&err) < 0) {
		undo ();
		ab_log (AB_LOG_WARN, "commands share the agent's pid namespace: %s", err.msg);
		return;
	}
	ns.active = true;
	choose_mark ();
}

bool
ab_cmdns_active (void)
{
	return ns.active;
}

/* The commands' init ended (it cannot, but for a kill from the agent's own
 * namespace): forks into its namespace would fail, so make a new one. */
void
ab_cmdns_reaped (pid_t pid)
{
	if (!ns.active || pid != ns.reaper)
		return;
	ab_log (AB_LOG_WARN, "the commands' init ended: starting a new pid namespace");
	ns.active = false;
	ns.reaper = -1;
	undo ();
	ab_cmdns_setup ();
}

/* True when no command is left: the agent has no child but the init, and
 * the commands' /proc lists nothing but it. */
bool
ab_cmdns_idle (void)
{
	siginfo_t si = { 0 };
	cleanup_dir DIR *d = NULL;
	struct dirent *e;

	if (!ns.active)
		return waitid (P_ALL, 0, &si, WEXITED | WNOHANG | WNOWAIT) < 0 && errno == ECHILD;
	if (!(d = opendir ("/proc")))
		return true;
	while ((e = readdir (d)))
		if (e->d_name[0] >= '1' && e->d_name[0] <= '9' && strcmp (e->d_name, "1") != 0)
			return false;
	return true;
}

void
ab_cmdns_exec_begin (void)
{
	char name[32];

	ns.pending = ns.active && ns.kind != MARK_NONE;
	if (ns.pending && ns.kind == MARK_UTS) {
		/* The agent enters the exec's namespace for the fork and takes
		 * its reference now, before the command runs at all: a leader
		 * that exits at once still leaves a mark behind. */
		if (unshare (CLONE_NEWUTS) == 0
		    && (ns.mark_fd = openat (ns.agent_proc, "self/ns/uts", O_RDONLY | O_CLOEXEC))
		               < 0)
			setns (ns.own_uts, CLONE_NEWUTS);
		ns.pending = ns.mark_fd >= 0;
		return;
	}
	if (!ns.pending)
		return;
	snprintf (name, sizeof name, "e%u", ns.next_id);
	if (mkdirat (ns.cgroups, name, 0700) < 0 && errno != EEXIST) {
		ns.pending = false;
		return;
	}
	snprintf (name, sizeof name, "e%u/cgroup.procs", ns.next_id);
	ns.join_fd = openat (ns.cgroups, name, O_WRONLY | O_CLOEXEC);
	ns.pending = ns.join_fd >= 0;
}

int
ab_cmdns_child_enter (void)
{
	char pid[16];
	int n;

	if (!ns.pending || ns.kind == MARK_UTS)
		return 0; /* a UTS mark comes with the fork */
	/* Our pid as our own namespace numbers it: the writer's. */
	n = snprintf (pid, sizeof pid, "%d", (int)getpid ());
	return write (ns.join_fd, pid, (size_t)n) == n ? 0 : -1;
}

void
ab_cmdns_exec_end (pid_t pid, struct ab_exec_mark_s *mark)
{
	char path[32];

	*mark = AB_EXEC_MARK_NONE;
	if (ns.join_fd >= 0) {
		close (ns.join_fd);
		ns.join_fd = -1;
	}
	if (ns.mark_fd >= 0) {
		if (setns (ns.own_uts, CLONE_NEWUTS) < 0)
			ab_log (AB_LOG_ERROR, "cannot return to the agent's UTS namespace: %s",
			        strerror (errno));
		mark->fd = ns.mark_fd;
		ns.mark_fd = -1;
	}
	if (!ns.pending)
		return;
	ns.pending = false;
	if (pid <= 0 || ns.kind == MARK_UTS) {
		if (pid <= 0)
			ab_cmdns_mark_release (mark);
		return;
	}
	snprintf (path, sizeof path, "e%u", ns.next_id);
	mark->fd = openat (ns.cgroups, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	mark->id = ns.next_id++;
}

void
ab_cmdns_mark_release (struct ab_exec_mark_s *mark)
{
	char name[32];

	if (mark->fd < 0)
		return;
	close (mark->fd);
	mark->fd = -1;
	if (ns.kind != MARK_CGROUP)
		return;
	/* A group that still holds processes (a daemon the exec left
	 * running) stays: they keep their mark. */
	snprintf (name, sizeof name, "e%u", mark->id);
	unlinkat (ns.cgroups, name, AT_REMOVEDIR);
}

/* Whether pid carries the UTS mark. */
static bool
has_uts_mark (const char *pid, const struct stat *mark)
{
	char path[300];
	struct stat st;

	snprintf (path, sizeof path, "%s/ns/uts", pid);
	return fstatat (ns.agent_proc, path, &st, 0) == 0 && st.st_ino == mark->st_ino
	       && st.st_dev == mark->st_dev;
}

/* One pass over the agent's /proc: signal every process whose UTS
 * namespace is the exec's.  Returns how many were found. */
static int
signal_uts (int mark_fd, int sig)
{
	int dirfd = openat (ns.agent_proc, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	cleanup_dir DIR *d = NULL;
	struct dirent *e;
	struct stat mark;
	int found = 0;

	if (dirfd < 0 || fstat (mark_fd, &mark) < 0 || !(d = fdopendir (dirfd))) {
		if (dirfd >= 0)
			close (dirfd);
		return 0;
	}
	while ((e = readdir (d))) {
		pid_t pid = (pid_t)atoi (e->d_name);
		if (pid > 1 && pid != ns.reaper && has_uts_mark (e->d_name, &mark)
		    && kill (pid, sig) == 0)
			found++;
	}
	return found;
}

/* One pass over the exec's group: its cgroup.procs lists its processes
 * in the reader's (the agent's) numbering. */
static int
signal_cgroup (int group_fd, int sig)
{
	int fd = openat (group_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	cleanup_file FILE *f = fd >= 0 ? fdopen (fd, "r") : NULL;
	int found = 0, pid;

	if (!f) {
		if (fd >= 0)
			close (fd);
		return 0;
	}
	while (fscanf (f, "%d", &pid) == 1)
		if (pid > 1 && pid != ns.reaper && kill (pid, sig) == 0)
			found++;
	return found;
}

void
ab_cmdns_kill_exec (const struct ab_exec_mark_s *mark, pid_t pgid, int sig)
{
	if (pgid > 0)
		kill (-pgid, sig);
	if (mark->fd < 0)
		return;
	/* SIGKILL again while a pass finds any: a process may fork meanwhile. */
	for (int round = 0; round < KILL_ROUNDS; round++) {
		int found = ns.kind == MARK_UTS ? signal_uts (mark->fd, sig)
		                                : signal_cgroup (mark->fd, sig);
		if (found == 0 || sig != SIGKILL)
			break;
	}
}
