/* The one sandbox monitor, for every backend: a small host process, comm
 * "agentbox-mon", forked from the caller, that owns the sandbox's lifetime
 * and runs the backend's hooks (struct ab_monitor_ops_s in backend.h).
 *
 *   service mode:  caller ──fork──► (exits) ──fork──► monitor ──► init / runsc / qemu / docker
 *   one-shot:      caller ──fork──► monitor ──► init
 *
 * In service mode it is re-parented away from the caller (which may be
 * restarted: the daemon re-adopts it by its start time, comm and cmdline,
 * which is the caller's, e.g. `agentbox __create-sandbox ID`), starts the
 * sandbox, waits until the agent accepts at spec->service_socket, reports
 * to the caller, then supervises: SIGTERM, the sandbox's own end, or
 * (spec->service_tied) the caller's end tears everything down, the socket
 * included.  One-shot (native only) it stays the caller's child and the
 * caller holds the link: a message on it kills the sandbox, its end (even
 * by SIGKILL of the caller) destroys it, and the sandbox's end is reported
 * on it. */
#ifndef AB_BACKEND_MONITOR_H
#define AB_BACKEND_MONITOR_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend/backend.h"
#include "base/error.h"
#include "spec/spec.h"

/* The start of every create: *sb zeroed, for backend, a fresh id, no door
 * and no monitor yet. */
void ab_sandbox_begin (struct ab_sandbox_s *sb, const struct ab_backend_ops_s *backend);

/* Refuse a spec without a service socket: "the NAME backend runs
 * sandboxes in service mode only". */
int ab_monitor_require_service (const struct ab_spec_s *spec, const char *name, ab_error_t *err);

/* Start sb->backend's sandbox under the monitor, which keeps ctx (copied
 * by fork) and, of the caller's fds, only keep[0..n_keep) and its link.
 * Service mode: returns when the agent accepts connections at
 * spec->service_socket (0, sb->monitor_pid set) or the start failed (-1,
 * err says why: the monitor's own message); with spec->service_tied,
 * sb->monitor_fd is the caller's end of the link (close-on-exec): closing
 * it (even by dying) tears the sandbox down, and ab_monitor_destroy reads
 * the last report from it; else it is -1.  One-shot: returns at once with
 * the monitor forked (sb->monitor_child, sb->monitor_fd the link). */
int ab_monitor_spawn (const struct ab_spec_s *spec, void *ctx, const int *keep, size_t n_keep,
                      struct ab_sandbox_s *sb, ab_error_t *err);

/* The kill slot: one-shot, ask the monitor to kill the sandbox; else
 * SIGTERM the monitor and wait for it (sb->backend->monitor's
 * stop_timeout_ms). */
int ab_monitor_kill (struct ab_sandbox_s *sb, ab_error_t *err);

/* The destroy slot: end the sandbox (one-shot: close the door; else
 * SIGTERM the monitor and wait), then, when the caller holds the link,
 * read the monitor's last report: *ex (zeroed first) gets the backend's
 * stats, and the sandbox's own failure is the error.  A monitor that ends
 * without that report is an error too. */
int ab_monitor_destroy (struct ab_sandbox_s *sb, struct ab_sandbox_exit_s *ex, ab_error_t *err);

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
