/* agentbox-services: the sidecar services alone, linked statically (`make
 * static-services`) so one file runs in an image that holds nothing else
 * (scripts/build-images' sidecar image: this binary, its t3-* links and CA
 * certificates).  It is agentbox's multi-call half: `t3-egress-proxy`,
 * `t3-credential-proxy` and `t3-preview-bridge` as argv[0], or
 * `agentbox-services egress-proxy ...`; none of the sandbox commands. */
#include <stdio.h>
#include <string.h>

#include "base/log.h"
#include "cli/cli.h"
#include "cli/services.h"

static const char usage[] =
        "usage: agentbox-services <egress-proxy|credential-proxy|preview-bridge> ...\n"
        "   or: t3-egress-proxy serve [OPTIONS]\n"
        "       t3-credential-proxy serve [OPTIONS]\n"
        "       t3-preview-bridge <serve|request|websocket-framed|cdp-automation|signal> ...\n"
        "(each with --help)\n";

int
main (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	int status;

	ab_log_set_program ("agentbox-services");
	if (ab_log_setup_from_env (&err) < 0) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	/* `agentbox-services egress-proxy ...` speaks as `agentbox
	 * egress-proxy`: the same lines as agentbox's, in logs and tests. */
	if (ab_cli_service_run (argc, argv, "agentbox", &status))
		return status;
	if (argc == 2 && (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0)) {
		fputs (usage, stdout);
		return 0;
	}
	fputs (usage, stderr);
	return AB_EXIT_FAILED;
}
