/* The daemon's parts, shared between its files (not a public interface).
 *
 *   server.c      listeners, the API's hooks on net/http-server.h (a thread
 *                 per connection, limits, linger), auth, dispatch
 *   router.c      the REST routes: method + path pattern -> handler
 *   respond.c     requests (query, JSON bodies) and responses (JSON, errors, streams)
 *   registry.c    the sandboxes this daemon serves; reference counted
 *   state.c       state files (atomic), loading them after a restart
 *   lifecycle.c   create, destroy, death, re-adoption of a sandbox
 *   spawn.c       `agentbox __create-sandbox`: the single-threaded spawner
 *   housekeeping.c  monitor deaths (pidfds) and TTL expiry
 *   api-*.c       the handlers
 *   metrics.c     Prometheus counters and histograms
 *   pool*.c       warm pools: definitions, the replenisher, claims (docs/pools.md) */
#ifndef AB_DAEMON_DAEMON_INTERNAL_H
#define AB_DAEMON_DAEMON_INTERNAL_H

#include <jansson.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "base/clock.h"
#include "base/error.h"
#include "base/fsutil.h"
#include "base/sys.h"
#include "daemon/daemon.h"
#include "net/http-io.h"
#include "net/http-server.h"
#include "session/agent-client.h"
#include "spec/spec.h"

#define AB_BOX_ID_LEN 16
/* The per-sandbox token of the /ports/ proxy: 32 random bytes in hex. */
#define AB_PORT_TOKEN_LEN 64
/* How long a non-streaming call may wait for the agent. */
#define AB_AGENT_CALL_TIMEOUT_MS 30000

typedef enum {
	AB_BOX_CREATING,
	AB_BOX_RUNNING,
	AB_BOX_DEAD, /* its monitor or agent is gone; cleaned up, kept until DELETE */
	AB_BOX_DELETING,
} ab_box_state;

struct ab_box_s {
	struct ab_box_s *next;
	char id[AB_BOX_ID_LEN + 1];
	unsigned refs;      /* under the daemon lock */
	ab_box_state state; /* under the daemon lock */
	unsigned n_execs;   /* exec streams in flight, under the daemon lock */
	char *dead_reason;  /* under the daemon lock */
	char *dir, *agent_sock, *state_path;
	struct ab_spec_s spec;                  /* fixed once created */
	json_t *labels;                         /* fixed once created */
	int64_t created_ms, expires_ms, ttl_ms; /* Unix ms; expires 0 = never */
	bool workspace_owned;                   /* the daemon made the workspace under dir */
	/* "workspace_mounts": where the workspace is also bound read-write
	 * (E2B's /home/user); only between parsing and check_spec, after
	 * which the binds are spec mounts. */
	char **workspace_mounts;
	char backend[32];
	pid_t monitor_pid;
	uint64_t monitor_start; /* /proc/PID/stat starttime: a reused pid is not ours */
	int pidfd;
	char port_token[AB_PORT_TOKEN_LEN + 1]; /* fixed once created (api-port.c) */
	/* credentials (credentials.c): secrets, never in state.json or output */
	struct ab_cred_config_s *cred_config;
	char *cred_text; /* serialised, until written to credentials.json (wiped) */
	/* forwarded ports (egress.c): network "proxy" and credentials */
	struct ab_egress_relay_s *egress_relay;
	struct ab_cred_relay_s *cred_relay;
	struct ab_forward_s *forward; /* session/forward.h */
	/* pause and snapshots (pause.c, snapshot.c) */
	char backend_id[33]; /* the backend's own id of the sandbox (cgroup, container) */
	bool paused;         /* under the daemon lock; the state stays RUNNING */
	bool auto_resume;    /* exec and file calls resume a paused sandbox */
	int64_t paused_ms;   /* Unix ms of the pause: the TTL clock stops meanwhile */
	char *from_snapshot; /* the snapshot it was created from, or NULL */
	/* A warm pool's ready entry (pool.c): the pool's name until claimed,
	 * then NULL for good; under the daemon lock.  pool_hash names the
	 * pool spec it was made from (a changed spec makes it stale). */
	char *pool;
	char pool_hash[17];
	bool pool_ready; /* its creator (or adoption) is done with it; under the lock */
};

/* --- credentials.c --- */
/* Check create's "credentials" entries, make the token, add the sandbox's
 * variables to b->spec. */
int ab_box_cred_take (struct ab_box_s *b, json_t *ups, ab_error_t *err);
/* <dir>/credentials.json (0600), when there are credentials. */
int ab_box_cred_save (struct ab_box_s *b, ab_error_t *err);
/* On adoption: 0 also when the sandbox has none. */
int ab_box_cred_load (struct ab_box_s *b, ab_error_t *err);
void ab_box_cred_free (struct ab_box_s *b);

/* --- egress.c --- */
int ab_box_egress_start (struct ab_box_s *b, ab_error_t *err);
void ab_box_egress_stop (struct ab_box_s *b);

struct ab_daemon_s {
	const struct ab_daemon_config_s *cfg;
	char *sandboxes_dir;
	pthread_mutex_t lock;
	struct ab_box_s *boxes;
	unsigned n_boxes;
	struct ab_http_server_s *http; /* net/http-server.h: the API's connections */
	int epfd;                      /* monitors' pidfds */
	bool has_token;
	uint8_t token_digest[32];
	volatile int stopping;
	struct ab_e2b_s *e2b;     /* e2b-server.c: the E2B API, or NULL */
	struct ab_pools_s *pools; /* pool.c */
};

/* --- registry.c --- */
int ab_registry_add (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
/* A reference to the sandbox `id`, or NULL (AB_E_NOT_FOUND). */
struct ab_box_s *ab_registry_get (struct ab_daemon_s *d, const char *id, ab_error_t *err);
void ab_box_ref (struct ab_daemon_s *d, struct ab_box_s *b);
void ab_box_unref (struct ab_daemon_s *d, struct ab_box_s *b);
void ab_registry_remove (struct ab_daemon_s *d, struct ab_box_s *b);
/* References to every sandbox; release with ab_registry_release. */
struct ab_box_s **ab_registry_all (struct ab_daemon_s *d, size_t *n);
void ab_registry_release (struct ab_daemon_s *d, struct ab_box_s **v, size_t n);
struct ab_box_s *ab_box_new (struct ab_daemon_s *d, const char *id);
ab_box_state ab_box_get_state (struct ab_daemon_s *d, struct ab_box_s *b);
const char *ab_box_state_name (ab_box_state s);
/* Claim one exec stream slot (AB_E_LIMIT when full; AB_E_CONFLICT unless running). */
int ab_box_exec_begin (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
void ab_box_exec_end (struct ab_daemon_s *d, struct ab_box_s *b);
void ab_registry_counts (struct ab_daemon_s *d, unsigned counts[4]);

/* --- state.c --- */
json_t *ab_box_state_json (struct ab_daemon_s *d, struct ab_box_s *b);
int ab_box_from_state_json (struct ab_box_s *b, const json_t *j, ab_error_t *err);
int ab_box_save (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
/* pause.c's and snapshot.c's keys of state.json: add / read them. */
void ab_box_pause_state_save (const struct ab_box_s *b, json_t *j);
void ab_box_pause_state_load (struct ab_box_s *b, const json_t *j);
int ab_box_save_ex (struct ab_daemon_s *d, struct ab_box_s *b, bool durable, ab_error_t *err);
/* The public view for the API. */
json_t *ab_box_json (struct ab_daemon_s *d, struct ab_box_s *b);

/* --- lifecycle.c --- */
int ab_box_create (struct ab_daemon_s *d, const json_t *req, struct ab_box_s **out,
                   ab_error_t *err);
/* A pool's entry (pool != NULL): started, its agent pinged, not configured. */
int ab_box_create_in (struct ab_daemon_s *d, const json_t *req, const char *pool, const char *hash,
                      struct ab_box_s **out, ab_error_t *err);
/* The agent's one-time configuration (on conn, or a new connection when
 * NULL) and the forwarded ports: at create, or at a pool entry's claim. */
int ab_box_configure (struct ab_daemon_s *d, struct ab_box_s *b, ab_agent_conn_t *conn,
                      ab_error_t *err);
int ab_box_ping (struct ab_daemon_s *d, struct ab_box_s *b, int timeout_ms, ab_error_t *err);
int ab_labels_check (const json_t *labels, ab_error_t *err);
/* Without force, a sandbox with running processes is AB_E_CONFLICT. */
int ab_box_destroy (struct ab_daemon_s *d, struct ab_box_s *b, bool force, ab_error_t *err);
/* The monitor is gone (or the agent does not answer): clean up, keep the record. */
void ab_box_mark_dead (struct ab_daemon_s *d, struct ab_box_s *b, const char *reason);
int ab_daemon_adopt (struct ab_daemon_s *d, ab_error_t *err);
ab_agent_conn_t *ab_box_connect (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
/* A connection to the sandbox's egress proxy (network proxy, running):
 * the fd of our end, or -1. */
int ab_box_egress_connect (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
/* pidfd of the monitor if pid really is sandbox `id`'s monitor started at `start`. */
int ab_monitor_open (pid_t pid, uint64_t start, const char *id, ab_error_t *err);

/* --- spawn.c --- */
struct ab_spawn_result_s {
	pid_t monitor_pid;
	char backend[32];
	char backend_id[33];
};
int ab_spawn_sandbox (const char *id, const json_t *spec, struct ab_spawn_result_s *out,
                      ab_error_t *err);

struct ab_req_s;

/* --- pause.c --- */
/* Freeze / thaw every process of a running sandbox; idempotent; the
 * state is saved.  AB_E_CONFLICT when the backend cannot. */
int ab_box_pause (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
int ab_box_resume (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
bool ab_box_is_paused (struct ab_daemon_s *d, struct ab_box_s *b);
/* The same for every agent connection (ab_box_connect: MCP, the
 * exec-server, ...): AB_E_CONFLICT "paused" in err. */
int ab_box_unpaused (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
/* Before a call that needs the agent: 0 when the sandbox runs (resumed
 * first when it is paused with auto_resume), else -1 with 409 "paused"
 * (or the resume's error) sent. */
int ab_api_unpaused (struct ab_req_s *r, struct ab_box_s *b);
void ab_api_sandbox_pause (struct ab_req_s *r);
void ab_api_sandbox_resume (struct ab_req_s *r);

/* --- snapshot.c --- */
/* create's own keys ("auto_resume", "from_snapshot"), taken out of the
 * request's spec copy before the spec is parsed. */
int ab_box_snap_request (struct ab_box_s *b, json_t *spec, ab_error_t *err);
/* Fill the new sandbox's workspace from its snapshot (before start). */
int ab_box_snap_restore (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
void ab_api_snapshot_create (struct ab_req_s *r);
void ab_api_snapshot_list (struct ab_req_s *r);
void ab_api_snapshot_get (struct ab_req_s *r);
void ab_api_snapshot_delete (struct ab_req_s *r);
void ab_api_sandbox_fork (struct ab_req_s *r);

/* --- housekeeping.c --- */
int ab_housekeeping_start (struct ab_daemon_s *d, ab_error_t *err);
void ab_housekeeping_watch (struct ab_daemon_s *d, struct ab_box_s *b);

/* --- requests and responses (respond.c) --- */
#define AB_MAX_PARAMS 3
struct ab_req_s {
	struct ab_daemon_s *d;
	struct ab_http_io_s *io;
	int fd;
	const char *method;
	char *path, *query;
	char *params[AB_MAX_PARAMS];
	bool close; /* close the connection after this request */
	bool responded;
	bool streaming;
	bool continue_sent;
	int status;
	pthread_mutex_t *write_lock; /* WebSocket: two threads write */
	const char *resp_headers;    /* extra response fields, "Name: value\r\n" each */
};

int ab_req_body_json (struct ab_req_s *r, json_t **out, ab_error_t *err);
/* A query parameter, percent-decoded (NULL if absent; malformed = AB_E_INVALID). */
char *ab_req_query (struct ab_req_s *r, const char *name, ab_error_t *err);
/* Every value of a repeated query parameter. */
char **ab_req_query_all (struct ab_req_s *r, const char *name, ab_error_t *err);
bool ab_req_query_flag (struct ab_req_s *r, const char *name);
/* "100 Continue" when the client waits for it (before reading a body). */
int ab_req_continue (struct ab_req_s *r);
bool ab_req_peer_gone (struct ab_req_s *r);

int ab_resp_json (struct ab_req_s *r, int status, json_t *body);
int ab_resp_error (struct ab_req_s *r, const ab_error_t *err);
int ab_resp_fail (struct ab_req_s *r, int status, const char *code, const char *fmt, ...)
        __attribute__ ((format (printf, 4, 5)));
int ab_resp_empty (struct ab_req_s *r, int status);
int ab_resp_stream_begin (struct ab_req_s *r, int status, const char *content_type);
int ab_resp_stream (struct ab_req_s *r, const void *buf, size_t len);
/* The head with a first chunk, and a last chunk with the stream's end:
 * each one write. */
int ab_resp_stream_begin_with (struct ab_req_s *r, int status, const char *content_type,
                               const void *buf, size_t len);
int ab_resp_stream_last (struct ab_req_s *r, const void *buf, size_t len);
int ab_resp_stream_json (struct ab_req_s *r, json_t *line); /* one NDJSON line; steals */
int ab_resp_stream_end (struct ab_req_s *r);
int ab_status_of (const ab_error_t *err);

/* --- router.c --- */
void ab_route (struct ab_req_s *r);

/* --- handlers --- */
void ab_api_health (struct ab_req_s *r);
void ab_api_metrics (struct ab_req_s *r);
void ab_api_sandbox_create (struct ab_req_s *r);
void ab_api_sandbox_list (struct ab_req_s *r);
void ab_api_sandbox_get (struct ab_req_s *r);
void ab_api_sandbox_delete (struct ab_req_s *r);
void ab_api_exec (struct ab_req_s *r);
void ab_api_proc_list (struct ab_req_s *r);
void ab_api_proc_stdin (struct ab_req_s *r);
void ab_api_proc_close_stdin (struct ab_req_s *r);
void ab_api_proc_signal (struct ab_req_s *r);
void ab_api_proc_resize (struct ab_req_s *r);
void ab_api_proc_output (struct ab_req_s *r);
void ab_api_files_get (struct ab_req_s *r);
void ab_api_files_put (struct ab_req_s *r);
void ab_api_files_delete (struct ab_req_s *r);
void ab_api_files_stat (struct ab_req_s *r);
void ab_api_files_mkdir (struct ab_req_s *r);
void ab_api_files_move (struct ab_req_s *r);
/* {"name","type","size","mode","mtime_ms"} of a file (api-files.c; MCP too). */
json_t *ab_file_stat_json (const char *name, const struct ab_agent_stat_s *st);
void ab_api_exec_ws (struct ab_req_s *r);
/* mcp.c: the MCP endpoints (docs/mcp.md); params[0] is the bound sandbox or NULL. */
void ab_api_mcp_post (struct ab_req_s *r);
void ab_api_mcp_delete (struct ab_req_s *r);
void ab_api_mcp_get (struct ab_req_s *r);
/* api-ws.c: answer a WebSocket upgrade (101) or fail the request (400). */
int ab_api_ws_handshake (struct ab_req_s *r);
/* exec-server.c: GET /v1/sandboxes/{id}/exec-server (docs/exec-server.md). */
void ab_api_exec_server (struct ab_req_s *r);
/* api-port.c: the raw stream (routed) and the /ports/ proxy, which the
 * server dispatches before its own token check (it has its own). */
void ab_api_port_connect (struct ab_req_s *r);
void ab_api_port_proxy (struct ab_req_s *r);
bool ab_port_proxy_target (const struct ab_http_io_s *io);
void ab_port_token_new (char tok[AB_PORT_TOKEN_LEN + 1]);
/* The request as it came (target unchanged, hop-by-hop and E2B token
 * fields dropped) to 127.0.0.1:port in b, and the answer back (E2B previews). */
void ab_port_proxy_raw (struct ab_req_s *r, struct ab_box_s *b, uint16_t port);
/* The sandbox's port token, compared as digests in constant time; a
 * sandbox without one opens to nothing. */
bool ab_port_token_ok (const struct ab_box_s *b, const char *tok, size_t len);

/* Shared by the handlers: the sandbox named in the path, running, or an
 * error response already sent (NULL). */
struct ab_box_s *ab_api_box (struct ab_req_s *r, bool need_running);
/* Exec request JSON -> agent process spec (owned strings in *hold). */
struct ab_exec_req_s {
	char **argv, **env;
	char *cwd;
	struct ab_agent_proc_spec_s ps;
	bool wait;
};
int ab_exec_req_parse (struct ab_box_s *b, const json_t *j, struct ab_exec_req_s *x,
                       ab_error_t *err);
void ab_exec_req_free (struct ab_exec_req_s *x);
/* An agent connection for an exec: this thread's (this HTTP connection's)
 * kept one when it is idle and into the same sandbox, else a new one;
 * release keeps it for the next exec when idle, else closes it. */
ab_agent_conn_t *ab_exec_connect (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err);
void ab_exec_release (const struct ab_box_s *b, ab_agent_conn_t *c);
int ab_exit_code (const struct ab_agent_exit_s *e);
json_t *ab_exit_json (const struct ab_agent_exit_s *e);
int ab_signal_parse (const json_t *v, int *sig, ab_error_t *err);
/* Events of a followed process until EXIT, as NDJSON lines on a started stream. */
int ab_exec_stream_events (struct ab_req_s *r, ab_agent_conn_t *c, struct ab_agent_proc_s *p);

/* --- e2b-server.c: the E2B API's listener (docs/e2b.md) --- */
int ab_e2b_setup (struct ab_daemon_s *d, ab_error_t *err);
/* One request on the E2B listener; target_ok: r->path and r->query are set. */
void ab_e2b_serve (struct ab_req_s *r, bool target_ok);
/* --- pool.c, pool-claim.c, pool-api.c (docs/pools.md) --- */
int ab_pools_start (struct ab_daemon_s *d, ab_error_t *err);
/* POST /v1/sandboxes with "pool": claim a ready entry (or a cold miss). */
void ab_api_pool_claim (struct ab_req_s *r, json_t *req);
void ab_api_pool_create (struct ab_req_s *r);
void ab_api_pool_list (struct ab_req_s *r);
void ab_api_pool_get (struct ab_req_s *r);
void ab_api_pool_delete (struct ab_req_s *r);
void ab_pool_metrics_render (struct ab_daemon_s *d, FILE *f);

/* --- metrics.c --- */
typedef enum {
	AB_M_CREATE,     /* sandbox create, seconds */
	AB_M_EXEC_START, /* exec request to start event */
	AB_M_REQUEST,    /* every HTTP request */
	AB_M_N_HIST,
} ab_metric_hist;
void ab_metrics_observe (ab_metric_hist h, uint64_t us);
void ab_metrics_request (int status);
void ab_metrics_add_bytes (const char *what, uint64_t n);
void ab_metrics_inc (const char *what);
char *ab_metrics_render (struct ab_daemon_s *d);

#endif
