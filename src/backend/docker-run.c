/* The `docker run` command line of a sandbox, built from the spec (the
 * contract's layout, docs/docker-backend.md):
 *
 *   --network none --read-only, every capability dropped but the few the
 *   agent needs to confine its commands (which it drops for them),
 *   no-new-privileges, memory (swap off) / pids / cpu limits, the agent
 *   bound read-only and run as PID 1 listening in the door directory, the
 *   workspace, /tmp as a tmpfs, the host trees read-only (or the image of
 *   --rootfs), and over them a mask for every /etc entry "others" cannot
 *   read: container root is host root here.
 *
 * Mounts are given as --mount (CSV fields) and --tmpfs; a path Docker would
 * split differently from us is refused, never quoted. */
#include "backend/docker-internal.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "isolate/sandbox-fs.h"

/* Kept by the agent (PID 1) only; every command loses them (confine.c):
 * SETPCAP to lock the securebits and empty the bounding set, SETUID and
 * SETGID to switch to the command's ids (and setfsuid for file requests),
 * KILL to signal commands that run as another uid, DAC_OVERRIDE to bind
 * its socket in the door directory that nothing else may enter. */
static const char *const agent_caps[] = { "SETPCAP", "SETUID", "SETGID", "KILL", "DAC_OVERRIDE" };

struct argv_s {
	char **v;
	size_t n;
	char **dests; /* mount destinations taken, NULL-terminated */
};

static void
push (struct argv_s *a, const char *s)
{
	a->v = xrealloc (a->v, (a->n + 2) * sizeof *a->v);
	a->v[a->n++] = xstrdup (s);
	a->v[a->n] = NULL;
}

static void
push2 (struct argv_s *a, const char *flag, const char *value)
{
	push (a, flag);
	push (a, value);
}

/* Docker reads --mount as CSV and --tmpfs as DEST:OPTIONS. */
static int
check_path (const char *p, const char *extra_bad, ab_error_t *err)
{
	if (strpbrk (p, ",\"\n") || (extra_bad && strpbrk (p, extra_bad)))
		return ab_error (
		        err, 0, AB_E_INVALID,
		        "the docker backend cannot mount %s (a comma, quote%s in the path)", p,
		        extra_bad ? " or colon" : "");
	return 0;
}

static bool
taken (const struct argv_s *a, const char *dest)
{
	for (char **d = a->dests; d && *d; d++)
		if (strcmp (*d, dest) == 0)
			return true;
	return false;
}

static void
take (struct argv_s *a, const char *dest)
{
	ab_strv_push (&a->dests, dest);
}

/* A bind, unless dest already has a mount of higher priority. */
static int
bind (struct argv_s *a, const char *src, const char *dest, bool ro, ab_error_t *err)
{
	cleanup_free char *arg = NULL;

	if (taken (a, dest))
		return 0;
	if (check_path (src, NULL, err) < 0 || check_path (dest, NULL, err) < 0)
		return -1;
	arg = xasprintf ("type=bind,source=%s,destination=%s%s", src, dest, ro ? ",readonly" : "");
	push2 (a, "--mount", arg);
	take (a, dest);
	return 0;
}

static int
tmpfs (struct argv_s *a, const char *dest, uint64_t size, ab_error_t *err)
{
	cleanup_free char *arg = NULL;
	char sz[40] = "";

	if (taken (a, dest))
		return 0;
	if (check_path (dest, ":", err) < 0)
		return -1;
	if (size)
		snprintf (sz, sizeof sz, ",size=%" PRIu64, size);
	/* As the native sandbox's tmpfs: exec allowed, nosuid, nodev. */
	arg = xasprintf ("%s:rw,exec,nosuid,nodev,mode=1777%s", dest, sz);
	push2 (a, "--tmpfs", arg);
	take (a, dest);
	return 0;
}

static bool
below_any (const char *path, char **dirs)
{
	for (char **d = dirs; d && *d; d++) {
		size_t n = strlen (*d);
		if (strncmp (path, *d, n) == 0 && (path[n] == '/' || path[n] == '\0'))
			return true;
	}
	return false;
}

static void
privileges (struct argv_s *a)
{
	push2 (a, "--user", "0:0");
	push2 (a, "--cap-drop", "ALL");
	for (size_t i = 0; i < sizeof agent_caps / sizeof *agent_caps; i++)
		push2 (a, "--cap-add", agent_caps[i]);
	push2 (a, "--security-opt", "no-new-privileges");
}

static void
limits (struct argv_s *a, const struct ab_limits_s *l)
{
	char buf[64];

	if (l->memory_bytes) {
		snprintf (buf, sizeof buf, "%" PRIu64, l->memory_bytes);
		push2 (a, "--memory", buf);
		push2 (a, "--memory-swap", buf); /* equal: no swap, as the native sandbox */
	}
	if (l->pids) {
		snprintf (buf, sizeof buf, "%" PRIu64, l->pids);
		push2 (a, "--pids-limit", buf);
	}
	if (l->cpu_millis) {
		snprintf (buf, sizeof buf, "%" PRIu64 ".%03" PRIu64, l->cpu_millis / 1000,
		          l->cpu_millis % 1000);
		push2 (a, "--cpus", buf);
	}
}

/* Highest priority first: ours, then the caller's, then the masks, then
 * the host trees (a later mount on a taken destination is dropped). */
static int
mounts (struct argv_s *a, const struct ab_spec_s *spec, const struct ab_docker_run_s *r,
        ab_error_t *err)
{
	if (bind (a, r->agent_path, AB_DOCKER_AGENT, true, err) < 0
	    || bind (a, r->door_dir, AB_DOCKER_DOOR, false, err) < 0
	    || (spec->workspace && bind (a, spec->workspace, AB_WORKSPACE_DIR, false, err) < 0)
	    || tmpfs (a, "/tmp", 0, err) < 0)
		return -1;
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct ab_mount_s *m = &spec->mounts[i];
		int rc = m->kind == AB_MOUNT_TMPFS ? tmpfs (a, m->destination, m->size, err)
		                                   : bind (a, m->source, m->destination,
		                                           m->kind == AB_MOUNT_RO_BIND, err);
		if (rc < 0)
			return -1;
	}
	if (spec->rootfs || spec->root.layers)
		return 0; /* the image is the root: no host tree, nothing to mask */
	/* The covers, bound read-only (see ab_host_mask_covers): opening a
	 * masked path fails with EACCES as on the host, even for container
	 * root (without CAP_DAC_OVERRIDE). */
	if ((r->mask_files && r->mask_files[0] && !r->mask_file)
	    || (r->mask_dirs && r->mask_dirs[0] && !r->mask_dir))
		return ab_error (err, 0, AB_E_INTERNAL, "masks without a mask file or directory");
	for (char **d = r->mask_dirs; d && *d; d++)
		if (bind (a, r->mask_dir, *d, true, err) < 0)
			return -1;
	for (char **f = r->mask_files; f && *f; f++)
		if (bind (a, r->mask_file, *f, true, err) < 0)
			return -1;
	for (size_t i = 0; r->submount_src && r->submount_src[i]; i++)
		if (!below_any (r->submount_dst[i], r->mask_dirs)
		    && bind (a, r->submount_src[i], r->submount_dst[i], true, err) < 0)
			return -1;
	for (char **t = r->trees; t && *t; t++)
		if (bind (a, *t, *t, true, err) < 0)
			return -1;
	return 0;
}

char **
ab_docker_run_argv (const struct ab_spec_s *spec, const struct ab_docker_run_s *r, ab_error_t *err)
{
	struct argv_s a = { 0 };
	cleanup_strv char **dests = NULL;
	cleanup_free char *name = xasprintf ("--name=%s", r->name);
	int rc;

	push (&a, r->client);
	push (&a, "run");
	push (&a, "--detach");
	push2 (&a, "--pull", "never"); /* images are imported locally, never pulled */
	push (&a, name);
	push2 (&a, "--label", "agentbox=1");
	if (r->monitor_label)
		push2 (&a, "--label", r->monitor_label);
	if (spec->service_socket) {
		/* Which sandbox a container is, for `docker ps --filter label=...`. */
		cleanup_free char *label = xasprintf ("agentbox.socket=%s", spec->service_socket);
		push2 (&a, "--label", label);
	}
	push2 (&a, "--network", "none");
	/* A writable layered root: Docker's own container layer takes the
	 * writes, removed with the container. */
	if (!spec->root.layers || spec->root.read_only)
		push (&a, "--read-only");
	/* "--flag=value": a value is never read as a flag of its own. */
	cleanup_free char *hostname =
	        xasprintf ("--hostname=%s", spec->hostname ? spec->hostname : AB_DEFAULT_HOSTNAME);
	push (&a, hostname);
	privileges (&a);
	limits (&a, &spec->limits);
	rc = mounts (&a, spec, r, err);
	dests = a.dests;
	if (rc < 0) {
		ab_cleanup_strvp (&a.v);
		return NULL;
	}
	push2 (&a, "--entrypoint", AB_DOCKER_AGENT);
	push (&a, r->image);
	push2 (&a, "--listen", AB_DOCKER_DOOR_SOCKET);
	return a.v;
}
