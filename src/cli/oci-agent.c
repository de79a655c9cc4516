/* run.agentbox.agent: our agent beside an engine's container.  init starts
 * agentbox-agent (service mode, PID 1 of a pid namespace of its own below
 * the container's) on <state>/agent.sock before the container's process;
 * `start` configures it as a session configures any sandbox's agent: the
 * file service on the container's root as the process's user, Landlock's
 * writable paths those of the container's processes.  From then on every
 * agent client (agentctl, the session library) runs processes and moves
 * files in the container through it, behind the same walls. */
#include "cli/oci.h"

#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "session/agent-client.h"

#define CONFIGURE_TIMEOUT_MS 5000

bool
ab_oci_wants_agent (const json_t *config)
{
	const char *v = json_string_value (
	        json_object_get (json_object_get (config, "annotations"), AB_OCI_AGENT_ANNOTATION));
	return v && (strcmp (v, "true") == 0 || strcmp (v, "1") == 0);
}

static int
configure (const struct ab_oci_s *c, const char *dir, ab_error_t *err)
{
	char *rw[65] = { 0 }, *roots[] = { (char *)"/", NULL }, path[PATH_MAX];
	struct ab_agent_config_s cfg = {
		.file_roots = roots,
		.rw_paths = rw,
		.file_uid = c->proc.uid,
		.file_gid = c->proc.gid,
	};
	cleanup_close int dirfd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	ab_agent_conn_t *conn;
	int r;

	ab_oci_rw_paths (c, rw, 64);
	/* Through the directory's fd: engines' roots overflow sun_path. */
	snprintf (path, sizeof path, "/proc/self/fd/%d/agent.sock", dirfd);
	if (dirfd < 0 || !(conn = ab_agent_connect (path, err)))
		return ab_error_wrap (err, "the container's agent");
	ab_agent_set_timeout (conn, CONFIGURE_TIMEOUT_MS);
	r = ab_agent_configure (conn, &cfg, err);
	ab_agent_close (conn);
	return r < 0 ? ab_error_wrap (err, "configure the container's agent") : 0;
}

int
ab_oci_agent_configure (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st,
                        ab_error_t *err)
{
	struct ab_oci_s c = { .json = json_incref (st->config) };
	char dir[PATH_MAX];
	int r;

	if (!ab_oci_wants_agent (st->config))
		return 0;
	c.root_readonly =
	        json_is_true (json_object_get (json_object_get (st->config, "root"), "readonly"));
	r = ab_oci_state_dir (g, st->id, dir, sizeof dir, err) < 0
	                    || ab_oci_process_parse (json_object_get (st->config, "process"),
	                                             &c.proc, err)
	                               < 0
	                    || ab_oci_mounts_parse (json_object_get (st->config, "mounts"), &c, err)
	                               < 0
	            ? -1
	            : configure (&c, dir, err);
	ab_oci_config_free (&c);
	return r;
}
