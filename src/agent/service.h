/* The agent's service mode (protocol version 2): an event loop over many
 * sessions, each a connection accepted on the listening fd 4, carrying
 * requests on channel 0 and byte streams on channels with credit-based
 * flow control.  Internal to agentbox-agent. */
#ifndef AB_AGENT_SERVICE_H
#define AB_AGENT_SERVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "agent/agent.h"
#include "base/error.h"
#include "base/sys.h"
#include "proto/msg.h"

/* ---- loop.c: epoll, timers, deferred frees ------------------------------ */

struct ab_watch_s;
typedef void (*ab_watch_fn) (struct ab_watch_s *w, uint32_t events);
struct ab_watch_s {
	int fd; /* -1 when not registered */
	uint32_t events;
	ab_watch_fn cb;
	void *ctx;
};

struct ab_timer_s;
typedef void (*ab_timer_fn) (struct ab_timer_s *t);
struct ab_timer_s {
	uint64_t deadline_ms; /* CLOCK_MONOTONIC */
	bool armed;
	ab_timer_fn cb;
	void *ctx;
	struct ab_timer_s *next;
};

int ab_loop_init (ab_error_t *err);
/* Register fd with interest `events` (EPOLLIN/EPOLLOUT); 0 = registered
 * but idle. */
int ab_loop_add (struct ab_watch_s *w, int fd, uint32_t events, ab_watch_fn cb, void *ctx);
void ab_loop_set (struct ab_watch_s *w, uint32_t events);
/* Unregister (the fd is not closed).  Safe on a watch never added. */
void ab_loop_del (struct ab_watch_s *w);
void ab_timer_arm (struct ab_timer_s *t, uint64_t in_ms, ab_timer_fn cb, void *ctx);
void ab_timer_cancel (struct ab_timer_s *t);
/* Free p after the current batch of events (callbacks of the same batch
 * may still hold it). */
void ab_loop_defer_free (void *p);
/* Run a function after every batch (session flushes). */
void ab_loop_after_batch (void (*fn) (void));
void ab_loop_run (void) __attribute__ ((noreturn));

/* ---- ring.c: retained output ------------------------------------------- */

#define AB_RING_MAX (1U << 20)

/* The last AB_RING_MAX bytes of a stream, addressed by absolute offsets
 * (bytes ever written): [start, end). Grows on demand. */
struct ab_ring_s {
	uint8_t *buf;
	size_t cap;
	uint64_t start, end;
};
void ab_ring_append (struct ab_ring_s *r, const uint8_t *p, size_t n);
/* A contiguous piece at offset off (>= start): pointer and length. */
size_t ab_ring_peek (const struct ab_ring_s *r, uint64_t off, const uint8_t **p);
void ab_ring_free (struct ab_ring_s *r);

/* ---- session.c ----------------------------------------------------------- */

struct ab_session_s;
struct ab_channel_s;

/* Stop reading a session's requests while this much output waits. */
#define AB_SESSION_OUT_HIGH (1U << 20)

void ab_session_accept (int listen_fd);
/* listen.c: sessions only from these peer pids (SO_PEERCRED) once one is
 * allowed; until then every peer (the native monitor's fd 4). */
void ab_session_allow_peer (pid_t pid);
bool ab_session_peer_allowed (int fd);
/* Registered with ab_loop_after_batch: writes what a batch queued. */
void ab_session_flush_dirty (void);
/* Queue a frame; flushed after the current batch. */
void ab_session_send (struct ab_session_s *s, uint16_t type, uint32_t channel, const void *p,
                      size_t len);
void ab_session_send_msg (struct ab_session_s *s, uint32_t channel, const struct ab_msg_s *m);
void ab_session_ok (struct ab_session_s *s, uint32_t req_id, struct ab_msg_s *results);
void ab_session_fail (struct ab_session_s *s, uint32_t req_id, const ab_error_t *e);
bool ab_session_can_send (const struct ab_session_s *s);
/* Send a frame with an fd attached (SCM_RIGHTS); only when the session's
 * output is empty, else returns 0 and the caller retries later. */
#define AB_SESSION_FD_PAYLOAD_MAX 64
int ab_session_send_fd (struct ab_session_s *s, uint16_t type, const void *p, size_t len, int fd);
bool ab_session_out_empty (const struct ab_session_s *s);
void ab_session_close (struct ab_session_s *s);
/* Write out whatever is queued, blocking (before the agent exits). */
void ab_session_flush_all_blocking (void);
struct ab_channel_s *ab_session_channel (struct ab_session_s *s, uint32_t id);
struct ab_channel_s **ab_session_channel_list (struct ab_session_s *s);
/* Every live session, for egress hand-over. */
struct ab_session_s *ab_session_first (void);

/* ---- channel.c: credits and dispatch ------------------------------------ */

struct ab_channel_ops_s {
	/* Send what credit and the session allow. */
	void (*pump) (struct ab_channel_s *ch);
	/* Bytes from the host (DATA/STDIN); the channel grants them back with
	 * ab_channel_grant as it gets rid of them. */
	void (*data) (struct ab_channel_s *ch, const uint8_t *p, size_t n);
	void (*eof) (struct ab_channel_s *ch);
	/* The host reset the channel or the session ended: release everything;
	 * the channel is freed after this. */
	void (*destroy) (struct ab_channel_s *ch);
};

struct ab_channel_s {
	uint32_t id;
	const struct ab_channel_ops_s *ops;
	struct ab_session_s *s;
	uint64_t credit;  /* bytes we may still send */
	uint64_t in_held; /* bytes received, not yet granted back */
	bool closed;      /* destroyed: no more frames */
	void *ctx;
	struct ab_channel_s *next; /* in the session */
};

/* New channel on s; fails with AB_E_CONFLICT when the id is in use. */
struct ab_channel_s *ab_channel_open (struct ab_session_s *s, uint32_t id,
                                      const struct ab_channel_ops_s *ops, void *ctx,
                                      ab_error_t *err);
/* A frame on channel != 0; false = protocol violation, end the session. */
bool ab_channel_frame (struct ab_session_s *s, const struct ab_frame_s *f);
/* Send bytes as `type` frames (at most credit; returns what was sent). */
size_t ab_channel_send_data (struct ab_channel_s *ch, uint16_t type, const uint8_t *p, size_t n);
void ab_channel_send_eof (struct ab_channel_s *ch);
void ab_channel_grant (struct ab_channel_s *ch, size_t n);
/* End the channel from our side (after EOF/EXIT was sent, or with RESET
 * when e != NULL); calls destroy. */
void ab_channel_finish (struct ab_channel_s *ch, const ab_error_t *e);
/* May this channel send now (credit and session room)? */
bool ab_channel_writable (const struct ab_channel_s *ch);
void ab_channel_destroy_all (struct ab_session_s *s);
void ab_channel_pump_all (struct ab_session_s *s);

/* ---- the sandbox's configuration (CONFIG) -------------------------------- */

struct ab_service_config_s {
	bool configured;
	int sandbox_root_fd; /* O_PATH "/": what file reads resolve beneath */
	char **roots;        /* file roots (paths): where file writes may go */
	int *root_fds;       /* O_PATH directory fds, one per root */
	size_t n_roots;
	char **rw_paths; /* Landlock write paths of processes */
	size_t n_rw_paths;
	uint64_t nofile;
	uid_t file_uid;
	gid_t file_gid;
};
extern struct ab_service_config_s ab_config;
/* RLIMIT_NOFILE the agent started with: processes get it without CONFIG's. */
uint64_t ab_service_default_nofile (void);

/* ---- requests: one handler per message type ------------------------------ */

typedef void (*ab_request_fn) (struct ab_session_s *s, struct ab_msg_s *m);

void ab_req_config (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_ping (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_shutdown (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_egress_listen (struct ab_session_s *s, struct ab_msg_s *m);
void ab_service_forget_session (struct ab_session_s *s);

void ab_req_proc_start (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_proc_signal (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_proc_resize (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_proc_list (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_proc_attach (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_proc_stdin (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_proc_close_stdin (struct ab_session_s *s, struct ab_msg_s *m);

void ab_req_file_read (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_file_write (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_file_list (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_file_stat (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_file_mkdir (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_file_remove (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_file_rename (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_file_watch (struct ab_session_s *s, struct ab_msg_s *m); /* watch.c */

void ab_req_port_open (struct ab_session_s *s, struct ab_msg_s *m);
void ab_req_egress_open (struct ab_session_s *s, struct ab_msg_s *m);
/* port.c: relay fd (a connection egress.c accepted) on a new channel of s
 * and answer req_id OK {PORT}; on failure nothing is sent and fd stays the
 * caller's. */
int ab_port_adopt (struct ab_session_s *s, uint32_t req_id, uint32_t channel, int fd, uint16_t port,
                   ab_error_t *err);

/* ---- proc.c / proc-io.c ------------------------------------------------- */

/* A child ended (from the SIGCHLD reaper). */
void ab_proc_reaped (pid_t pid, int status);
/* A session is going: drop its pending stdin acknowledgements. */
void ab_proc_forget_session (struct ab_session_s *s);
/* SIGTERM (then SIGKILL) to every process group we started. */
void ab_proc_signal_all (int sig);
bool ab_proc_any_running (void);

/* ---- fsroot.c: confined path resolution ----------------------------------- */

typedef enum { AB_FS_READ, AB_FS_WRITE } ab_fs_access;

struct ab_fspath_s {
	int root_fd;      /* borrowed from ab_config */
	uint64_t resolve; /* openat2 RESOLVE_* for lookups beneath root_fd */
	char *rel;        /* beneath the root: "." for the root itself */
	char *dir_rel;    /* parent of rel ("." for a top-level entry); NULL for the root */
	char *base;       /* last component; NULL for the root */
};

/* Map a client path to a root and a relative path; refuses `..`, empty
 * components are folded.  AB_FS_READ: beneath the sandbox's root
 * (RESOLVE_IN_ROOT); AB_FS_WRITE: beneath the file root holding the path
 * (RESOLVE_BENEATH), paths outside every root are denied. */
int ab_fspath_parse (const char *path, ab_fs_access how, struct ab_fspath_s *out, ab_error_t *err);
void ab_fspath_free (struct ab_fspath_s *p);
/* openat2(p->root_fd, rel, flags, p->resolve); anything on procfs is refused. */
int ab_fs_open (const struct ab_fspath_s *p, const char *rel, int flags, const char *shown,
                ab_error_t *err);
/* The parent directory of p as an O_PATH fd (the root itself for a top-level entry). */
int ab_fs_open_parent (const struct ab_fspath_s *p, const char *shown, ab_error_t *err);
/* errno of a file operation -> error with the right kind. */
int ab_fs_error (ab_error_t *err, int errnum, const char *what, const char *path);
struct stat;
/* FTYPE, SIZE, MODE, MTIME_MS of st into m. */
void ab_stat_to_msg (const struct stat *st, struct ab_msg_s *m);
/* Act as the configured sandbox user for file operations (setfsuid), with
 * no effective capabilities, as the sandbox's commands. */
void ab_fs_as_user (bool on);

/* ---- egress.c ------------------------------------------------------------ */

int ab_egress_listen (uint16_t port, ab_error_t *err);
void ab_egress_forget_session (struct ab_session_s *s);
/* Hand queued connections to the subscribed session when it can take one. */
void ab_egress_kick (void);

#endif
