#include "session/agent-config.h"

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "isolate/rootfs.h"

int
ab_session_configure_agent (ab_agent_conn_t *c, const struct ab_spec_s *spec, ab_error_t *err)
{
	cleanup_strv char **roots = NULL;
	size_t n_rw;
	cleanup_strv char **rw = ab_rootfs_rw_paths (spec, &n_rw);
	struct ab_agent_config_s cfg = { .nofile = spec->limits.nofile };

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
