/* agentbox-full: every command of agentbox (cli/main.c, the entry users
 * run, execs it for all but a plain native `run`). */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/cmd-mcp.h"
#include "cli/exec-server-cli.h"
#include "cli/services.h"
#include "daemon/daemon.h"
#include "session/agent-config.h"

static const char usage[] =
        "usage: agentbox <command> [OPTIONS]\n"
        "\n"
        "commands:\n"
        "  run [OPTIONS] -- CMD [ARGS...]   run CMD in a fresh sandbox (see agentbox run --help)\n"
        "  doctor [--json]                  what this host can do, and which backend auto picks\n"
        "  serve [OPTIONS]                  the daemon: sandboxes that stay up, behind a REST API\n"
        "  create [RUN OPTIONS] [--ttl D] [--label K=V]   start a sandbox in the daemon; prints "
        "its id\n"
        "  exec [-i] [-t] [-d] ID -- CMD    run CMD in a daemon's sandbox\n"
        "  cp SRC DST                       copy a file in or out (ID:/path on one side)\n"
        "  ls [--json] | ps ID | inspect ID | rm [-f] ID...   the daemon's sandboxes\n"
        "  pause ID | resume ID             freeze / thaw every process of a daemon's sandbox\n"
        "  snapshot create ID [--name N] | snapshot ls [--json] | snapshot rm N...   "
        "filesystem snapshots (create --from-snapshot N)\n"
        "  fork ID [--count N]              new sandboxes from a sandbox's current state\n"
        "  port ID PORT [--listen 127.0.0.1:0]   forward a local port to PORT inside a daemon's "
        "sandbox\n"
        "  browser ID launch | ID OP SESSION [JSON] | ID --cdp-listen 127.0.0.1:0   Chromium in "
        "a daemon's sandbox\n"
        "  exec-server (--sandbox ID | --create [OPTS]) (--stdio | --listen ws://127.0.0.1:0)   "
        "the Codex exec-server protocol for a sandbox\n"
        "  image pull|import|ls|inspect|rm|prune   the image store (docs/images.md)\n"
        "  mcp [--sandbox ID]               an MCP server on stdio: sandbox tools for MCP "
        "clients\n"
        "  egress-proxy serve [OPTIONS]     the SSRF-safe egress proxy (also as t3-egress-proxy)\n"
        "  credential-proxy serve [OPTIONS] inject API keys upstream (also as "
        "t3-credential-proxy)\n"
        "  preview-bridge <serve|request|websocket-framed|cdp-automation|signal>   "
        "(t3-preview-bridge)\n";

/* The daemon and its clients (cli/client.h). */
static const struct {
	const char *name;
	int (*fn) (int argc, char **argv);
} daemon_commands[] = {
	{ "serve", ab_cmd_serve },
	{ "create", ab_cmd_create },
	{ "exec", ab_cmd_exec },
	{ "cp", ab_cmd_cp },
	{ "ls", ab_cmd_ls },
	{ "ps", ab_cmd_ps },
	{ "inspect", ab_cmd_inspect },
	{ "rm", ab_cmd_rm },
	{ "port", ab_cmd_port },
	{ "pause", ab_cmd_pause },
	{ "resume", ab_cmd_resume },
	{ "snapshot", ab_cmd_snapshot },
	{ "fork", ab_cmd_fork },
	{ "pool", ab_cmd_pool },
	{ "browser", ab_cmd_browser },
	{ "__create-sandbox", ab_daemon_create_child_main },
	{ "exec-server", ab_cmd_exec_server },
	{ "mcp", ab_cmd_mcp },
	{ "image", ab_cmd_image },
};

/* The OCI runtime, also as the multi-call name engines are given
 * (docs/oci-runtime.md); not in the static sidecar binary. */
static const struct ab_cli_service_s runtimes[] = {
	{ "oci", "agentbox-runc", ab_cmd_oci },
};

int
main (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	int status;

	/* Once, before any thread: the logger is not reconfigured later. */
	if (ab_log_setup_from_env (&err) < 0) {
		ab_cli_report (&err);
		return 125;
	}
	/* A service-mode backend's probe runs `true` through the session
	 * layer's agent client, which sits above backend/. */
	ab_backend_set_service_exec (ab_session_probe_exec);
	/* The sidecar services, also as multi-call names (argv[0]):
	 * `t3-egress-proxy serve ...` is `agentbox egress-proxy serve ...`. */
	if (ab_cli_service_run (argc, argv, "agentbox", &status)
	    || ab_cli_service_dispatch (runtimes, sizeof runtimes / sizeof *runtimes, argc, argv,
	                                "agentbox", &status))
		return status;
	if (argc < 2) {
		fputs (usage, stderr);
		return 125;
	}
	if (strcmp (argv[1], "run") == 0)
		return ab_cmd_run (argc - 1, argv + 1);
	if (strcmp (argv[1], "doctor") == 0)
		return ab_cmd_doctor (argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof daemon_commands / sizeof *daemon_commands; i++)
		if (strcmp (argv[1], daemon_commands[i].name) == 0)
			return daemon_commands[i].fn (argc - 1, argv + 1);
	if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0
	    || strcmp (argv[1], "help") == 0) {
		fputs (usage, stdout);
		return 0;
	}
	fprintf (stderr, "agentbox: unknown command '%s'\n%s", argv[1], usage);
	return 125;
}
