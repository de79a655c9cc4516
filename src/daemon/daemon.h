/* `agentbox serve`: many long-lived sandboxes behind a REST API on a unix
 * socket (docs/daemon.md). */
#ifndef AB_DAEMON_DAEMON_H
#define AB_DAEMON_DAEMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

struct ab_daemon_config_s {
	char *socket_path;
	char *state_dir;
	char *listen;     /* "127.0.0.1:PORT" or NULL */
	char *token_file; /* required with listen */
	bool listen_any;  /* --listen-non-loopback: the operator insists */
	unsigned max_sandboxes;
	unsigned max_execs; /* concurrent exec streams per sandbox */
	unsigned max_connections;
	size_t max_head;
	size_t max_body;          /* JSON bodies */
	uint64_t max_upload;      /* file uploads, 0 = no limit */
	size_t output_cap;        /* per stream, "wait": true */
	uint64_t idle_timeout_ms; /* a keep-alive connection with nothing to say, and a head */
	/* The E2B-compatible API (docs/e2b.md): off unless e2b_listen is set. */
	char *e2b_listen;      /* "127.0.0.1:PORT" */
	char *e2b_key_file;    /* the API key, "e2b_" + hex */
	bool e2b_generate_key; /* write a new key to e2b_key_file if it does not exist */
	char *e2b_domain;      /* of previews and envd hosts; NULL = "localhost" */
	char **e2b_templates;  /* NAME=SPEC.json or directories of NAME.json; NULL-terminated */
	char *pool_file;       /* warm pools declared at start (docs/pools.md) */
};

/* Defaults: /run/agentbox/agentbox.sock and /var/lib/agentbox for root,
 * $XDG_RUNTIME_DIR/agentbox.sock and $XDG_STATE_HOME/agentbox otherwise
 * (the state directory: ab_default_state_dir, base/fsutil.h). */
void ab_daemon_config_init (struct ab_daemon_config_s *c);
void ab_daemon_config_free (struct ab_daemon_config_s *c);
char *ab_daemon_default_socket (void);

/* Runs until SIGTERM or SIGINT; sandboxes outlive it.  The caller's main
 * ignores SIGPIPE first: a client that goes away must fail a write with
 * EPIPE, not end the daemon. */
int ab_daemon_run (const struct ab_daemon_config_s *c, ab_error_t *err);

/* `agentbox __create-sandbox ID`: the single-threaded spawner the daemon
 * runs for each new sandbox (SECURITY.md 12). */
int ab_daemon_create_child_main (int argc, char **argv);

#endif
