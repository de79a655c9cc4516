/* Starting a command: vfork, confine the child, execve.  Failures in the
 * child travel back to the agent over a close-on-exec pipe (stage + errno),
 * so "not found" (127), "not executable" (126) and setup failures are told
 * apart without guessing from exit codes.
 *
 * vfork, not fork: no copy of the agent's address space (under gVisor's
 * ptrace platform a fork costs three times a vfork).  The child shares our
 * memory until execve and we are suspended meanwhile, so it allocates
 * nothing (the environment is built before) and what it changes in memory
 * (environ) is restored after; everything else it changes (ids,
 * capabilities, signal dispositions, fds, cwd, rlimits, seccomp, Landlock)
 * belongs to the child task alone, since no CLONE_FILES, CLONE_FS,
 * CLONE_SIGHAND or CLONE_THREAD is shared. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/subtree.h"
#include "base/fd.h"
#include "base/sys.h"

enum spawn_stage {
	STAGE_SETUP = 1,
	STAGE_TTY,
	STAGE_RLIMIT,
	STAGE_CWD,
	STAGE_IDS,
	STAGE_CAPS,
	STAGE_NNP,
	STAGE_LANDLOCK,
	STAGE_SECCOMP,
	STAGE_EXEC,
};

static const char *const stage_names[] = {
	[STAGE_SETUP] = "set up the process",   [STAGE_TTY] = "attach the terminal",
	[STAGE_RLIMIT] = "set resource limits", [STAGE_CWD] = "enter the working directory",
	[STAGE_IDS] = "switch user and group",  [STAGE_CAPS] = "drop capabilities",
	[STAGE_NNP] = "set no_new_privs",       [STAGE_LANDLOCK] = "apply Landlock",
	[STAGE_SECCOMP] = "apply seccomp",      [STAGE_EXEC] = "execute",
};

struct spawn_failure_s {
	int stage;
	int errnum;
};

static void __attribute__ ((noreturn)) child_fail (int report_fd, int stage)
{
	struct spawn_failure_s f = { .stage = stage, .errnum = errno };
	ab_write_all (report_fd, &f, sizeof f);
	_exit (stage == STAGE_EXEC ? (f.errnum == ENOENT ? 127 : 126) : 125);
}

/* The agent's own bounding set, emptied once before its first command:
 * the agent execs nothing but commands, whose bounding sets are emptied
 * anyway, and it keeps its permitted and effective sets.  Each child
 * then inherits the empty set instead of dropping 41 capabilities. */
static bool bounding_empty;

static void
empty_bounding_set (void)
{
	if (!bounding_empty)
		bounding_empty = ab_confine_drop_bounding_set () == 0;
}

/* Every disposition back to SIG_DFL: ignored ones survive execve, and the
 * process that forks the command (the agent, or an exec's keeper, which
 * ignores some of its own) is not the one to trust for which. */
static void
reset_signals (void)
{
	sigset_t none;
	for (int s = 1; s < NSIG; s++)
		signal (s, SIG_DFL);
	sigemptyset (&none);
	sigprocmask (SIG_SETMASK, &none, NULL);
}

static int
attach_tty (int master)
{
	char name[128];
	int slave;

	if (ptsname_r (master, name, sizeof name) != 0)
		return -1;
	slave = open (name, O_RDWR | O_NOCTTY);
	if (slave < 0)
		return -1;
	if (ioctl (slave, TIOCSCTTY, 0) < 0)
		return -1;
	for (int fd = 0; fd < 3; fd++)
		if (dup2 (slave, fd) < 0)
			return -1;
	if (slave > 2)
		close (slave);
	close (master);
	return 0;
}

static int
set_rlimits (uint64_t nofile)
{
	struct rlimit core = { 0, 0 }, files;

	if (setrlimit (RLIMIT_CORE, &core) < 0)
		return -1;
	if (nofile == 0 || getrlimit (RLIMIT_NOFILE, &files) < 0)
		return 0;
	/* No process here can raise a hard limit: clamp to it. */
	if (files.rlim_max != RLIM_INFINITY && nofile > files.rlim_max)
		nofile = files.rlim_max;
	files.rlim_cur = files.rlim_max = nofile;
	return setrlimit (RLIMIT_NOFILE, &files);
}

/* runc CVE-2024-21626: after the last chdir, the working directory must be
 * reachable from our root, never a leaked outside directory. */
static int
enter_cwd (const char *cwd)
{
	char buf[4096];
	if (chdir (cwd) < 0)
		return -1;
	if (!getcwd (buf, sizeof buf) || buf[0] != '/') {
		errno = ENOENT;
		return -1;
	}
	return 0;
}

/* The agent keeps 0, 1 and 2 open (on /dev/null), so the fds handed in
 * are never 0..2 themselves and dup2 cannot clobber one with another. */
static int
attach_stdio (const int *stdio)
{
	for (int fd = 0; fd < 3; fd++)
		if (dup2 (stdio[fd], fd) < 0)
			return -1;
	return 0;
}

/* Between ab_agent_spawn_kept and the end of the vfork: the mark's
 * cgroup.procs the child joins (-1: none).  The vfork child shares our
 * memory, so it reads this directly. */
static int child_mark_procs = -1;
/* Set by the child: its pid as it sees it (in the commands' namespace). */
static pid_t child_own_pid;

static int
join_mark (int procs)
{
	char pid[16];
	int n = snprintf (pid, sizeof pid, "%d", (int)getpid ());

	return write (procs, pid, (size_t)n) == n ? 0 : -1;
}

static void __attribute__ ((noreturn))
run_child (const struct ab_exec_msg_s *req, char **env, int master, const int *stdio, int report_fd)
{
	extern char **environ;
	int abi;

	reset_signals ();
	if (setsid () < 0)
		child_fail (report_fd, STAGE_SETUP);
	/* The exec's mark, before the ids change: the group's files are
	 * root's. */
	if (child_mark_procs >= 0 && join_mark (child_mark_procs) < 0)
		child_fail (report_fd, STAGE_SETUP);
	child_own_pid = getpid ();
	if (master >= 0 && attach_tty (master) < 0)
		child_fail (report_fd, STAGE_TTY);
	if (master < 0 && stdio && attach_stdio (stdio) < 0)
		child_fail (report_fd, STAGE_SETUP);
	if (set_rlimits (req->nofile) < 0)
		child_fail (report_fd, STAGE_RLIMIT);
	if (enter_cwd (req->cwd) < 0)
		child_fail (report_fd, STAGE_CWD);
	if ((bounding_empty ? ab_confine_lock_capabilities_inherited ()
	                    : ab_confine_lock_capabilities ())
	    < 0)
		child_fail (report_fd, STAGE_CAPS);
	if (ab_confine_ids (req->uid, req->gid) < 0)
		child_fail (report_fd, STAGE_IDS);
	if (ab_confine_clear_capabilities () < 0)
		child_fail (report_fd, STAGE_CAPS);
	if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		child_fail (report_fd, STAGE_NNP);
	if (ab_confine_landlock (req->rw_paths, req->n_rw_paths, &abi) < 0)
		child_fail (report_fd, STAGE_LANDLOCK);
	/* Nothing but 0, 1, 2 crosses execve; report_fd is already O_CLOEXEC.
	 * INT_MAX, not ~0U: gVisor refuses a last fd above INT32_MAX (EINVAL). */
	if (ab_sys_close_range (3, INT_MAX, CLOSE_RANGE_CLOEXEC) < 0)
		child_fail (report_fd, STAGE_SETUP);
	environ = env; /* execvpe searches the command's PATH, not ours */
	if (ab_confine_seccomp () < 0)
		child_fail (report_fd, STAGE_SECCOMP);
	execvpe (req->argv[0], req->argv, env);
	child_fail (report_fd, STAGE_EXEC);
}

static int
open_pty (const struct ab_exec_msg_s *req, ab_error_t *err)
{
	struct winsize ws = { .ws_row = (unsigned short)req->rows,
		              .ws_col = (unsigned short)req->cols };
	int master = posix_openpt (O_RDWR | O_NOCTTY | O_CLOEXEC);

	if (master < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open /dev/ptmx");
	if (unlockpt (master) < 0) {
		close (master);
		return ab_error (err, errno, AB_E_SYSTEM, "unlock pty");
	}
	if (ws.ws_row && ws.ws_col)
		ioctl (master, TIOCSWINSZ, &ws);
	return master;
}

/* What a spawn failure report means for the agent: 0 when the command
 * ran (or only its execve failed, kept in child->exec_errno). */
static int
failure_error (const struct spawn_failure_s *f, const struct ab_exec_msg_s *req,
               struct ab_child_s *child, ab_error_t *err)
{
	if (f->stage < STAGE_SETUP || f->stage > STAGE_EXEC)
		return ab_error (err, 0, AB_E_INTERNAL,
		                 "garbled report from the command's process");
	if (f->stage == STAGE_EXEC) {
		child->exec_errno = f->errnum;
		return 0;
	}
	if (f->stage == STAGE_CWD)
		return ab_error (err, f->errnum, AB_E_INVALID, "cannot enter working directory %s",
		                 req->cwd);
	return ab_error (err, f->errnum, AB_E_SYSTEM, "cannot %s", stage_names[f->stage]);
}

/* The child's report: n 0 (execve closed the pipe) or a whole report. */
static ssize_t
read_report (int fd, struct spawn_failure_s *f)
{
	ssize_t n;

	do
		n = read (fd, f, sizeof *f);
	while (n < 0 && errno == EINTR);
	return n;
}

static int
read_failure (int fd, const struct ab_exec_msg_s *req, struct ab_child_s *child, ab_error_t *err)
{
	struct spawn_failure_s f;
	ssize_t n = read_report (fd, &f);

	if (n == 0)
		return 0; /* execve succeeded and closed the pipe */
	if (n != (ssize_t)sizeof f)
		return ab_error (err, 0, AB_E_INTERNAL,
		                 "garbled report from the command's process");
	return failure_error (&f, req, child, err);
}

int
ab_agent_spawn (const struct ab_exec_msg_s *req, const int *stdio, struct ab_child_s *child,
                ab_error_t *err)
{
	extern char **environ;
	char **env, **saved_environ;
	int report[2];
	int r;

	child->pty_master = -1;
	child->exec_errno = 0;
	if (req->tty && (child->pty_master = open_pty (req, err)) < 0)
		return -1;
	if (pipe2 (report, O_CLOEXEC) < 0) {
		int e = errno;
		if (child->pty_master >= 0)
			close (child->pty_master);
		return ab_error (err, e, AB_E_SYSTEM, "pipe");
	}
	empty_bounding_set ();
	env = ab_agent_env_with_preload (req->env);
	saved_environ = environ;
	child->pid = vfork ();
	if (child->pid == 0)
		run_child (req, env, child->pty_master, stdio, report[1]);
	environ = saved_environ;
	if (env != req->env)
		ab_agent_env_free (env);
	if (child->pid < 0) {
		int e = errno;
		close (report[0]);
		close (report[1]);
		if (child->pty_master >= 0)
			close (child->pty_master);
		return ab_error (err, e, e == EAGAIN ? AB_E_LIMIT : AB_E_SYSTEM, "fork");
	}
	close (report[1]);
	r = read_failure (report[0], req, child, err);
	close (report[0]);
	if (r < 0 && child->pty_master >= 0) {
		close (child->pty_master);
		child->pty_master = -1;
	}
	return r;
}

/* ---- the keeper: one per exec, its subreaper -------------------------------- */

/* Until a keeper finds it cannot be a subreaper (gVisor 2022 answers
 * EINVAL to its commands, though not always to PID 1). */
static bool keepers_ok = true;

bool
ab_keepers_available (void)
{
	return keepers_ok;
}

static int
by_value (const void *a, const void *b)
{
	return *(const int *)a - *(const int *)b;
}

/* Close every fd from 3 up but the n in keep (-1 entries ignored): the
 * keeper holds nothing of the agent's (its connection, other execs'
 * pipes), so nothing of it can be reached through the keeper either. */
static void
keep_only (int *keep, size_t n)
{
	unsigned int next = 3;

	qsort (keep, n, sizeof *keep, by_value);
	for (size_t i = 0; i < n; i++) {
		if (keep[i] < (int)next)
			continue;
		if ((unsigned int)keep[i] > next)
			ab_sys_close_range (next, (unsigned int)keep[i] - 1, 0);
		next = (unsigned int)keep[i] + 1;
	}
	ab_sys_close_range (next, INT_MAX, 0);
}

/* A STARTED stage: this kernel has no child subreapers, nothing started. */
#define NO_SUBREAPER (-2)

/* Start the command below us and report it (STARTED); returns its pid,
 * or -1 when it could not be forked. */
static pid_t
keeper_start (const struct ab_exec_msg_s *req, char **env, int master, const int *stdio, int out)
{
	struct ab_keeper_msg_s m = { .kind = AB_KEEPER_STARTED, .pid = -1 };
	struct spawn_failure_s f;
	int report[2];
	ssize_t n;
	pid_t pid = -1;

	if (prctl (PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) < 0) {
		m.stage = NO_SUBREAPER;
	} else if (pipe2 (report, O_CLOEXEC) < 0) {
		m.errnum = errno;
	} else if ((pid = vfork ()) == 0) {
		run_child (req, env, master, stdio, report[1]);
	} else {
		m.errnum = pid < 0 ? errno : 0;
		close (report[1]);
		n = pid < 0 ? 0 : read_report (report[0], &f);
		close (report[0]);
		m.pid = pid;
		if (n == (ssize_t)sizeof f)
			m.stage = f.stage, m.errnum = f.errnum;
		else if (n != 0)
			m.stage = -1; /* garbled */
	}
	/* The command's ends are the command's now. */
	if (master >= 0)
		close (master);
	for (int i = 0; stdio && i < 3; i++)
		close (stdio[i]);
	ab_write_all (out, &m, sizeof m);
	return pid;
}

/* The keeper: start the command, report its wait status when it ends,
 * and reap every orphan of its subtree (they are all ours: a child
 * subreaper) until none is left. */
static void __attribute__ ((noreturn))
keeper_run (const struct ab_exec_msg_s *req, char **env, int master, const int *stdio, int out)
{
	int keep[5] = { out, master, stdio ? stdio[0] : -1, stdio ? stdio[1] : -1,
		        stdio ? stdio[2] : -1 };
	pid_t pid, w;
	int status;

	reset_signals ();
	signal (SIGPIPE, SIG_IGN); /* the agent may have let go of this exec */
	prctl (PR_SET_PDEATHSIG, SIGKILL, 0, 0, 0);
	keep_only (keep, sizeof keep / sizeof *keep);
	pid = keeper_start (req, env, master, stdio, out);
	if (pid < 0)
		_exit (125);
	for (;;) {
		w = waitpid (-1, &status, 0);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			break; /* ECHILD: the subtree is empty */
		if (w == pid) {
			struct ab_keeper_msg_s e = { .kind = AB_KEEPER_EXITED,
				                     .pid = pid,
				                     .status = status };
			ab_write_all (out, &e, sizeof e);
		}
	}
	_exit (0);
}

/* The keeper's STARTED report, as ab_agent_spawn would have answered. */
static int
read_started (int fd, const struct ab_exec_msg_s *req, struct ab_child_s *child, ab_error_t *err)
{
	struct ab_keeper_msg_s m;
	ssize_t n;

	do
		n = read (fd, &m, sizeof m);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof m || m.kind != AB_KEEPER_STARTED)
		return ab_error (err, 0, AB_E_INTERNAL,
		                 "the exec's keeper ended before the command");
	if (m.stage == NO_SUBREAPER)
		return NO_SUBREAPER;
	if (m.pid < 0)
		return ab_error (err, m.errnum, m.errnum == EAGAIN ? AB_E_LIMIT : AB_E_SYSTEM,
		                 "fork");
	child->pid = m.pid;
	if (m.stage == 0)
		return 0;
	return failure_error (&(struct spawn_failure_s){ .stage = m.stage, .errnum = m.errnum },
	                      req, child, err);
}

/* Without a keeper: the plain spawn, the child joining a mark of its own
 * where marks exist. */
static int
spawn_marked (const struct ab_exec_msg_s *req, const int *stdio, struct ab_child_s *child,
              struct ab_kept_s *kept, ab_error_t *err)
{
	int procs, r;

	ab_cmdns_ensure ();
	kept->mark_fd = ab_exec_mark_new (&kept->mark_id, &procs);
	child_mark_procs = procs;
	child_own_pid = -1;
	r = ab_agent_spawn (req, stdio, child, err);
	child_mark_procs = -1;
	kept->ns_pid = child_own_pid > 0 ? child_own_pid : child->pid;
	if (procs >= 0)
		close (procs);
	if (r < 0) {
		ab_exec_mark_release (kept->mark_fd, kept->mark_id);
		kept->mark_fd = -1;
	}
	return r;
}

int
ab_agent_spawn_kept (const struct ab_exec_msg_s *req, const int *stdio, struct ab_child_s *child,
                     struct ab_kept_s *kept, ab_error_t *err)
{
	char **env;
	int report[2], e, r;
	pid_t pid;

	kept->keeper = kept->fd = kept->mark_fd = -1;
	if (!ab_keepers_available ())
		return spawn_marked (req, stdio, child, kept, err);
	child->pty_master = -1;
	child->exec_errno = 0;
	if (req->tty && (child->pty_master = open_pty (req, err)) < 0)
		return -1;
	if (pipe2 (report, O_CLOEXEC) < 0) {
		e = errno;
		if (child->pty_master >= 0)
			close (child->pty_master);
		return ab_error (err, e, AB_E_SYSTEM, "pipe");
	}
	/* Here, not in the keeper: a fork's copy of bounding_empty would be
	 * lost with it, and every command would drop the 41 again. */
	empty_bounding_set ();
	env = ab_agent_env_with_preload (req->env);
	/* fork, not vfork: the keeper lives on beside us.  Its copy of our
	 * memory is non-dumpable like ours, and it closes every fd of ours. */
	pid = fork ();
	if (pid == 0)
		keeper_run (req, env, child->pty_master, stdio, report[1]);
	e = errno;
	if (env != req->env)
		ab_agent_env_free (env);
	close (report[1]);
	r = pid < 0 ? -1 : read_started (report[0], req, child, err);
	if (r < 0) {
		close (report[0]);
		if (child->pty_master >= 0)
			close (child->pty_master);
		child->pty_master = -1;
		if (pid < 0)
			return ab_error (err, e, e == EAGAIN ? AB_E_LIMIT : AB_E_SYSTEM, "fork");
		if (r != NO_SUBREAPER)
			return -1;
		keepers_ok = false; /* once: every later exec goes without */
		return spawn_marked (req, stdio, child, kept, err);
	}
	kept->keeper = pid;
	kept->fd = report[0];
	kept->ns_pid = child->pid;
	return 0;
}
