/* agentbox-runc (`agentbox oci ...`): runc's command line.  Global flags
 * first (--root, --log, --log-format, --debug, --systemd-cgroup), then one
 * subcommand.  Errors go to stderr and, with --log, to the log file in the
 * format asked for: conmon and the containerd shim read the JSON log's
 * last "msg". */
#include "cli/oci.h"

#include <errno.h>
#include <fcntl.h>
#include <dirent.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "isolate/cgroup.h"

#define RUNC_COMPAT_VERSION "1.1.5"

static int
one_id (int argc, char **argv, const char *cmd, ab_error_t *err)
{
	if (argc < 2)
		return ab_error (err, 0, AB_E_INVALID, "%s: a container id is required", cmd);
	return 0;
}

static int
cmd_state (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	struct ab_oci_state_s st;
	json_t *j;

	if (one_id (argc, argv, "state", err) < 0 || ab_oci_state_load (g, argv[1], &st, err) < 0)
		return -1;
	j = ab_oci_state_json (g, &st, ab_oci_status (g, &st));
	json_dumpf (j, stdout, JSON_INDENT (2));
	putchar ('\n');
	json_decref (j);
	ab_oci_state_free (&st);
	return 0;
}

static int
cmd_list (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	bool json = false, quiet = false;
	cleanup_dir DIR *d = opendir (g->root);
	json_t *all = json_array ();
	struct dirent *e;

	for (int i = 1; i < argc; i++) {
		if (strcmp (argv[i], "--format") == 0 || strcmp (argv[i], "-f") == 0)
			json = i + 1 < argc && strcmp (argv[++i], "json") == 0;
		else if (strcmp (argv[i], "--format=json") == 0)
			json = true;
		else if (strcmp (argv[i], "-q") == 0 || strcmp (argv[i], "--quiet") == 0)
			quiet = true;
	}
	if (!json && !quiet)
		printf ("ID          PID         STATUS      BUNDLE      CREATED     OWNER\n");
	while (d && (e = readdir (d))) {
		struct ab_oci_state_s st;
		ab_error_t e2 = AB_ERROR_INIT;
		const char *status;
		if (e->d_name[0] == '.' || ab_oci_state_load (g, e->d_name, &st, &e2) < 0)
			continue;
		status = ab_oci_status (g, &st);
		if (json)
			json_array_append_new (all, ab_oci_state_json (g, &st, status));
		else if (quiet)
			printf ("%s\n", st.id);
		else
			printf ("%-12s%-12d%-12s%-12s%-12s%s\n", st.id,
			        strcmp (status, "stopped") ? (int)st.pid : 0, status, st.bundle,
			        st.created, "root");
		ab_oci_state_free (&st);
	}
	if (json) {
		json_dumpf (all, stdout, JSON_COMPACT);
		putchar ('\n');
	}
	json_decref (all);
	(void)err;
	return 0;
}

static int
cmd_kill (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	struct ab_oci_state_s st;
	const char *id = NULL, *sigs = "SIGTERM";
	bool all = false;
	int sig, n = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp (argv[i], "--all") == 0 || strcmp (argv[i], "-a") == 0)
			all = true;
		else if (!id)
			id = argv[i];
		else
			sigs = argv[i];
	}
	if (!id)
		return ab_error (err, 0, AB_E_INVALID, "kill: a container id is required");
	if (ab_oci_signal_parse (sigs, &sig) < 0)
		return ab_error (err, 0, AB_E_INVALID, "invalid signal \"%s\"", sigs);
	if (ab_oci_state_load (g, id, &st, err) < 0)
		return -1;
	if (!ab_oci_alive (&st)) {
		ab_oci_state_free (&st);
		return ab_error (err, 0, AB_E_CONFLICT, "container not running");
	}
	if (all) {
		size_t np;
		cleanup_free pid_t *pids = ab_oci_pids (st.pid, &np);
		for (size_t i = np; i-- > 0;)
			n += kill (pids[i], sig) == 0;
	} else {
		n = kill (st.pid, sig) == 0;
	}
	ab_oci_state_free (&st);
	return n ? 0 : ab_error (err, errno, AB_E_SYSTEM, "kill");
}

/* SIGKILL to init ends the pid namespace; wait (bounded) until it is gone
 * or a zombie its parent still has to reap. */
static void
kill_and_wait (const struct ab_oci_state_s *st)
{
	kill (st->pid, SIGKILL);
	for (int i = 0; i < 500 && ab_oci_alive (st); i++)
		poll (NULL, 0, 10);
}

static void
remove_state (const struct ab_oci_global_s *g, const char *id)
{
	char dir[PATH_MAX], path[PATH_MAX + 32];
	ab_error_t e = AB_ERROR_INIT;

	if (ab_oci_state_dir (g, id, dir, sizeof dir, &e) < 0)
		return;
	snprintf (path, sizeof path, "%s/state.json", dir);
	unlink (path);
	snprintf (path, sizeof path, "%s/start.sock", dir);
	unlink (path);
	snprintf (path, sizeof path, "%s/agent.sock", dir);
	unlink (path);
	rmdir (dir);
}

static int freeze (const struct ab_oci_state_s *st, bool on, ab_error_t *err);

static int
cmd_delete (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	struct ab_oci_state_s st;
	const char *id = NULL, *status;
	bool force = false;
	json_t *state;

	for (int i = 1; i < argc; i++) {
		if (strcmp (argv[i], "--force") == 0 || strcmp (argv[i], "-f") == 0)
			force = true;
		else
			id = argv[i];
	}
	if (!id)
		return ab_error (err, 0, AB_E_INVALID, "delete: a container id is required");
	if (ab_oci_state_load (g, id, &st, err) < 0) {
		ab_error_t bad_id = AB_ERROR_INIT;
		if (force && ab_oci_check_id (id, &bad_id) == 0) {
			ab_error_clear (err);
			return 0;
		}
		return -1;
	}
	status = ab_oci_status (g, &st);
	if (strcmp (status, "stopped") != 0 && strcmp (status, "created") != 0 && !force) {
		ab_error (err, 0, AB_E_CONFLICT,
		          "cannot delete container %s that is not stopped: %s", id, status);
		ab_oci_state_free (&st);
		return -1;
	}
	/* A task frozen by the v1 freezer does not die of SIGKILL: thaw first. */
	if (strcmp (status, "paused") == 0 && freeze (&st, false, err) < 0)
		ab_error_clear (err);
	if (strcmp (status, "stopped") != 0)
		kill_and_wait (&st);
	/* Every group create made goes before the state does: when one
	 * cannot be removed the state stays and a later delete tries again. */
	if (ab_oci_cgroup_remove (st.cgroups, err) < 0) {
		ab_oci_state_free (&st);
		return ab_error_wrap (err, "delete %s", id);
	}
	remove_state (g, id);
	state = ab_oci_state_json (g, &st, "stopped");
	if (ab_oci_hooks (st.config, "poststop", state, err) < 0)
		fprintf (stderr, "agentbox-runc: warning: %s\n", err->msg);
	ab_error_clear (err);
	json_decref (state);
	ab_oci_state_free (&st);
	return 0;
}

static bool
has_pid (const pid_t *pids, size_t n, long pid)
{
	for (size_t i = 0; i < n; i++)
		if (pids[i] == pid)
			return true;
	return false;
}

/* runc's table: the host's ps(1) with the given options (default -ef),
 * its header, and only the rows of the container's processes. */
static int
ps_table (char **ps_args, const pid_t *pids, size_t n, ab_error_t *err)
{
	char *argv[64] = { (char *)"ps" }, line[4096];
	size_t argc = 1;
	int col = -1, p[2];
	FILE *f;
	pid_t child;

	for (size_t i = 0; ps_args[i] && argc < 62; i++)
		argv[argc++] = ps_args[i];
	if (argc == 1)
		argv[argc++] = (char *)"-ef";
	if (pipe2 (p, O_CLOEXEC) < 0 || (child = fork ()) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "ps");
	if (child == 0) {
		dup2 (p[1], 1);
		execvp ("ps", argv);
		_exit (127);
	}
	close (p[1]);
	f = fdopen (p[0], "r");
	for (bool header = true; f && fgets (line, sizeof line, f); header = false) {
		char copy[4096], *save = NULL, *tok;
		int k = 0;
		snprintf (copy, sizeof copy, "%s", line);
		for (tok = strtok_r (copy, " \t\n", &save); tok;
		     tok = strtok_r (NULL, " \t\n", &save), k++) {
			if (header && strcmp (tok, "PID") == 0)
				col = k;
			if (!header && k == col)
				break;
		}
		if (header || (tok && has_pid (pids, n, strtol (tok, NULL, 10))))
			fputs (line, stdout);
	}
	if (f)
		fclose (f);
	waitpid (child, NULL, 0);
	return col < 0 ? ab_error (err, 0, AB_E_SYSTEM, "ps: no PID column") : 0;
}

static int
cmd_ps (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	struct ab_oci_state_s st;
	const char *id = NULL;
	bool json = false;
	size_t n;
	int i, r = 0;
	pid_t *pids;

	for (i = 1; i < argc && !id; i++) {
		if (strcmp (argv[i], "--format") == 0 || strcmp (argv[i], "-f") == 0)
			json = i + 1 < argc && strcmp (argv[++i], "json") == 0;
		else if (strcmp (argv[i], "--format=json") == 0)
			json = true;
		else if (strcmp (argv[i], "--") != 0)
			id = argv[i];
	}
	if (i < argc && strcmp (argv[i], "--") == 0)
		i++;
	if (!id || ab_oci_state_load (g, id, &st, err) < 0)
		return id ? -1 : ab_error (err, 0, AB_E_INVALID, "ps: a container id is required");
	pids = ab_oci_alive (&st) ? ab_oci_pids (st.pid, &n) : (n = 0, xcalloc (1, sizeof *pids));
	if (json) {
		printf ("[");
		for (size_t k = 0; k < n; k++)
			printf ("%s%d", k ? "," : "", (int)pids[k]);
		printf ("]\n");
	} else {
		fflush (stdout);
		r = ps_table (argv + i, pids, n, err);
	}
	free (pids);
	ab_oci_state_free (&st);
	return r;
}

/* pause/resume through the container's freezer (v2 cgroup.freeze on its
 * unified group, else the v1 freezer): a frozen task cannot see or undo
 * it, where a SIGSTOP is seen by a tracer's waitpid and undone by any
 * SIGCONT.  Without a freezer group, every task gets SIGSTOP/SIGCONT. */
static int
freeze (const struct ab_oci_state_s *st, bool on, ab_error_t *err)
{
	size_t i, n;
	json_t *v;

	json_array_foreach (st->cgroups, i, v)
	{
		ab_error_t e = AB_ERROR_INIT;
		int r = ab_cgroup_freeze_path (json_string_value (v), on, &e);
		if (r == 0)
			return 0;
		if (e.kind != AB_E_NOT_FOUND) {
			*err = e;
			return -1;
		}
	}
	cleanup_free pid_t *pids = ab_oci_pids (st->pid, &n);
	for (size_t k = 0; k < n; k++)
		kill (pids[k], on ? SIGSTOP : SIGCONT);
	return 0;
}

static int
cmd_pause (const struct ab_oci_global_s *g, int argc, char **argv, bool on, ab_error_t *err)
{
	struct ab_oci_state_s st;
	const char *status;
	int r = -1;

	if (one_id (argc, argv, on ? "pause" : "resume", err) < 0
	    || ab_oci_state_load (g, argv[1], &st, err) < 0)
		return -1;
	status = ab_oci_status (g, &st);
	if (strcmp (status, on ? "running" : "paused") != 0)
		ab_error (err, 0, AB_E_CONFLICT, "container not %s", on ? "running" : "paused");
	else if (freeze (&st, on, err) == 0) {
		st.paused = on;
		r = ab_oci_state_save (g, &st, err);
	}
	ab_oci_state_free (&st);
	return r;
}

static int
cmd_events (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	struct ab_oci_state_s st;
	const char *id = argv[argc - 1];
	bool stats = false;

	for (int i = 1; i < argc; i++)
		stats |= strcmp (argv[i], "--stats") == 0;
	if (argc < 2 || ab_oci_state_load (g, id, &st, err) < 0)
		return argc < 2 ? ab_error (err, 0, AB_E_INVALID,
		                            "events: a container id is required")
		                : -1;
	for (int round = 0; round < 100000 && ab_oci_alive (&st); round++) {
		size_t n;
		free (ab_oci_pids (st.pid, &n));
		printf ("{\"type\":\"stats\",\"id\":\"%s\",\"data\":{\"pids\":{\"current\":%zu},"
		        "\"cpu\":{\"usage\":{}},\"memory\":{\"usage\":{}}}}\n",
		        st.id, n);
		fflush (stdout);
		if (stats)
			break;
		poll (NULL, 0, 5000);
	}
	ab_oci_state_free (&st);
	return 0;
}

static int
cmd_spec (int argc, char **argv, ab_error_t *err)
{
	const char *bundle = ".";
	char path[PATH_MAX];
	bool rootless = false;
	json_t *s;
	int r;

	for (int i = 1; i < argc; i++) {
		if ((strcmp (argv[i], "--bundle") == 0 || strcmp (argv[i], "-b") == 0)
		    && i + 1 < argc)
			bundle = argv[++i];
		else if (strcmp (argv[i], "--rootless") == 0)
			rootless = true;
	}
	snprintf (path, sizeof path, "%s/config.json", bundle);
	if (access (path, F_OK) == 0)
		return ab_error (err, EEXIST, AB_E_CONFLICT, "File %s exists. Remove it first",
		                 path);
	s = ab_oci_default_spec (rootless);
	r = json_dump_file (s, path, JSON_INDENT (2));
	json_decref (s);
	return r < 0 ? ab_error (err, errno, AB_E_SYSTEM, "write %s", path) : 0;
}

static int
cmd_features (void)
{
	json_t *f = json_pack (
	        "{s:s, s:s, s:[s, s, s, s, s, s], s:[s, s, s, s, s, s, s, s, s, s, s, s, s, s, s, "
	        "s],"
	        " s:{s:[s, s, s, s, s, s, s], s:[], s:{s:b, s:b, s:b}, s:{s:b, s:[], s:[]}, "
	        "s:{s:b}},"
	        " s:{s:s, s:s}}",
	        "ociVersionMin", "1.0.0", "ociVersionMax", AB_OCI_SPEC_VERSION, "hooks", "prestart",
	        "createRuntime", "createContainer", "startContainer", "poststart", "poststop",
	        "mountOptions", "ro", "rw", "nosuid", "suid", "nodev", "dev", "noexec", "exec",
	        "bind", "rbind", "rro", "private", "rprivate", "slave", "rslave", "noatime",
	        "linux", "namespaces", "cgroup", "ipc", "mount", "network", "pid", "user", "uts",
	        "capabilities", "cgroup", "v1", 1, "v2", 1, "systemd", 0, "seccomp", "enabled", 0,
	        "actions", "operators", "apparmor", "enabled", 0, "annotations",
	        "run.agentbox.runtime", "agentbox-runc", "run.agentbox.walls",
	        "user namespace always, no capabilities, no_new_privs, Landlock, agentbox seccomp");
	json_t *sc = json_object_get (json_object_get (f, "linux"), "seccomp");
	static const char *const actions[] = { "SCMP_ACT_ALLOW",       "SCMP_ACT_ERRNO",
		                               "SCMP_ACT_KILL",        "SCMP_ACT_KILL_PROCESS",
		                               "SCMP_ACT_KILL_THREAD", "SCMP_ACT_LOG",
		                               "SCMP_ACT_TRACE",       "SCMP_ACT_TRAP" };
	static const char *const operators[] = { "SCMP_CMP_EQ", "SCMP_CMP_GE", "SCMP_CMP_GT",
		                                 "SCMP_CMP_LE", "SCMP_CMP_LT", "SCMP_CMP_MASKED_EQ",
		                                 "SCMP_CMP_NE" };
	json_object_set_new (sc, "enabled", json_true ());
	for (size_t i = 0; i < sizeof actions / sizeof *actions; i++)
		json_array_append_new (json_object_get (sc, "actions"), json_string (actions[i]));
	for (size_t i = 0; i < sizeof operators / sizeof *operators; i++)
		json_array_append_new (json_object_get (sc, "operators"),
		                       json_string (operators[i]));
	json_dumpf (f, stdout, JSON_INDENT (2));
	putchar ('\n');
	json_decref (f);
	return 0;
}

static void
usage (FILE *out)
{
	fputs ("usage: agentbox-runc [--root DIR] [--log FILE] [--log-format text|json] [--debug]\n"
	       "                     COMMAND [OPTIONS] ID\n"
	       "commands: create run start state list kill delete exec ps pause resume update\n"
	       "          events features spec\n",
	       out);
}

static int
dispatch (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err)
{
	const char *cmd = argv[0];

	if (strcmp (cmd, "create") == 0)
		return ab_oci_cmd_create (g, argc, argv, false, err);
	if (strcmp (cmd, "run") == 0)
		return ab_oci_cmd_create (g, argc, argv, true, err);
	if (strcmp (cmd, "start") == 0)
		return ab_oci_cmd_start (g, argc, argv, err);
	if (strcmp (cmd, "state") == 0)
		return cmd_state (g, argc, argv, err);
	if (strcmp (cmd, "list") == 0 || strcmp (cmd, "ls") == 0)
		return cmd_list (g, argc, argv, err);
	if (strcmp (cmd, "kill") == 0)
		return cmd_kill (g, argc, argv, err);
	if (strcmp (cmd, "delete") == 0 || strcmp (cmd, "rm") == 0)
		return cmd_delete (g, argc, argv, err);
	if (strcmp (cmd, "exec") == 0)
		return ab_oci_cmd_exec (g, argc, argv, err);
	if (strcmp (cmd, "ps") == 0)
		return cmd_ps (g, argc, argv, err);
	if (strcmp (cmd, "pause") == 0)
		return cmd_pause (g, argc, argv, true, err);
	if (strcmp (cmd, "resume") == 0)
		return cmd_pause (g, argc, argv, false, err);
	if (strcmp (cmd, "events") == 0)
		return cmd_events (g, argc, argv, err);
	if (strcmp (cmd, "spec") == 0)
		return cmd_spec (argc, argv, err);
	if (strcmp (cmd, "features") == 0)
		return cmd_features ();
	if (strcmp (cmd, "update") == 0)
		return ab_oci_cmd_update (g, argc, argv, err);
	if (strcmp (cmd, "checkpoint") == 0 || strcmp (cmd, "restore") == 0)
		return ab_error (err, 0, AB_E_INVALID, "%s is not supported", cmd);
	return ab_error (err, 0, AB_E_INVALID, "unknown command '%s'", cmd);
}

static int
open_log (struct ab_oci_global_s *g)
{
	int fd;

	if (!g->log)
		return 0;
	fd = open (g->log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
	if (fd < 0)
		return -1;
	ab_log_set_fd (fd);
	ab_log_set_format (g->json_log ? AB_LOG_JSON : AB_LOG_TEXT);
	return 0;
}

int
ab_cmd_oci (int argc, char **argv, const char *progname)
{
	struct ab_oci_global_s g = { .root = AB_OCI_DEFAULT_ROOT };
	ab_error_t err = AB_ERROR_INIT;
	int i, rc;

	for (i = 1; i < argc && argv[i][0] == '-'; i++) {
		const char *a = argv[i];
		const char *eq = strchr (a, '=');
		const char *val = eq ? eq + 1 : (i + 1 < argc ? argv[i + 1] : NULL);
		size_t klen = eq ? (size_t)(eq - a) : strlen (a);
		bool takes = strncmp (a, "--root", klen) == 0 || strncmp (a, "--log", klen) == 0
		             || strncmp (a, "--log-format", klen) == 0
		             || strncmp (a, "--criu", klen) == 0
		             || strncmp (a, "--rootless", klen) == 0;
		if (strcmp (a, "--version") == 0 || strcmp (a, "-v") == 0) {
			printf ("runc version %s\ncommit: agentbox-runc\nspec: %s\n",
			        RUNC_COMPAT_VERSION, AB_OCI_SPEC_VERSION);
			return 0;
		}
		if (strcmp (a, "--help") == 0 || strcmp (a, "-h") == 0) {
			usage (stdout);
			return 0;
		}
		if (strcmp (a, "--debug") == 0) {
			g.debug = true;
			continue;
		}
		if (strcmp (a, "--systemd-cgroup") == 0) {
			fprintf (stderr,
			         "%s: --systemd-cgroup is not supported: agentbox-runc manages "
			         "cgroupfs itself (PID 1 here is not systemd)\n",
			         progname);
			return 1;
		}
		if (!takes || !val) {
			fprintf (stderr, "%s: unknown global option %s\n", progname, a);
			return 1;
		}
		if (!eq)
			i++;
		if (klen == 6 && strncmp (a, "--root", 6) == 0)
			g.root = val;
		else if (klen == 5 && strncmp (a, "--log", 5) == 0)
			g.log = val;
		else if (klen == 12 && strncmp (a, "--log-format", 12) == 0)
			g.json_log = strcmp (val, "json") == 0;
	}
	if (i >= argc) {
		usage (stderr);
		return 1;
	}
	ab_log_set_program (progname);
	open_log (&g);
	rc = dispatch (&g, argc - i, argv + i, &err);
	if (rc < 0) {
		ab_log (AB_LOG_ERROR, "%s", err.msg);
		if (g.log)
			fprintf (stderr, "%s: %s\n", progname, err.msg);
		/* As runc: exec's own failures are 255, so they differ from the
		 * process's statuses. */
		return strcmp (argv[i], "exec") == 0 ? 255 : 1;
	}
	return rc;
}
