/* The backend interface: one struct of operations per isolation technology
 * (native namespaces today; gVisor, microVM and Docker later).  A backend's
 * only job is to start an isolated environment whose PID 1 is
 * agentbox-agent and to hand the host a connected byte stream to it. */
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
	int agent_fd;      /* connected stream to agentbox-agent */
	pid_t monitor_pid; /* host process that owns the sandbox's lifetime */
	int monitor_fd;    /* caller's end of a tied monitor's link (monitor.h), else -1 */
	void *priv;        /* backend state */
};

struct ab_sandbox_exit_s {
	bool oom_killed;
	uint64_t peak_memory;
	uint64_t cpu_ms;
};

/* What a backend supports (ab_backend_ops_s.features). */
enum {
	AB_BACKEND_ONESHOT = 1u << 0, /* protocol v1 one-shot with stdio fds (else service only) */
	AB_BACKEND_FD_PASSING = 1u
	                        << 1,   /* the agent can hand host fds over its door (SCM_RIGHTS) */
	AB_BACKEND_LIMITS = 1u << 2,    /* memory, pids and cpu limits are enforced */
	AB_BACKEND_NET_PROXY = 1u << 3, /* --network proxy (egress through the host's proxy) */
	AB_BACKEND_PAUSE = 1u << 4,     /* a running sandbox can be frozen and thawed */
	AB_BACKEND_SNAPSHOT = 1u << 5,  /* a sandbox can be checkpointed and restored */
};

enum ab_sandbox_state {
	AB_SANDBOX_RUNNING,
	AB_SANDBOX_STOPPED, /* its monitor is gone: nothing of it is left */
};

struct ab_backend_ops_s {
	const char *name;
	int strength;      /* higher = stronger wall; auto picks the strongest that works */
	unsigned features; /* AB_BACKEND_* */
	/* Guarantees, for `agentbox doctor`: what the wall is made of. */
	const char *wall;
	/* Functional probe: start a tiny sandbox, run `true`, tear it down. */
	void (*probe) (struct ab_probe_result_s *result);
	/* Start a sandbox for `spec`.  With spec->service_socket the agent
	 * listens there (protocol v2) under a detached monitor and
	 * sb->agent_fd is -1; else (AB_BACKEND_ONESHOT only) sb->agent_fd is
	 * a connected protocol v1 stream.
	 * `stdio` (may be NULL) are host fds the first command may inherit as
	 * its 0, 1, 2 where the backend can pass fds (pipes, sockets, /dev/null
	 * only: the caller never hands in a terminal or a host file). */
	int (*create) (const struct ab_spec_s *spec, const int *stdio, struct ab_sandbox_s *sb,
	               ab_error_t *err);
	/* Kill everything in the sandbox now. */
	int (*kill) (struct ab_sandbox_s *sb, ab_error_t *err);
	/* Wait for the sandbox to end, tear it down and report what the host saw. */
	int (*destroy) (struct ab_sandbox_s *sb, struct ab_sandbox_exit_s *exit, ab_error_t *err);
};

/* Is the sandbox still there?  (Service mode: is its monitor alive.) */
enum ab_sandbox_state ab_sandbox_state (const struct ab_sandbox_s *sb);

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
 * temporary directory, CONFIG, run `true` through protocol v2, destroy. */
void ab_backend_service_probe (const struct ab_backend_ops_s *ops,
                               struct ab_probe_result_s *result);

/* The probe result, from a cache no older than AB_PROBE_CACHE_TTL_S when
 * one exists ($AGENTBOX_CACHE_DIR, else $XDG_CACHE_HOME/agentbox, else
 * /var/cache/agentbox for root), else probed now and cached. */
#define AB_PROBE_CACHE_TTL_S 600
void ab_backend_probe_cached (const struct ab_backend_ops_s *ops, struct ab_probe_result_s *result);

#endif
