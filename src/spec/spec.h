/* The sandbox spec: everything a backend needs to start one sandbox and
 * everything the agent needs to start its first command.  Built from CLI
 * flags (cli/run-options.c) or, later, parsed from JSON or an OCI
 * config.json.  Plain data: no file descriptors, no live state. */
#ifndef AB_SPEC_SPEC_H
#define AB_SPEC_SPEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

typedef enum {
	AB_MOUNT_RO_BIND,
	AB_MOUNT_RW_BIND,
	AB_MOUNT_TMPFS,
} ab_mount_kind;

struct ab_mount_s {
	ab_mount_kind kind;
	char *source;      /* host path (binds); NULL for tmpfs */
	char *destination; /* absolute path inside the sandbox */
	uint64_t size;     /* tmpfs size in bytes, 0 = default */
};

typedef enum {
	AB_NETWORK_NONE,  /* only lo */
	AB_NETWORK_PROXY, /* only lo, plus the egress listener on 127.0.0.1:3128 */
} ab_network_mode;

#define AB_EGRESS_PORT 3128

/* --network proxy: the sandbox's egress policy, as the user gave it. */
struct ab_egress_spec_s {
	char **allow_hosts, **deny_hosts, **allow_cidrs; /* NULL-terminated */
	char *policy_file;
	char *audit_log; /* host path or "-", NULL = none */
};

typedef enum {
	AB_TTY_AUTO,
	AB_TTY_ON,
	AB_TTY_OFF,
} ab_tty_mode;

#define AB_DEFAULT_MEMORY        (2ULL << 30)
#define AB_DEFAULT_PIDS          512
#define AB_DEFAULT_KILL_GRACE_MS 5000
#define AB_DEFAULT_NOFILE        1024
#define AB_DEFAULT_HOSTNAME      "agentbox"
#define AB_WORKSPACE_DIR         "/workspace"

struct ab_limits_s {
	uint64_t memory_bytes;  /* 0 = no limit */
	uint64_t pids;          /* 0 = no limit */
	uint64_t cpu_millis;    /* CPUs x 1000; 0 = no limit */
	uint64_t timeout_ms;    /* 0 = none */
	uint64_t kill_grace_ms; /* SIGTERM to SIGKILL */
	uint64_t nofile;        /* RLIMIT_NOFILE, clamped to the hard limit */
	bool explicit_cgroup;   /* memory/pids/cpus given by the user: cgroups are a must */
};

/* A layered root: read-only layer directories on the host, lowest first,
 * with a per-sandbox upper layer over them unless read_only.  An image
 * (`--image`, the image store in image/) fills it; backends read only
 * this, never the store. */
struct ab_root_layers_s {
	char **layers;  /* NULL-terminated absolute host dirs, lowest first; NULL = none */
	bool read_only; /* no upper layer: writes to the root fail (--read-only) */
};

struct ab_spec_s {
	char *backend; /* "auto" or a backend name */
	char *rootfs;  /* NULL = host binds, else an unpacked image */
	/* The image as the user named it ("python:3.12-slim"), NULL = none;
	 * image/ resolves it into `root` (and the image's defaults) before a
	 * backend sees the spec, and records the digest it resolved to. */
	char *image;
	char *image_digest; /* "sha256:<hex>" of the resolved manifest, NULL = not resolved */
	struct ab_root_layers_s root;
	char *workspace; /* host dir, NULL = none */
	struct ab_mount_s *mounts;
	size_t n_mounts;
	char **argv; /* NULL-terminated */
	char **env;  /* NULL-terminated KEY=VALUE, already complete */
	char *workdir;
	uid_t uid;
	gid_t gid;
	char *hostname;
	ab_network_mode network;
	bool desktop; /* Xvfb :99 and x11vnc on the sandbox's loopback (docs/browser.md) */
	struct ab_egress_spec_s egress;
	ab_tty_mode tty;
	struct ab_limits_s limits;
	char *json_result;  /* path on the host, NULL = off */
	char **credentials; /* run --credential NAME=FILE (host files), NULL-terminated */
	/* Service mode: a long-lived sandbox whose agent listens on this host
	 * unix socket (protocol v2) and whose monitor outlives the caller.
	 * NULL = one-shot (the caller holds the agent connection). */
	char *service_socket;
	/* Service mode for a one-shot caller (`agentbox run` on a backend
	 * without protocol v1): the sandbox also ends when the caller does.
	 * Not part of the JSON form. */
	bool service_tied;
	/* microvm backend: "auto" (kvm; never an implicit emulator), "kvm"
	 * or "tcg" (QEMU's emulator: slow, and not a wall QEMU supports as a
	 * security boundary; only when asked for). */
	char *microvm_accel;
};

const char *ab_spec_default_backend (void);
void ab_spec_init (struct ab_spec_s *spec);
void ab_spec_free (struct ab_spec_s *spec);
/* Set KEY=VALUE in spec->env, replacing an existing KEY. */
void ab_spec_setenv (struct ab_spec_s *spec, const char *kv);
/* --network proxy: HTTP(S)_PROXY, ALL_PROXY, NO_PROXY and lower-case twins. */
void ab_spec_add_proxy_env (struct ab_spec_s *spec);

/* Append a copy of s to a NULL-terminated vector. */
void ab_strv_push (char ***v, const char *s);

void ab_spec_add_mount (struct ab_spec_s *spec, ab_mount_kind kind, const char *source,
                        const char *destination, uint64_t size);

/* Checks that do not touch the system: absolute destinations, no "..",
 * no duplicate destinations, non-empty argv. */
int ab_spec_validate (const struct ab_spec_s *spec, ab_error_t *err);

/* In-sandbox paths where the command may write (the Landlock allowlist
 * every backend's agent applies): /tmp, /dev/shm, the workspace and every
 * mount that is not a read-only bind, and "/" itself when the root is a
 * writable layered one.  NULL-terminated, *n entries. */
char **ab_spec_rw_paths (const struct ab_spec_s *spec, size_t *n);

#endif
