/* agentbox-runc: an OCI runtime with runc's command line (docs/oci-runtime.md).
 *
 *   caller (conmon, containerd-shim, ctr, dockerd)
 *     └─ agentbox-runc create ──clone(new user, mount, pid, ipc, uts[, net])──► init (PID 1)
 *                                                                    └─ fork ─► the bundle's
 * process
 *
 * init is a direct child of `create`, so after create exits it is
 * reparented to the caller (a child subreaper) and its exit status is the
 * container process's: the pid in --pid-file is init.  The bundle's
 * process is init's first child; init forwards signals to it, reaps every
 * orphan and exits with its status.  The files: oci-main.c (global flags,
 * dispatch, state/list/kill/delete/ps/features/spec), oci-config.c
 * (config.json into struct ab_oci_s), oci-create.c (the caller's side of
 * create/start/run), oci-init.c (init: the root and PID 1), oci-exec.c
 * (exec, and the confinement every process of a container gets). */
#ifndef AB_CLI_OCI_H
#define AB_CLI_OCI_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"

#define AB_OCI_DEFAULT_ROOT   "/run/agentbox-runc"
#define AB_OCI_SPEC_VERSION   "1.0.2-dev"
#define AB_OCI_MAX_IDMAPS     8
#define AB_OCI_HOOK_TIMEOUT_S 30
/* The state create hands init for its in-container hooks. */
#define AB_OCI_STATE_MSG_MAX 65536

struct ab_oci_idmap_s {
	uint32_t inside, host, size;
};

struct ab_oci_mount_s {
	char *destination, *type, *source;
	char *data;                /* options the filesystem reads, comma-separated */
	uint64_t attr;             /* MOUNT_ATTR_* */
	unsigned long propagation; /* MS_PRIVATE, MS_SLAVE, MS_SHARED, MS_UNBINDABLE or 0 */
	bool bind, recursive, recursive_ro;
};

struct ab_oci_rlimit_s {
	int resource;
	uint64_t soft, hard;
};

/* A `specs.Process`: config.json's process or `exec --process`. */
struct ab_oci_process_s {
	char **args, **env; /* NULL-terminated */
	const char *path;   /* what to execute when not args[0] (a hook's path) */
	char *cwd;
	uid_t uid;
	gid_t gid;
	gid_t *groups;
	size_t n_groups;
	mode_t umask;
	bool has_umask;
	bool terminal;
	unsigned short rows, cols;
	struct ab_oci_rlimit_s *rlimits;
	size_t n_rlimits;
	bool no_new_privs;
	int oom_score_adj;
	bool has_oom;
};

struct ab_oci_ns_s {
	int type;   /* CLONE_NEW* */
	char *path; /* join instead of creating, or NULL */
};

struct ab_oci_s {
	json_t *json; /* the whole config.json */
	char *bundle, *rootfs;
	bool root_readonly;
	struct ab_oci_process_s proc;
	struct ab_oci_mount_s *mounts;
	size_t n_mounts;
	struct ab_oci_ns_s ns[8];
	size_t n_ns;
	struct ab_oci_idmap_s uids[AB_OCI_MAX_IDMAPS], gids[AB_OCI_MAX_IDMAPS];
	size_t n_uids, n_gids;
	char *hostname;
	char **masked, **readonly; /* NULL-terminated */
	uint64_t memory, pids, cpu_millis;
	char *cgroups_path; /* linux.cgroupsPath, or NULL */
};

/* Global flags and the error log the caller reads. */
struct ab_oci_global_s {
	const char *root;
	const char *log;
	bool json_log;
	bool debug;
};

/* oci-config.c */
int ab_oci_config_load (const char *bundle, struct ab_oci_s *c, ab_error_t *err);
int ab_oci_process_parse (const json_t *p, struct ab_oci_process_s *proc, ab_error_t *err);
int ab_oci_mounts_parse (const json_t *mounts, struct ab_oci_s *c, ab_error_t *err);
void ab_oci_process_free (struct ab_oci_process_s *proc);
void ab_oci_config_free (struct ab_oci_s *c);
bool ab_oci_ns_new (const struct ab_oci_s *c, int type);
/* A default config.json (`spec`), a rootless one when rootless. */
json_t *ab_oci_default_spec (bool rootless);
int ab_oci_signal_parse (const char *s, int *sig);

/* oci-state.c: <root>/<id>/state.json */
struct ab_oci_state_s {
	char id[128];
	pid_t pid;
	uint64_t start_time; /* of pid, against pid reuse */
	char *bundle, *rootfs, *created;
	json_t *annotations;
	json_t *config;  /* the config it was created from */
	json_t *cgroups; /* the directories of its groups, removed by delete */
	bool started;
	bool paused; /* by pause (the freezer, else SIGSTOP) until resume */
};
int ab_oci_check_id (const char *id, ab_error_t *err);
int ab_oci_state_dir (const struct ab_oci_global_s *g, const char *id, char *buf, size_t size,
                      ab_error_t *err);
int ab_oci_state_save (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st,
                       ab_error_t *err);
int ab_oci_state_load (const struct ab_oci_global_s *g, const char *id, struct ab_oci_state_s *st,
                       ab_error_t *err);
void ab_oci_state_free (struct ab_oci_state_s *st);
bool ab_oci_alive (const struct ab_oci_state_s *st);
const char *ab_oci_status (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st);
json_t *ab_oci_state_json (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st,
                           const char *status);
/* Every host pid in the container's pid namespace (init first). */
pid_t *ab_oci_pids (pid_t init, size_t *n);
/* The directories of init's groups: at the bundle's cgroupsPath `at`, or
 * named agentbox-<id> (ab_cgroup_create puts them below the creator's
 * cgroup, which `delete`, run from elsewhere, cannot find again). */
json_t *ab_oci_cgroup_dirs (pid_t init, const char *id, const char *at);
/* Kill what is left in them and remove them (bounded retries). */
int ab_oci_cgroup_remove (const json_t *dirs, ab_error_t *err);
/* Move the calling process into them (exec: a process of the container
 * is under its limits). */
int ab_oci_cgroup_join (const json_t *dirs, ab_error_t *err);
int ab_oci_write_pid_file (const char *path, pid_t pid, ab_error_t *err);
/* Run the hooks config.hooks.<kind> with the state on stdin. */
int ab_oci_hooks (const json_t *config, const char *kind, const json_t *state, ab_error_t *err);
/* The same in the container (createContainer, startContainer: run by
 * init after pivot_root), each hook behind the walls of a container
 * process (ab_oci_exec_process), as the container's root. */
int ab_oci_hooks_in (const struct ab_oci_s *c, const char *kind, const json_t *state,
                     ab_error_t *err);

/* oci-create.c */
int ab_oci_cmd_create (const struct ab_oci_global_s *g, int argc, char **argv, bool run,
                       ab_error_t *err);
int ab_oci_cmd_start (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err);
/* Connect to --console-socket (before any namespace is entered). */
int ab_oci_console_connect (const char *path, ab_error_t *err);
/* Receive a pty master on peer, relay our stdin/stdout to it until the
 * container's side closes (run and exec attached without a console). */
void ab_oci_relay_pty (int peer);
/* In the container: a new pty; the master goes to console_fd, the slave
 * is returned. */
int ab_oci_console_make (int console_fd, const struct ab_oci_process_s *p, ab_error_t *err);

/* oci-init.c: init's side, in the new namespaces.  Never returns. */
struct ab_oci_init_s {
	const struct ab_oci_s *c;
	int sync_fd;
	int console_fd; /* -1 without a terminal */
	int fifo_fd;    /* O_PATH of exec.fifo, opened before the root changes */
	int preserve_fds;
	void *seccomp;    /* the bundle's filter, compiled in setup */
	json_t *state;    /* from create, for the in-container hooks (or NULL) */
	int agent_listen; /* run.agentbox.agent: its listening socket, <state>/agent.sock */
	int agent_exe;    /* a read-only mount of agentbox-agent, made by create */
};
#define AB_OCI_AGENT_ANNOTATION   "run.agentbox.agent"
#define AB_OCI_NETWORK_ANNOTATION "run.agentbox.network"
void ab_oci_init_main (struct ab_oci_init_s *in) __attribute__ ((noreturn));

/* oci-exec.c */
int ab_oci_cmd_exec (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err);
/* The walls every process of a container gets, then execve; in a forked
 * child.  Returns only on failure (with errno). */
void ab_oci_exec_process (const struct ab_oci_process_s *p, const struct ab_oci_s *c, int tty_slave,
                          int preserve_fds, void *seccomp);

/* Where the container's processes may write (Landlock): a writable
 * root, the writable mounts.  At most max. */
size_t ab_oci_rw_paths (const struct ab_oci_s *c, char **out, size_t max);

/* oci-agent.c: the annotation asks for our agent; configure it (on
 * <state dir>/agent.sock) once the container has started. */
bool ab_oci_wants_agent (const json_t *config);
int ab_oci_agent_configure (const struct ab_oci_global_s *g, const struct ab_oci_state_s *st,
                            ab_error_t *err);

/* oci-devices.c: linux.devices, host nodes bound in: create hands
 * clones of them to init (after the binds), init attaches them beneath
 * its root (after /dev). */
int ab_oci_devices_send (const json_t *config, int sync, ab_error_t *err);
int ab_oci_devices_attach (const json_t *config, int root, int sync, ab_error_t *err);

/* oci-update.c: memory, pids and cpu of a running container. */
int ab_oci_cmd_update (const struct ab_oci_global_s *g, int argc, char **argv, ab_error_t *err);

/* oci-seccomp.c: linux.seccomp compiled (*out NULL when there is none),
 * loaded last before execve on top of our own filter, freed. */
int ab_oci_seccomp_compile (const json_t *seccomp, void **out, ab_error_t *err);
int ab_oci_seccomp_load (void *filter);
void ab_oci_seccomp_free (void *filter);

#endif
