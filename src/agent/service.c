/* Service mode: the agent accepts sessions on the listening fd 4 and serves
 * them from one event loop until SHUTDOWN (or until the monitor kills it).
 * Also here: the sandbox-wide requests (CONFIG, PING, SHUTDOWN) and the
 * SIGCHLD reaper (PID 1 inherits every orphan of the sandbox). */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/service.h"
#include "base/fd.h"
#include "base/openat2-walk.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define DEFAULT_SHUTDOWN_GRACE_MS 5000

struct ab_service_config_s ab_config;
static uint64_t default_nofile;

static struct ab_watch_s listen_w = { .fd = -1 }, sig_w = { .fd = -1 };

static struct {
	bool active;
	struct ab_session_s *s;
	uint32_t req_id;
	struct ab_timer_s grace;
} shutdown_state;

/* ---- CONFIG ------------------------------------------------------------------ */

static bool
strv_equal (char **a, size_t na, char **b, size_t nb)
{
	if (na != nb)
		return false;
	for (size_t i = 0; i < na; i++)
		if (strcmp (a[i], b[i]) != 0)
			return false;
	return true;
}

static bool
same_config (const struct ab_msg_s *m)
{
	return strv_equal (ab_config.roots, ab_config.n_roots, m->roots, m->n_roots)
	       && strv_equal (ab_config.rw_paths, ab_config.n_rw_paths, m->rw_paths, m->n_rw_paths)
	       && ab_config.nofile == m->nofile && ab_config.file_uid == m->uid
	       && ab_config.file_gid == m->gid;
}

/* Roots are opened once, now, before any command of ours ran, without
 * following any symlink: later lookups start from these fds. */
static int
open_roots (char **roots, size_t n, int *fds, ab_error_t *err)
{
	for (size_t i = 0; i < n; i++) {
		fds[i] = -1;
		if (roots[i][0] != '/') {
			ab_error (err, 0, AB_E_INVALID, "file root %s is not absolute", roots[i]);
		} else {
			fds[i] = ab_openat2_or_walk (AT_FDCWD, roots[i],
			                             O_PATH | O_DIRECTORY | O_CLOEXEC, 0,
			                             RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS);
			if (fds[i] < 0)
				ab_error (err, errno,
				          errno == ENOENT ? AB_E_NOT_FOUND : AB_E_INVALID,
				          "file root %s", roots[i]);
		}
		if (fds[i] < 0) {
			while (i-- > 0)
				close (fds[i]);
			return -1;
		}
	}
	return 0;
}

/* The sandbox's root as its commands see it: the agent is PID 1 in the
 * sandbox's mount namespace and shares its root with every command it
 * starts (no backend gives the agent a root of its own), so "/" now is
 * what file reads resolve beneath (RESOLVE_IN_ROOT). */
static int
open_sandbox_root (ab_error_t *err)
{
	int fd = open ("/", O_PATH | O_DIRECTORY | O_CLOEXEC);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "open the sandbox's root");
	return fd;
}

static char **
take_strv (char ***v)
{
	char **out = *v ? *v : xcalloc (1, sizeof (char *));
	*v = NULL;
	return out;
}

void
ab_req_config (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_error_t err = AB_ERROR_INIT;
	int *fds, root_fd = -1;

	if (ab_config.configured) {
		if (same_config (m))
			ab_session_ok (s, m->req_id, NULL);
		else {
			ab_error (&err, 0, AB_E_CONFLICT,
			          "the sandbox is already configured differently");
			ab_session_fail (s, m->req_id, &err);
		}
		return;
	}
	fds = xcalloc (m->n_roots + 1, sizeof *fds);
	if ((root_fd = open_sandbox_root (&err)) < 0
	    || open_roots (m->roots, m->n_roots, fds, &err) < 0) {
		if (root_fd >= 0)
			close (root_fd);
		free (fds);
		ab_session_fail (s, m->req_id, &err);
		return;
	}
	ab_config.sandbox_root_fd = root_fd;
	ab_config.root_fds = fds;
	ab_config.n_roots = m->n_roots;
	ab_config.roots = take_strv (&m->roots);
	ab_config.n_rw_paths = m->n_rw_paths;
	ab_config.rw_paths = take_strv (&m->rw_paths);
	m->n_roots = m->n_rw_paths = 0;
	ab_config.nofile = m->nofile;
	ab_config.file_uid = m->uid;
	ab_config.file_gid = m->gid;
	ab_config.configured = true;
	ab_session_ok (s, m->req_id, NULL);
}

void
ab_req_ping (struct ab_session_s *s, struct ab_msg_s *m)
{
	ab_session_ok (s, m->req_id, NULL);
}

/* ---- SHUTDOWN ------------------------------------------------------------------ */

static void __attribute__ ((noreturn)) finish_shutdown (void)
{
	/* Whatever is left dies with PID 1 (the kernel kills the namespace). */
	kill (-1, SIGKILL);
	if (shutdown_state.s)
		ab_session_ok (shutdown_state.s, shutdown_state.req_id, NULL);
	ab_session_flush_all_blocking ();
	_exit (0);
}

static void
on_grace (struct ab_timer_s *t)
{
	finish_shutdown ();
}

static bool
no_children (void)
{
	return waitid (P_ALL, 0, &(siginfo_t){ 0 }, WEXITED | WNOHANG | WNOWAIT) < 0
	       && errno == ECHILD;
}

void
ab_req_shutdown (struct ab_session_s *s, struct ab_msg_s *m)
{
	uint64_t grace = m->grace_ms ? m->grace_ms : DEFAULT_SHUTDOWN_GRACE_MS;

	if (shutdown_state.active && shutdown_state.s) {
		/* The first asker is answered too: it is all the same shutdown. */
		ab_session_ok (shutdown_state.s, shutdown_state.req_id, NULL);
	}
	shutdown_state.s = s;
	shutdown_state.req_id = m->req_id;
	if (shutdown_state.active)
		return;
	shutdown_state.active = true;
	/* From PID 1, kill(-1) reaches every process of the namespace: a
	 * process that left its group (setsid) is not forgotten. */
	kill (-1, SIGTERM);
	if (no_children ())
		finish_shutdown ();
	ab_timer_arm (&shutdown_state.grace, grace, on_grace, NULL);
}

/* A session that asked for SHUTDOWN and went away is not answered. */
void
ab_service_forget_session (struct ab_session_s *s)
{
	if (shutdown_state.s == s)
		shutdown_state.s = NULL;
}

/* ---- reaper ------------------------------------------------------------------- */

static void
on_sigchld (struct ab_watch_s *w, uint32_t events)
{
	struct signalfd_siginfo si;
	pid_t pid;
	int status;

	while (read (w->fd, &si, sizeof si) == (ssize_t)sizeof si)
		;
	while ((pid = waitpid (-1, &status, WNOHANG)) > 0)
		ab_proc_reaped (pid, status);
	if (shutdown_state.active && pid < 0 && errno == ECHILD)
		finish_shutdown ();
}

static int
setup_signals (ab_error_t *err)
{
	sigset_t set;

	signal (SIGPIPE, SIG_IGN); /* EPIPE is handled where it happens */
	sigemptyset (&set);
	sigaddset (&set, SIGCHLD);
	if (sigprocmask (SIG_BLOCK, &set, NULL) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "sigprocmask");
	return signalfd (-1, &set, SFD_CLOEXEC | SFD_NONBLOCK);
}

static void
on_listen (struct ab_watch_s *w, uint32_t events)
{
	if (!shutdown_state.active)
		ab_session_accept (w->fd);
}

uint64_t
ab_service_default_nofile (void)
{
	return default_nofile;
}

/* Many sessions and processes need many fds here; commands keep the limit
 * the agent was started with (unless CONFIG names one). */
static void
raise_nofile (void)
{
	struct rlimit rl;

	if (getrlimit (RLIMIT_NOFILE, &rl) < 0)
		return;
	default_nofile = rl.rlim_cur;
	rl.rlim_cur = rl.rlim_max;
	setrlimit (RLIMIT_NOFILE, &rl);
}

void
ab_service_run (int listen_fd)
{
	ab_error_t err = AB_ERROR_INIT;
	int sigfd;

	raise_nofile ();
	ab_agent_release_stdio ();
	ab_agent_loopback_up ();
	ab_set_cloexec (listen_fd, 1);
	ab_set_nonblock (listen_fd, 1);
	if (ab_loop_init (&err) < 0 || (sigfd = setup_signals (&err)) < 0)
		_exit (125);
	if (ab_loop_add (&listen_w, listen_fd, EPOLLIN, on_listen, NULL) < 0
	    || ab_loop_add (&sig_w, sigfd, EPOLLIN, on_sigchld, NULL) < 0)
		_exit (125);
	ab_loop_after_batch (ab_session_flush_dirty);
	ab_loop_run ();
}
