#include "spec/spec.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

/* $AGENTBOX_BACKEND when set (a user's or a test suite's standing choice,
 * as DOCKER_HOST is for docker), else "auto".  $AGENTBOX_MICROVM_ACCEL
 * likewise sets --microvm-accel's default. */
static const char *
env_or (const char *name, const char *fallback)
{
	const char *env = getenv (name);
	return env && env[0] ? env : fallback;
}

const char *
ab_spec_default_backend (void)
{
	return env_or ("AGENTBOX_BACKEND", "auto");
}

void
ab_spec_init (struct ab_spec_s *spec)
{
	memset (spec, 0, sizeof *spec);
	spec->backend = xstrdup (ab_spec_default_backend ());
	spec->hostname = xstrdup (AB_DEFAULT_HOSTNAME);
	spec->microvm_accel = xstrdup (env_or ("AGENTBOX_MICROVM_ACCEL", "auto"));
	spec->workdir = xstrdup (AB_WORKSPACE_DIR);
	spec->network = AB_NETWORK_NONE;
	spec->tty = AB_TTY_AUTO;
	spec->limits.memory_bytes = AB_DEFAULT_MEMORY;
	spec->limits.pids = AB_DEFAULT_PIDS;
	spec->limits.kill_grace_ms = AB_DEFAULT_KILL_GRACE_MS;
	spec->limits.nofile = AB_DEFAULT_NOFILE;
}

static void
free_strv (char **v)
{
	if (!v)
		return;
	for (char **p = v; *p; p++)
		free (*p);
	free (v);
}

void
ab_spec_free (struct ab_spec_s *spec)
{
	free (spec->backend);
	free (spec->rootfs);
	free (spec->image);
	free (spec->image_digest);
	free_strv (spec->root.layers);
	free (spec->workspace);
	for (size_t i = 0; i < spec->n_mounts; i++) {
		free (spec->mounts[i].source);
		free (spec->mounts[i].destination);
	}
	free (spec->mounts);
	free_strv (spec->argv);
	free_strv (spec->env);
	free (spec->workdir);
	free (spec->hostname);
	free (spec->json_result);
	free_strv (spec->credentials);
	free (spec->service_socket);
	free (spec->microvm_accel);
	free_strv (spec->egress.allow_hosts);
	free_strv (spec->egress.deny_hosts);
	free_strv (spec->egress.allow_cidrs);
	free (spec->egress.policy_file);
	free (spec->egress.audit_log);
	memset (spec, 0, sizeof *spec);
}

void
ab_strv_push (char ***v, const char *s)
{
	size_t n = 0;
	while (*v && (*v)[n])
		n++;
	*v = xrealloc (*v, (n + 2) * sizeof **v);
	(*v)[n] = xstrdup (s);
	(*v)[n + 1] = NULL;
}

void
ab_spec_add_mount (struct ab_spec_s *spec, ab_mount_kind kind, const char *source,
                   const char *destination, uint64_t size)
{
	struct ab_mount_s *m;

	spec->mounts = xrealloc (spec->mounts, (spec->n_mounts + 1) * sizeof *spec->mounts);
	m = &spec->mounts[spec->n_mounts++];
	m->kind = kind;
	m->source = source ? xstrdup (source) : NULL;
	m->destination = xstrdup (destination);
	m->size = size;
}

/* An in-sandbox path: absolute, no "." or ".." components, no empty
 * components, not "/" itself. */
static int
check_sandbox_path (const char *what, const char *path, ab_error_t *err)
{
	const char *p = path;

	if (path[0] != '/')
		return ab_error (err, 0, AB_E_INVALID, "%s '%s' must be an absolute path", what,
		                 path);
	if (strcmp (path, "/") == 0)
		return ab_error (err, 0, AB_E_INVALID, "%s must not be '/'", what);
	while (*p) {
		const char *end;
		size_t len;
		p++; /* past the '/' */
		end = strchrnul (p, '/');
		len = (size_t)(end - p);
		/* "//proc" and "/proc/" are /proc to the kernel: refused, so the
		 * reserved and duplicate checks below see one spelling only. */
		if (len == 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s '%s' must not contain an empty component ('//' or a "
			                 "trailing '/')",
			                 what, path);
		if ((len == 1 && p[0] == '.') || (len == 2 && p[0] == '.' && p[1] == '.'))
			return ab_error (err, 0, AB_E_INVALID,
			                 "%s '%s' must not contain '.' or '..'", what, path);
		p = end;
	}
	return 0;
}

/* Destinations the sandbox layout owns; a user mount on top would undo a
 * protection (a writable /proc, a host /dev). */
static const char *const reserved_destinations[] = { "/proc", "/dev", "/sys" };

static int
check_mount (const struct ab_spec_s *spec, size_t i, ab_error_t *err)
{
	const struct ab_mount_s *m = &spec->mounts[i];

	if (check_sandbox_path ("mount destination", m->destination, err) < 0)
		return -1;
	for (size_t r = 0; r < sizeof reserved_destinations / sizeof *reserved_destinations; r++) {
		size_t n = strlen (reserved_destinations[r]);
		if (strncmp (m->destination, reserved_destinations[r], n) == 0
		    && (m->destination[n] == '\0' || m->destination[n] == '/'))
			return ab_error (err, 0, AB_E_INVALID, "mount destination '%s' is reserved",
			                 m->destination);
	}
	if (m->kind != AB_MOUNT_TMPFS && (!m->source || m->source[0] == '\0'))
		return ab_error (err, 0, AB_E_INVALID, "mount for '%s' has no source",
		                 m->destination);
	for (size_t j = 0; j < i; j++)
		if (strcmp (spec->mounts[j].destination, m->destination) == 0)
			return ab_error (err, 0, AB_E_INVALID, "two mounts at '%s'",
			                 m->destination);
	if (spec->workspace && strcmp (m->destination, AB_WORKSPACE_DIR) == 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'%s' is the workspace; use --no-workspace first", m->destination);
	return 0;
}

/* One kind of root at a time; layers are absolute host directories. */
static int
check_root (const struct ab_spec_s *spec, ab_error_t *err)
{
	int kinds = !!spec->rootfs + !!spec->root.layers + (spec->image && !spec->root.layers);

	if (kinds > 1)
		return ab_error (err, 0, AB_E_INVALID,
		                 "give one root: --rootfs, --image or root layers");
	if (spec->root.layers && !spec->root.layers[0])
		return ab_error (err, 0, AB_E_INVALID, "root layers must not be empty");
	for (char **l = spec->root.layers; l && *l; l++)
		if ((*l)[0] != '/')
			return ab_error (err, 0, AB_E_INVALID, "root layer '%s' must be absolute",
			                 *l);
	return 0;
}

int
ab_spec_validate (const struct ab_spec_s *spec, ab_error_t *err)
{
	if (!spec->argv || !spec->argv[0] || spec->argv[0][0] == '\0')
		return ab_error (
		        err, 0, AB_E_INVALID,
		        "missing command (usage: agentbox run [OPTIONS] -- CMD [ARGS...])");
	if (spec->workdir[0] != '/')
		return ab_error (err, 0, AB_E_INVALID, "working directory '%s' must be absolute",
		                 spec->workdir);
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (check_mount (spec, i, err) < 0)
			return -1;
	if (check_root (spec, err) < 0)
		return -1;
	if (spec->hostname[0] == '\0' || strlen (spec->hostname) > 64)
		return ab_error (err, 0, AB_E_INVALID, "hostname must be 1 to 64 characters");
	for (const char *h = spec->hostname; *h; h++)
		if (!((*h >= 'a' && *h <= 'z') || (*h >= 'A' && *h <= 'Z')
		      || (*h >= '0' && *h <= '9') || *h == '-' || *h == '.'))
			return ab_error (err, 0, AB_E_INVALID,
			                 "hostname '%s' has invalid characters", spec->hostname);
	if (strcmp (spec->microvm_accel, "auto") != 0 && strcmp (spec->microvm_accel, "kvm") != 0
	    && strcmp (spec->microvm_accel, "tcg") != 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "microvm accelerator '%s' (auto, kvm or tcg)",
		                 spec->microvm_accel);
	return 0;
}

void
ab_spec_setenv (struct ab_spec_s *spec, const char *kv)
{
	size_t klen = strcspn (kv, "="), n = 0;

	for (; spec->env && spec->env[n]; n++)
		if (strncmp (spec->env[n], kv, klen) == 0 && spec->env[n][klen] == '=') {
			free (spec->env[n]);
			spec->env[n] = xstrdup (kv);
			return;
		}
	ab_strv_push (&spec->env, kv);
}

/* Tools find the sandbox's only way out through the usual variables, in
 * both spellings (curl reads only the lower-case http_proxy). */
void
ab_spec_add_proxy_env (struct ab_spec_s *spec)
{
	static const char *const vars[] = { "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY",
		                            "http_proxy", "https_proxy", "all_proxy" };
	char buf[64];

	for (size_t i = 0; i < sizeof vars / sizeof *vars; i++) {
		snprintf (buf, sizeof buf, "%s=http://127.0.0.1:%d", vars[i], AB_EGRESS_PORT);
		ab_spec_setenv (spec, buf);
	}
	ab_spec_setenv (spec, "NO_PROXY=localhost,127.0.0.1,::1");
	ab_spec_setenv (spec, "no_proxy=localhost,127.0.0.1,::1");
}

char **
ab_spec_rw_paths (const struct ab_spec_s *spec, size_t *n)
{
	char **v = NULL;

	/* A writable layered root: its upper layer is the sandbox's own. */
	if (spec->root.layers && !spec->root.read_only)
		ab_strv_push (&v, "/");
	ab_strv_push (&v, "/tmp");
	ab_strv_push (&v, "/dev/shm");
	if (spec->workspace)
		ab_strv_push (&v, AB_WORKSPACE_DIR);
	for (size_t i = 0; i < spec->n_mounts; i++)
		if (spec->mounts[i].kind != AB_MOUNT_RO_BIND)
			ab_strv_push (&v, spec->mounts[i].destination);
	*n = 0;
	while (v[*n])
		(*n)++;
	return v;
}
