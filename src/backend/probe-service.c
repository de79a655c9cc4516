/* The functional probe of a service-mode backend (no protocol v1): start
 * a real sandbox, configure it, run `true` through protocol v2 and tear it
 * down.  (The one place backend/ uses the session layer's agent client:
 * a probe is a tiny session.) */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/backend.h"
#include "base/sys.h"
#include "base/cleanup.h"
#include "base/tmpdir.h"
#include "base/xalloc.h"
#include "session/agent-client.h"
#include "session/agent-config.h"

#define PROBE_EXEC_TIMEOUT_MS 20000

static int
run_true (const struct ab_spec_s *spec, ab_error_t *err)
{
	char *argv[] = { (char *)"true", NULL };
	char *env[] = { (char *)"PATH=/usr/bin:/bin", NULL };
	struct ab_agent_proc_spec_s ps = { .argv = argv, .env = env, .cwd = "/" };
	struct ab_agent_event_s ev;
	struct ab_agent_proc_s p;
	ab_agent_conn_t *c = ab_agent_connect (spec->service_socket, err);
	int r;

	if (!c)
		return -1;
	ab_agent_set_timeout (c, PROBE_EXEC_TIMEOUT_MS);
	r = ab_session_configure_agent (c, spec, err);
	if (r == 0)
		r = ab_agent_proc_start (c, &ps, &p, err);
	while (r == 0) {
		int n = ab_agent_proc_next_event (c, &p, &ev, PROBE_EXEC_TIMEOUT_MS, err);
		if (n <= 0) {
			r = n < 0 ? -1 : ab_error (err, 0, AB_E_SYSTEM, "`true` did not finish");
			break;
		}
		if (ev.kind != AB_AGENT_EV_EXIT)
			continue;
		if (!WIFEXITED (ev.exit.wait_status) || WEXITSTATUS (ev.exit.wait_status) != 0)
			r = ab_error (err, 0, AB_E_SYSTEM,
			              "`true` failed (wait status %d, exec errno %d)",
			              ev.exit.wait_status, ev.exit.exec_errno);
		break;
	}
	ab_agent_close (c);
	return r;
}

void
ab_backend_service_probe (const struct ab_backend_ops_s *ops, struct ab_probe_result_s *result)
{
	cleanup_free char *dir = NULL;
	ab_error_t err = AB_ERROR_INIT, derr = AB_ERROR_INIT;
	struct ab_sandbox_exit_s ex;
	struct ab_sandbox_s sb;
	struct ab_spec_s spec;
	uint64_t t0 = ab_mono_us ();
	int r = -1;

	memset (result, 0, sizeof *result);
	ab_spec_init (&spec);
	spec.limits.memory_bytes = 128ULL << 20;
	spec.limits.pids = 32;
	dir = ab_make_temp_dir (NULL, "agentbox-probe", &err);
	if (dir) {
		spec.service_socket = xasprintf ("%s/agent.sock", dir);
		spec.service_tied = true; /* a probe killed midway leaves nothing */
		r = ops->create (&spec, NULL, &sb, &err);
		if (r == 0) {
			r = run_true (&spec, &err);
			if (ops->destroy (&sb, &ex, &derr) < 0 && r == 0) {
				err = derr;
				r = -1;
			}
		}
		unlink (spec.service_socket);
		rmdir (dir);
	}
	ab_spec_free (&spec);
	result->duration_us = ab_mono_us () - t0;
	result->works = r == 0;
	snprintf (result->reason, sizeof result->reason, "%s",
	          r == 0 ? "started a sandbox and ran `true` through its agent" : err.msg);
}
