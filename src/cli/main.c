/* agentbox: run untrusted commands in isolated sandboxes. */
#include <stdio.h>
#include <string.h>

#include "backend/backend.h"
#include "base/log.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/cmd-mcp.h"
#include "cli/exec-server-cli.h"
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
        "  port ID PORT [--listen 127.0.0.1:0]   forward a local port to PORT inside a daemon's "
        "sandbox\n"
        "  browser ID launch | ID OP SESSION [JSON] | ID --cdp-listen 127.0.0.1:0   Chromium in "
        "a daemon's sandbox\n"
        "  exec-server (--sandbox ID | --create [OPTS]) (--stdio | --listen ws://127.0.0.1:0)   "
        "the Codex exec-server protocol for a sandbox\n"
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
	{ "browser", ab_cmd_browser },
	{ "__create-sandbox", ab_daemon_create_child_main },
	{ "exec-server", ab_cmd_exec_server },
	{ "mcp", ab_cmd_mcp },
};

void
ab_cli_report (const ab_error_t *err)
{
	char line[AB_ERROR_MSG_MAX];
	/* One line, always: a message with a newline would read as two. */
	snprintf (line, sizeof line, "%s", err->msg[0] ? err->msg : "unknown error");
	for (char *p = line; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	fprintf (stderr, "agentbox: %s\n", line);
}

/* Sidecar services, also reachable as multi-call names (argv[0]):
 * `t3-egress-proxy serve ...` behaves as `agentbox egress-proxy serve ...`. */
static const struct {
	const char *command, *alias;
	int (*fn) (int argc, char **argv, const char *progname);
} services[] = {
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

int
main (int argc, char **argv)
{
	const char *self = basename_of (argc > 0 ? argv[0] : NULL);
	ab_error_t err = AB_ERROR_INIT;
	char name[64];

	/* Once, before any thread: the logger is not reconfigured later. */
	if (ab_log_setup_from_env (&err) < 0) {
		ab_cli_report (&err);
		return 125;
	}
	/* A service-mode backend's probe runs `true` through the session
	 * layer's agent client, which sits above backend/. */
	ab_backend_set_service_exec (ab_session_probe_exec);
	for (size_t i = 0; i < sizeof services / sizeof *services; i++)
		if (strcmp (self, services[i].alias) == 0) {
			ab_log_set_program (services[i].alias);
			return services[i].fn (argc, argv, services[i].alias);
		}
	if (argc < 2) {
		fputs (usage, stderr);
		return 125;
	}
	if (strcmp (argv[1], "run") == 0)
		return ab_cmd_run (argc - 1, argv + 1);
	if (strcmp (argv[1], "doctor") == 0)
		return ab_cmd_doctor (argc - 1, argv + 1);
	for (size_t i = 0; i < sizeof services / sizeof *services; i++)
		if (strcmp (argv[1], services[i].command) == 0) {
			snprintf (name, sizeof name, "agentbox %s", services[i].command);
			ab_log_set_program (name);
			return services[i].fn (argc - 1, argv + 1, name);
		}
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
