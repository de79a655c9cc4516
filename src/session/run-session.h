/* One command in one sandbox, driven over the agent connection: what
 * `agentbox run` does between create and destroy.  Relays the terminal
 * (when the agent hands back a pty), forwards signals and window size,
 * and waits for the exit report. */
#ifndef AB_SESSION_RUN_SESSION_H
#define AB_SESSION_RUN_SESSION_H

#include <stdbool.h>
#include <stdint.h>

#include "base/error.h"
#include "proto/exec-msg.h"

#define AB_RUN_MAX_LISTEN 4

struct ab_run_io_s {
	/* Host-side relays: pipes the sandbox writes into (or reads from)
	 * that this side copies to/from the caller's own fds; -1 = passed
	 * straight through, nothing to relay. */
	int relay_in;      /* write end: caller's stdin is copied into it */
	int relay_out;     /* read end: copied to caller's stdout */
	int relay_err;     /* read end: copied to caller's stderr */
	bool raw_terminal; /* put the caller's terminal in raw mode for a pty */
	/* Ports the agent listens on at 127.0.0.1 inside (the egress proxy's,
	 * the credential proxy's), asked for before EXEC, and where each
	 * connection it hands over goes, with the port it came in on
	 * (ownership of fd passes).  An agent that does not tag the port
	 * (one listener only) means the first. */
	uint16_t listen_ports[AB_RUN_MAX_LISTEN];
	size_t n_listen;
	void (*conn) (void *ctx, uint16_t port, int fd);
	void *conn_ctx;
};

struct ab_run_outcome_s {
	int wait_status;
	bool timed_out;
	int exec_errno;
	int landlock_abi;
};

/* The caller's main ignores SIGPIPE first: a reader of the relayed output
 * that goes away must fail a write with EPIPE, not end the run. */
int ab_run_session (int door, const struct ab_exec_msg_s *exec, struct ab_run_io_s *io,
                    struct ab_run_outcome_s *out, ab_error_t *err);

#endif
