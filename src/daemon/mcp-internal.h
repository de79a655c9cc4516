/* The daemon's MCP server (docs/mcp.md), shared between its files:
 *
 *   mcp.c             Streamable HTTP (POST/DELETE/GET on /v1/mcp and
 *                     /v1/sandboxes/{id}/mcp), JSON-RPC, the lifecycle
 *   mcp-session.c     MCP sessions and their processes ("jobs"): the
 *                     bounded output log, the reader threads, the end
 *   mcp-tools.c       the tool table (schemas, annotations) and dispatch;
 *                     the lifecycle tools and port_url
 *   mcp-tools-exec.c  sandbox_exec and sandbox_process
 *   mcp-tools-file.c  read_file, write_file, list_dir, stat, remove, move
 *
 * Everything reaches a sandbox through the session layer's blocking agent
 * client, one connection per call, as the REST handlers do. */
#ifndef AB_DAEMON_MCP_INTERNAL_H
#define AB_DAEMON_MCP_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>

#include "daemon/daemon-internal.h"

/* Limits (docs/mcp.md, "Limits"). */
#define AB_MCP_MAX_BODY       (8U << 20)      /* one POST body; 413 beyond */
#define AB_MCP_MAX_SESSIONS   64              /* per daemon */
#define AB_MCP_MAX_JOBS       16              /* processes kept per MCP session */
#define AB_MCP_OUTPUT_CAP     (1U << 20)      /* per stream, returned by a foreground run */
#define AB_MCP_LOG_CAP        (1U << 20)      /* a background process's retained output */
#define AB_MCP_TAIL           4096            /* bytes of output in a "running" answer */
#define AB_MCP_IDLE_MS        (3600LL * 1000) /* an MCP session unused this long ends */
#define AB_MCP_YIELD_MS       10000           /* default yield_ms */
#define AB_MCP_YIELD_MAX_MS   120000
#define AB_MCP_WAIT_MAX_MS    30000      /* sandbox_process poll's wait_ms */
#define AB_MCP_READ_CAP       (4U << 20) /* read_file */
#define AB_MCP_LIST_MAX       10000      /* list_dir entries */
#define AB_MCP_SESSION_ID_LEN 32         /* 128 random bits in hex */

struct ab_mcp_job_s;

struct ab_mcp_session_s {
	struct ab_mcp_session_s *next;
	struct ab_daemon_s *d;
	char id[AB_MCP_SESSION_ID_LEN + 1];
	char box_id[AB_BOX_ID_LEN + 1]; /* the bound sandbox, "" on /v1/mcp */
	char version[16];               /* the negotiated protocol version */
	unsigned refs;                  /* under the store's lock */
	bool ended;                     /* under lock */
	int64_t last_ms;                /* monotonic, under the store's lock */
	pthread_mutex_t lock;
	pthread_cond_t cond; /* a job's output or exit */
	struct ab_mcp_job_s *jobs;
	unsigned n_jobs, next_job;
	char **owned; /* sandboxes sandbox_create made without keep */
};

/* --- mcp-session.c --- */
/* A new session (one reference), or NULL with AB_E_LIMIT when full. */
struct ab_mcp_session_s *ab_mcp_session_new (struct ab_daemon_s *d, const char *box_id,
                                             const char *version, ab_error_t *err);
/* A reference to session `id` on the same endpoint (box_id), else NULL. */
struct ab_mcp_session_s *ab_mcp_session_get (const char *id, const char *box_id);
void ab_mcp_session_put (struct ab_mcp_session_s *s);
/* Remove it from the store, end its processes and the sandboxes it made;
 * the memory goes with the last reference. */
void ab_mcp_session_end (struct ab_daemon_s *d, struct ab_mcp_session_s *s);
/* A sandbox to destroy with the session. */
void ab_mcp_session_own (struct ab_mcp_session_s *s, const char *box_id);
void ab_mcp_session_disown (struct ab_mcp_session_s *s, const char *box_id);

/* A process started by sandbox_exec.  Fields under the session's lock. */
struct ab_mcp_capture_s {
	char *buf;
	size_t len;
	uint64_t total; /* bytes the process wrote, also those beyond the cap */
};

struct ab_mcp_job_s {
	struct ab_mcp_job_s *next;
	unsigned refs; /* the session's list, the caller, a reader thread */
	char id[16];
	struct ab_box_s *b; /* referenced */
	uint32_t pid;
	char *command;
	char *rpc_id; /* the tools/call that waits for it in the foreground (JSON) */
	bool tty, stdin_open;
	bool running, background, has_thread, stop;
	struct ab_agent_exit_s exit;
	char *error; /* following the process failed */
	int64_t started_ms, ended_ms;
	/* every byte of stdout and stderr as it came, the last AB_MCP_LOG_CAP */
	uint8_t *log;
	size_t log_len, log_head; /* bytes held; ring index of the oldest */
	uint64_t log_total;       /* absolute offset of the next byte */
	uint64_t poll_off;        /* where the last poll ended */
	/* while a foreground call waits: each stream capped at AB_MCP_OUTPUT_CAP */
	struct ab_mcp_capture_s out[2];
	bool capturing;
	ab_agent_conn_t *c; /* follows the process */
	struct ab_agent_proc_s p;
	pthread_t thread;
};

/* Register a started process (the session's list takes a reference; the
 * creator keeps its own; AB_E_LIMIT when the
 * session holds AB_MCP_MAX_JOBS running ones, AB_E_CONFLICT once ended). */
int ab_mcp_job_add (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j, ab_error_t *err);
/* Follow j's events until it exits (1), deadline_ms (monotonic) passes (0)
 * or following fails (-1, recorded in j->error). */
int ab_mcp_job_pump (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j, int64_t deadline_ms);
/* Hand j to a reader thread of its own (it keeps the log going). */
int ab_mcp_job_background (struct ab_daemon_s *d, struct ab_mcp_session_s *s,
                           struct ab_mcp_job_s *j, ab_error_t *err);
/* Take j out of the session's list (killing its process if a reader
 * thread follows it, and joining that thread), dropping the list's
 * reference. */
void ab_mcp_job_drop (struct ab_daemon_s *d, struct ab_mcp_session_s *s, struct ab_mcp_job_s *j);
/* A reference to the job named id, or NULL. */
struct ab_mcp_job_s *ab_mcp_job_find (struct ab_mcp_session_s *s, const char *id);
void ab_mcp_job_put (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j);
/* notifications/cancelled: kill the foreground run of request `id`. */
void ab_mcp_cancel (struct ab_mcp_session_s *s, const json_t *id);
/* Signal j's process group through a connection of its own. */
int ab_mcp_job_signal (struct ab_daemon_s *d, struct ab_mcp_job_s *j, int sig, ab_error_t *err);
/* Copy log bytes [off, off+limit) (clamped to what is retained) into a
 * fresh buffer; *start says where it began (> off when bytes were dropped). */
char *ab_mcp_job_log (const struct ab_mcp_job_s *j, uint64_t off, size_t limit, uint64_t *start,
                      size_t *len);
void ab_mcp_job_free (struct ab_daemon_s *d, struct ab_mcp_job_s *j);

/* --- mcp-tools.c --- */
struct ab_mcp_call_s {
	struct ab_daemon_s *d;
	struct ab_mcp_session_s *s;
	struct ab_box_s *b;   /* the sandbox the tool works on (NULL for lifecycle tools) */
	json_t *args;         /* the arguments, sandbox_id removed */
	const json_t *rpc_id; /* the JSON-RPC id of the tools/call */
};

/* tools/list's result for a bound or unbound session. */
json_t *ab_mcp_tools_list (bool bound);
/* tools/call: a CallToolResult (tool failures are isError results), or
 * NULL with err for a protocol error (-32602: unknown tool, bad params). */
json_t *ab_mcp_tools_call (struct ab_daemon_s *d, struct ab_mcp_session_s *s, const json_t *id,
                           const json_t *params, ab_error_t *err);

/* A tool's success: structured content and its text rendering. */
json_t *ab_mcp_result (json_t *structured, const char *text);
/* The same, rendered as the structured content's JSON. */
json_t *ab_mcp_result_json (json_t *structured);
/* A tool's failure as a result with isError. */
json_t *ab_mcp_tool_error (const ab_error_t *err);
/* Valid UTF-8 of the bytes (malformed sequences become U+FFFD), its length
 * in *out_len (NUL bytes are kept: put it in JSON with json_stringn). */
char *ab_mcp_utf8 (const void *buf, size_t len, size_t *out_len);

/* Each tool: its result, or NULL with err (made an isError result). */
json_t *ab_mcp_tool_exec (struct ab_mcp_call_s *call, ab_error_t *err);
json_t *ab_mcp_tool_process (struct ab_mcp_call_s *call, ab_error_t *err);
json_t *ab_mcp_tool_read_file (struct ab_mcp_call_s *call, ab_error_t *err);
json_t *ab_mcp_tool_write_file (struct ab_mcp_call_s *call, ab_error_t *err);
json_t *ab_mcp_tool_list_dir (struct ab_mcp_call_s *call, ab_error_t *err);
json_t *ab_mcp_tool_stat (struct ab_mcp_call_s *call, ab_error_t *err);
json_t *ab_mcp_tool_remove (struct ab_mcp_call_s *call, ab_error_t *err);
json_t *ab_mcp_tool_move (struct ab_mcp_call_s *call, ab_error_t *err);

#endif
