/* The backend interface: one struct of operations per isolation technology
 * (native namespaces, gVisor, microVM, Docker).  A backend's only job is to
 * start an isolated environment whose PID 1 is agentbox-agent and to hand
 * the host a byte stream to it.  This header is the whole contract: the
 * operations the callers use (create, kill, destroy, pause, resume,
 * snapshot, probe) and the hooks the one sandbox monitor runs
 * (struct ab_monitor_ops_s; the monitor itself is monitor.h).
 * docs/backends.md walks through adding one. */
#ifndef AB_BACKEND_BACKEND_H
#define AB_BACKEND_BACKEND_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "spec/spec.h"

struct ab_probe_result_s {
	bool works;
	uint64_t duration_us; /* how long the functional probe took */
	char reason[256];     /* why it works or does not */
};

/* A started sandbox, as seen by the caller. */
struct ab_sandbox_s {
	const struct ab_backend_ops_s *backend;
	char id[33];
	int agent_fd;       /* one-shot: connected stream to agentbox-agent, else -1 */
	pid_t monitor_pid;  /* host process that owns the sandbox's lifetime */
	int monitor_fd;     /* caller's end of the monitor link (one-shot or tied), else -1 */
	bool monitor_child; /* one-shot: the monitor is the caller's child (waited for) */
	void *priv;         /* backend state */
	/* Service mode, for pause, resume and snapshot on a sandbox the caller
	 * did not create itself (the daemon, after a restart): where its agent
	 * listens; the backend's state lies beside it.  NULL otherwise. */
	const char *service_socket;
};

/* What holds a limit that was asked for (--json-result "limits"). */
typedef enum {
	AB_LIMIT_OFF = 0, /* not asked for (0 or unlimited) */
	AB_LIMIT_CGROUP,  /* a cgroup's controller: the whole sandbox */
	AB_LIMIT_RLIMIT,  /* rlimits only (no cgroup to use): RLIMIT_DATA per process,
	                   * RLIMIT_NPROC per uid inside the sandbox's user namespace */
	AB_LIMIT_VM,      /* the virtual machine's size (memory, vCPUs) */
	AB_LIMIT_NONE,    /* asked for, but nothing enforces it */
} ab_limit_by;

struct ab_sandbox_exit_s {
	bool oom_killed;
	uint64_t peak_memory;
	uint64_t cpu_ms;
	uint8_t memory_by, pids_by, cpu_by; /* ab_limit_by */
};

/* "cgroup", "rlimit", "vm", "none" or "off". */
const char *ab_limit_by_name (ab_limit_by by);
/* The usual case: a mechanism for every limit the spec sets. */
void ab_limits_held_by (struct ab_sandbox_exit_s *ex, const struct ab_limits_s *l, ab_limit_by by);

/* What a backend supports (ab_backend_ops_s.features).  PAUSE and
 * SNAPSHOT name operations: a backend sets them exactly when it fills the
 * pause/resume and snapshot slots (ab_backend_check; tests/unit). */
enum {
	AB_BACKEND_ONESHOT = 1u << 0, /* protocol v1 one-shot with stdio fds (else service only) */
	AB_BACKEND_FD_PASSING = 1u
	                        << 1,   /* the agent can hand host fds over its door (SCM_RIGHTS) */
	AB_BACKEND_LIMITS = 1u << 2,    /* memory, pids and cpu limits are enforced */
	AB_BACKEND_NET_PROXY = 1u << 3, /* --network proxy (egress through the host's proxy) */
	AB_BACKEND_PAUSE = 1u << 4,     /* pause and resume are filled */
	AB_BACKEND_SNAPSHOT = 1u << 5,  /* snapshot is filled */
};

enum ab_sandbox_state {
	AB_SANDBOX_RUNNING,
	AB_SANDBOX_STOPPED, /* its monitor is gone: nothing of it is left */
};

/* The hooks of the one sandbox monitor (monitor.h): what a backend does
 * inside that small host process (single-threaded, its own session, comm
 * "agentbox-mon", every inherited fd closed but the ones create kept),
 * which owns the sandbox's lifetime.  ctx is the backend's state, filled
 * by create in the caller and copied into the monitor by fork. */
struct ab_monitor_ops_s {
	/* Start the sandbox.  Returns an fd that becomes readable when the
	 * sandbox ends (a pidfd of init, runsc or qemu), or -1 with err.  In
	 * service mode it must not return before the agent accepts at
	 * spec->service_socket (ab_monitor_wait_socket). */
	int (*start) (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err);
	/* Tear everything down; also called after a failed start, so it copes
	 * with a half-started sandbox.  Idempotent.  -1 with err: something
	 * was left (reported to a caller that listens as "cleanup: ..."). */
	int (*stop) (void *ctx, const struct ab_spec_s *spec, const char *id, ab_error_t *err);
	/* Optional: kill everything in the sandbox now, and let the monitor
	 * wait for the watched fd (so stats sees the whole end).  With it the
	 * monitor also ends a sandbox that outlives its time limit by
	 * kill_grace + 5 s (the agent should have).  NULL: SIGTERM or the
	 * caller's end go straight to stats and stop. */
	void (*kill) (void *ctx);
	/* Optional, when the backend has an event loop of its own (a relay):
	 * it replaces the monitor's wait and returns on watch_fd, term_fd or
	 * (caller_fd >= 0) any event on caller_fd. */
	int (*serve) (void *ctx, const struct ab_spec_s *spec, int watch_fd, int term_fd,
	              int caller_fd);
	/* Optional, once the sandbox ended or was told to stop and before
	 * stop(): what the host saw of it (OOM kill, peak memory, CPU time),
	 * read while the backend still can (e.g. from a cgroup that stop()
	 * removes), and err when the sandbox failed (why it never ran).
	 * Called only when a caller listens (one-shot or tied); it reaches
	 * the caller as the monitor's last report (ab_monitor_destroy). */
	void (*stats) (void *ctx, const struct ab_spec_s *spec, struct ab_sandbox_exit_s *ex,
	               ab_error_t *err);
	/* How long kill and destroy wait for the monitor to end. */
	int stop_timeout_ms;
};

struct ab_backend_ops_s {
	const char *name;
	int strength;      /* higher = stronger wall; auto picks the strongest that works */
	unsigned features; /* AB_BACKEND_* */
	/* Guarantees, for `agentbox doctor`: what the wall is made of. */
	const char *wall;
	/* Functional probe: cheap checks for a precise reason first, then a
	 * tiny sandbox that runs `true` and is torn down (probe.c,
	 * probe-service.c). */
	void (*probe) (struct ab_probe_result_s *result);
	/* Start a sandbox for `spec`.  With spec->service_socket the agent
	 * listens there (protocol v2) under a detached monitor and
	 * sb->agent_fd is -1; else (AB_BACKEND_ONESHOT only) sb->agent_fd is
	 * a connected protocol v1 stream.
	 * `stdio` (may be NULL) are host fds the first command may inherit as
	 * its 0, 1, 2 where the backend can pass fds (pipes, sockets, /dev/null
	 * only: the caller never hands in a terminal or a host file).
	 * Service backends: ab_sandbox_begin, their checks, ab_monitor_spawn. */
	int (*create) (const struct ab_spec_s *spec, const int *stdio, struct ab_sandbox_s *sb,
	               ab_error_t *err);
	/* Kill everything in the sandbox now (ab_monitor_kill). */
	int (*kill) (struct ab_sandbox_s *sb, ab_error_t *err);
	/* Wait for the sandbox to end, tear it down and report what the host
	 * saw (ab_monitor_destroy). */
	int (*destroy) (struct ab_sandbox_s *sb, struct ab_sandbox_exit_s *exit, ab_error_t *err);
	/* Freeze every process of a running sandbox / thaw it, from any
	 * process: sb needs backend, id, monitor_pid and service_socket only
	 * (ab_sandbox_attach).  Idempotent: pausing a paused sandbox is 0.
	 * NULL where unsupported (then AB_BACKEND_PAUSE is clear). */
	int (*pause) (struct ab_sandbox_s *sb, ab_error_t *err);
	int (*resume) (struct ab_sandbox_s *sb, ab_error_t *err);
	/* Checkpoint a running sandbox into dir (a new, empty directory).
	 * NULL where unsupported (then AB_BACKEND_SNAPSHOT is clear). */
	int (*snapshot) (struct ab_sandbox_s *sb, const char *dir, ab_error_t *err);
	/* The monitor's hooks (above). */
	const struct ab_monitor_ops_s *monitor;
};

/* Do the backend's feature flags agree with its slots (PAUSE with pause
 * and resume, SNAPSHOT with snapshot, a monitor with start and stop)?
 * 0, or -1 with err naming the mismatch. */
int ab_backend_check (const struct ab_backend_ops_s *ops, ab_error_t *err);

/* Is the sandbox still there?  (Service mode: is its monitor alive.) */
enum ab_sandbox_state ab_sandbox_state (const struct ab_sandbox_s *sb);

/* Fill sb to name a service-mode sandbox that runs under monitor `pid`
 * (for pause, resume and snapshot; the backend's own id, socket). */
void ab_sandbox_attach (struct ab_sandbox_s *sb, const struct ab_backend_ops_s *ops, const char *id,
                        pid_t monitor_pid, const char *service_socket);

/* A fresh random sandbox id: 16 hex digits. */
void ab_backend_make_id (char id[33]);

/* All compiled-in backends, strongest first, NULL-terminated. */
const struct ab_backend_ops_s *const *ab_backends (void);
const struct ab_backend_ops_s *ab_backend_find (const char *name);

/* Resolve "auto" or a name to a backend that works, or fail naming the check
 * that did not pass (never a silent fallback). */
const struct ab_backend_ops_s *ab_backend_select (const char *name, ab_error_t *err);

/* Start a throwaway sandbox of `ops` running `true` and tear it down;
 * fills result (works, duration, reason). */
void ab_backend_functional_probe (const struct ab_backend_ops_s *ops,
                                  struct ab_probe_result_s *result);

/* The same for a service-mode backend: create with a service socket in a
 * temporary directory, run `true` in it through protocol v2 (the
 * registered ab_service_exec_fn), destroy. */
void ab_backend_service_probe (const struct ab_backend_ops_s *ops,
                               struct ab_probe_result_s *result);

/* What a service-mode probe runs in its started sandbox: connect to
 * spec->service_socket, CONFIG from spec, run `true`, 0 when it exited 0.
 * The protocol v2 client lives above this layer, so the program registers
 * it (agentbox's main: session's ab_session_probe_exec); until one is
 * registered, a service probe fails saying so. */
typedef int (*ab_service_exec_fn) (const struct ab_spec_s *spec, ab_error_t *err);
void ab_backend_set_service_exec (ab_service_exec_fn fn);

/* The probe result, from a cache no older than AB_PROBE_CACHE_TTL_S when
 * one exists ($AGENTBOX_CACHE_DIR, else $XDG_CACHE_HOME/agentbox, else
 * /var/cache/agentbox for root), else probed now and cached. */
#define AB_PROBE_CACHE_TTL_S 600
/* Where host-derived caches live (probe results, host masks):
 * $AGENTBOX_CACHE_DIR, /var/cache/agentbox as root, else the XDG cache;
 * NULL when none can be named.  Malloc'ed. */
char *ab_backend_cache_dir (void);
void ab_backend_probe_cached (const struct ab_backend_ops_s *ops, struct ab_probe_result_s *result);

/* Remove what sandboxes whose monitor was killed with SIGKILL left on the
 * host (their cgroups); whatever a live sandbox still holds is skipped. */
int ab_backend_sweep_stale (ab_error_t *err);

#endif
