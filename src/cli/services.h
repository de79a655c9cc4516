/* The sidecar services (egress proxy, credential proxy, preview bridge) by
 * command and by multi-call name: one table for `agentbox` (cli/main.c)
 * and the static `agentbox-services` (cli/services-main.c). */
#ifndef AB_CLI_SERVICES_H
#define AB_CLI_SERVICES_H

#include <stdbool.h>
#include <stddef.h>

/* A program reachable as `agentbox COMMAND ...` and by the multi-call
 * name ALIAS (argv[0]). */
struct ab_cli_service_s {
	const char *command, *alias;
	int (*fn) (int argc, char **argv, const char *progname);
};

/* Runs the service argv names and stores its exit status in *status:
 * either by the multi-call name argv[0] (`t3-egress-proxy serve ...`, any
 * directory) or as `PROG COMMAND ...` (argv[1] "egress-proxy", ...; the
 * service's messages then say "PROG COMMAND").  Returns false, touching
 * nothing, when argv names no service.  Call from main before any thread:
 * it names the logger's program. */
bool ab_cli_service_run (int argc, char **argv, const char *prog, int *status);
/* The same over another table (agentbox's own multi-call names beyond the
 * sidecar services, such as agentbox-runc). */
bool ab_cli_service_dispatch (const struct ab_cli_service_s *table, size_t n, int argc, char **argv,
                              const char *prog, int *status);

#endif
