/* What the host saw of a Docker sandbox (OOM kills, peak memory, CPU
 * time), read from the cgroups that hold its agent, as /proc/PID/cgroup
 * names them from the host's cgroup namespace: on v1
 * /sys/fs/cgroup/<controllers>/<path>, on v2 /sys/fs/cgroup/<path> (or
 * .../unified/<path> on a hybrid host).  Read before `docker rm` removes
 * the groups.  Whatever cannot be read stays 0.
 *
 * When the whole container ended (the OOM killer chose its agent, PID 1),
 * those groups are gone with it: then dockerd's own record,
 * .State.OOMKilled, says whether it was an OOM. */
#include "backend/docker-internal.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define INSPECT_TIMEOUT_MS 10000
#define OOM_NOTE_SUFFIX    ".oom"

static bool
read_u64 (const char *dir, const char *file, const char *key, uint64_t *out)
{
	cleanup_free char *path = xasprintf ("%s/%s", dir, file);
	cleanup_file FILE *f = fopen (path, "re");
	char line[256];
	size_t klen = key ? strlen (key) : 0;

	while (f && fgets (line, sizeof line, f)) {
		if (key && (strncmp (line, key, klen) != 0 || line[klen] != ' '))
			continue;
		return sscanf (line + (key ? klen + 1 : 0), "%" SCNu64, out) == 1;
	}
	return false;
}

static void
v1_stats (const char *ctrls, const char *dir, struct ab_sandbox_exit_s *ex)
{
	uint64_t v;

	if (strstr (ctrls, "memory")) {
		if (read_u64 (dir, "memory.oom_control", "oom_kill", &v) && v > 0)
			ex->oom_killed = true;
		if (read_u64 (dir, "memory.max_usage_in_bytes", NULL, &v))
			ex->peak_memory = v;
	}
	if (strstr (ctrls, "cpuacct") && read_u64 (dir, "cpuacct.usage", NULL, &v))
		ex->cpu_ms = v / 1000000;
}

static void
v2_stats (const char *dir, struct ab_sandbox_exit_s *ex)
{
	uint64_t v;

	if (read_u64 (dir, "memory.events", "oom_kill", &v) && v > 0)
		ex->oom_killed = true;
	if (read_u64 (dir, "memory.peak", NULL, &v))
		ex->peak_memory = v;
	if (!ex->cpu_ms && read_u64 (dir, "cpu.stat", "usage_usec", &v))
		ex->cpu_ms = v / 1000;
}

void
ab_docker_cgroup_stats (pid_t pid, struct ab_sandbox_exit_s *ex)
{
	cleanup_free char *path = xasprintf ("/proc/%d/cgroup", (int)pid);
	cleanup_file FILE *f = fopen (path, "re");
	const char *v2_root = access ("/sys/fs/cgroup/cgroup.controllers", F_OK) == 0
	                              ? "/sys/fs/cgroup"
	                              : "/sys/fs/cgroup/unified";
	char line[1024];

	while (f && fgets (line, sizeof line, f)) {
		/* hierarchy-id:controllers:path */
		char *ctrls = strchr (line, ':'), *cg;
		if (!ctrls || !(cg = strchr (++ctrls, ':')))
			continue;
		*cg++ = '\0';
		cg[strcspn (cg, "\n")] = '\0';
		if (strstr (cg, "..") || cg[0] != '/')
			continue;
		if (ctrls[0]) {
			cleanup_free char *dir = xasprintf ("/sys/fs/cgroup/%s%s", ctrls, cg);
			v1_stats (ctrls, dir, ex);
		} else {
			cleanup_free char *dir = xasprintf ("%s%s", v2_root, cg);
			v2_stats (dir, ex);
		}
	}
}

bool
ab_docker_container_oom (const char *client, const char *name, int wait_ms)
{
	char *inspect[] = { (char *)client,     (char *)"inspect",
		            (char *)"--format", (char *)"{{.State.Running}} {{.State.OOMKilled}}",
		            (char *)name,       NULL };
	uint64_t deadline = ab_mono_ms () + (uint64_t)(wait_ms > 0 ? wait_ms : 0);
	char out[128];

	for (;;) {
		ab_error_t ignored = AB_ERROR_INIT;
		if (ab_run_tool (inspect, out, sizeof out, INSPECT_TIMEOUT_MS, &ignored) != 0)
			return false;
		/* dockerd sets both when it handles the exit, a moment after
		 * the agent's death that woke us. */
		if (strncmp (out, "false ", 6) == 0)
			return strncmp (out + 6, "true", 4) == 0;
		if (ab_mono_ms () >= deadline)
			return false;
		usleep (100 * 1000);
	}
}

void
ab_docker_oom_note (const char *service_socket)
{
	cleanup_free char *path = xasprintf ("%s" OOM_NOTE_SUFFIX, service_socket);
	int fd = open (path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd >= 0)
		close (fd);
}

bool
ab_docker_ended_oom (const char *service_socket)
{
	cleanup_free char *path = xasprintf ("%s" OOM_NOTE_SUFFIX, service_socket);

	return unlink (path) == 0;
}
