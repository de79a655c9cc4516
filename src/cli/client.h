/* The CLI's side of the daemon's API: `agentbox create`, `exec`, `cp`,
 * `ls`, `ps`, `inspect`, `rm` talk HTTP/1.1 to `agentbox serve` over its
 * unix socket (AGENTBOX_HOST or --host, else the default socket). */
#ifndef AB_CLI_CLIENT_H
#define AB_CLI_CLIENT_H

#include <jansson.h>
#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "net/http-io.h"

int ab_cmd_serve (int argc, char **argv);
int ab_cmd_create (int argc, char **argv);
int ab_cmd_exec (int argc, char **argv);
int ab_cmd_cp (int argc, char **argv);
int ab_cmd_ls (int argc, char **argv);
int ab_cmd_ps (int argc, char **argv);
int ab_cmd_inspect (int argc, char **argv);
int ab_cmd_rm (int argc, char **argv);
int ab_cmd_port (int argc, char **argv);
/* cmd-snapshot.c */
int ab_cmd_pause (int argc, char **argv);
int ab_cmd_resume (int argc, char **argv);
int ab_cmd_snapshot (int argc, char **argv);
int ab_cmd_fork (int argc, char **argv);
/* create's --from-snapshot N and --auto-resume at argv[*i] into req: 1
 * when taken (*i moved past a value), 0 when not one of them, -1 with err. */
int ab_cli_take_snapshot_option (int *argc, char **argv, int *i, json_t *req, ab_error_t *err);
int ab_cmd_pool (int argc, char **argv);

/* cmd-create.c: a POST /v1/sandboxes body from create's options. */
json_t *ab_create_request (int argc, char **argv, bool *as_json, ab_error_t *err);
/* cmd-pool.c: `create --pool NAME` / `run --pool NAME -- CMD` (run: claim,
 * exec, delete; the command's exit code). */
bool ab_pool_wanted (int argc, char **argv);
int ab_pool_claim_cli (const char *host, int argc, char **argv, bool run);
/* cmd-exec.c: POST req to path and follow the NDJSON exec events it
 * answers (output to stdout and stderr) until "exit": the command's exit
 * code, or -1 with err. */
int ab_cli_exec_events (const char *host, const char *path, const json_t *req, ab_error_t *err);
int ab_cmd_browser (int argc, char **argv);

struct ab_client_s {
	char *socket_path;
	int fd;
	struct ab_http_io_s io;
	int status; /* of the last response */
};

/* The socket: --host (if given), else $AGENTBOX_HOST, else the default.
 * "unix://" in front is accepted. */
char *ab_client_socket (const char *host_opt);

/* Connect; when no daemon listens the error is one line saying how to
 * start one. */
int ab_client_open (struct ab_client_s *c, const char *host_opt, ab_error_t *err);
void ab_client_close (struct ab_client_s *c);

/* Send a request head (+ body when body != NULL; length -1 = chunked
 * body to follow, written by the caller) and nothing else. */
int ab_client_send (struct ab_client_s *c, const char *method, const char *path,
                    const char *content_type, const void *body, long long length,
                    const char *extra_headers, ab_error_t *err);
/* Read the response head; c->status is set. */
int ab_client_head (struct ab_client_s *c, ab_error_t *err);
/* A WebSocket upgrade of GET path on a new connection (c is opened, also
 * on failure: ab_client_close it); messages from the daemon are limited to
 * max_message bytes (0: daemon/websocket.h's AB_WS_MAX_MESSAGE). */
int ab_client_ws_open (struct ab_client_s *c, const char *host_opt, const char *path,
                       size_t max_message, ab_error_t *err);
/* A >= 400 response's JSON error as an ab_error (kind from its code). */
int ab_client_fail (struct ab_client_s *c, ab_error_t *err);

/* One JSON call on a fresh connection: the response's JSON (NULL for an
 * empty body) or NULL with err filled (also for an error status). */
json_t *ab_client_call (const char *host_opt, const char *method, const char *path, json_t *body,
                        int *status, ab_error_t *err);

/* POST body (consumed) to path and print the answer: whole (as_json) or
 * its string field `key` on a line; the command's exit status. */
int ab_cli_post_print (const char *host, const char *path, json_t *body, bool as_json,
                       const char *key);

/* Remove "--host SOCKET" / "--host=SOCKET" (before any "--") from argv; returns it. */
const char *ab_client_take_host (int *argc, char **argv);

/* cmd-port.c: a loopback listener (--listen syntax, printed as
 * "listening on ADDR:PORT"), each accepted connection on a thread of its
 * own relayed to the stream `open` makes on the daemon (c opened and
 * answered 101; bytes it read past the head are forwarded), until SIGINT
 * or SIGTERM. */
typedef int (*ab_cli_stream_fn) (void *ctx, const char *host, int client_fd, struct ab_client_s *c,
                                 ab_error_t *err);
int ab_cli_forward (const char *host, const char *listen_spec, ab_cli_stream_fn open, void *ctx);

/* Percent-encode for a query value. */
char *ab_client_escape (const char *s);

#endif
