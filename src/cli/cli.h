/* The agentbox command's subcommands. */
#ifndef AB_CLI_CLI_H
#define AB_CLI_CLI_H

#include "base/error.h"
#include "spec/spec.h"

/* Exit statuses of `agentbox run` (as podman and docker). */
#define AB_EXIT_TIMEOUT     124
#define AB_EXIT_FAILED      125
#define AB_EXIT_CANNOT_EXEC 126
#define AB_EXIT_NOT_FOUND   127

int ab_cmd_run (int argc, char **argv);
/* `agentbox run` in the lean entry (cli/main.c): runs a plain native
 * one-shot sandbox, or returns AB_RUN_NOT_LEAN before anything started
 * when the full program (build/agentbox-full) must run it. */
#define AB_RUN_NOT_LEAN (-1)
int ab_cmd_run_lean (int argc, char **argv);
int ab_cmd_doctor (int argc, char **argv);
/* `agentbox image ...`: argv[0] is "image". */
int ab_cmd_image (int argc, char **argv);
/* `agentbox egress-proxy serve ...` / `t3-egress-proxy serve ...`: argv[0]
 * is the command, argv[1] "serve"; progname prefixes usage and messages. */
int ab_cmd_egress_proxy (int argc, char **argv, const char *progname);
/* `agentbox credential-proxy serve ...` / `t3-credential-proxy serve ...`. */
int ab_cmd_credential_proxy (int argc, char **argv, const char *progname);
/* `agentbox preview-bridge <command> ...` / `t3-preview-bridge <command> ...`:
 * argv[0] is the command, argv[1] the subcommand; progname prefixes usage
 * and messages. */
int ab_cmd_preview_bridge (int argc, char **argv, const char *progname);

/* `agentbox oci ...` / `agentbox-runc ...`: an OCI runtime with runc's
 * command line (cli/oci.h, docs/oci-runtime.md). */
int ab_cmd_oci (int argc, char **argv, const char *progname);

/* Parse `run` options into spec (argv[optind..] is the command). */
int ab_run_parse_options (int argc, char **argv, struct ab_spec_s *spec, ab_error_t *err);

/* The image options of the last ab_run_parse_options: --pull, --state-dir
 * and what the user gave that the image's config must not override. */
struct ab_run_image_s {
	char *state_dir; /* NULL = ab_default_state_dir () */
	int pull;        /* ab_pull_policy */
	bool workdir_given, user_given, command_given;
};
const struct ab_run_image_s *ab_run_image_options (void);

/* Print "agentbox: <message>" on stderr. */
void ab_cli_report (const ab_error_t *err);

#endif
