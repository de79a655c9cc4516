/* `agentbox exec-server`: a thin relay between a Codex client (stdio or a
 * WebSocket listener) and the daemon's GET /v1/sandboxes/{id}/exec-server
 * (docs/exec-server.md).  The protocol itself lives in the daemon
 * (daemon/exec-server.c); this side moves whole messages. */
#ifndef AB_CLI_EXEC_SERVER_CLI_H
#define AB_CLI_EXEC_SERVER_CLI_H

#include <stdbool.h>

#include "base/error.h"
#include "cli/client.h"

/* Largest message either way, as the daemon's (AB_XS_MAX_FRAME), plus
 * room for the base64 of a largest file in an answer. */
#define AB_XS_CLI_MAX_MESSAGE (200U << 20)

struct ab_xs_cli_s {
	const char *host;    /* --host / AGENTBOX_HOST */
	const char *sandbox; /* --sandbox */
	char **create_args;  /* --create's options (NULL-terminated), NULL = no --create */
	bool keep;           /* --keep */
	const char *listen;  /* --listen ws://HOST:PORT */
	const char *token_file;
	bool non_loopback;
};

int ab_cmd_exec_server (int argc, char **argv);

/* The sandbox of one client connection: --sandbox's, or a new one with
 * --create (*made set); ab_xs_cli_end removes a made one unless --keep. */
char *ab_xs_cli_begin (const struct ab_xs_cli_s *o, bool *made, ab_error_t *err);
void ab_xs_cli_end (const struct ab_xs_cli_s *o, const char *id, bool made);

/* One message from the daemon's WebSocket: 1 with a text message
 * (*text, *len, owned), 0 at the end, -1 on error; pings answered. */
int ab_xs_cli_daemon_recv (struct ab_client_s *d, char **text, size_t *len, ab_error_t *err);

/* exec-server-listen.c: serve --listen until killed. */
int ab_xs_cli_listen (const struct ab_xs_cli_s *o, ab_error_t *err);

#endif
