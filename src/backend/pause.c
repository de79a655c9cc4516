/* Pause and resume of a running service-mode sandbox, one pair per
 * backend, callable from any process (the daemon) with what
 * ab_sandbox_attach gives: the backend's sandbox id, its monitor and its
 * service socket.
 *
 *   native   the cgroup freezer (isolate/cgroup-freeze.c): every task of
 *            the sandbox, the agent included, stops in the kernel
 *   gvisor   `runsc pause` / `runsc resume`: the sentry stops every task
 *   docker   `docker pause` / `docker unpause` (the container's freezer)
 *
 * Each is idempotent: pausing what is paused and resuming what runs is 0,
 * so a daemon that died between the call and writing its state can just
 * say it again. */
#include "backend/backend.h"

#include <stdio.h>
#include <string.h>

#include "backend/docker-internal.h"
#include "backend/gvisor-internal.h"
#include "backend/monitor.h"
#include "backend/pause.h"
#include "base/cleanup.h"
#include "base/xalloc.h"
#include "isolate/cgroup.h"

#define TOOL_OUT_MAX 2048

static int
check_attached (const struct ab_sandbox_s *sb, ab_error_t *err)
{
	if (!sb->service_socket || !sb->id[0])
		return ab_error (err, 0, AB_E_INTERNAL,
		                 "pause: the sandbox is not a service-mode sandbox");
	return 0;
}

int
ab_native_pause (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return ab_cgroup_freeze_id (sb->id, true, err);
}

int
ab_native_resume (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return ab_cgroup_freeze_id (sb->id, false, err);
}

/* Run a tool; exit 0, or an output that says the state is already the
 * wanted one, is success. */
static int
run_verb (char **argv, const char *already, ab_error_t *err)
{
	char out[TOOL_OUT_MAX];
	int st = ab_run_tool (argv, out, sizeof out, AB_GVISOR_TOOL_TIMEOUT_MS, err);

	if (st == 0 || (st > 0 && already && strstr (out, already)))
		return 0;
	if (st < 0)
		return -1;
	out[strcspn (out, "\n")] = '\0';
	return ab_error (err, 0, AB_E_SYSTEM, "%s %s: exit %d: %s", argv[0], argv[1], st, out);
}

/* `runsc state` says "status": "paused" or "running". */
static int
runsc_status (const struct ab_gvisor_s *g, char *out, size_t cap, ab_error_t *err)
{
	const char *cmd[] = { "state", g->cid, NULL };
	cleanup_strv char **argv = ab_runsc_argv (g, cmd);

	return ab_run_tool (argv, out, cap, AB_GVISOR_TOOL_TIMEOUT_MS, err) == 0 ? 0 : -1;
}

static int
gvisor_verb (struct ab_sandbox_s *sb, bool pause, ab_error_t *err)
{
	struct ab_gvisor_s g = { 0 };
	char out[TOOL_OUT_MAX];
	int r = -1;

	if (check_attached (sb, err) < 0)
		return -1;
	if ((g.runsc = ab_runsc_find (err)) && ab_runsc_platform (&g.platform, err) == 0) {
		g.dir = xasprintf ("%s.d", sb->service_socket);
		g.cid = xasprintf ("%s%s", AB_GVISOR_CID_PREFIX, sb->id);
		if (runsc_status (&g, out, sizeof out, err) < 0)
			r = ab_error_wrap (err, "runsc state %s", g.cid);
		else if (strstr (out, pause ? "\"paused\"" : "\"running\""))
			r = 0;
		else {
			const char *cmd[] = { pause ? "pause" : "resume", g.cid, NULL };
			cleanup_strv char **argv = ab_runsc_argv (&g, cmd);
			r = run_verb (argv, NULL, err);
		}
	}
	free (g.runsc);
	free (g.platform);
	free (g.dir);
	free (g.cid);
	return r;
}

int
ab_gvisor_pause (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return gvisor_verb (sb, true, err);
}

int
ab_gvisor_resume (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return gvisor_verb (sb, false, err);
}

static int
docker_verb (struct ab_sandbox_s *sb, bool pause, ab_error_t *err)
{
	cleanup_free char *name = xasprintf ("agentbox-%s", sb->id);
	char *argv[] = { (char *)ab_docker_client (), (char *)(pause ? "pause" : "unpause"), name,
		         NULL };

	if (check_attached (sb, err) < 0)
		return -1;
	return run_verb (argv, pause ? "is already paused" : "is not paused", err);
}

int
ab_docker_pause (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return docker_verb (sb, true, err);
}

int
ab_docker_resume (struct ab_sandbox_s *sb, ab_error_t *err)
{
	return docker_verb (sb, false, err);
}
