/* agentbox: run untrusted commands in isolated sandboxes. */
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"

static const char usage[] =
	"usage: agentbox <command> [OPTIONS]\n"
	"\n"
	"commands:\n"
	"  run [OPTIONS] -- CMD [ARGS...]   run CMD in a fresh sandbox (see agentbox run --help)\n"
	"  doctor [--json]                  what this host can do, and which backend auto picks\n";

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

int
main (int argc, char **argv)
{
	if (argc < 2) {
		fputs (usage, stderr);
		return 125;
	}
	if (strcmp (argv[1], "run") == 0)
		return ab_cmd_run (argc - 1, argv + 1);
	if (strcmp (argv[1], "doctor") == 0)
		return ab_cmd_doctor (argc - 1, argv + 1);
	if (strcmp (argv[1], "--help") == 0 || strcmp (argv[1], "-h") == 0 || strcmp (argv[1], "help") == 0) {
		fputs (usage, stdout);
		return 0;
	}
	fprintf (stderr, "agentbox: unknown command '%s'\n%s", argv[1], usage);
	return 125;
}
