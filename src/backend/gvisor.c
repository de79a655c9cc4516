/* The gVisor backend (parts and layout in gvisor-internal.h).
 *
 * create() starts a detached monitor (monitor.c); in it, start() makes the
 * sandbox's cgroup (the limits), writes its private directory and OCI
 * bundle, starts the keeper that holds `runsc run` in that cgroup, and
 * returns once the agent accepts at spec->service_socket; the monitor then
 * waits for SIGTERM (destroy), the keeper's end (the sandbox died) or, for
 * `agentbox run`, its caller's end; stats() reads what the cgroup saw (an
 * OOM kill of the whole sandbox included: runsc is gone by then, the group
 * is not) and stop() has the keeper kill and delete the container, then
 * removes the cgroup and the directory.  Nothing is left: no runsc, gofer
 * or sandbox process, no runsc state, no cgroup, no socket. */
#include "backend/gvisor.h"

#include <errno.h>
#include <poll.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/inotify.h>
#include <unistd.h>

#include "backend/agent-exe.h"
#include "backend/gvisor-internal.h"
#include "backend/monitor.h"
#include "backend/pause.h"
#include "backend/oci-bundle.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

/* The gofer creates the agent's socket in the door directory on the host
 * the moment the agent binds it: inotify sees that at once, where polling
 * connect() alone would lag by up to its 50 ms back-off.  Best effort:
 * ab_monitor_wait_socket still decides. */
static bool
socket_created (int in)
{
	char buf[4096] __attribute__ ((aligned (__alignof__(struct inotify_event))));
	ssize_t n = read (in, buf, sizeof buf);

	for (ssize_t off = 0; n > 0 && off < n;) {
		const struct inotify_event *ev = (const struct inotify_event *)(buf + off);
		if (ev->len && strcmp (ev->name, AB_GVISOR_SOCKET_NAME) == 0)
			return true;
		off += (ssize_t)(sizeof *ev + ev->len);
	}
	return false;
}

static void
await_door (const struct ab_gvisor_s *g, int timeout_ms)
{
	cleanup_free char *door = xasprintf ("%s/%s", g->dir, AB_GVISOR_DOOR);
	cleanup_free char *sock = xasprintf ("%s/%s", door, AB_GVISOR_SOCKET_NAME);
	cleanup_close int in = inotify_init1 (IN_CLOEXEC | IN_NONBLOCK);
	struct pollfd p[2] = { { .fd = in, .events = POLLIN },
		               { .fd = g->keeper_pidfd, .events = POLLIN } };

	if (in < 0 || inotify_add_watch (in, door, IN_CREATE) < 0 || access (sock, F_OK) == 0)
		return;
	/* Other names appear first (runsc makes the agent's mount point);
	 * nothing in the sandbox can add any (the door is not theirs). */
	for (int wakeups = 0; wakeups < 16; wakeups++) {
		int r = poll (p, 2, timeout_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0 || p[1].revents || socket_created (in))
			return;
	}
}

/* The limits on the host, all on one group of ours that holds runsc and
 * everything it starts (their ~17 MB idle count against --memory).  Over
 * the memory limit the kernel kills the sentry: the whole sandbox ends.
 * pids is only a backstop there (host threads of runsc, the gofer and the
 * sentry count, see oci-bundle.h); the sandbox's own process limit is the
 * agent's --pids-max inside.  Made without limits too (unlike native,
 * whose start it would slow): the sandbox stays in one group we read and
 * remove, where runsc would otherwise make its own "/<container id>" at
 * the root of every hierarchy.  Only a limit makes the group a must. */
static int
make_cgroup (struct ab_gvisor_s *g, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct ab_limits_s host = spec->limits;
	uint64_t pids = ab_oci_host_pids (spec->limits.pids);
	bool must = host.memory_bytes || host.pids || host.cpu_millis;

	host.pids = !pids                                       ? 0
	            : pids > UINT64_MAX - AB_GVISOR_RUNSC_TASKS ? UINT64_MAX
	                                                        : pids + AB_GVISOR_RUNSC_TASKS;
	if (ab_cgroup_create (id, &host, &g->cgroup, err) == 0)
		return 0;
	if (must)
		return ab_error_wrap (err, "cgroup limits");
	ab_error_clear (err);
	g->cgroup = NULL;
	return 0;
}

static int
gvisor_start (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct ab_gvisor_s *g = ctx;
	char said[300], msg[AB_ERROR_MSG_MAX];

	if (make_cgroup (g, spec, id, err) < 0 || ab_gvisor_prepare (g, spec, err) < 0
	    || ab_gvisor_keeper_start (g, spec, err) < 0)
		return -1;
	await_door (g, AB_GVISOR_START_TIMEOUT_MS);
	if (ab_monitor_wait_socket (spec->service_socket, g->keeper_pidfd,
	                            AB_GVISOR_START_TIMEOUT_MS, err)
	    < 0) {
		ab_gvisor_log_tail (g, said, sizeof said);
		if (said[0]) {
			snprintf (msg, sizeof msg, "%s", err->msg);
			ab_error (err, 0, AB_E_SYSTEM, "%s (runsc: %s)", msg, said);
		}
		return -1;
	}
	return g->keeper_pidfd;
}

static int
gvisor_stop (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err)
{
	struct ab_gvisor_s *g = ctx;

	(void)id, (void)err;
	ab_gvisor_keeper_stop (g);
	/* After runsc: what it left (a sentry stuck in the group) is killed. */
	ab_cgroup_destroy (g->cgroup, &(ab_error_t)AB_ERROR_INIT);
	g->cgroup = NULL;
	if (g->own_dir) {
		ab_gvisor_remove_link (g, spec);
		ab_gvisor_remove_dir (g);
	}
	return 0;
}

static void
gvisor_stats (void *ctx, const struct ab_spec_s *spec, struct ab_sandbox_exit_s *ex,
              ab_error_t *err)
{
	struct ab_gvisor_s *g = ctx;
	struct ab_cgroup_stats_s st;
	ab_error_t ignored = AB_ERROR_INIT;

	(void)err;
	/* Limits are the sandbox's cgroup (pids also gVisor's own count). */
	ab_limits_held_by (ex, &spec->limits, AB_LIMIT_CGROUP);
	if (!g->cgroup || ab_cgroup_stats (g->cgroup, &st, &ignored) < 0)
		return;
	ex->oom_killed = st.oom_killed;
	ex->peak_memory = st.peak_memory;
	ex->cpu_ms = st.cpu_ns / 1000000;
}

static const struct ab_monitor_ops_s gvisor_monitor = {
	.start = gvisor_start,
	.stop = gvisor_stop,
	.stats = gvisor_stats,
	.stop_timeout_ms = AB_GVISOR_STOP_TIMEOUT_MS + 5000,
};

static void
gvisor_free (struct ab_gvisor_s *g)
{
	free (g->runsc);
	free (g->platform);
	free (g->agent);
	free (g->shim);
	free (g->dir);
	free (g->cid);
}

/* tools/statx-shim.c, installed beside the agent; without it commands
 * still run, only coreutils' stat calls fail (runsc 2022-12). */
static char *
shim_beside (const char *agent)
{
	const char *slash = strrchr (agent, '/');
	char *shim = xasprintf ("%.*s/agentbox-statx-shim.so", (int)(slash - agent), agent);

	if (access (shim, R_OK) == 0)
		return shim;
	free (shim);
	return NULL;
}

/* What this backend cannot do, said before anything starts. */
static int
check_spec (const struct ab_spec_s *spec, ab_error_t *err)
{
	if (ab_monitor_require_service (spec, "gvisor", err) < 0)
		return -1;
	/* proxy: still runsc --network=none (loopback only); the agent's
	 * listener on 127.0.0.1 is forwarded as streams (session/forward.h). */
	if (spec->network != AB_NETWORK_NONE && spec->network != AB_NETWORK_PROXY)
		return ab_error (err, 0, AB_E_INVALID,
		                 "the gvisor backend supports --network none and proxy only");
	return 0;
}

static int
gvisor_create (const struct ab_spec_s *spec, const int *stdio, struct ab_sandbox_s *sb,
               ab_error_t *err)
{
	struct ab_gvisor_s g = { .keeper = -1, .keeper_pidfd = -1 };
	int r = -1;

	(void)stdio; /* no fd passing into gVisor */
	ab_sandbox_begin (sb, &ab_backend_gvisor);
	if (check_spec (spec, err) < 0)
		return -1;
	if ((g.runsc = ab_runsc_find (err)) && (g.agent = ab_agent_exe_path (err))
	    && ab_runsc_platform (&g.platform, err) == 0) {
		g.shim = shim_beside (g.agent);
		g.dir = xasprintf ("%s.d", spec->service_socket);
		g.cid = xasprintf ("%s%s", AB_GVISOR_CID_PREFIX, sb->id);
		g.layered = spec->root.layers != NULL;
		r = ab_monitor_spawn (spec, &g, NULL, 0, sb, err);
	}
	gvisor_free (&g);
	return r;
}

/* Precise reasons first (no runsc, not root, a runsc that does not answer
 * as one), then the real thing: a sandbox runs `true`. */
static void
gvisor_probe (struct ab_probe_result_s *result)
{
	ab_error_t err = AB_ERROR_INIT;
	char version[64], reason[sizeof result->reason];
	char *runsc = NULL, *agent = NULL, *platform = NULL;

	memset (result, 0, sizeof *result);
	if (!(runsc = ab_runsc_find (&err)) || ab_runsc_platform (&platform, &err) < 0) {
		/* err says which */
	} else if (geteuid () != 0) {
		ab_error (&err, 0, AB_E_DENIED, "runsc needs root (agentbox runs it rootful)");
	} else if (ab_runsc_version (runsc, version, sizeof version, &err) == 0
	           && (agent = ab_agent_exe_path (&err)) != NULL) {
		ab_backend_service_probe (&ab_backend_gvisor, result);
		snprintf (reason, sizeof reason, "runsc %s%s%s: %s", version,
		          platform ? ", platform " : "", platform ? platform : "", result->reason);
		memcpy (result->reason, reason, sizeof reason);
	}
	if (err.kind != AB_E_NONE)
		snprintf (result->reason, sizeof result->reason, "%s", err.msg);
	free (runsc);
	free (agent);
	free (platform);
}

const struct ab_backend_ops_s ab_backend_gvisor = {
	.name = "gvisor",
	.strength = 30,
	.features = AB_BACKEND_LIMITS | AB_BACKEND_NET_PROXY | AB_BACKEND_PAUSE,
	.wall = "gVisor user-space kernel (runsc, OCI bundle; ptrace platform unless "
	        "AGENTBOX_RUNSC_PLATFORM), network none; inside: seccomp, no capabilities, "
	        "no_new_privs (no Landlock); memory and cpu limits on a host cgroup holding "
	        "runsc, gofer and sentry (over the memory limit the whole sandbox is killed, "
	        "reported as OOM), pids in gVisor's own cgroup",
	.probe = gvisor_probe,
	.create = gvisor_create,
	.kill = ab_monitor_kill,
	.destroy = ab_monitor_destroy,
	.pause = ab_gvisor_pause,
	.resume = ab_gvisor_resume,
	.monitor = &gvisor_monitor,
};
