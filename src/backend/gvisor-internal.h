/* The gVisor backend's parts (gvisor.c drives them):
 *
 *   caller ─► agentbox-mon (monitor.c) ─fork─► agentbox-runsc (keeper) ─fork/exec─► runsc run
 *
 * Everything of one sandbox lives in a private directory next to its
 * service socket, "<service_socket>.d/" (0700):
 *   config.json   the OCI bundle's config (the bundle is the directory)
 *   rootfs/       the container's empty read-only root (host binds) with
 *                 the host's top-level symlinks (bin -> usr/bin, ...); with
 *                 a layered root, the mount point of their overlay (in the
 *                 monitor's own mount namespace only)
 *   root-upper/   a layered root's upper and work directories: what the
 *                 sandbox writes to its root
 *   mask-file, mask-dir   empty, mode 0000, bound over what must stay
 *                 hidden under the host's /etc (backend/host-mask.c)
 *   state/        runsc --root: never runsc's default, so nothing is shared
 *   door/         bound read-write at /.agentbox: the agent binds its socket
 *                 here (--host-uds=create makes it a host socket)
 *   runsc.log     runsc's and the agent's stdout and stderr
 * and spec->service_socket is a symlink to door/agent.sock, so connecting
 * to the service socket reaches the agent. */
#ifndef AB_BACKEND_GVISOR_INTERNAL_H
#define AB_BACKEND_GVISOR_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

#include "base/error.h"
#include "isolate/cgroup.h"
#include "spec/spec.h"

#define AB_GVISOR_START_TIMEOUT_MS 20000
#define AB_GVISOR_TOOL_TIMEOUT_MS  10000
#define AB_GVISOR_STOP_TIMEOUT_MS  15000
#define AB_GVISOR_LOG              "runsc.log"
#define AB_GVISOR_DOOR             "door"
#define AB_GVISOR_SOCKET_NAME      "agent.sock"
#define AB_GVISOR_ROOT_UPPER       "root-upper"
/* runsc's container id: "agentbox-<sandbox id>".  runsc makes no cgroup
 * of its own (no linux.cgroupsPath): the limits are on ours (gvisor.c).
 * Older builds had runsc make "gvisor-<container id>" groups, which
 * gvisor-sweep.c still removes when they are left over. */
#define AB_GVISOR_CID_PREFIX    "agentbox-"
#define AB_GVISOR_CGROUP_PREFIX "gvisor-" AB_GVISOR_CID_PREFIX
/* Host tasks of `runsc run` itself (a Go program: 5 threads measured),
 * counted in our cgroup's pids backstop on top of the sandbox's
 * (ab_oci_host_pids). */
#define AB_GVISOR_RUNSC_TASKS 32

struct ab_gvisor_s {
	char *runsc;    /* absolute path of runsc */
	char *platform; /* --platform, NULL = runsc's default */
	char *agent;    /* host path of agentbox-agent */
	char *shim;     /* agentbox-statx-shim.so beside it, or NULL */
	char *dir;      /* <service_socket>.d */
	char *cid;      /* the runsc container id: agentbox-<sandbox id> */
	bool own_dir;   /* dir was made for this sandbox: ours to remove */
	bool layered;   /* spec->root.layers: rootfs/ is their overlay (gvisor-bundle.c) */
	pid_t keeper;
	int keeper_pidfd;
	/* The host cgroup "agentbox-<sandbox id>" with the limits (NULL when
	 * none was asked for), made by the monitor: `runsc run` enters it
	 * before it execs, so runsc, its gofer and its sentry are all in it.
	 * It outlives runsc (which removes only the groups it made), so the
	 * monitor reads the OOM kill, peak memory and CPU time after the
	 * sandbox ended, then removes it. */
	ab_cgroup_t *cgroup;
};

/* gvisor-runsc.c: running runsc. */
char *ab_runsc_find (ab_error_t *err);
/* "runsc version X\nspec: Y\n" -> X; -1 when the text is not that. */
int ab_runsc_parse_version (const char *out, char *version, size_t size);
int ab_runsc_version (const char *runsc, char *version, size_t size, ab_error_t *err);
/* A platform name from $AGENTBOX_RUNSC_PLATFORM (ptrace, systrap, kvm),
 * NULL when unset; -1 with err when malformed. */
int ab_runsc_platform (char **platform, ab_error_t *err);
/* runsc's global flags, then cmd[] (NULL-terminated): a NULL-terminated
 * vector the caller frees (ab_cleanup_strvp). */
char **ab_runsc_argv (const struct ab_gvisor_s *g, const char *const *cmd);
/* `runsc kill ID KILL` (when asked) and `runsc delete -force ID`: what
 * runsc itself must undo (sandbox and gofer processes, cgroups, state). */
void ab_runsc_kill (const struct ab_gvisor_s *g);
void ab_runsc_delete (const struct ab_gvisor_s *g);

/* gvisor-bundle.c: the private directory and the bundle in it. */
int ab_gvisor_prepare (struct ab_gvisor_s *g, const struct ab_spec_s *spec, ab_error_t *err);
/* Remove the private directory (nothing in it is followed or crossed). */
void ab_gvisor_remove_dir (const struct ab_gvisor_s *g);
/* Remove spec->service_socket if it is still our symlink. */
void ab_gvisor_remove_link (const struct ab_gvisor_s *g, const struct ab_spec_s *spec);
/* The last bytes of runsc.log, for an error message. */
void ab_gvisor_log_tail (const struct ab_gvisor_s *g, char *buf, size_t size);

/* gvisor-sweep.c: remove runsc's groups left by a sandbox whose monitor
 * and keeper were both killed. */
void ab_gvisor_sweep_cgroups (void);

/* gvisor-keeper.c: the process that holds `runsc run` (which it puts
 * into g->cgroup before the exec). */
int ab_gvisor_keeper_start (struct ab_gvisor_s *g, const struct ab_spec_s *spec, ab_error_t *err);
/* Ask the keeper to tear everything down and wait for it. */
void ab_gvisor_keeper_stop (struct ab_gvisor_s *g);

#endif
