#include "session/agent-config.h"

#include <sys/wait.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

int
ab_session_configure_agent (ab_agent_conn_t *c, const struct ab_spec_s *spec, ab_error_t *err)
{
	cleanup_strv char **roots = NULL;
	size_t n_rw;
	cleanup_strv char **rw = ab_spec_rw_paths (spec, &n_rw);
	/* The file service acts as the sandbox's user, as its commands do. */
	struct ab_agent_config_s cfg = {
		.nofile = spec->limits.nofile,
		.file_uid = spec->uid,
		.file_gid = spec->gid,
	};

	if (spec->workspace)
		ab_strv_push (&roots, AB_WORKSPACE_DIR);
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (spec->mounts[i].kind != AB_MOUNT_RO_BIND)
			ab_strv_push (&roots, spec->mounts[i].destination);
	if (!roots)
		roots = xcalloc (1, sizeof *roots);
	cfg.file_roots = roots;
	cfg.rw_paths = rw;
	return ab_agent_configure (c, &cfg, err);
}

#define PROBE_EXEC_TIMEOUT_MS 20000

int
ab_session_probe_exec (const struct ab_spec_s *spec, ab_error_t *err)
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
