/* A blocking client for one connection to a service-mode agent (protocol
 * version 2, docs/protocol-v2.md).  The daemon uses one connection per HTTP
 * request, on that request's thread; a connection is not thread-safe, but
 * any number of connections to the same agent may be used at once.
 *
 * Every call sends one request and waits for its answer; process output
 * and file data that arrive meanwhile are queued on the connection (never
 * more than the flow-control window per channel: the agent cannot send
 * more than this side granted, and credit is granted only as the caller
 * consumes).  Errors carry the agent's error kind (AB_E_INVALID,
 * AB_E_NOT_FOUND, AB_E_DENIED, AB_E_CONFLICT, AB_E_LIMIT, AB_E_SYSTEM,
 * AB_E_INTERNAL), so the daemon maps them to HTTP statuses without parsing
 * text.  A broken connection is AB_E_SYSTEM; after any error other than
 * one the agent reported (FAIL), the connection must be closed. */
#ifndef AB_SESSION_AGENT_CLIENT_H
#define AB_SESSION_AGENT_CLIENT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef struct ab_agent_conn_s ab_agent_conn_t;

/* Services an agent offers (HELLO FEATURES bits). */
#define AB_AGENT_FEATURE_PROC          (1U << 0)
#define AB_AGENT_FEATURE_FILE          (1U << 1)
#define AB_AGENT_FEATURE_PORT          (1U << 2)
#define AB_AGENT_FEATURE_EGRESS_FD     (1U << 3)
#define AB_AGENT_FEATURE_EGRESS_STREAM (1U << 4) /* EGRESS_READY / EGRESS_OPEN */
#define AB_AGENT_FEATURE_WATCH         (1U << 5) /* FILE_WATCH (inotify) */

/* What the agent said in its HELLO. */
struct ab_agent_info_s {
	uint32_t version;  /* 2 */
	uint32_t features; /* AB_AGENT_FEATURE_* bits */
	int landlock_abi;  /* effective Landlock ABI of started processes, 0 = none */
	bool configured;   /* ab_agent_configure has been called on this sandbox */
};

/* Connect to the agent's listening socket (a host path) and do the
 * handshake.  The fd is close-on-exec. */
ab_agent_conn_t *ab_agent_connect (const char *socket_path, ab_error_t *err);
/* Same over an already connected stream socket; takes ownership of fd. */
ab_agent_conn_t *ab_agent_connect_fd (int fd, ab_error_t *err);
/* Close and free (safe on NULL).  Processes started through it live on. */
void ab_agent_close (ab_agent_conn_t *c);
/* True when c can carry a new call as if just connected: not broken,
 * nothing followed, queued or half-read, and nothing arrived unasked
 * (an EOF: the agent, or its sandbox, is gone).  One poll, no wait. */
bool ab_agent_idle (const ab_agent_conn_t *c);
const struct ab_agent_info_s *ab_agent_info (const ab_agent_conn_t *c);
/* Bound every wait for an answer (ms, 0 = wait forever, the default);
 * a call that runs out answers AB_E_SYSTEM with errnum ETIMEDOUT and the
 * connection must then be closed.  Does not bound ab_agent_proc_next_event,
 * which takes its own timeout. */
void ab_agent_set_timeout (ab_agent_conn_t *c, int timeout_ms);

/* --- sandbox configuration (once per sandbox, right after create) ---- */

struct ab_agent_config_s {
	/* Directories the file service may touch (absolute paths inside the
	 * sandbox: the workspace and the read-write mounts).  Every file path
	 * must lie beneath one of them. */
	char *const *file_roots; /* NULL-terminated */
	/* Where started processes may write (Landlock), as ab_spec_rw_paths. */
	char *const *rw_paths; /* NULL-terminated */
	uint64_t nofile;       /* RLIMIT_NOFILE of processes, 0 = inherit */
	/* The sandbox user the file service acts as (filesystem uid/gid):
	 * files it creates belong to this user and it may touch only what
	 * this user may (the idmapped workspace maps only this user). */
	uint32_t file_uid, file_gid;
};

/* The agent accepts the first configuration; the same one again is OK (a
 * restarted daemon may resend it), a different one is AB_E_CONFLICT.
 * Processes and file calls before configuration fail with AB_E_CONFLICT. */
int ab_agent_configure (ab_agent_conn_t *c, const struct ab_agent_config_s *cfg, ab_error_t *err);

/* --- processes ---------------------------------------------------------- */

struct ab_agent_proc_spec_s {
	char *const *argv; /* NULL-terminated, argv[0] searched in env's PATH;
	                      a shell command is {"/bin/sh", "-c", cmd, NULL} */
	char *const *env;  /* NULL-terminated KEY=VALUE; NULL or empty = PATH only */
	const char *cwd;   /* NULL = "/" */
	uint32_t uid, gid;
	bool tty;            /* a pty: stdout and stderr merge into STDOUT */
	uint16_t rows, cols; /* initial window size with tty (0 = leave) */
	bool stdin_open;     /* false: stdin is /dev/null */
	uint64_t timeout_ms; /* 0 = none; then SIGTERM to the group, SIGKILL after grace */
	uint64_t grace_ms;   /* 0 = 5000 */
	bool detach;         /* no output stream on this connection (see PROC_ATTACH) */
};

/* A process's output stream on this connection. */
struct ab_agent_proc_s {
	uint32_t pid;     /* pid inside the sandbox */
	uint32_t channel; /* 0 when detached */
};

struct ab_agent_exit_s {
	int wait_status; /* as waitpid(2): WIFEXITED/WEXITSTATUS/WTERMSIG apply */
	bool timed_out;  /* the per-process timeout fired */
	int exec_errno;  /* execve failed with this errno (ENOENT = not found), else 0 */
};

typedef enum {
	AB_AGENT_EV_STDOUT = 1,
	AB_AGENT_EV_STDERR,
	AB_AGENT_EV_EXIT, /* last event of the stream */
} ab_agent_event_kind;

struct ab_agent_event_s {
	ab_agent_event_kind kind;
	const uint8_t *data; /* STDOUT/STDERR bytes, valid until the next call on c */
	size_t len;
	struct ab_agent_exit_s exit; /* EXIT */
};

int ab_agent_proc_start (ab_agent_conn_t *c, const struct ab_agent_proc_spec_s *spec,
                         struct ab_agent_proc_s *out, ab_error_t *err);
/* Next output chunk or the exit of a process this connection follows (after
 * start or attach).  Output is delivered in the order the process wrote it
 * per stream; EXIT comes after the last byte of both streams.  Returns 1 with
 * an event, 0 when timeout_ms (-1 = forever) passed, -1 on error.  Credit is
 * granted back to the agent as events are consumed. */
int ab_agent_proc_next_event (ab_agent_conn_t *c, const struct ab_agent_proc_s *p,
                              struct ab_agent_event_s *ev, int timeout_ms, ab_error_t *err);
/* Stop following a process on this connection; it keeps running. */
int ab_agent_proc_release (ab_agent_conn_t *c, struct ab_agent_proc_s *p, ab_error_t *err);
/* Follow a process (started through any connection): the retained output
 * (last 1 MiB per stream) first, then live output and EXIT.  Works on a
 * finished process that is still kept. */
int ab_agent_proc_attach (ab_agent_conn_t *c, uint32_t pid, struct ab_agent_proc_s *out,
                          ab_error_t *err);

/* By pid, from any connection.  write_stdin returns once the bytes are in
 * the process's stdin (it blocks while the process does not read); len is at
 * most AB_AGENT_STDIN_MAX per call (larger buffers are split here).
 * close_stdin takes effect after what was written.  AB_E_CONFLICT when the
 * process was started without stdin_open or stdin is already closed. */
#define AB_AGENT_STDIN_MAX (256U * 1024)
int ab_agent_proc_write_stdin (ab_agent_conn_t *c, uint32_t pid, const void *buf, size_t len,
                               ab_error_t *err);
int ab_agent_proc_close_stdin (ab_agent_conn_t *c, uint32_t pid, ab_error_t *err);
/* To the process group of pid.  AB_E_NOT_FOUND once it has ended. */
int ab_agent_proc_signal (ab_agent_conn_t *c, uint32_t pid, int sig, ab_error_t *err);
int ab_agent_proc_resize (ab_agent_conn_t *c, uint32_t pid, uint16_t rows, uint16_t cols,
                          ab_error_t *err);

struct ab_agent_proc_info_s {
	uint32_t pid;
	char **argv; /* NULL-terminated */
	bool running;
	bool tty;
	struct ab_agent_exit_s exit; /* when !running */
	uint64_t started_unix_ms;
};
/* Running processes and the finished ones still kept, oldest first. */
int ab_agent_proc_list (ab_agent_conn_t *c, struct ab_agent_proc_info_s **out, size_t *n,
                        ab_error_t *err);
void ab_agent_proc_info_free (struct ab_agent_proc_info_s *v, size_t n);

/* --- files ---------------------------------------------------------------
 * Paths are absolute inside the sandbox and must lie beneath a file root
 * (or are relative, to the first file root).  `..`, symlinks that lead out
 * of the root and magic links are refused with AB_E_DENIED, also when swapped
 * in while the call runs. */

typedef enum {
	AB_AGENT_FT_OTHER = 0,
	AB_AGENT_FT_FILE,
	AB_AGENT_FT_DIR,
	AB_AGENT_FT_SYMLINK,
} ab_agent_file_type;

struct ab_agent_stat_s {
	ab_agent_file_type type;
	uint64_t size;
	uint32_t mode;     /* permission bits (07777) */
	int64_t mtime_ms;  /* Unix time in ms */
	bool has_ids;      /* uid and gid said (an agent that does not say: false) */
	uint32_t uid, gid; /* the owner as the sandbox sees it */
};

struct ab_agent_dirent_s {
	char *name;
	struct ab_agent_stat_s st; /* of the entry itself (symlinks not followed) */
	char *target;              /* a symlink's target, else NULL */
	char **xattrs; /* its user.e2b.* xattrs as KEY=VALUE (NULL-terminated), or NULL */
};

/* Called once before any data with the file's stat (may be NULL), then
 * with each chunk; a negative return aborts the read (the error is passed
 * through as it is). */
struct ab_agent_file_sink_s {
	int (*begin) (void *ctx, const struct ab_agent_stat_s *st, ab_error_t *err);
	int (*data) (void *ctx, const void *buf, size_t len, ab_error_t *err);
	void *ctx;
};
/* Fills up to cap bytes; returns the count, 0 at end of input, negative to
 * abort (the target is then left as it was). */
typedef ssize_t (*ab_agent_source_fn) (void *ctx, void *buf, size_t cap, ab_error_t *err);

int ab_agent_file_read (ab_agent_conn_t *c, const char *path,
                        const struct ab_agent_file_sink_s *sink, ab_error_t *err);
/* Streams into a temporary file beside path, renamed over it at the end
 * (atomic: readers see the old or the new file).  mode 0 = 0644.  The parent
 * directory must exist. */
int ab_agent_file_write (ab_agent_conn_t *c, const char *path, uint32_t mode,
                         ab_agent_source_fn source, void *ctx, uint64_t *written, ab_error_t *err);
/* The same with user.e2b.KEY xattrs set from xattrs (KEY=VALUE, NULL-
 * terminated, at most 64) before the file appears; AB_E_INVALID where the
 * file system keeps none. */
int ab_agent_file_write_meta (ab_agent_conn_t *c, const char *path, uint32_t mode,
                              char *const *xattrs, ab_agent_source_fn source, void *ctx,
                              uint64_t *written, ab_error_t *err);
int ab_agent_file_list (ab_agent_conn_t *c, const char *path, struct ab_agent_dirent_s **out,
                        size_t *n, ab_error_t *err);
void ab_agent_dirents_free (struct ab_agent_dirent_s *v, size_t n);
int ab_agent_file_stat (ab_agent_conn_t *c, const char *path, struct ab_agent_stat_s *out,
                        ab_error_t *err);
/* The same, and a symlink's target in *target (a new string; NULL for
 * anything else) and, when xattrs is not NULL, the user.e2b.* xattrs as
 * KEY=VALUE strings (a new NULL-terminated vector, or NULL). */
int ab_agent_file_stat_target (ab_agent_conn_t *c, const char *path, struct ab_agent_stat_s *out,
                               char **target, char ***xattrs, ab_error_t *err);
/* mkdir -p; mode 0 = 0755.  An existing directory is success. */
int ab_agent_file_mkdir (ab_agent_conn_t *c, const char *path, uint32_t mode, ab_error_t *err);
/* Never follows symlinks: a symlink is removed, not its target. */
int ab_agent_file_remove (ab_agent_conn_t *c, const char *path, bool recursive, ab_error_t *err);
int ab_agent_file_rename (ab_agent_conn_t *c, const char *from, const char *to, ab_error_t *err);

/* --- directory watches (agent-client-watch.c) ----------------------------
 * inotify in the agent on a directory (and, recursive, its whole tree),
 * streamed on a channel of this connection.  Names are relative to the
 * watched directory; a rename is RENAME (old name) then CREATE (new name).
 * The agent bounds a watch (directories, depth, events the caller has not
 * taken yet): past a bound, or when the watched directory goes, the next
 * call fails with AB_E_LIMIT (events were lost) or AB_E_NOT_FOUND. */

typedef enum {
	AB_AGENT_WATCH_CREATE = 1,
	AB_AGENT_WATCH_WRITE,
	AB_AGENT_WATCH_REMOVE,
	AB_AGENT_WATCH_RENAME,
	AB_AGENT_WATCH_CHMOD,
} ab_agent_watch_op;

struct ab_agent_watch_event_s {
	ab_agent_watch_op op;
	const char *name; /* valid until the next call on c */
	bool is_dir;
};

/* AB_E_INVALID when path is not a directory; *watch names it on c. */
int ab_agent_watch_start (ab_agent_conn_t *c, const char *path, bool recursive, uint32_t *watch,
                          ab_error_t *err);
/* 1 with an event, 0 when timeout_ms (-1 = forever) passed, -1 on error. */
int ab_agent_watch_next (ab_agent_conn_t *c, uint32_t watch, struct ab_agent_watch_event_s *ev,
                         int timeout_ms, ab_error_t *err);
/* Stop the watch (the agent drops its inotify watches). */
int ab_agent_watch_stop (ab_agent_conn_t *c, uint32_t watch, ab_error_t *err);

/* --- ports ---------------------------------------------------------------
 * A byte stream to 127.0.0.1:port inside the sandbox.  On success the
 * connection is consumed (*c is set to NULL): a small thread relays between
 * it and the returned fd, one end of a SOCK_STREAM socketpair (close-on-exec)
 * that the caller reads, writes, shuts down (half-close is forwarded) and
 * closes.  AB_E_NOT_FOUND when nothing listens there. */
int ab_agent_port_open (ab_agent_conn_t **c, uint16_t port, ab_error_t *err);

/* --- egress (native backend: fds by SCM_RIGHTS) ----------------------------
 * The agent listens on 127.0.0.1:port inside; each connection made to it is
 * handed to the most recent connection that asked, as an fd. */
int ab_agent_egress_listen (ab_agent_conn_t *c, uint16_t port, ab_error_t *err);
/* 1 with *fd, 0 on timeout (-1 = forever), -1 on error. */
int ab_agent_egress_next (ab_agent_conn_t *c, int *fd, int timeout_ms, ab_error_t *err);
/* The same, with the listener's port (0 from an agent that does not say:
 * it has one listener). */
int ab_agent_egress_next_port (ab_agent_conn_t *c, int *fd, uint16_t *port, int timeout_ms,
                               ab_error_t *err);

/* --- egress without fd passing (gVisor, microVM: docs/protocol-v2.md) -----
 * The agent announces each connection made to 127.0.0.1:port inside
 * (EGRESS_READY) on the connection that asked last; the host claims it on a
 * connection of its own, which then carries its bytes as a channel.  An
 * announced connection not claimed within claim_timeout_ms (0 = the
 * agent's default, 10 s; at most 600 s) is closed by the agent. */
int ab_agent_egress_listen_stream (ab_agent_conn_t *c, uint16_t port, uint32_t claim_timeout_ms,
                                   ab_error_t *err);
/* The next announcement: 1 with *conn and *port, 0 on timeout (-1 =
 * forever), -1 on error. */
int ab_agent_egress_next_ready (ab_agent_conn_t *c, uint32_t *conn, uint16_t *port, int timeout_ms,
                                ab_error_t *err);
/* Claim conn on *c (a connection of its own, not the subscriber's) and
 * relay it as ab_agent_port_open does: *c is consumed, the caller gets one
 * end of a socketpair.  AB_E_NOT_FOUND when it was claimed or expired. */
int ab_agent_egress_open (ab_agent_conn_t **c, uint32_t conn, ab_error_t *err);
/* The same without waiting: returns the caller's end at once; connecting
 * to the agent at socket_path, the claim and the relay run on a detached
 * thread (a claim that fails closes the other end: the caller reads EOF),
 * which calls done(ctx) (if not NULL) when it ends. */
int ab_agent_egress_claim (const char *socket_path, uint32_t conn, void (*done) (void *ctx),
                           void *ctx, ab_error_t *err);

/* --- lifecycle ----------------------------------------------------------- */

int ab_agent_ping (ab_agent_conn_t *c, ab_error_t *err);
/* SIGTERM to every process, SIGKILL after grace_ms (0 = 5000), then the
 * agent exits and the sandbox ends.  Returns once the agent confirmed. */
int ab_agent_shutdown (ab_agent_conn_t *c, uint64_t grace_ms, ab_error_t *err);

#endif
