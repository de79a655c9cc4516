/* The sidecar services (egress proxy, credential proxy, preview bridge) by
 * command and by multi-call name: one table for `agentbox` (cli/main.c)
 * and the static `agentbox-services` (cli/services-main.c). */
#ifndef AB_CLI_SERVICES_H
#define AB_CLI_SERVICES_H

#include <stdbool.h>

/* Runs the service argv names and stores its exit status in *status:
 * either by the multi-call name argv[0] (`t3-egress-proxy serve ...`, any
 * directory) or as `PROG COMMAND ...` (argv[1] "egress-proxy", ...; the
 * service's messages then say "PROG COMMAND").  Returns false, touching
 * nothing, when argv names no service.  Call from main before any thread:
 * it names the logger's program. */
bool ab_cli_service_run (int argc, char **argv, const char *prog, int *status);

#endif
