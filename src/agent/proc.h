/* The process service's state, shared by proc.c (requests, lifecycle) and
 * proc-io.c (output retention and delivery, stdin). */
#ifndef AB_AGENT_PROC_H
#define AB_AGENT_PROC_H

#include "agent/service.h"

#define AB_PROC_KEEP_FINISHED   64
#define AB_PROC_STDIN_QUEUE_MAX (1U << 20)
/* A follower more than this far behind the newest output stops the pipes
 * being read (the process then blocks on write): below the ring's size, so
 * a live follower never loses bytes. */
#define AB_PROC_LAG_MAX AB_PROTO_WINDOW
/* After the process exits, how long to wait for its pipes' EOF (a
 * background child may hold them) before closing them. */
#define AB_PROC_DRAIN_MS 50

struct ab_proc_s;

struct ab_stream_s {
	int fd; /* -1 once closed */
	struct ab_watch_s w;
	struct ab_ring_s ring;
	struct ab_proc_s *p;
};

/* A channel following a process's output (the channel's ctx). */
struct ab_follower_s {
	struct ab_proc_s *p;
	struct ab_channel_s *ch;
	uint64_t pos[2]; /* next byte to send, per stream */
	struct ab_follower_s *next;
};

/* Who to tell when stdin bytes up to `end` are written. */
struct ab_stdin_ack_s {
	uint64_t end;
	struct ab_session_s *s; /* a PROC_STDIN request: OK when written */
	uint32_t req_id;
	struct ab_channel_s *ch; /* STDIN frames: WINDOW when written */
	size_t bytes;
	struct ab_stdin_ack_s *next;
};

struct ab_proc_s {
	pid_t pid; /* ours: what kill and waitpid take */
	pid_t id;  /* what the protocol reports and takes: the commands' pid
	            * (their own namespace's on gVisor, agent/cmdns.c) */
	char **argv;
	bool tty;
	uint64_t started_unix_ms;
	int pty;                   /* master, for resize; -1 without tty */
	struct ab_stream_s out[2]; /* stdout, stderr */

	int in_fd; /* -1 when stdin was not asked for or is closed */
	struct ab_watch_s in_w;
	bool stdin_close_pending;
	uint8_t *in_q;
	size_t in_q_off, in_q_len, in_q_cap;
	uint64_t in_queued, in_written;
	struct ab_stdin_ack_s *acks, **acks_tail;

	/* The exec's keeper (agent/subtree.h): its pid and report pipe, -1
	 * without one or once it has ended (its subtree is empty). */
	pid_t keeper;
	int keeper_fd;
	struct ab_watch_s keeper_w;
	/* Without a keeper, the exec's mark (agent/exec-mark.c), -1: none. */
	int mark_fd;
	unsigned mark_id;

	bool reaped, finished, timed_out, in_grace;
	int wait_status, exec_errno;
	uint64_t grace_ms, finish_seq;
	struct ab_timer_s timeout, drain;
	struct ab_follower_s *followers;
	struct ab_proc_s *next;
};

extern struct ab_proc_s *ab_procs;

/* proc-io.c */
void ab_proc_io_start (struct ab_proc_s *p, int out_fd, int err_fd);
void ab_proc_update_reading (struct ab_proc_s *p);
void ab_proc_drain_now (struct ab_proc_s *p);
int ab_proc_follow (struct ab_proc_s *p, struct ab_session_s *s, uint32_t channel, bool replay,
                    ab_error_t *err);
void ab_proc_pump_followers (struct ab_proc_s *p);
void ab_proc_stdin_push (struct ab_proc_s *p, const uint8_t *data, size_t n, struct ab_session_s *s,
                         uint32_t req_id, struct ab_channel_s *ch);
void ab_proc_stdin_close (struct ab_proc_s *p);
void ab_proc_stdin_abort (struct ab_proc_s *p, const char *why);
/* proc.c */
void ab_proc_check_finished (struct ab_proc_s *p);

#endif
