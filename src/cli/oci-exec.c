/* agentbox-runc exec, and the walls of every process of a container.
 *
 * exec forks a joiner that enters the container's namespaces (net, ipc,
 * uts, pid, mount, then user) and forks the process inside the pid
 * namespace; the joiner exits at once, so the process is re-parented to
 * us (a child subreaper) and, once we exit with --detach, to our caller.
 *
 * The walls, in a forked child right before execve (minijail's order,
 * SECURITY.md 7): rlimits, cwd, securebits locked and the bounding set
 * emptied, groups and ids, the remaining capabilities cleared,
 * no_new_privs, Landlock, our seccomp filter last.  The bundle asks for
 * capabilities; it gets none (never more than it asks). */
#include "cli/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <grp.h>
#include <limits.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "agent/agent.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "spec/spec.h"

extern char **environ;

static void
fail (const char *what)
{
	fprintf (stderr, "agentbox-runc: %s: %s\n", what, strerror (errno));
	_exit (errno == ENOENT ? 127 : 126);
}

size_t
ab_oci_rw_paths (const struct ab_oci_s *c, char **out, size_t max)
{
	size_t n = 0;

	if (!c->root_readonly)
		out[n++] = (char *)"/";
	for (size_t i = 0; i < c->n_mounts && n < max; i++)
		if (!(c->mounts[i].attr & MOUNT_ATTR_RDONLY)
		    && strcmp (c->mounts[i].type ?: "", "proc") != 0
		    && strcmp (c->mounts[i].type ?: "", "sysfs") != 0)
			out[n++] = c->mounts[i].destination;
	return n;
}

static void
stdio_and_fds (int tty, int preserve)
{
	setsid ();
	if (tty >= 0) {
		ioctl (tty, TIOCSCTTY, 0);
		for (int fd = 0; fd < 3; fd++)
			dup2 (tty, fd);
	}
	for (int fd = 3; fd < 3 + preserve; fd++)
		fcntl (fd, F_SETFD, 0);
	ab_sys_close_range ((unsigned)(3 + preserve), ~0U, CLOSE_RANGE_CLOEXEC);
}

static void
ids (const struct ab_oci_process_s *p)
{
	gid_t *groups = xcalloc (p->n_groups + 1, sizeof *groups);

	groups[0] = p->gid;
	memcpy (groups + 1, p->groups, p->n_groups * sizeof *groups);
	if (setgroups (p->n_groups + 1, groups) < 0 && errno != EPERM)
		fail ("setgroups");
	free (groups);
	if (setresgid (p->gid, p->gid, p->gid) < 0)
		fail ("setgid");
	if (setresuid (p->uid, p->uid, p->uid) < 0)
		fail ("setuid");
}

void
ab_oci_exec_process (const struct ab_oci_process_s *p, const struct ab_oci_s *c, int tty,
                     int preserve, void *seccomp)
{
	char *rw[64];
	size_t n = ab_oci_rw_paths (c, rw, 64);
	int abi;

	stdio_and_fds (tty, preserve);
	/* Raising a hard limit needs the host's CAP_SYS_RESOURCE: create set
	 * the bundle's limits on init from outside (ab_oci_set_rlimits); an
	 * exec'd process gets its own here, where lowering always works. */
	for (size_t i = 0; i < p->n_rlimits; i++) {
		struct rlimit rl = { p->rlimits[i].soft, p->rlimits[i].hard };
		if (setrlimit (p->rlimits[i].resource, &rl) < 0 && errno != EPERM)
			fail ("setrlimit");
	}
	if (p->has_oom) {
		FILE *f = fopen ("/proc/self/oom_score_adj", "we");
		if (f) {
			fprintf (f, "%d", p->oom_score_adj);
			fclose (f);
		}
	}
	if (p->has_umask)
		umask (p->umask);
	if (chdir (p->cwd) < 0)
		fail (p->cwd);
	if (ab_confine_lock_capabilities () < 0)
		fail ("capabilities");
	ids (p);
	if (ab_confine_clear_capabilities () < 0)
		fail ("capabilities");
	/* Always, whatever noNewPrivileges says: part of our walls. */
	if (prctl (PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		fail ("no_new_privs");
	if (ab_confine_landlock (rw, n, &abi) < 0)
		fail ("landlock");
	if (ab_confine_seccomp () < 0)
		fail ("seccomp");
	/* The bundle's filter on top of ours: it can only take more away. */
	if (ab_oci_seccomp_load (seccomp) < 0)
		fail ("the bundle's seccomp filter");
	environ = p->env;
	execvp (p->path ? p->path : p->args[0], p->args);
	fail (p->path ? p->path : p->args[0]);
}

static const int join_order[] = { CLONE_NEWNET, CLONE_NEWIPC, CLONE_NEWUTS,
	                          CLONE_NEWPID, CLONE_NEWNS,  CLONE_NEWUSER };
static const char *const join_names[] = { "net", "ipc", "uts", "pid", "mnt", "user" };

static int
open_ns (pid_t pid, int fds[6], ab_error_t *err)
{
	char self[64], path[64];
	struct stat a, b;

	for (size_t i = 0; i < 6; i++) {
		snprintf (path, sizeof path, "/proc/%d/ns/%s", (int)pid, join_names[i]);
		snprintf (self, sizeof self, "/proc/self/ns/%s", join_names[i]);
		fds[i] = -1;
		if (stat (path, &a) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "%s", path);
		if (stat (self, &b) == 0 && a.st_ino == b.st_ino)
			continue; /* shared with us (a joined network namespace): nothing to enter
			           */
		if ((fds[i] = open (path, O_RDONLY | O_CLOEXEC)) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "%s", path);
	}
	return 0;
}

struct exec_s {
	struct ab_oci_process_s proc;
	const char *pid_file, *console, *process_file, *cwd, *user;
	char **env;
	gid_t *groups;
	size_t n_groups;
	bool detach, tty, ignore_paused;
	int preserve_fds;
	const json_t *cgroups;
	void *seccomp;
};

static int
parse_user (const char *s, struct ab_oci_process_s *p, ab_error_t *err)
{
	char *end;

	p->uid = (uid_t)strtoul (s, &end, 10);
	if (*end == ':')
		p->gid = (gid_t)strtoul (end + 1, &end, 10);
	if (*end)
		return ab_error (err, 0, AB_E_INVALID, "--user %s: want UID[:GID]", s);
	return 0;
}

static int
exec_process (struct exec_s *ex, const struct ab_oci_s *c, char **args, ab_error_t *err)
{
	struct ab_oci_process_s *p = &ex->proc;

	if (ex->process_file) {
		json_error_t je;
		json_t *j = json_load_file (ex->process_file, 0, &je);
		int r;
		if (!j)
			return ab_error (err, 0, AB_E_INVALID, "%s: %s", ex->process_file, je.text);
		r = ab_oci_process_parse (j, p, err);
		json_decref (j);
		return r;
	}
	if (!args[0])
		return ab_error (err, 0, AB_E_INVALID, "exec: no command");
	for (size_t i = 0; args[i]; i++)
		ab_strv_push (&p->args, args[i]);
	for (size_t i = 0; c->proc.env && c->proc.env[i]; i++)
		ab_strv_push (&p->env, c->proc.env[i]);
	for (size_t i = 0; ex->env && ex->env[i]; i++)
		ab_strv_push (&p->env, ex->env[i]);
	p->cwd = xstrdup (ex->cwd ? ex->cwd : c->proc.cwd);
	p->uid = c->proc.uid;
	p->gid = c->proc.gid;
	p->umask = c->proc.umask;
	p->has_umask = c->proc.has_umask;
	p->terminal = ex->tty;
	p->groups = ex->groups;
	p->n_groups = ex->n_groups;
	ex->groups = NULL;
	return ex->user ? parse_user (ex->user, p, err) : 0;
}

static int
parse_exec (struct exec_s *ex, int argc, char **argv, ab_error_t *err)
{
	static const struct option opts[] = {
		{ "process", required_argument, NULL, 'p' },
		{ "pid-file", required_argument, NULL, 'P' },
		{ "console-socket", required_argument, NULL, 'c' },
		{ "cwd", required_argument, NULL, 'w' },
		{ "env", required_argument, NULL, 'e' },
		{ "user", required_argument, NULL, 'u' },
		{ "tty", no_argument, NULL, 't' },
		{ "detach", no_argument, NULL, 'd' },
		{ "preserve-fds", required_argument, NULL, 'f' },
		{ "cap", required_argument, NULL, 'n' },
		{ "no-new-privs", no_argument, NULL, 'N' },
		{ "apparmor", required_argument, NULL, 'n' },
		{ "process-label", required_argument, NULL, 'n' },
		{ "additional-gids", required_argument, NULL, 'G' },
		{ "ignore-paused", no_argument, NULL, 'I' },
		{ "cgroup", required_argument, NULL, 'n' },
		{ "pidfd-socket", required_argument, NULL, 'n' },
		{ NULL, 0, NULL, 0 },
	};
	int o;

	optind = 1;
	while ((o = getopt_long (argc, argv, "+p:e:u:tdc:", opts, NULL)) != -1)
		switch (o) {
		case 'p': ex->process_file = optarg; break;
		case 'P': ex->pid_file = optarg; break;
		case 'c': ex->console = optarg; break;
		case 'w': ex->cwd = optarg; break;
		case 'e': ab_strv_push (&ex->env, optarg); break;
		case 'u': ex->user = optarg; break;
		case 'I': ex->ignore_paused = true; break;
		case 'G':
			ex->groups = xrealloc (ex->groups, (ex->n_groups + 1) * sizeof *ex->groups);
			ex->groups[ex->n_groups++] = (gid_t)strtoul (optarg, NULL, 10);
			break;
		case 't': ex->tty = true; break;
		case 'd': ex->detach = true; break;
		case 'f': ex->preserve_fds = atoi (optarg); break;
		case 'n':
		case 'N': break;
		default: return ab_error (err, 0, AB_E_INVALID, "exec: bad option");
		}
	if (optind >= argc)
		return ab_error (err, 0, AB_E_INVALID, "exec: no container id");
	return optind;
}

/* The joiner: into the namespaces, then the process inside the pid
 * namespace; its pid goes back on `report`. */
static void __attribute__ ((noreturn))
joiner (struct exec_s *ex, const struct ab_oci_s *c, const int ns[6], int console, int report)
{
	ab_error_t err = AB_ERROR_INIT;
	int tty = -1;
	pid_t pid;

	prctl (PR_SET_DUMPABLE, 0, 0, 0, 0);
	/* Into the container's groups first, so its limits hold the process
	 * and delete finds (and kills) it there. */
	if (ab_oci_cgroup_join (ex->cgroups, &err) < 0) {
		fprintf (stderr, "agentbox-runc: %s\n", err.msg);
		_exit (126);
	}
	for (size_t i = 0; i < 6; i++)
		if (ns[i] >= 0 && setns (ns[i], join_order[i]) < 0)
			fail (join_names[i]);
	if (chdir ("/") < 0)
		fail ("chdir /");
	pid = fork ();
	if (pid == 0) {
		close (report);
		if (setresgid (0, 0, 0) < 0 || setresuid (0, 0, 0) < 0)
			fail ("become the container's root");
		if (console >= 0 && (tty = ab_oci_console_make (console, &ex->proc, &err)) < 0) {
			fprintf (stderr, "agentbox-runc: %s\n", err.msg);
			_exit (126);
		}
		ab_oci_exec_process (&ex->proc, c, tty, ex->preserve_fds, ex->seccomp);
		_exit (127);
	}
	if (write (report, &pid, sizeof pid) != sizeof pid)
		_exit (1);
	_exit (pid > 0 ? 0 : 1);
}

static int
run_exec (struct exec_s *ex, const struct ab_oci_s *c, pid_t init, ab_error_t *err)
{
	cleanup_close int console = -1, peer = -1;
	int ns[6], rep[2], ws = 0;
	pid_t j, pid = -1;

	if (ex->proc.terminal && !ex->console) {
		/* Attached without a console socket: the pty comes to us. */
		int pair[2];
		if (ex->detach)
			return ab_error (err, 0, AB_E_INVALID,
			                 "exec -d --tty needs --console-socket");
		if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, pair) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
		peer = pair[0];
		console = pair[1];
	} else if (ex->proc.terminal && (console = ab_oci_console_connect (ex->console, err)) < 0) {
		return -1;
	}
	if (open_ns (init, ns, err) < 0)
		return -1;
	if (pipe2 (rep, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	prctl (PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0);
	if ((j = fork ()) == 0) {
		close (rep[0]);
		joiner (ex, c, ns, console, rep[1]);
	}
	close (rep[1]);
	for (size_t i = 0; i < 6; i++)
		if (ns[i] >= 0)
			close (ns[i]);
	if (j < 0 || read (rep[0], &pid, sizeof pid) != sizeof pid) {
		close (rep[0]);
		if (j > 0)
			waitpid (j, NULL, 0);
		return ab_error (err, 0, AB_E_SYSTEM, "could not enter the container");
	}
	close (rep[0]);
	waitpid (j, NULL, 0);
	if (ab_oci_write_pid_file (ex->pid_file, pid, err) < 0)
		return -1;
	if (ex->detach)
		return 0;
	if (peer >= 0) {
		close (console);
		console = -1;
		ab_oci_relay_pty (peer);
	}
	while (waitpid (pid, &ws, 0) < 0 && errno == EINTR)
		;
	return WIFEXITED (ws) ? WEXITSTATUS (ws) : 128 + WTERMSIG (ws);
}

/* The container's own config decides the process's defaults and
 * Landlock's paths (its mounts). */
static int
exec_in (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st, struct exec_s *ex,
         struct ab_oci_s *c, char **args, ab_error_t *err)
{
	const char *status = ab_oci_status (g, st);

	/* runc also execs into a created container (its init waits). */
	if (strcmp (status, "running") != 0 && strcmp (status, "created") != 0
	    && !(ex->ignore_paused && strcmp (status, "paused") == 0))
		return ab_error (err, 0, AB_E_CONFLICT, "cannot exec in a %s container", status);
	c->json = json_incref (st->config);
	c->bundle = xstrdup (st->bundle);
	c->root_readonly =
	        json_is_true (json_object_get (json_object_get (st->config, "root"), "readonly"));
	if (ab_oci_process_parse (json_object_get (st->config, "process"), &c->proc, err) < 0
	    || ab_oci_mounts_parse (json_object_get (st->config, "mounts"), c, err) < 0
	    || exec_process (ex, c, args, err) < 0
	    || ab_oci_seccomp_compile (
	               json_object_get (json_object_get (st->config, "linux"), "seccomp"),
	               &ex->seccomp, err)
	               < 0)
		return -1;
	return run_exec (ex, c, st->pid, err);
}

int
ab_oci_cmd_exec (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	struct exec_s ex = { 0 };
	struct ab_oci_s c = { 0 };
	struct ab_oci_state_s st;
	int at = parse_exec (&ex, argc, argv, err), rc;

	if (at < 0 || ab_oci_state_load (g, argv[at], &st, err) < 0)
		return -1;
	ex.cgroups = st.cgroups;
	rc = exec_in (g, &st, &ex, &c, argv + at + 1, err);
	ab_oci_seccomp_free (ex.seccomp);
	ab_oci_process_free (&ex.proc);
	ab_cleanup_strvp (&ex.env);
	ab_oci_config_free (&c);
	ab_oci_state_free (&st);
	return rc;
}
