/* The detached monitor that backends built on an outside tool (runsc,
 * qemu, docker) share with the native service mode's design: a small host
 * process, comm "agentbox-mon", forked from the caller (so its cmdline is
 * the caller's, e.g. `agentbox __create-sandbox ID`, which the daemon checks
 * when it re-adopts sandboxes), that owns the sandbox's lifetime:
 *
 *   caller ──fork──► (exits) ──fork──► monitor ──► runsc / qemu / docker …
 *
 * It starts the sandbox, waits until the agent accepts connections at
 * spec->service_socket, reports to the caller, then supervises: SIGTERM,
 * the sandbox's own end, or (spec->service_tied) the caller's end tears
 * everything down, the socket included. */
#ifndef AB_BACKEND_MONITOR_H
#define AB_BACKEND_MONITOR_H

#include <stdbool.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "base/error.h"
#include "spec/spec.h"

struct ab_monitor_ops_s {
	/* In the monitor (single-threaded, its own session): start the
	 * sandbox.  Returns an fd that becomes readable when the sandbox ends
	 * (a pidfd of runsc or qemu), or -1 with err.  It must not return
	 * before the agent accepts at spec->service_socket (see
	 * ab_monitor_wait_socket). */
	int (*start) (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err);
	/* In the monitor: tear everything down; also called after a failed
	 * start, so it copes with a half-started sandbox.  Idempotent. */
	void (*stop) (void *ctx, const struct ab_spec_s *spec, const char *id);
	/* Optional, in the monitor, when the watched fd fires or after stop:
	 * more work for an event loop of the backend's own (a relay).  NULL
	 * for backends whose agent is reached directly.  It returns on
	 * watch_fd, term_fd or (service_tied; else -1) any event on caller_fd. */
	int (*serve) (void *ctx, const struct ab_spec_s *spec, int watch_fd, int term_fd,
	              int caller_fd);
	/* Optional, in the monitor, once the sandbox ended or was told to
	 * stop and before stop(): what the host saw of it (OOM kill, peak
	 * memory, CPU time), read while the backend still can (e.g. from a
	 * cgroup that stop() removes).  Called only when someone hears the
	 * answer: with spec->service_tied it goes to the caller as the
	 * monitor's last message (ab_monitor_destroy). */
	void (*stats) (void *ctx, const struct ab_spec_s *spec, struct ab_sandbox_exit_s *ex);
};

/* Start a sandbox under a detached monitor; returns when the agent accepts
 * connections at spec->service_socket (0, sb->monitor_pid set) or the start
 * failed (-1, err says why: the monitor's own message).  With
 * spec->service_tied, sb->monitor_fd is the caller's end of the monitor
 * link (close-on-exec): closing it (even by dying) tears the sandbox down,
 * and ab_monitor_destroy reads the last report from it; else it is -1. */
int ab_monitor_spawn (const struct ab_spec_s *spec, const char *id,
                      const struct ab_monitor_ops_s *ops, void *ctx, struct ab_sandbox_s *sb,
                      ab_error_t *err);

/* Destroy: ab_monitor_terminate, then (sb->monitor_fd >= 0) read the
 * monitor's exit report into *ex and close the link.  *ex is left as it
 * was when there is no report (no stats op, not tied, or the monitor
 * died first): callers zero it, or fill it themselves first. */
int ab_monitor_destroy (struct ab_sandbox_s *sb, int timeout_ms, struct ab_sandbox_exit_s *ex,
                        ab_error_t *err);

/* Unlink spec->service_socket and, when tied, its directory if empty. */
void ab_monitor_remove_socket (const struct ab_spec_s *spec);

/* In a monitor, while ops->start runs: fds[0] (the SIGTERM signalfd) and
 * fds[1] (the caller's end of the link) become readable when the start
 * must give up: a start that waits on its own (a VM's boot) watches them
 * too and fails with ECANCELED.  Both are -1 outside a start. */
void ab_monitor_start_cancel_fds (int fds[2]);

/* SIGTERM a monitor and wait (up to timeout_ms) for it to end. */
int ab_monitor_terminate (pid_t monitor_pid, int timeout_ms, ab_error_t *err);

/* Poll until a unix socket at path accepts a connection, watch_fd (if >= 0)
 * becomes readable (the sandbox died: an error), the start is cancelled
 * (see below), or timeout_ms passes. */
int ab_monitor_wait_socket (const char *path, int watch_fd, int timeout_ms, ab_error_t *err);

/* Start argv (a host tool, searched in PATH) with in, out, err_fd as its
 * 0, 1, 2 (-1 = /dev/null) and default signal state; its pid, or -1. */
pid_t ab_spawn_tool (char *const argv[], int in, int out, int err_fd, ab_error_t *err);

/* Run argv (a host tool) with stdin /dev/null, stdout to out (NUL-terminated,
 * at most cap-1 bytes kept; may be NULL) and stderr appended after it, and
 * wait at most timeout_ms.  Returns the exit status (0-255), or -1 with err
 * when it could not run or timed out (then it is killed). */
int ab_run_tool (char *const argv[], char *out, size_t cap, int timeout_ms, ab_error_t *err);

#endif
