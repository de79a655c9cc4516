/* `agentbox egress-proxy serve` and its multi-call twin `t3-egress-proxy
 * serve`: the egress proxy as a standalone sidecar (docs/egress-proxy.md).
 * Flags build the same policy object a --policy file does: the file first,
 * then the flags on top. */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/listen-arg.h"
#include "net/audit.h"
#include "net/egress-proxy.h"
#include "policy/egress-policy.h"

#define EXIT_USAGE 2

static const char usage[] = "serve [--listen host:port] [--deny-loopback] [--deny-private] "
                            "[--deny-link-local] [--deny-metadata] [--resolve-before-connect]\n";

static const char options_help[] =
        "\n"
        "  --listen HOST:PORT          address to listen on (default 0.0.0.0:3128; port 0 = any)\n"
        "  --deny-loopback             deny loopback, unspecified and this host's own addresses\n"
        "  --deny-private              deny private, CGNAT, ULA, documentation, translation "
        "forms...\n"
        "  --deny-link-local           deny link-local (169.254/16, fe80::/10) and broadcast\n"
        "  --deny-metadata             deny cloud metadata endpoints (169.254.169.254, "
        "fd00:ec2::254...)\n"
        "  --resolve-before-connect    resolve names (once), vet every answer, dial the vetted "
        "address\n"
        "  --allow-host PATTERN        only these hosts (example.com, *.example.com, host:port); "
        "repeatable\n"
        "  --deny-host PATTERN         never these hosts; repeatable\n"
        "  --allow-cidr CIDR           allow addresses in CIDR despite the --deny-* groups; "
        "repeatable\n"
        "  --policy FILE               JSON policy (docs/egress-policy.md), applied before the "
        "flags\n"
        "  --audit-log FILE|-          one JSON line per decision\n"
        "  --max-connections N         client connections at once (16384)\n"
        "  --max-head-bytes N          request/response head size (65536)\n"
        "  --max-headers N             header fields per head (100)\n"
        "  --head-timeout SECONDS      to receive a whole request head (30)\n"
        "  --idle-timeout SECONDS      without a byte either way (300)\n"
        "  --dial-timeout SECONDS      to connect upstream (15)\n"
        "  --resolve-timeout SECONDS   to resolve a name (5)\n"
        "  --resolver-threads N        getaddrinfo workers (4)\n";

#define bad_usage(progname, ...) ab_cli_usage_error (progname, usage, EXIT_USAGE, __VA_ARGS__)

struct serve_opts_s {
	const char *listen;
	unsigned deny_groups;
	bool resolve;
	const char *policy_file;
	const char *audit_path;
	const char **allow_hosts;
	const char **deny_hosts;
	const char **allow_cidrs;
	size_t n_allow_hosts, n_deny_hosts, n_allow_cidrs;
	struct ab_egress_limits_s limits;
};

static const struct {
	const char *flag;
	unsigned group;
} group_flags[] = {
	{ "--deny-loopback", AB_ADDR_GROUP_LOOPBACK },
	{ "--deny-private", AB_ADDR_GROUP_PRIVATE },
	{ "--deny-link-local", AB_ADDR_GROUP_LINK_LOCAL },
	{ "--deny-metadata", AB_ADDR_GROUP_METADATA },
};

/* Numeric limits: flag, field, unit multiplier, minimum. */
enum { LIM_SIZE, LIM_UINT };
static const struct {
	const char *flag;
	size_t offset;
	int type;
	unsigned long scale;
	unsigned long min;
} limit_flags[] = {
	{ "--max-connections", offsetof (struct ab_egress_limits_s, max_conns), LIM_UINT, 1, 1 },
	{ "--max-head-bytes", offsetof (struct ab_egress_limits_s, max_head), LIM_SIZE, 1, 1024 },
	{ "--max-headers", offsetof (struct ab_egress_limits_s, max_fields), LIM_UINT, 1, 1 },
	{ "--head-timeout", offsetof (struct ab_egress_limits_s, head_timeout_ms), LIM_UINT, 1000,
	  1 },
	{ "--idle-timeout", offsetof (struct ab_egress_limits_s, idle_timeout_ms), LIM_UINT, 1000,
	  1 },
	{ "--dial-timeout", offsetof (struct ab_egress_limits_s, dial_timeout_ms), LIM_UINT, 1000,
	  1 },
	{ "--resolve-timeout", offsetof (struct ab_egress_limits_s, resolve_timeout_ms), LIM_UINT,
	  1000, 1 },
	{ "--resolver-threads", offsetof (struct ab_egress_limits_s, resolver_threads), LIM_UINT, 1,
	  1 },
};

static void
push (const char ***list, size_t *n, const char *v)
{
	*list = xrealloc (*list, (*n + 1) * sizeof **list);
	(*list)[(*n)++] = v;
}

static bool
parse_limit (const char *text, unsigned long scale, unsigned long min, unsigned long max,
             unsigned long *out)
{
	char *end;
	unsigned long v;

	if (text[0] < '0' || text[0] > '9')
		return false;
	errno = 0;
	v = strtoul (text, &end, 10);
	if (errno != 0 || *end != '\0' || v < min || v > max / scale)
		return false;
	*out = v * scale;
	return true;
}

static int
set_limit (struct serve_opts_s *o, size_t i, const char *value)
{
	unsigned long v;
	char *field = (char *)&o->limits + limit_flags[i].offset;

	if (!parse_limit (value, limit_flags[i].scale, limit_flags[i].min, UINT_MAX, &v))
		return -1;
	if (limit_flags[i].type == LIM_SIZE)
		*(size_t *)field = v;
	else
		*(unsigned *)field = (unsigned)v;
	return 0;
}

static int
parse_one (int argc, char **argv, int *i, struct serve_opts_s *o, const char *progname)
{
	static const struct {
		const char *flag;
		size_t list;
	} lists[] = { { "--allow-host", 0 }, { "--deny-host", 1 }, { "--allow-cidr", 2 } };
	static const struct {
		const char *flag;
		size_t offset;
	} strings[] = {
		{ "--listen", offsetof (struct serve_opts_s, listen) },
		{ "--policy", offsetof (struct serve_opts_s, policy_file) },
		{ "--audit-log", offsetof (struct serve_opts_s, audit_path) },
	};
	const char ***list_ptr[] = { &o->allow_hosts, &o->deny_hosts, &o->allow_cidrs };
	size_t *list_n[] = { &o->n_allow_hosts, &o->n_deny_hosts, &o->n_allow_cidrs };
	const char *arg = argv[*i];
	const char *v;

	for (size_t k = 0; k < sizeof group_flags / sizeof group_flags[0]; k++)
		if (strcmp (arg, group_flags[k].flag) == 0) {
			o->deny_groups |= group_flags[k].group;
			return 0;
		}
	if (strcmp (arg, "--resolve-before-connect") == 0) {
		o->resolve = true;
		return 0;
	}
	for (size_t k = 0; k < sizeof lists / sizeof lists[0]; k++)
		if (ab_cli_flag (argc, argv, i, lists[k].flag, &v)) {
			if (v == NULL)
				return bad_usage (progname, "%s needs a value", lists[k].flag);
			push (list_ptr[lists[k].list], list_n[lists[k].list], v);
			return 0;
		}
	for (size_t k = 0; k < sizeof limit_flags / sizeof limit_flags[0]; k++)
		if (ab_cli_flag (argc, argv, i, limit_flags[k].flag, &v)) {
			if (v == NULL)
				return bad_usage (progname, "%s needs a value",
				                  limit_flags[k].flag);
			if (set_limit (o, k, v) < 0)
				return bad_usage (progname, "bad value for %s",
				                  limit_flags[k].flag);
			return 0;
		}
	for (size_t k = 0; k < sizeof strings / sizeof strings[0]; k++)
		if (ab_cli_flag (argc, argv, i, strings[k].flag, &v)) {
			if (v == NULL)
				return bad_usage (progname, "%s needs a value", arg);
			*(const char **)((char *)o + strings[k].offset) = v;
			return 0;
		}
	return bad_usage (progname, "unknown option '%s'", arg);
}

static int
parse_serve (int argc, char **argv, struct serve_opts_s *o, const char *progname)
{
	o->listen = "0.0.0.0:3128";
	ab_egress_limits_default (&o->limits);
	for (int i = 2; i < argc; i++) {
		int r = parse_one (argc, argv, &i, o, progname);
		if (r != 0)
			return r;
	}
	return 0;
}

static struct ab_egress_policy_s *
build_policy (const struct serve_opts_s *o, ab_error_t *err)
{
	cleanup_egress_policy struct ab_egress_policy_s *p = ab_egress_policy_new_standalone ();

	if (ab_egress_policy_load_local_addrs (p, err) < 0)
		return NULL;
	if (o->policy_file && ab_egress_policy_load_file (p, o->policy_file, err) < 0)
		return NULL;
	ab_egress_policy_add_deny_groups (p, o->deny_groups);
	if (o->resolve)
		ab_egress_policy_set_resolve_names (p, true);
	for (size_t i = 0; i < o->n_allow_hosts; i++)
		if (ab_egress_policy_add_allow_host (p, o->allow_hosts[i], err) < 0)
			return NULL;
	for (size_t i = 0; i < o->n_deny_hosts; i++)
		if (ab_egress_policy_add_deny_host (p, o->deny_hosts[i], err) < 0)
			return NULL;
	for (size_t i = 0; i < o->n_allow_cidrs; i++)
		if (ab_egress_policy_add_allow_cidr (p, o->allow_cidrs[i], err) < 0)
			return NULL;
	return steal_pointer (&p);
}

/* Every client and tunnel costs descriptors (a tunnel six); take what the
 * hard limit allows rather than failing at a thousand connections. */
static void
raise_nofile (void)
{
	struct rlimit rl;

	if (getrlimit (RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit (RLIMIT_NOFILE, &rl);
	}
}

/* A connection the proxy could not take: the edge prints it. */
static void
report_error (void *arg, const ab_error_t *err)
{
	ab_cli_report (err);
}

/* SIGINT/SIGTERM: async-signal-safe (an eventfd write). */
static void
stop_proxy (void *proxy)
{
	ab_egress_proxy_stop (proxy);
}

static int
serve (const struct serve_opts_s *o, const char *progname)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_egress_policy struct ab_egress_policy_s *policy = NULL;
	struct ab_audit_s *audit = NULL;
	struct ab_egress_proxy_config_s cfg = { .limits = o->limits, .log = stderr };
	ab_egress_proxy_t *proxy = NULL;
	cleanup_free char *host = NULL;
	cleanup_free char *port = NULL;
	char bound[128];
	char groups[AB_ADDR_GROUPS_STRLEN];
	int rc = 1;

	if (ab_cli_split_listen (o->listen, "0.0.0.0", &host, &port) < 0)
		return bad_usage (progname, "--listen wants HOST:PORT, not '%s'", o->listen);
	policy = build_policy (o, &err);
	if (policy == NULL) {
		fprintf (stderr, "%s: %s\n", progname, err.msg);
		return EXIT_USAGE;
	}
	if (o->audit_path && (audit = ab_audit_open (o->audit_path, &err)) == NULL) {
		fprintf (stderr, "%s: %s\n", progname, err.msg);
		return 1;
	}
	raise_nofile ();
	cfg.report = report_error;
	/* Decision, audit and failure lines go to stdout/stderr, often pipes:
	 * a reader that goes away must fail those writes, not kill the proxy. */
	signal (SIGPIPE, SIG_IGN);
	cfg.policy = policy;
	cfg.audit = audit;
	proxy = ab_egress_proxy_new (NULL, &cfg, &err);
	if (proxy == NULL
	    || ab_egress_proxy_listen (proxy, host, port, bound, sizeof bound, &err) < 0)
		goto out;
	ab_cli_stop_on_signals (stop_proxy, proxy);
	fprintf (stderr, "%s listening on %s denying [%s]\n", progname, bound,
	         ab_addr_groups_format (ab_egress_policy_deny_groups (policy), groups));
	if (ab_egress_proxy_run (proxy, &err) < 0)
		goto out;
	rc = 0;
out:
	if (rc != 0)
		fprintf (stderr, "%s: %s\n", progname, err.msg);
	ab_egress_proxy_free (proxy);
	ab_audit_close (audit);
	return rc;
}

int
ab_cmd_egress_proxy (int argc, char **argv, const char *progname)
{
	struct serve_opts_s o = { 0 };
	int rc;

	/* --help anywhere wins, and nothing else happens. */
	for (int i = 1; i < argc; i++)
		if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0) {
			printf ("usage: %s %s", progname, usage);
			fputs (options_help, stdout);
			return 0;
		}
	if (argc < 2 || strcmp (argv[1], "serve") != 0)
		return bad_usage (progname, "expected the 'serve' command");
	rc = parse_serve (argc, argv, &o, progname);
	if (rc == 0)
		rc = serve (&o, progname);
	free (o.allow_hosts);
	free (o.deny_hosts);
	free (o.allow_cidrs);
	return rc;
}
