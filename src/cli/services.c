/* The sidecar services' dispatch: see services.h. */
#include "cli/services.h"

#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"

static const struct ab_cli_service_s services[] = {
	{ "egress-proxy", "t3-egress-proxy", ab_cmd_egress_proxy },
	{ "credential-proxy", "t3-credential-proxy", ab_cmd_credential_proxy },
	{ "preview-bridge", "t3-preview-bridge", ab_cmd_preview_bridge },
};

static const char *
basename_of (const char *path)
{
	const char *slash = path ? strrchr (path, '/') : NULL;
	return slash ? slash + 1 : (path ? path : "");
}

bool
ab_cli_service_dispatch (const struct ab_cli_service_s *table, size_t n, int argc, char **argv,
                         const char *prog, int *status)
{
	/* The logger keeps the pointer: the name must outlive main. */
	static char name[64];
	const char *self = basename_of (argc > 0 ? argv[0] : NULL);

	for (size_t i = 0; i < n; i++)
		if (strcmp (self, table[i].alias) == 0) {
			ab_log_set_program (table[i].alias);
			*status = table[i].fn (argc, argv, table[i].alias);
			return true;
		}
	if (argc < 2)
		return false;
	for (size_t i = 0; i < n; i++)
		if (strcmp (argv[1], table[i].command) == 0) {
			snprintf (name, sizeof name, "%s %s", prog, table[i].command);
			ab_log_set_program (name);
			*status = table[i].fn (argc - 1, argv + 1, name);
			return true;
		}
	return false;
}

bool
ab_cli_service_run (int argc, char **argv, const char *prog, int *status)
{
	return ab_cli_service_dispatch (services, sizeof services / sizeof *services, argc, argv,
	                                prog, status);
}
