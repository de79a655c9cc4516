/* `agentbox run` options -> spec.  Every malformed value is an error with
 * one clear line; nothing is started before all options are valid. */
#include <ctype.h>
#include <errno.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "image/image.h"

enum {
	OPT_WORKSPACE = 256,
	OPT_NO_WORKSPACE,
	OPT_ROOTFS,
	OPT_RO,
	OPT_RW,
	OPT_TMPFS,
	OPT_ENV_FILE,
	OPT_MEMORY,
	OPT_PIDS,
	OPT_CPUS,
	OPT_TIMEOUT,
	OPT_KILL_GRACE,
	OPT_NOFILE,
	OPT_NETWORK,
	OPT_HOSTNAME,
	OPT_DESKTOP,
	OPT_BACKEND,
	OPT_MICROVM_ACCEL,
	OPT_JSON_RESULT,
	OPT_NO_TTY,
	OPT_ALLOW_HOST,
	OPT_DENY_HOST,
	OPT_ALLOW_CIDR,
	OPT_POLICY,
	OPT_AUDIT_LOG,
	OPT_CREDENTIAL,
	OPT_CREDENTIALS,
	OPT_IMAGE,
	OPT_PULL,
	OPT_STATE_DIR,
	OPT_READ_ONLY,
	OPT_ROOT_LAYER,
};

/* What the image's config must not override (ab_run_image_options). */
static struct ab_run_image_s image_opts;

static const struct option run_options[] = {
	{ "workspace", required_argument, NULL, OPT_WORKSPACE },
	{ "no-workspace", no_argument, NULL, OPT_NO_WORKSPACE },
	{ "rootfs", required_argument, NULL, OPT_ROOTFS },
	{ "ro", required_argument, NULL, OPT_RO },
	{ "rw", required_argument, NULL, OPT_RW },
	{ "tmpfs", required_argument, NULL, OPT_TMPFS },
	{ "env", required_argument, NULL, 'e' },
	{ "env-file", required_argument, NULL, OPT_ENV_FILE },
	{ "workdir", required_argument, NULL, 'w' },
	{ "memory", required_argument, NULL, OPT_MEMORY },
	{ "pids", required_argument, NULL, OPT_PIDS },
	{ "cpus", required_argument, NULL, OPT_CPUS },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "kill-grace", required_argument, NULL, OPT_KILL_GRACE },
	{ "nofile", required_argument, NULL, OPT_NOFILE },
	{ "network", required_argument, NULL, OPT_NETWORK },
	{ "allow-host", required_argument, NULL, OPT_ALLOW_HOST },
	{ "deny-host", required_argument, NULL, OPT_DENY_HOST },
	{ "allow-cidr", required_argument, NULL, OPT_ALLOW_CIDR },
	{ "policy", required_argument, NULL, OPT_POLICY },
	{ "audit-log", required_argument, NULL, OPT_AUDIT_LOG },
	{ "credential", required_argument, NULL, OPT_CREDENTIAL },
	{ "credentials", required_argument, NULL, OPT_CREDENTIALS },
	{ "user", required_argument, NULL, 'u' },
	{ "hostname", required_argument, NULL, OPT_HOSTNAME },
	{ "desktop", no_argument, NULL, OPT_DESKTOP },
	{ "backend", required_argument, NULL, OPT_BACKEND },
	{ "microvm-accel", required_argument, NULL, OPT_MICROVM_ACCEL },
	{ "json-result", required_argument, NULL, OPT_JSON_RESULT },
	{ "tty", no_argument, NULL, 't' },
	{ "no-tty", no_argument, NULL, OPT_NO_TTY },
	{ "image", required_argument, NULL, OPT_IMAGE },
	{ "pull", required_argument, NULL, OPT_PULL },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "read-only", no_argument, NULL, OPT_READ_ONLY },
	{ "root-layer", required_argument, NULL, OPT_ROOT_LAYER },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char run_usage[] =
        "usage: agentbox run [OPTIONS] -- CMD [ARGS...]\n"
        "  --workspace DIR | --no-workspace   DIR read-write at /workspace (default: current dir)\n"
        "  --rootfs host|DIR                  root filesystem (default: host, read-only)\n"
        "  --image REF  --pull always|missing|never (missing)  --state-dir DIR   an image's "
        "root\n"
        "  --read-only                        an image's root without an upper layer\n"
        "  --root-layer DIR                   low level: a layer directory of the root, in\n"
        "                                     overlay form, lowest first (repeatable)\n"
        "  --ro SRC[:DST]  --rw SRC[:DST]  --tmpfs DST[:SIZE]\n"
        "  -e, --env K=V | K   --env-file FILE   -w, --workdir DIR   -u, --user UID[:GID]\n"
        "  --memory SIZE (2g)  --pids N (512)  --cpus X  --nofile N (1024); 0 = unlimited\n"
        "  --timeout DURATION  --kill-grace DURATION (5s)\n"
        "  --network none|proxy  --hostname NAME  --backend auto|microvm|native|...\n"
        "  --desktop                          Xvfb :99 + x11vnc in the sandbox (daemon: GET "
        ".../vnc)\n"
        "  --microvm-accel auto|kvm|tcg       microvm: kvm (auto) or QEMU's emulator (tcg)\n"
        "  with --network proxy: --allow-host PATTERN  --deny-host PATTERN  --allow-cidr CIDR\n"
        "                        --policy FILE  --audit-log FILE|-\n"
        "  --credential NAME=FILE             an upstream for the credential proxy at\n"
        "                                     127.0.0.1:8288 inside (repeatable)\n"
        "  --credentials FILE                 every upstream of a credential-proxy config file\n"
        "  --json-result FILE  -t, --tty | --no-tty\n";

struct env_builder_s {
	char **v;
	size_t n;
};

static void
env_set (struct env_builder_s *e, const char *kv)
{
	size_t klen = strcspn (kv, "=");
	for (size_t i = 0; i < e->n; i++)
		if (strncmp (e->v[i], kv, klen) == 0 && e->v[i][klen] == '=') {
			free (e->v[i]);
			e->v[i] = xstrdup (kv);
			return;
		}
	e->v = xrealloc (e->v, (e->n + 2) * sizeof *e->v);
	e->v[e->n++] = xstrdup (kv);
	e->v[e->n] = NULL;
}

static int
valid_env_name (const char *s, size_t len)
{
	if (len == 0 || isdigit ((unsigned char)s[0]))
		return 0;
	for (size_t i = 0; i < len; i++)
		if (!(isalnum ((unsigned char)s[i]) || s[i] == '_'))
			return 0;
	return 1;
}

/* "K=V" sets; "K" copies the host's value (skipped when the host has none). */
static int
env_add (struct env_builder_s *e, const char *arg, ab_error_t *err)
{
	const char *eq = strchr (arg, '=');
	size_t klen = eq ? (size_t)(eq - arg) : strlen (arg);
	const char *host;

	if (!valid_env_name (arg, klen))
		return ab_error (err, 0, AB_E_INVALID, "invalid environment variable name in '%s'",
		                 arg);
	if (eq) {
		env_set (e, arg);
		return 0;
	}
	host = getenv (arg);
	if (host) {
		cleanup_free char *kv = xasprintf ("%s=%s", arg, host);
		env_set (e, kv);
	}
	return 0;
}

static int
env_file (struct env_builder_s *e, const char *path, ab_error_t *err)
{
	cleanup_file FILE *f = fopen (path, "re");
	char *line = NULL;
	size_t cap = 0;
	ssize_t n;
	int r = 0;

	if (!f)
		return ab_error (err, errno, AB_E_INVALID, "--env-file %s", path);
	while (r == 0 && (n = getline (&line, &cap, f)) >= 0) {
		while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
			line[--n] = '\0';
		if (n == 0 || line[0] == '#')
			continue;
		r = env_add (e, line, err);
	}
	free (line);
	return r < 0 ? ab_error_wrap (err, "--env-file %s", path) : 0;
}

static int
parse_mount (struct ab_spec_s *spec, ab_mount_kind kind, const char *arg, ab_error_t *err)
{
	cleanup_free char *src = xstrdup (arg);
	char *colon = strchr (src, ':');
	char real[PATH_MAX];
	const char *dst;

	if (colon)
		*colon = '\0';
	dst = colon ? colon + 1 : src;
	if (src[0] == '\0' || dst[0] == '\0')
		return ab_error (err, 0, AB_E_INVALID, "invalid mount '%s' (expected SRC[:DST])",
		                 arg);
	if (!realpath (src, real))
		return ab_error (err, errno, AB_E_INVALID, "mount source %s", src);
	ab_spec_add_mount (spec, kind, real, colon ? dst : real, 0);
	return 0;
}

static int
parse_tmpfs (struct ab_spec_s *spec, const char *arg, ab_error_t *err)
{
	cleanup_free char *dst = xstrdup (arg);
	char *colon = strrchr (dst, ':');
	uint64_t size = 0;

	if (colon) {
		*colon = '\0';
		if (ab_parse_size (colon + 1, &size, err) < 0)
			return ab_error_wrap (err, "--tmpfs %s", arg);
	}
	ab_spec_add_mount (spec, AB_MOUNT_TMPFS, NULL, dst, size);
	return 0;
}

static int
parse_user (struct ab_spec_s *spec, const char *arg, ab_error_t *err)
{
	cleanup_free char *copy = xstrdup (arg);
	char *colon = strchr (copy, ':');
	uint64_t uid, gid;

	if (colon)
		*colon = '\0';
	if (ab_parse_uint (copy, 0, 65535, &uid, err) < 0)
		return ab_error_wrap (err, "--user %s (numeric UID[:GID], 0-65535)", arg);
	gid = uid;
	if (colon && ab_parse_uint (colon + 1, 0, 65535, &gid, err) < 0)
		return ab_error_wrap (err, "--user %s (numeric UID[:GID], 0-65535)", arg);
	spec->uid = (uid_t)uid;
	spec->gid = (gid_t)gid;
	return 0;
}

static int
set_string (char **slot, const char *value)
{
	free (*slot);
	*slot = value ? xstrdup (value) : NULL;
	return 0;
}

/* "0" or "unlimited" lifts a default limit. */
static bool
is_unlimited (const char *arg)
{
	return strcmp (arg, "0") == 0 || strcmp (arg, "unlimited") == 0;
}

static int
parse_limit (struct ab_spec_s *spec, int opt, const char *arg, ab_error_t *err)
{
	struct ab_limits_s *l = &spec->limits;
	switch (opt) {
	case OPT_MEMORY:
		l->explicit_cgroup = true;
		if (is_unlimited (arg))
			return (l->memory_bytes = 0);
		return ab_parse_size (arg, &l->memory_bytes, err) < 0
		               ? ab_error_wrap (err, "--memory")
		               : 0;
	case OPT_PIDS:
		l->explicit_cgroup = true;
		if (is_unlimited (arg))
			return (int)(l->pids = 0);
		return ab_parse_uint (arg, 1, 4194304, &l->pids, err) < 0
		               ? ab_error_wrap (err, "--pids")
		               : 0;
	case OPT_CPUS:
		l->explicit_cgroup = true;
		return ab_parse_cpus (arg, &l->cpu_millis, err) < 0 ? ab_error_wrap (err, "--cpus")
		                                                    : 0;
	case OPT_TIMEOUT:
		return ab_parse_duration (arg, &l->timeout_ms, err) < 0
		               ? ab_error_wrap (err, "--timeout")
		               : 0;
	case OPT_KILL_GRACE:
		return ab_parse_duration (arg, &l->kill_grace_ms, err) < 0
		               ? ab_error_wrap (err, "--kill-grace")
		               : 0;
	default: /* OPT_NOFILE */
		return ab_parse_uint (arg, 16, 1048576, &l->nofile, err) < 0
		               ? ab_error_wrap (err, "--nofile")
		               : 0;
	}
}

/* --root-layer: an existing directory, by its real path. */
static int
add_root_layer (struct ab_spec_s *spec, const char *arg, ab_error_t *err)
{
	char real[PATH_MAX];
	struct stat st;

	if (!realpath (arg, real) || stat (real, &st) < 0)
		return ab_error (err, errno, AB_E_INVALID, "--root-layer %s", arg);
	if (!S_ISDIR (st.st_mode))
		return ab_error (err, 0, AB_E_INVALID, "--root-layer %s is not a directory", arg);
	ab_strv_push (&spec->root.layers, real);
	return 0;
}

static int
apply_option (struct ab_spec_s *spec, struct env_builder_s *env, int opt, const char *arg,
              ab_error_t *err)
{
	switch (opt) {
	case OPT_WORKSPACE: return set_string (&spec->workspace, arg);
	case OPT_NO_WORKSPACE: return set_string (&spec->workspace, NULL);
	case OPT_ROOTFS: return set_string (&spec->rootfs, strcmp (arg, "host") == 0 ? NULL : arg);
	case OPT_READ_ONLY: spec->root.read_only = true; return 0;
	case OPT_ROOT_LAYER: return add_root_layer (spec, arg, err);
	case OPT_RO: return parse_mount (spec, AB_MOUNT_RO_BIND, arg, err);
	case OPT_RW: return parse_mount (spec, AB_MOUNT_RW_BIND, arg, err);
	case OPT_TMPFS: return parse_tmpfs (spec, arg, err);
	case 'e': return env_add (env, arg, err);
	case OPT_ENV_FILE: return env_file (env, arg, err);
	case 'w': image_opts.workdir_given = true; return set_string (&spec->workdir, arg);
	case 'u': image_opts.user_given = true; return parse_user (spec, arg, err);
	case OPT_IMAGE: return set_string (&spec->image, arg);
	case OPT_PULL: {
		ab_pull_policy p;
		if (ab_pull_policy_parse (arg, &p, err) < 0)
			return -1;
		image_opts.pull = p;
		return 0;
	}
	case OPT_STATE_DIR: return set_string (&image_opts.state_dir, arg);
	case OPT_HOSTNAME: return set_string (&spec->hostname, arg);
	case OPT_DESKTOP: spec->desktop = true; return 0;
	case OPT_BACKEND: return set_string (&spec->backend, arg);
	case OPT_MICROVM_ACCEL: return set_string (&spec->microvm_accel, arg);
	case OPT_JSON_RESULT: return set_string (&spec->json_result, arg);
	case 't': spec->tty = AB_TTY_ON; return 0;
	case OPT_NO_TTY: spec->tty = AB_TTY_OFF; return 0;
	case OPT_NETWORK:
		if (strcmp (arg, "none") == 0)
			spec->network = AB_NETWORK_NONE;
		else if (strcmp (arg, "proxy") == 0)
			spec->network = AB_NETWORK_PROXY;
		else
			return ab_error (err, 0, AB_E_INVALID,
			                 "--network %s: expected none or proxy", arg);
		return 0;
	case OPT_ALLOW_HOST: ab_strv_push (&spec->egress.allow_hosts, arg); return 0;
	case OPT_DENY_HOST: ab_strv_push (&spec->egress.deny_hosts, arg); return 0;
	case OPT_ALLOW_CIDR: ab_strv_push (&spec->egress.allow_cidrs, arg); return 0;
	case OPT_POLICY: return set_string (&spec->egress.policy_file, arg);
	case OPT_AUDIT_LOG: return set_string (&spec->egress.audit_log, arg);
	case OPT_CREDENTIAL: ab_strv_push (&spec->credentials, arg); return 0;
	case OPT_CREDENTIALS: {
		/* Kept in order with the NAME=FILE ones; "@" marks a whole file. */
		cleanup_free char *at = xasprintf ("@%s", arg);
		ab_strv_push (&spec->credentials, at);
		return 0;
	}
	default: return parse_limit (spec, opt, arg, err);
	}
}

static void
default_env (struct env_builder_s *env)
{
	const char *term = getenv ("TERM");
	cleanup_free char *t = xasprintf ("TERM=%s", term && *term ? term : "xterm");

	env_set (env, "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin");
	env_set (env, "HOME=/tmp");
	env_set (env, t);
	env_set (env, "LANG=C.UTF-8");
}

/* Host-side checks that give a clear error before anything starts. */
static int
check_host_paths (struct ab_spec_s *spec, ab_error_t *err)
{
	struct stat st;
	char real[PATH_MAX];

	if (spec->workspace) {
		if (!realpath (spec->workspace, real) || stat (real, &st) < 0)
			return ab_error (err, errno, AB_E_INVALID, "workspace %s", spec->workspace);
		if (!S_ISDIR (st.st_mode))
			return ab_error (err, 0, AB_E_INVALID, "workspace %s is not a directory",
			                 spec->workspace);
		set_string (&spec->workspace, real);
	}
	if (spec->rootfs) {
		if (!realpath (spec->rootfs, real) || stat (real, &st) < 0)
			return ab_error (err, errno, AB_E_INVALID, "rootfs %s", spec->rootfs);
		if (!S_ISDIR (st.st_mode))
			return ab_error (err, 0, AB_E_INVALID, "rootfs %s is not a directory",
			                 spec->rootfs);
		set_string (&spec->rootfs, real);
	}
	if (spec->json_result) {
		cleanup_free char *dir = xstrdup (spec->json_result);
		char *slash = strrchr (dir, '/');
		const char *d = slash ? (slash == dir ? "/" : (*slash = '\0', dir)) : ".";
		if (access (d, W_OK) < 0)
			return ab_error (err, errno, AB_E_INVALID, "--json-result %s",
			                 spec->json_result);
	}
	return 0;
}

const struct ab_run_image_s *
ab_run_image_options (void)
{
	return &image_opts;
}

int
ab_run_parse_options (int argc, char **argv, struct ab_spec_s *spec, ab_error_t *err)
{
	struct env_builder_s env = { 0 };
	char cwd[PATH_MAX];
	int opt;

	default_env (&env);
	if (getcwd (cwd, sizeof cwd))
		set_string (&spec->workspace, cwd);
	opterr = 0;
	optind = 1;
	free (image_opts.state_dir);
	image_opts = (struct ab_run_image_s){ 0 };
	while ((opt = getopt_long (argc, argv, "+:e:w:u:th", run_options, NULL)) != -1) {
		if (opt == 'h') {
			fputs (run_usage, stdout);
			exit (0);
		}
		if (opt == '?' || opt == ':') {
			const char *bad = argv[optind - 1];
			/* A leading ':' in the option string makes getopt report a
			 * missing value as ':', apart from an unknown option. */
			return ab_error (err, 0, AB_E_INVALID,
			                 "run: %s option '%s' (see agentbox run --help)",
			                 opt == ':' ? "missing value for" : "unknown", bad);
		}
		if (apply_option (spec, &env, opt, optarg, err) < 0)
			return -1;
	}
	if (spec->network != AB_NETWORK_PROXY
	    && (spec->egress.allow_hosts || spec->egress.deny_hosts || spec->egress.allow_cidrs
	        || spec->egress.policy_file || spec->egress.audit_log))
		return ab_error (err, 0, AB_E_INVALID, "egress options need --network proxy");
	spec->env = env.v;
	if (spec->network == AB_NETWORK_PROXY)
		ab_spec_add_proxy_env (spec);
	if (!spec->workspace && strcmp (spec->workdir, AB_WORKSPACE_DIR) == 0)
		set_string (&spec->workdir, "/");
	spec->argv = xcalloc ((size_t)(argc - optind) + 1, sizeof (char *));
	for (int i = optind; i < argc; i++)
		spec->argv[i - optind] = xstrdup (argv[i]);
	image_opts.command_given = argc > optind;
	/* With an image and no command, Entrypoint + Cmd are the command:
	 * the caller validates after ab_image_prepare_spec. */
	if (!(spec->image && !image_opts.command_given) && ab_spec_validate (spec, err) < 0)
		return -1;
	return check_host_paths (spec, err);
}
