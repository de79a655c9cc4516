#include "backend/backend.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "backend/docker.h"
#include "backend/gvisor.h"
#include "backend/microvm.h"
#include "backend/native.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "isolate/cgroup.h"

static const struct ab_backend_ops_s *const all_backends[] = {
	&ab_backend_microvm, &ab_backend_gvisor, &ab_backend_native, &ab_backend_docker, NULL,
};

const struct ab_backend_ops_s *const *
ab_backends (void)
{
	return all_backends;
}

const char *
ab_limit_by_name (ab_limit_by by)
{
	static const char *const names[] = {
		[AB_LIMIT_OFF] = "off", [AB_LIMIT_CGROUP] = "cgroup", [AB_LIMIT_RLIMIT] = "rlimit",
		[AB_LIMIT_VM] = "vm",   [AB_LIMIT_NONE] = "none",
	};
	return by < sizeof names / sizeof *names ? names[by] : "none";
}

void
ab_limits_held_by (struct ab_sandbox_exit_s *ex, const struct ab_limits_s *l, ab_limit_by by)
{
	ex->memory_by = l->memory_bytes ? by : AB_LIMIT_OFF;
	ex->pids_by = l->pids ? by : AB_LIMIT_OFF;
	ex->cpu_by = l->cpu_millis ? by : AB_LIMIT_OFF;
}

const struct ab_backend_ops_s *
ab_backend_find (const char *name)
{
	for (size_t i = 0; all_backends[i]; i++)
		if (strcmp (all_backends[i]->name, name) == 0)
			return all_backends[i];
	return NULL;
}

char *
ab_backend_cache_dir (void)
{
	const char *env = getenv ("AGENTBOX_CACHE_DIR");
	const char *xdg = getenv ("XDG_CACHE_HOME");
	const char *home = getenv ("HOME");

	if (env && env[0] == '/')
		return xstrdup (env);
	if (geteuid () == 0)
		return xstrdup ("/var/cache/agentbox");
	if (xdg && xdg[0] == '/')
		return xasprintf ("%s/agentbox", xdg);
	if (home && home[0] == '/')
		return xasprintf ("%s/.cache/agentbox", home);
	return NULL;
}

/* A cached result is only valid for the same kernel and the same agentbox
 * binary: an upgrade of either re-probes. */
static char *
cache_key (const struct ab_backend_ops_s *ops)
{
	struct utsname u;
	struct stat st;

	if (uname (&u) < 0 || stat ("/proc/self/exe", &st) < 0)
		return NULL;
	return xasprintf ("%s %s %lld.%09ld", ops->name, u.release, (long long)st.st_mtim.tv_sec,
	                  st.st_mtim.tv_nsec);
}

static bool
read_cache (const char *path, const char *key, struct ab_probe_result_s *r)
{
	cleanup_file FILE *f = fopen (path, "re");
	char line[512], reason[200];
	long long stamp;
	int works;
	uint64_t us;

	if (!f || !fgets (line, sizeof line, f)
	    || strcmp (strtok (line, "\n") ? line : "", key) != 0)
		return false;
	if (fscanf (f, "%d %lld %" SCNu64 " %199[^\n]", &works, &stamp, &us, reason) != 4)
		return false;
	if (time (NULL) - stamp > AB_PROBE_CACHE_TTL_S || time (NULL) < stamp)
		return false;
	r->works = works == 1;
	r->duration_us = us;
	snprintf (r->reason, sizeof r->reason, "%s (cached)", reason);
	return true;
}

static void
write_cache (const char *dir, const char *path, const char *key, const struct ab_probe_result_s *r)
{
	cleanup_free char *tmp = xasprintf ("%s.%d.tmp", path, (int)getpid ());
	cleanup_file FILE *f = NULL;

	if (mkdir (dir, 0700) < 0 && errno != EEXIST)
		return;
	f = fopen (tmp, "wxe");
	if (!f)
		return;
	fprintf (f, "%s\n%d %lld %" PRIu64 " %s\n", key, r->works ? 1 : 0, (long long)time (NULL),
	         r->duration_us, r->reason[0] ? r->reason : "-");
	if (fflush (f) != 0 || rename (tmp, path) < 0)
		unlink (tmp);
}

void
ab_backend_probe_cached (const struct ab_backend_ops_s *ops, struct ab_probe_result_s *result)
{
	cleanup_free char *dir = ab_backend_cache_dir ();
	cleanup_free char *key = cache_key (ops);
	cleanup_free char *path = NULL;

	memset (result, 0, sizeof *result);
	if (dir && key) {
		path = xasprintf ("%s/probe-%s", dir, ops->name);
		if (read_cache (path, key, result))
			return;
	}
	ops->probe (result);
	if (path)
		write_cache (dir, path, key, result);
}

const struct ab_backend_ops_s *
ab_backend_select (const char *name, ab_error_t *err)
{
	char reasons[512] = "";
	size_t used = 0;

	if (strcmp (name, "auto") != 0) {
		const struct ab_backend_ops_s *b = ab_backend_find (name);
		if (!b) {
			char names[128] = "auto";
			for (size_t i = 0; all_backends[i]; i++)
				snprintf (names + strlen (names), sizeof names - strlen (names),
				          ", %s", all_backends[i]->name);
			ab_error (err, 0, AB_E_INVALID, "unknown backend '%s' (available: %s)",
			          name, names);
		}
		return b; /* an explicit choice is tried as is: its failure is the error */
	}
	for (size_t i = 0; all_backends[i]; i++) {
		struct ab_probe_result_s r;
		ab_backend_probe_cached (all_backends[i], &r);
		if (r.works)
			return all_backends[i];
		used += (size_t)snprintf (
		        reasons + used, used < sizeof reasons ? sizeof reasons - used : 0,
		        "%s%s: %s", used ? "; " : "", all_backends[i]->name, r.reason);
		if (used >= sizeof reasons)
			used = sizeof reasons - 1;
	}
	ab_error (err, 0, AB_E_SYSTEM, "no working backend (%s); see `agentbox doctor`", reasons);
	return NULL;
}

int
ab_backend_check (const struct ab_backend_ops_s *ops, ab_error_t *err)
{
	bool pause = ops->pause && ops->resume;

	if ((ops->pause == NULL) != (ops->resume == NULL))
		return ab_error (err, 0, AB_E_INTERNAL, "%s: pause without resume", ops->name);
	if (!!(ops->features & AB_BACKEND_PAUSE) != pause)
		return ab_error (err, 0, AB_E_INTERNAL, "%s: the pause flag and slots disagree",
		                 ops->name);
	if (!!(ops->features & AB_BACKEND_SNAPSHOT) != (ops->snapshot != NULL))
		return ab_error (err, 0, AB_E_INTERNAL, "%s: the snapshot flag and slot disagree",
		                 ops->name);
	if (!ops->create || !ops->kill || !ops->destroy || !ops->probe)
		return ab_error (err, 0, AB_E_INTERNAL, "%s: an operation is missing", ops->name);
	if (!ops->monitor || !ops->monitor->start || !ops->monitor->stop
	    || ops->monitor->stop_timeout_ms <= 0)
		return ab_error (err, 0, AB_E_INTERNAL, "%s: its monitor hooks are incomplete",
		                 ops->name);
	return 0;
}

int
ab_backend_sweep_stale (ab_error_t *err)
{
	return ab_cgroup_sweep_stale (err);
}

void
ab_sandbox_attach (struct ab_sandbox_s *sb, const struct ab_backend_ops_s *ops, const char *id,
                   pid_t monitor_pid, const char *service_socket)
{
	memset (sb, 0, sizeof *sb);
	sb->backend = ops;
	snprintf (sb->id, sizeof sb->id, "%s", id);
	sb->agent_fd = -1;
	sb->monitor_fd = -1;
	sb->monitor_pid = monitor_pid;
	sb->service_socket = service_socket;
}
