/* The Codex exec-server protocol (remote environment) served for one
 * daemon sandbox: docs/exec-server.md.
 *
 *   exec-server.c       the connection: WebSocket messages, JSON-RPC
 *                       framing, dispatch, initialize, environment/info, /status
 *   exec-server-proc.c  process/ methods: one pump thread per process with its
 *                       own agent connection, retained output, seq
 *   exec-server-fs.c    fs/ methods, through the agent's confined file service
 *   exec-server-http.c http/request through the sandbox's egress proxy
 *   exec-server-uri.c   file:// URIs <-> sandbox paths, the workspace map,
 *                       the `sandbox` permission profile, env policy
 *
 * Requests run on the connection's thread with its own agent connection
 * (not thread-safe, so only that thread uses it); a long-polling
 * process/read runs on a thread of its own; notifications come from the
 * pump threads.  Every send goes through xs_send's lock. */
#ifndef AB_DAEMON_EXEC_SERVER_H
#define AB_DAEMON_EXEC_SERVER_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon-internal.h"

/* Limits (docs/exec-server.md). */
#define AB_XS_MAX_FRAME    (100U << 20) /* one client message */
#define AB_XS_RETAIN_BYTES (1U << 20)   /* retained output per process */
#define AB_XS_EVICT_MS     60000        /* a closed process is forgotten after */
#define AB_XS_MAX_WAIT_MS  30000        /* process/read's waitMs cap */
#define AB_XS_MAX_PROCS    64           /* live processes per connection */
#define AB_XS_MAX_FILE     (64U << 20)  /* fs/readFile, fs/copy of one file */
#define AB_XS_MAX_ID       256          /* processId length */
#define AB_XS_MAX_READERS  16           /* long polls in flight per connection */
#define AB_XS_COPY_DEPTH   64           /* fs/copy recursion */

/* JSON-RPC error codes, as the reference server answers. */
enum {
	AB_XS_NOT_FOUND = -32004,
	AB_XS_INVALID_REQUEST = -32600,
	AB_XS_UNKNOWN_METHOD = -32601,
	AB_XS_BAD_PARAMS = -32602,
	AB_XS_INTERNAL = -32603,
};

struct ab_xs_proc_s;

struct ab_xs_conn_s {
	struct ab_req_s *r;
	struct ab_box_s *b;
	ab_agent_conn_t *agent; /* the connection thread's */
	uint64_t agent_used_ms; /* its last use (monotonic) */
	pthread_mutex_t wlock;  /* sends */
	pthread_mutex_t lock;   /* procs, readers, closing */
	pthread_cond_t cond;    /* output, exits, readers ending */
	struct ab_xs_proc_s *procs;
	unsigned n_readers;
	bool closing;
	bool initialize_seen, initialized;
	char session_id[37];
	char *shell_path;
};

/* A JSON-RPC error answer (code, message) or a result, carried out of a
 * handler. */
struct ab_xs_reply_s {
	json_t *result; /* owned */
	int code;       /* when result is NULL */
	char msg[AB_ERROR_MSG_MAX];
	/* A large base64 member of the result (owned), spliced into the text
	 * as it is: base64 needs no escaping, and jansson's per-code-point
	 * string dump would dominate a 1 MiB fs/readFile. */
	const char *b64_key;
	char *b64;
};

void ab_xs_fail (struct ab_xs_reply_s *out, int code, const char *fmt, ...)
        __attribute__ ((format (printf, 3, 4)));
/* An agent error as the reference's codes: not found -32004, invalid
 * -32602, everything else -32603 with the agent's message.  Drops
 * x->agent when the error left it unusable. */
void ab_xs_fail_agent (struct ab_xs_conn_s *x, struct ab_xs_reply_s *out, const ab_error_t *err);

/* Send one JSON-RPC message (steals j); -1 when the peer is gone. */
int ab_xs_send (struct ab_xs_conn_s *x, json_t *j);
int ab_xs_notify (struct ab_xs_conn_s *x, const char *method, json_t *params);
int ab_xs_answer (struct ab_xs_conn_s *x, json_t *id, struct ab_xs_reply_s *rep);
/* The connection's agent connection, (re)made on demand. */
ab_agent_conn_t *ab_xs_agent (struct ab_xs_conn_s *x, ab_error_t *err);

/* --- exec-server-proc.c --- */
void ab_xs_proc_start (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out);
/* process/read: may answer later, from a thread of its own (takes id). */
void ab_xs_proc_read (struct ab_xs_conn_s *x, json_t *id, json_t *params);
void ab_xs_proc_write (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out);
void ab_xs_proc_signal (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out);
void ab_xs_proc_terminate (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out);
/* The connection ends: kill its processes, wait for pumps and readers. */
void ab_xs_proc_shutdown (struct ab_xs_conn_s *x);
/* Run argv in the sandbox and collect stdout (at most cap bytes); the
 * exit code in *code (127 when it could not start). */
int ab_xs_run_capture (struct ab_xs_conn_s *x, char *const *argv, char **out, int *code,
                       ab_error_t *err);

/* --- exec-server-fs.c --- */
/* Dispatches fs/ methods; false when method is not one of them. */
bool ab_xs_fs (struct ab_xs_conn_s *x, const char *method, json_t *params,
               struct ab_xs_reply_s *out);

/* --- exec-server-http.c --- */
/* http/request: answers later, from a thread of its own (takes id). */
void ab_xs_http_request (struct ab_xs_conn_s *x, json_t *id, json_t *params);

/* --- exec-server-uri.c --- */
/* file:// URI -> sandbox path (owned).  *host_form: the URI named the
 * host's workspace directory (mapped onto /workspace).  Fails out. */
char *ab_xs_uri_path (const struct ab_box_s *b, const json_t *v, const char *field, bool *host_form,
                      struct ab_xs_reply_s *out);
/* Sandbox path -> file:// URI (owned); host_form maps /workspace back onto
 * the host's workspace directory. */
char *ab_xs_path_uri (const struct ab_box_s *b, const char *path, bool host_form);
/* The `sandbox` permission profile of a request: 0 when it is null or
 * exactly what the sandbox grants, else -1 with out filled. */
int ab_xs_check_profile (const struct ab_box_s *b, const json_t *sandbox,
                         struct ab_xs_reply_s *out);
/* The process environment from env and envPolicy; NULL with out filled. */
char **ab_xs_build_env (const struct ab_box_s *b, const json_t *env, const json_t *policy,
                        struct ab_xs_reply_s *out);

#endif
