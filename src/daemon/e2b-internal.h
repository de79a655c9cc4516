/* The E2B-compatible API (docs/e2b.md), shared between its files:
 *
 *   e2b-server.c   the listener's dispatch: API key, sandbox routing by
 *                  E2b-Sandbox-Id or Host, access tokens, templates
 *   e2b-control.c  the control plane (REST: /sandboxes, /v2/sandboxes)
 *   e2b-connect.c  Connect protocol v1, JSON codec: envelopes, errors
 *   e2b-envelope.c, e2b-multipart.c  the body parsers, pure (e2b-wire.h)
 *   e2b-process.c  envd's process.Process service
 *   e2b-fs.c       envd's filesystem.Filesystem service and EntryInfo
 *   e2b-files.c    envd's GET and POST /files
 *   e2b-names.c    owner and group names from the sandbox's own files
 *   e2b-watch.c    directory watches (the agent's inotify watches)
 *   e2b-preview.c  <port>-<id>.<domain> previews over the port relay */
#ifndef AB_DAEMON_E2B_INTERNAL_H
#define AB_DAEMON_E2B_INTERNAL_H

#include "daemon/daemon-internal.h"

/* What the SDK's version gates are told (docs/e2b.md says why these):
 * 0.6.3 (file metadata, entries in watch events) where the backend's
 * workspace keeps user xattrs, which is tested on the native backend;
 * 0.5.7 elsewhere (gVisor's gofer mounts have no user xattrs). */
#define AB_E2B_ENVD_VERSION      "0.6.3"
#define AB_E2B_ENVD_VERSION_BASE "0.5.7"
#define AB_E2B_ENVD_PORT         49983
#define AB_E2B_TOKEN_LEN         64 /* 32 random bytes in hex */
#define AB_E2B_LABEL             "e2b.template"
#define AB_E2B_HOME              "/home/user" /* the user's home: the workspace */

struct ab_e2b_template_s {
	char *name;
	json_t *req; /* a daemon create request (spec keys, ttl, labels, credentials) */
};

struct ab_e2b_s {
	uint8_t key_digest[32];
	char *domain;
	struct ab_e2b_template_s *templates;
	size_t n_templates;
};

/* One envd call: the sandbox it is for and who it acts as. */
struct ab_e2b_call_s {
	struct ab_req_s *r;
	struct ab_box_s *b;
	const char *service, *method; /* "process.Process", "Start" */
	json_t *msg;                  /* the request message */
	bool streaming;               /* application/connect+json */
	uint32_t uid, gid;            /* the user it runs as */
	const char *user;             /* "user" or "root" */
	const char *home;             /* relative paths start here */
	bool need_signature;          /* /files without the token: a v1_ signature or 401 */
	char token[AB_E2B_TOKEN_LEN + 1];
};

/* --- e2b-server.c --- */
const struct ab_e2b_template_s *ab_e2b_template (struct ab_daemon_s *d, const char *name);
/* The sandbox's access token (from <dir>/e2b.json), or -1 when it is
 * not an E2B sandbox (AB_E_NOT_FOUND). */
int ab_e2b_token_load (const struct ab_box_s *b, char tok[AB_E2B_TOKEN_LEN + 1], ab_error_t *err);
int ab_e2b_token_save (const struct ab_box_s *b, const char *tok, ab_error_t *err);
/* p relative to home, or p itself when absolute (a new string). */
char *ab_e2b_path (const struct ab_e2b_call_s *call, const char *p);
/* The E2B REST error body {code, message}. */
void ab_e2b_api_fail (struct ab_req_s *r, int status, const char *fmt, ...)
        __attribute__ ((format (printf, 3, 4)));

/* --- e2b-control.c --- */
void ab_e2b_control (struct ab_req_s *r);

/* --- e2b-connect.c --- */
/* Read the request message of a Connect call (unary JSON or one envelope). */
int ab_e2b_call_read (struct ab_e2b_call_s *call, ab_error_t *err);
/* A client stream's next envelope: 1 with *msg, 0 at its end. */
int ab_e2b_envelope_next (struct ab_e2b_call_s *call, json_t **msg, ab_error_t *err);
const char *ab_e2b_code_of (const ab_error_t *err);
int ab_e2b_unary (struct ab_e2b_call_s *call, json_t *msg); /* steals msg */
int ab_e2b_fail (struct ab_e2b_call_s *call, const char *code, const char *fmt, ...)
        __attribute__ ((format (printf, 3, 4)));
int ab_e2b_fail_err (struct ab_e2b_call_s *call, const ab_error_t *err);
int ab_e2b_stream_begin (struct ab_e2b_call_s *call);
/* The head with the first message; a last message with the end-stream
 * envelope (no error): each one write.  Both steal msg. */
int ab_e2b_stream_begin_msg (struct ab_e2b_call_s *call, json_t *msg);
int ab_e2b_stream_last (struct ab_e2b_call_s *call, json_t *msg);
int ab_e2b_stream_msg (struct ab_e2b_call_s *call, json_t *msg); /* steals msg */
/* The end-stream envelope: {} or {"error":{code, message}} (code NULL = ok). */
int ab_e2b_stream_end (struct ab_e2b_call_s *call, const char *code, const char *msg);
/* Connect-Timeout-Ms (0 = none) and Keepalive-Ping-Interval (s, default 90). */
uint64_t ab_e2b_timeout_ms (const struct ab_e2b_call_s *call);
unsigned ab_e2b_keepalive_s (const struct ab_e2b_call_s *call);

/* --- services --- */
void ab_e2b_process (struct ab_e2b_call_s *call);
void ab_e2b_filesystem (struct ab_e2b_call_s *call);
void ab_e2b_files (struct ab_e2b_call_s *call);
/* e2b-names.c: the sandbox's names of its uids and gids (its own
 * /etc/passwd and /etc/group, read through c once, when first needed). */
struct ab_e2b_names_s {
	ab_agent_conn_t *c;
	bool loaded;
	char *passwd, *group;
};
/* The name of id, or the number as a string. */
json_t *ab_e2b_id_name (struct ab_e2b_names_s *n, bool group, uint32_t id);
void ab_e2b_names_free (struct ab_e2b_names_s *n);
/* e2b-fs.c: an EntryInfo of path (target: a symlink's, or NULL; xattrs:
 * its metadata as KEY=VALUE, or NULL). */
json_t *ab_e2b_entry (const char *path, const struct ab_agent_stat_s *st, const char *target,
                      char *const *xattrs, struct ab_e2b_names_s *names);
/* e2b-watch.c, with the message read: WatchDir (a stream) and the
 * CreateWatcher, GetWatcherEvents, RemoveWatcher calls. */
void ab_e2b_watch_dir (struct ab_e2b_call_s *call);
void ab_e2b_watchers (struct ab_e2b_call_s *call);
/* A Host naming <port>-<id>.<domain> with port != 49983: 1 and the
 * preview answered (or refused); 0 when Host is not a preview. */
int ab_e2b_preview (struct ab_req_s *r);

#endif
