/* The CLI's one error line (cli.h), for every program built from cli/. */
#include <stdio.h>

#include "cli/cli.h"

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
