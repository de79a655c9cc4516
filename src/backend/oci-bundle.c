/* config.json for runsc (see oci-bundle.h).  Field names and types follow
 * the OCI runtime-spec 1.0.2 (config.md, config-linux.md). */
#include "backend/oci-bundle.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#define CPU_PERIOD_US 100000 /* CFS period; quota = CPUs x period */

/* The agent needs these to run commands as their user and serve files as
 * the file user; the commands it starts drop every one of them, lock the
 * securebits and set no_new_privs (agent/confine.c).  Nothing else: no
 * CAP_SYS_PTRACE, CAP_NET_RAW, CAP_MKNOD.  CAP_SYS_ADMIN: the commands'
 * pid namespace and its /proc (agent/cmdns.c), the pids limit's and the
 * exec marks' cgroup mounts (args_json). */
static const char *const agent_caps[] = {
	"CAP_CHOWN",     "CAP_DAC_OVERRIDE", "CAP_DAC_READ_SEARCH", "CAP_FOWNER",
	"CAP_FSETID",    "CAP_KILL",         "CAP_SETGID",          "CAP_SETUID",
	"CAP_SETPCAP",   "CAP_NET_ADMIN", /* lo up, where the runtime left it down */
	"CAP_SYS_ADMIN",
};

#define BIND_RO   "rbind", "ro", "nosuid", "nodev"
#define BIND_RW   "rbind", "rw", "nosuid", "nodev"
#define OPTS(...) ((const char *const[]){ __VA_ARGS__, NULL })

static json_t *
strv_json (const char *const *v)
{
	json_t *a = json_array ();
	for (size_t i = 0; v && v[i]; i++)
		json_array_append_new (a, json_string (v[i]));
	return a;
}

static void
add_mount (json_t *mounts, const char *dst, const char *type, const char *src,
           const char *const *opts)
{
	json_t *m = json_object ();
	json_object_set_new (m, "destination", json_string (dst));
	json_object_set_new (m, "type", json_string (type));
	json_object_set_new (m, "source", json_string (src));
	json_object_set_new (m, "options", strv_json (opts));
	json_array_append_new (mounts, m);
}

static void
add_tmpfs (json_t *mounts, const char *dst, uint64_t size, const char *mode)
{
	char sz[48], md[24];

	snprintf (md, sizeof md, "mode=%s", mode);
	if (size) {
		snprintf (sz, sizeof sz, "size=%" PRIu64, size);
		add_mount (mounts, dst, "tmpfs", "tmpfs", OPTS ("nosuid", "nodev", md, sz));
	} else {
		add_mount (mounts, dst, "tmpfs", "tmpfs", OPTS ("nosuid", "nodev", md));
	}
}

/* /proc, a minimal /dev (gVisor's own devtmpfs: null zero full random
 * urandom tty, ptmx), a private devpts, /dev/shm, a read-only /sys, /tmp. */
static void
add_system_mounts (json_t *mounts)
{
	add_mount (mounts, "/proc", "proc", "proc", OPTS ("nosuid", "noexec", "nodev"));
	add_mount (mounts, "/dev", "tmpfs", "tmpfs",
	           OPTS ("nosuid", "strictatime", "mode=755", "size=65536k"));
	add_mount (mounts, "/dev/pts", "devpts", "devpts",
	           OPTS ("nosuid", "noexec", "newinstance", "ptmxmode=0666", "mode=0620"));
	add_mount (mounts, "/dev/shm", "tmpfs", "shm",
	           OPTS ("nosuid", "noexec", "nodev", "mode=1777", "size=65536k"));
	add_mount (mounts, "/sys", "sysfs", "sysfs", OPTS ("nosuid", "noexec", "nodev", "ro"));
	add_tmpfs (mounts, "/tmp", 0, "1777");
}

static void
add_masks (json_t *mounts, const struct ab_oci_bundle_s *b)
{
	for (size_t i = 0; i < b->n_masks; i++)
		add_mount (mounts, b->masks[i].path, "bind",
		           b->masks[i].dir ? b->mask_dir : b->mask_file,
		           OPTS ("bind", "ro", "nosuid", "nodev", "noexec"));
}

static int
add_user_mounts (json_t *mounts, const struct ab_spec_s *spec, ab_error_t *err)
{
	for (size_t i = 0; i < spec->n_mounts; i++) {
		const struct ab_mount_s *m = &spec->mounts[i];
		size_t dl = strlen (AB_OCI_DOOR_DIR);
		if (m->destination[0] != '/')
			return ab_error (err, 0, AB_E_INVALID,
			                 "mount destination %s is not absolute", m->destination);
		if (strncmp (m->destination, AB_OCI_DOOR_DIR, dl) == 0
		    && (m->destination[dl] == '\0' || m->destination[dl] == '/'))
			return ab_error (err, 0, AB_E_INVALID,
			                 "mount destination %s is reserved for the agent",
			                 m->destination);
		if (m->kind != AB_MOUNT_TMPFS && (!m->source || m->source[0] != '/'))
			return ab_error (err, 0, AB_E_INVALID, "mount source of %s is not absolute",
			                 m->destination);
		switch (m->kind) {
		case AB_MOUNT_RO_BIND:
			add_mount (mounts, m->destination, "bind", m->source, OPTS (BIND_RO));
			break;
		case AB_MOUNT_RW_BIND:
			add_mount (mounts, m->destination, "bind", m->source, OPTS (BIND_RW));
			break;
		case AB_MOUNT_TMPFS: add_tmpfs (mounts, m->destination, m->size, "1777"); break;
		}
	}
	return 0;
}

static json_t *
mounts_json (const struct ab_oci_bundle_s *b, ab_error_t *err)
{
	json_t *mounts = json_array ();
	const struct ab_spec_s *spec = b->spec;

	add_system_mounts (mounts);
	for (size_t i = 0; !spec->rootfs && b->host_dirs && b->host_dirs[i]; i++) {
		char dst[256];
		snprintf (dst, sizeof dst, "/%s", b->host_dirs[i]);
		add_mount (mounts, dst, "bind", dst, OPTS (BIND_RO));
	}
	add_masks (mounts, b);
	if (spec->workspace)
		add_mount (mounts, AB_WORKSPACE_DIR, "bind", spec->workspace, OPTS (BIND_RW));
	if (add_user_mounts (mounts, spec, err) < 0) {
		json_decref (mounts);
		return NULL;
	}
	/* Last, so no user mount can cover them.  The agent binary is its own
	 * read-only mount: nothing inside can rewrite it (SECURITY.md 11). */
	add_mount (mounts, AB_OCI_DOOR_DIR, "bind", b->door_dir,
	           OPTS ("bind", "rw", "nosuid", "nodev", "noexec"));
	add_mount (mounts, AB_OCI_AGENT, "bind", b->agent_path,
	           OPTS ("bind", "ro", "nosuid", "nodev"));
	if (b->shim_path)
		add_mount (mounts, AB_OCI_SHIM, "bind", b->shim_path,
		           OPTS ("bind", "ro", "nosuid", "nodev"));
	return mounts;
}

/* The agent's command line: with a pids limit, the agent applies it in
 * gVisor's own pids cgroup (agent/pids-limit.c), which needs CAP_SYS_ADMIN
 * for one mount; the agent drops it right after. */
static json_t *
args_json (const struct ab_oci_bundle_s *b)
{
	const struct ab_spec_s *spec = b->spec;
	json_t *a = strv_json (OPTS (AB_OCI_AGENT, "--listen", AB_OCI_SOCKET));
	char n[24];

	if (b->shim_path) {
		json_array_append_new (a, json_string ("--preload"));
		json_array_append_new (a, json_string (AB_OCI_SHIM));
	}
	if (spec->limits.pids) {
		snprintf (n, sizeof n, "%" PRIu64, spec->limits.pids);
		json_array_append_new (a, json_string ("--pids-max"));
		json_array_append_new (a, json_string (n));
	}
	return a;
}

static json_t *
process_json (const struct ab_oci_bundle_s *b)
{
	json_t *p = json_object (), *caps = json_object (), *user = json_object ();
	json_t *nofile = json_object (), *rlimits = json_array ();
	const char *const sets[] = { "bounding", "effective", "permitted" };
	json_t *list = json_array ();

	for (size_t i = 0; i < sizeof agent_caps / sizeof *agent_caps; i++)
		json_array_append_new (list, json_string (agent_caps[i]));
	for (size_t i = 0; i < sizeof sets / sizeof *sets; i++)
		json_object_set_new (caps, sets[i], json_deep_copy (list));
	json_decref (list);
	json_object_set_new (user, "uid", json_integer (0));
	json_object_set_new (user, "gid", json_integer (0));
	/* The agent's own; each command gets the spec's nofile from the agent. */
	json_object_set_new (nofile, "type", json_string ("RLIMIT_NOFILE"));
	json_object_set_new (nofile, "hard", json_integer (1048576));
	json_object_set_new (nofile, "soft", json_integer (1048576));
	json_array_append_new (rlimits, nofile);
	json_object_set_new (p, "terminal", json_false ());
	json_object_set_new (p, "user", user);
	json_object_set_new (p, "args", args_json (b));
	/* Like the native backend's execve of the agent: an empty environment;
	 * every command's environment comes with its EXEC. */
	json_object_set_new (p, "env", json_array ());
	json_object_set_new (p, "cwd", json_string ("/"));
	json_object_set_new (p, "capabilities", caps);
	json_object_set_new (p, "rlimits", rlimits);
	json_object_set_new (p, "noNewPrivileges", json_true ());
	return p;
}

uint64_t
ab_oci_host_pids (uint64_t pids)
{
	if (!pids)
		return 0;
	if (pids > (UINT64_MAX - AB_OCI_HOST_TASKS_BASE) / AB_OCI_HOST_TASKS_PER_PID)
		return UINT64_MAX;
	return AB_OCI_HOST_TASKS_BASE + pids * AB_OCI_HOST_TASKS_PER_PID;
}

static json_t *
resources_json (const struct ab_limits_s *l)
{
	json_t *r = json_object ();

	if (l->memory_bytes) {
		/* swap = limit: memory.memsw.limit_in_bytes, no swap on top. */
		json_t *m = json_object ();
		json_object_set_new (m, "limit", json_integer ((json_int_t)l->memory_bytes));
		json_object_set_new (m, "swap", json_integer ((json_int_t)l->memory_bytes));
		json_object_set_new (r, "memory", m);
	}
	if (l->pids) {
		json_t *p = json_object ();
		json_object_set_new (p, "limit",
		                     json_integer ((json_int_t)ab_oci_host_pids (l->pids)));
		json_object_set_new (r, "pids", p);
	}
	if (l->cpu_millis) {
		json_t *c = json_object ();
		json_object_set_new (
		        c, "quota",
		        json_integer ((json_int_t)(l->cpu_millis * CPU_PERIOD_US / 1000)));
		json_object_set_new (c, "period", json_integer (CPU_PERIOD_US));
		json_object_set_new (r, "cpu", c);
	}
	return r;
}

static json_t *
linux_json (const struct ab_oci_bundle_s *b)
{
	const char *const ns[] = { "pid", "network", "ipc", "uts", "mount" };
	json_t *lx = json_object (), *nss = json_array ();

	for (size_t i = 0; i < sizeof ns / sizeof *ns; i++) {
		json_t *n = json_object ();
		json_object_set_new (n, "type", json_string (ns[i]));
		json_array_append_new (nss, n);
	}
	json_object_set_new (lx, "namespaces", nss);
	if (b->cgroup_path) {
		json_object_set_new (lx, "cgroupsPath", json_string (b->cgroup_path));
		json_object_set_new (lx, "resources",
		                     b->cgroup_premade ? json_object ()
		                                       : resources_json (&b->spec->limits));
	}
	return lx;
}

json_t *
ab_oci_config (const struct ab_oci_bundle_s *b, ab_error_t *err)
{
	json_t *cfg, *root, *mounts;

	if (b->n_masks && (!b->mask_file || !b->mask_dir)) {
		ab_error (err, 0, AB_E_INTERNAL, "masks without their covers");
		return NULL;
	}
	if (!(mounts = mounts_json (b, err)))
		return NULL;
	cfg = json_object ();
	root = json_object ();
	json_object_set_new (root, "path", json_string (b->root_path));
	json_object_set_new (root, "readonly", json_boolean (!b->root_writable));
	json_object_set_new (cfg, "ociVersion", json_string ("1.0.2"));
	json_object_set_new (cfg, "process", process_json (b));
	json_object_set_new (cfg, "root", root);
	json_object_set_new (
	        cfg, "hostname",
	        json_string (b->spec->hostname ? b->spec->hostname : AB_DEFAULT_HOSTNAME));
	json_object_set_new (cfg, "mounts", mounts);
	json_object_set_new (cfg, "linux", linux_json (b));
	return cfg;
}
