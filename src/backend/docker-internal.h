/* The Docker backend's parts (docker.c drives them). */
#ifndef AB_BACKEND_DOCKER_INTERNAL_H
#define AB_BACKEND_DOCKER_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>
#include <stddef.h>
#include <sys/types.h>

#include "backend/docker.h"
#include "backend/oci-bundle.h"

/* Inside the container: the door where the gVisor sandbox has it too
 * (oci-bundle.h); the agent beside it. */
#define AB_DOCKER_AGENT       "/.agentbox-agent"
#define AB_DOCKER_DOOR        AB_OCI_DOOR_DIR
#define AB_DOCKER_DOOR_SOCKET AB_OCI_SOCKET

/* The image of a sandbox on the host's trees: nothing in it (every tree
 * is a read-only bind).  Made locally with `docker import`, never pulled. */
#define AB_DOCKER_EMPTY_IMAGE "agentbox/empty:1"
#define AB_DOCKER_ROOTFS_REPO "agentbox/rootfs"
#define AB_DOCKER_LAYERS_REPO "agentbox/layers"

/* Owner of the door directory: a uid no command of a sandbox can have
 * (commands run as 0-65535), so the commands, root included (no
 * CAP_DAC_OVERRIDE), cannot enter it to replace the agent's socket with
 * their own; only the agent (which keeps CAP_DAC_OVERRIDE) can. */
#define AB_DOCKER_DOOR_UID 65536

/* What `docker run` needs besides the spec; every path is on the host. */
struct ab_docker_run_s {
	const char *client;        /* the docker CLI */
	const char *name;          /* container name */
	const char *image;         /* AB_DOCKER_EMPTY_IMAGE or an imported --rootfs */
	const char *agent_path;    /* agentbox-agent */
	const char *door_dir;      /* bound at AB_DOCKER_DOOR */
	const char *monitor_label; /* ab_docker_monitor_label, or NULL */
	/* Host-root layout only (ignored with spec->rootfs): */
	char **trees;          /* the host trees that exist, bound read-only at the same path */
	const char *mask_file; /* the covers (ab_host_mask_covers): an empty file ... */
	char **mask_files;     /* ... bound over each file others cannot read */
	const char *mask_dir;  /* an empty directory ... */
	char **mask_dirs;      /* ... over each directory others cannot read */
	char **submount_src;   /* mount points below the trees ... */
	char **submount_dst;   /* ... and where each appears in the sandbox */
};

/* The `docker run -d ...` argv (NULL-terminated, to free with
 * ab_cleanup_strvp), or NULL with err for a spec Docker cannot express
 * (a path with a comma, a tmpfs destination with a colon). */
char **ab_docker_run_argv (const struct ab_spec_s *spec, const struct ab_docker_run_s *r,
                           ab_error_t *err);

/* docker-sweep.c: containers whose monitor is gone (SIGKILLed). */
#define AB_DOCKER_MONITOR_LABEL "agentbox.monitor"
/* "agentbox.monitor=BOOT_ID/PIDNS/PID/START" for the calling process (the
 * monitor), or NULL. */
char *ab_docker_monitor_label (void);
/* Does a label value name a monitor of this boot and pid namespace that is
 * gone?  False for anything malformed or foreign. */
bool ab_docker_monitor_gone (const char *value, const char *boot, uint64_t pidns);
/* Whether pid is a zombie (or dead): ended, not yet reaped. */
bool ab_docker_is_zombie (pid_t pid);
/* Whether pid is on its way out (PF_EXITING: killed, releasing its
 * memory and files), not yet a zombie. */
bool ab_docker_is_exiting (pid_t pid);
/* Remove such containers, from a detached process (never waited for). */
void ab_docker_sweep_async (const char *client);

/* ab_host_masks (host-mask.h) of dir, as the two lists ab_docker_run_s
 * takes: the files and the directories below dir that "others" cannot
 * read (or, for a directory, search), which container root, host root
 * here, must not see.  Both lists are allocated, empty for a missing dir. */
int ab_docker_scan_unreadable (const char *dir, char ***files, char ***dirs, ab_error_t *err);

/* The host trees (ab_host_trees) that exist, as directories. */
char **ab_docker_existing_trees (void);

/* Mount points strictly below the trees (from /proc/self/mountinfo), as
 * source and sandbox destination (a tree that is a symlink, /bin ->
 * usr/bin, shows its target's submounts under its own name): Docker's
 * read-only binds are not recursively read-only, so each gets a read-only
 * bind of its own. */
int ab_docker_submounts (char **trees, char ***src, char ***dst, ab_error_t *err);

/* The image of a sandbox: AB_DOCKER_EMPTY_IMAGE, or with --rootfs the tag
 * that directory imports to (no docker call). */
int ab_docker_image_tag (const char *rootfs, char *tag, size_t cap, ab_error_t *err);

/* `docker import` an empty tar (rootfs NULL) or the rootfs directory (a
 * tar stream) as tag.  No registry is ever involved. */
int ab_docker_import_image (const char *client, const char *rootfs, const char *tag,
                            ab_error_t *err);

/* A layered root (spec->root.layers) as one image, AB_DOCKER_LAYERS_REPO:
 * <128 bits of a SHA-256 over each layer's real path and the lstat of its
 * top directory>: layers are immutable (the store's are content
 * addressed), so the list names the merged tree.  The import streams the
 * layers' overlay (mounted at scratch_dir/root in a mount namespace of a
 * child's own) into `docker import`: the merged tree, whiteouts applied. */
int ab_docker_layers_tag (char *const *layers, char *tag, size_t cap, ab_error_t *err);
int ab_docker_import_layers (const char *client, char *const *layers, const char *scratch_dir,
                             const char *tag, ab_error_t *err);

/* The tag a --rootfs directory imports to: AB_DOCKER_ROOTFS_REPO:<hex>,
 * from a SHA-256 over its real path and every entry's stat (see
 * docker-image.c). */
int ab_docker_rootfs_tag (const char *rootfs, char *tag, size_t cap, ab_error_t *err);

/* OOM kills, peak memory and CPU time of the cgroups holding pid (the
 * container's agent), from the host; what cannot be read stays 0. */
void ab_docker_cgroup_stats (pid_t pid, struct ab_sandbox_exit_s *ex);
/* Once the container's agent is gone: did dockerd record the container's
 * end as an OOM kill (.State.OOMKilled)?  Waits up to wait_ms for dockerd
 * to see the end. */
bool ab_docker_container_oom (const char *client, const char *name, int wait_ms);
/* The note ab_docker_ended_oom (docker.h) takes: <service_socket>.oom. */
void ab_docker_oom_note (const char *service_socket);

/* Probe explanations, never decisions (the issue: template output is not a
 * probe).  Does one answer of `docker info --format` for one runtime
 * (`{{.Runtimes.runsc}}`, `{{index .Runtimes "runsc"}}`, `{{json ...}}`)
 * say it is configured?  Empty, whitespace, `<no value>`, `{}`, `map[]`,
 * `null` and `<nil>` all say no. */
bool ab_docker_runtime_answer_configured (const char *answer);

/* The runtime names of a `docker info --format '{{json .Runtimes}}'`
 * answer, space-separated into out; false when it is not a JSON object. */
bool ab_docker_runtime_names (const char *json, char *out, size_t cap);

/* The probe: cheap checks (client, root, daemon), then the functional one. */
void ab_docker_probe (struct ab_probe_result_s *result);

/* The docker CLI to use: $AGENTBOX_DOCKER, else `docker` from PATH. */
const char *ab_docker_client (void);

/* The first line of a tool's output, trimmed, for an error message. */
void ab_docker_first_line (const char *text, char *out, size_t cap);

#endif
