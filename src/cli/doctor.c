#include <stdio.h>

#include "cli/cli.h"

int
ab_cmd_doctor (int argc, char **argv)
{
	(void) argc;
	(void) argv;
	fprintf (stderr, "agentbox: doctor: not yet\n");
	return 125;
}
