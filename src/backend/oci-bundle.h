/* An OCI runtime config.json (runtime-spec 1.0) for one agentbox sandbox,
 * built from an ab_spec_s: what runsc needs to start agentbox-agent as the
 * container's PID 1 with the sandbox layout every backend gives (host
 * read-only binds or the --rootfs image, /workspace, /tmp, /proc, /dev,
 * the user's mounts, network none, limits).  Pure: no file is read or
 * written here, so every field can be unit-tested. */
#ifndef AB_BACKEND_OCI_BUNDLE_H
#define AB_BACKEND_OCI_BUNDLE_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "spec/spec.h"

/* Where the agent and its door appear inside the sandbox. */
#define AB_OCI_DOOR_DIR "/.agentbox"
#define AB_OCI_AGENT    AB_OCI_DOOR_DIR "/agentbox-agent"
#define AB_OCI_SOCKET   AB_OCI_DOOR_DIR "/agent.sock"
#define AB_OCI_SHIM     AB_OCI_DOOR_DIR "/statx-shim.so"

/* A path hidden from the sandbox: covered by a read-only bind of an empty
 * file or directory that nobody in the sandbox may open (mode 0000, owned
 * by an id that is neither root nor the sandbox's user), so reading it
 * fails with EACCES as it does for "others" on the host. */
struct ab_oci_mask_s {
	char *path; /* inside the sandbox */
	bool dir;
};

struct ab_oci_bundle_s {
	const struct ab_spec_s *spec;
	const char *root_path; /* host directory used as the container's root */
	/* root.readonly false: the root takes writes (a layered root's host
	 * upper layer) */
	bool root_writable;
	const char *agent_path; /* host path of agentbox-agent (bound read-only) */
	/* host path of agentbox-statx-shim.so, preloaded into commands
	 * (tools/statx-shim.c), or NULL */
	const char *shim_path;
	const char *door_dir;    /* host directory bound read-write at AB_OCI_DOOR_DIR */
	const char *cgroup_path; /* linux.cgroupsPath, NULL = no limits, no cgroup */
	/* The group at cgroup_path exists with its limits written by the
	 * caller: linux.resources stays empty, so runsc writes none over them
	 * (and, not having made the group, never removes it). */
	bool cgroup_premade;
	/* Top-level host directories bound read-only at the same place
	 * (without spec->rootfs), NULL-terminated; may be NULL. */
	char *const *host_dirs;
	const struct ab_oci_mask_s *masks;
	size_t n_masks;
	const char *mask_file; /* host paths of the empty covers */
	const char *mask_dir;
};

/* Host tasks a gVisor sandbox needs beyond its own processes: a pids limit
 * on the sentry's host cgroup (linux.resources.pids, or the group gvisor.c
 * makes) counts the sentry's Go threads and (ptrace platform) a stub
 * process per sandbox address space, not the sandbox's processes.  Measured with runsc 2022-12: 64
 * host tasks idle, about 10 more per sandbox process.  The host pids limit
 * is therefore a backstop against host exhaustion, not the sandbox's
 * process limit. */
#define AB_OCI_HOST_TASKS_BASE    128
#define AB_OCI_HOST_TASKS_PER_PID 16

/* The config; never NULL (aborts on out of memory).  Fails on a spec it
 * cannot express (AB_E_INVALID). */
json_t *ab_oci_config (const struct ab_oci_bundle_s *b, ab_error_t *err);

/* Host pids.max for a sandbox limited to `pids` processes (0 = none). */
uint64_t ab_oci_host_pids (uint64_t pids);

#endif
