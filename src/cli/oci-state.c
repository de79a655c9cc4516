/* agentbox-runc's state: one directory per container under --root
 * (<root>/<id>/state.json, written atomically), the status runc reports,
 * the container's processes, and the hooks. */
#include "cli/oci.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/clock.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "isolate/cgroup.h"
#include "spec/spec.h"

int
ab_oci_check_id (const char *id, ab_error_t *err)
{
	size_t n = id ? strlen (id) : 0;

	if (n == 0 || n >= sizeof ((struct ab_oci_state_s *)0)->id)
		return ab_error (err, 0, AB_E_INVALID, "invalid container id '%s'", id ? id : "");
	for (const char *p = id; *p; p++)
		if (!(('a' <= *p && *p <= 'z') || ('A' <= *p && *p <= 'Z')
		      || ('0' <= *p && *p <= '9') || *p == '_' || *p == '-' || *p == '.'
		      || *p == '+')
		    || (p == id && *p == '.'))
			return ab_error (err, 0, AB_E_INVALID, "invalid container id '%s'", id);
	return 0;
}

int
ab_oci_state_dir (const struct ab_oci_global_s *g, const char *id, char *buf, size_t size,
                  ab_error_t *err)
{
	if (ab_oci_check_id (id, err) < 0)
		return -1;
	if ((size_t)snprintf (buf, size, "%s/%s", g->root, id) >= size)
		return ab_error (err, 0, AB_E_INVALID, "state path too long");
	return 0;
}

int
ab_oci_state_save (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st,
                   ab_error_t *err)
{
	char dir[PATH_MAX], tmp[PATH_MAX + 16], path[PATH_MAX + 16];
	json_t *j;
	int r;

	if (ab_oci_state_dir (g, st->id, dir, sizeof dir, err) < 0)
		return -1;
	snprintf (tmp, sizeof tmp, "%s/state.json.tmp", dir);
	snprintf (path, sizeof path, "%s/state.json", dir);
	j = json_pack ("{s:s, s:I, s:I, s:s, s:s, s:s, s:O, s:O, s:b, s:b, s:O}", "id", st->id,
	               "pid", (json_int_t)st->pid, "start_time", (json_int_t)st->start_time,
	               "bundle", st->bundle, "rootfs", st->rootfs, "created", st->created,
	               "annotations", st->annotations ? st->annotations : json_object (), "config",
	               st->config ? st->config : json_null (), "started", st->started, "paused",
	               st->paused, "cgroups", st->cgroups ? st->cgroups : json_array ());
	r = json_dump_file (j, tmp, JSON_COMPACT);
	json_decref (j);
	if (r < 0 || rename (tmp, path) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write %s", path);
	return 0;
}

int
ab_oci_state_load (const struct ab_oci_global_s *g, const char *id, struct ab_oci_state_s *st,
                   ab_error_t *err)
{
	char dir[PATH_MAX], path[PATH_MAX + 16];
	json_t *j;

	memset (st, 0, sizeof *st);
	if (ab_oci_state_dir (g, id, dir, sizeof dir, err) < 0)
		return -1;
	snprintf (path, sizeof path, "%s/state.json", dir);
	j = json_load_file (path, 0, NULL);
	if (!j)
		return ab_error (err, ENOENT, AB_E_NOT_FOUND, "container \"%s\" does not exist",
		                 id);
	snprintf (st->id, sizeof st->id, "%s", id);
	st->pid = (pid_t)json_integer_value (json_object_get (j, "pid"));
	st->start_time = (uint64_t)json_integer_value (json_object_get (j, "start_time"));
	st->bundle = xstrdup (json_string_value (json_object_get (j, "bundle")) ?: "");
	st->rootfs = xstrdup (json_string_value (json_object_get (j, "rootfs")) ?: "");
	st->created = xstrdup (json_string_value (json_object_get (j, "created")) ?: "");
	st->annotations = json_incref (json_object_get (j, "annotations"));
	st->config = json_incref (json_object_get (j, "config"));
	st->started = json_is_true (json_object_get (j, "started"));
	st->paused = json_is_true (json_object_get (j, "paused"));
	st->cgroups = json_incref (json_object_get (j, "cgroups"));
	json_decref (j);
	return 0;
}

void
ab_oci_state_free (struct ab_oci_state_s *st)
{
	free (st->bundle);
	free (st->rootfs);
	free (st->created);
	json_decref (st->annotations);
	json_decref (st->config);
	json_decref (st->cgroups);
	memset (st, 0, sizeof *st);
}

bool
ab_oci_alive (const struct ab_oci_state_s *st)
{
	char buf[512];
	const char *f;

	if (st->pid <= 0 || ab_proc_start_time (st->pid) != st->start_time)
		return false;
	/* A zombie (state Z) has exited: its status waits for the caller. */
	f = ab_proc_stat_fields (st->pid, buf, sizeof buf);
	return f && f[0] != 'Z' && f[0] != 'X';
}

const char *
ab_oci_status (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st)
{
	(void)g;
	if (!ab_oci_alive (st))
		return "stopped";
	if (!st->started)
		return "created";
	return st->paused ? "paused" : "running";
}

json_t *
ab_oci_state_json (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st,
                   const char *status)
{
	bool alive = strcmp (status, "stopped") != 0;
	json_t *j = json_pack (
	        "{s:s, s:s, s:I, s:s, s:s, s:s, s:s, s:s, s:O}", "ociVersion", AB_OCI_SPEC_VERSION,
	        "id", st->id, "pid", (json_int_t)(alive ? st->pid : 0), "status", status, "bundle",
	        st->bundle, "rootfs", st->rootfs, "created", st->created, "owner", "",
	        "annotations", st->annotations ? st->annotations : json_object ());
	(void)g;
	return j;
}

static bool
same_ns (pid_t pid, const struct stat *ns)
{
	char path[64];
	struct stat st;

	snprintf (path, sizeof path, "/proc/%d/ns/pid", (int)pid);
	return stat (path, &st) == 0 && st.st_ino == ns->st_ino && st.st_dev == ns->st_dev;
}

pid_t *
ab_oci_pids (pid_t init, size_t *n)
{
	cleanup_dir DIR *d = opendir ("/proc");
	size_t cap = 16;
	pid_t *pids = xcalloc (cap, sizeof *pids);
	char path[64];
	struct dirent *e;
	struct stat ns;

	*n = 0;
	snprintf (path, sizeof path, "/proc/%d/ns/pid", (int)init);
	if (!d || stat (path, &ns) < 0)
		return pids;
	pids[(*n)++] = init;
	while ((e = readdir (d))) {
		pid_t pid = (pid_t)atoi (e->d_name);
		if (pid <= 0 || pid == init || !same_ns (pid, &ns))
			continue;
		if (*n == cap)
			pids = xrealloc (pids, (cap *= 2) * sizeof *pids);
		pids[(*n)++] = pid;
	}
	return pids;
}

int
ab_oci_write_pid_file (const char *path, pid_t pid, ab_error_t *err)
{
	char tmp[PATH_MAX], buf[32];
	int len = snprintf (buf, sizeof buf, "%d", (int)pid);
	cleanup_close int fd = -1;

	if (!path)
		return 0;
	snprintf (tmp, sizeof tmp, "%s.agentbox-tmp", path);
	fd = open (tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
	if (fd < 0 || ab_write_all (fd, buf, (size_t)len) < 0 || rename (tmp, path) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "write pid file %s", path);
	return 0;
}

/* One hook: its path and args, env, the state on stdin, a timeout
 * (runtime-spec: the hook fails when it outlives it).  With `in`, it runs
 * as a process of that container (its walls, its root as cwd). */
static int
run_hook (const json_t *h, const char *state, const struct ab_oci_s *in, ab_error_t *err)
{
	const char *path = json_string_value (json_object_get (h, "path"));
	json_int_t timeout = json_integer_value (json_object_get (h, "timeout"));
	cleanup_strv char **args = NULL, **env = NULL;
	int in_pipe[2], status = 0;
	uint64_t deadline;
	pid_t pid;
	size_t i;
	json_t *v;

	if (!path)
		return ab_error (err, 0, AB_E_INVALID, "hook without a path");
	json_array_foreach (json_object_get (h, "args"), i, v)
	        ab_strv_push (&args, json_string_value (v) ?: "");
	if (!args)
		ab_strv_push (&args, path);
	ab_strv_push (&env, "PATH=/usr/sbin:/usr/bin:/sbin:/bin");
	json_array_foreach (json_object_get (h, "env"), i, v)
	        ab_strv_push (&env, json_string_value (v) ?: "");
	if (pipe2 (in_pipe, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	pid = fork ();
	if (pid < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "fork");
	if (pid == 0) {
		struct ab_oci_process_s p = {
			.args = args, .env = env, .path = path, .cwd = (char *)"/"
		};
		dup2 (in_pipe[0], 0);
		if (in)
			ab_oci_exec_process (&p, in, -1, 0, NULL);
		else
			execve (path, args, env);
		_exit (127);
	}
	close (in_pipe[0]);
	signal (SIGPIPE, SIG_IGN);
	ab_write_all (in_pipe[1], state, strlen (state));
	close (in_pipe[1]);
	deadline = ab_mono_ms () + (uint64_t)(timeout > 0 ? timeout : AB_OCI_HOOK_TIMEOUT_S) * 1000;
	while (waitpid (pid, &status, WNOHANG) == 0) {
		if (ab_mono_ms () > deadline) {
			kill (pid, SIGKILL);
			waitpid (pid, NULL, 0);
			return ab_error (
			        err, ETIMEDOUT, AB_E_LIMIT, "hook %s timed out after %llds", path,
			        (long long)(timeout > 0 ? timeout : AB_OCI_HOOK_TIMEOUT_S));
		}
		poll (NULL, 0, 5);
	}
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0)
		return ab_error (err, 0, AB_E_SYSTEM, "hook %s failed (status %d)", path,
		                 WIFEXITED (status) ? WEXITSTATUS (status)
		                                    : 128 + WTERMSIG (status));
	return 0;
}

static int
hooks (const json_t *config, const char *kind, const json_t *state, const struct ab_oci_s *in,
       ab_error_t *err)
{
	const json_t *list = json_object_get (json_object_get (config, "hooks"), kind);
	cleanup_free char *text = NULL;
	size_t i;
	json_t *h;

	if (json_array_size (list) == 0)
		return 0;
	text = json_dumps (state, JSON_COMPACT);
	json_array_foreach (list, i, h)
	{
		if (run_hook (h, text, in, err) < 0)
			return ab_error_wrap (err, "%s hook", kind);
	}
	return 0;
}

int
ab_oci_hooks (const json_t *config, const char *kind, const json_t *state, ab_error_t *err)
{
	return hooks (config, kind, state, NULL, err);
}

int
ab_oci_hooks_in (const struct ab_oci_s *c, const char *kind, const json_t *state, ab_error_t *err)
{
	return hooks (c->json, kind, state, c, err);
}

/* "N:ctrls:/path" of /proc/PID/cgroup to the directory: each v1
 * controller at /sys/fs/cgroup/<first ctrl>, v2 at .../unified on this
 * hybrid or at /sys/fs/cgroup on a pure v2 host. */
json_t *
ab_oci_cgroup_dirs (pid_t init, const char *id, const char *at)
{
	char path[64], line[1024], want[PATH_MAX];
	cleanup_file FILE *f = NULL;
	json_t *dirs = json_array ();

	snprintf (path, sizeof path, "/proc/%d/cgroup", (int)init);
	if (at && at[0])
		snprintf (want, sizeof want, "%s%s", at[0] == '/' ? "" : "/", at);
	else
		snprintf (want, sizeof want, "/agentbox-%s", id);
	if (!(f = fopen (path, "re")))
		return dirs;
	while (fgets (line, sizeof line, f)) {
		char *c1 = strchr (line, ':'), *c2 = c1 ? strchr (c1 + 1, ':') : NULL,
		     dir[PATH_MAX];
		struct stat st;
		size_t len;
		if (!c2)
			continue;
		c2[strcspn (c2, "\n")] = '\0';
		len = strlen (c2);
		if (len < strlen (want) || strcmp (c2 + len - strlen (want), want) != 0)
			continue;
		*c2 = '\0';
		c1[strcspn (c1, ",")] = '\0';
		if (c1[1])
			snprintf (dir, sizeof dir, "/sys/fs/cgroup/%s%s", c1 + 1, c2 + 1);
		else if (snprintf (dir, sizeof dir, "/sys/fs/cgroup/unified%s", c2 + 1) > 0
		         && stat (dir, &st) < 0)
			snprintf (dir, sizeof dir, "/sys/fs/cgroup%s", c2 + 1);
		if (stat (dir, &st) == 0 && S_ISDIR (st.st_mode))
			json_array_append_new (dirs, json_string (dir));
	}
	return dirs;
}

/* Only directories of our own groups, whatever a state file says. */
static bool
own_group (const char *d)
{
	return d && strncmp (d, "/sys/fs/cgroup/", 15) == 0 && !strstr (d, "/../");
}

int
ab_oci_cgroup_remove (const json_t *dirs, ab_error_t *err)
{
	const char *paths[16];
	size_t i, n = 0;
	json_t *v;

	json_array_foreach (dirs, i, v)
	{
		if (own_group (json_string_value (v)) && n < sizeof paths / sizeof *paths)
			paths[n++] = json_string_value (v);
	}
	return ab_cgroup_remove_paths (paths, n, err);
}

int
ab_oci_cgroup_join (const json_t *dirs, ab_error_t *err)
{
	size_t i;
	json_t *v;

	json_array_foreach (dirs, i, v)
	{
		const char *d = json_string_value (v);
		char path[PATH_MAX];
		cleanup_close int fd = -1;
		if (!own_group (d))
			continue;
		snprintf (path, sizeof path, "%s/cgroup.procs", d);
		fd = open (path, O_WRONLY | O_CLOEXEC);
		if (fd < 0 || ab_write_all (fd, "0", 1) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "join cgroup %s", d);
	}
	return 0;
}
