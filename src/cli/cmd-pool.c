/* `agentbox pool create NAME --min N [--max M] [--disk-limit SIZE] [create
 * options]`, `agentbox pool ls [--json]`, `agentbox pool rm NAME`, and the
 * claims: `agentbox create --pool NAME` and `agentbox run --pool NAME --
 * CMD` (one request: claim, run, stream; the daemon deletes after), each
 * with the claim's own --env, --label, --ttl and --pool-only
 * (docs/pools.md). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"

static const char pool_usage[] =
        "usage: agentbox pool create NAME --min N [--max M] [--disk-limit SIZE] [create "
        "options]\n"
        "       agentbox pool ls [--json]\n"
        "       agentbox pool rm NAME\n"
        "  [--host SOCKET] on each; claims: agentbox create --pool NAME, agentbox run --pool "
        "NAME -- CMD\n";

bool
ab_pool_wanted (int argc, char **argv)
{
	for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
		if (strcmp (argv[i], "--pool") == 0 || strncmp (argv[i], "--pool=", 7) == 0)
			return true;
	return false;
}

static int
kv_into (json_t *obj, const char *opt, const char *v, ab_error_t *err)
{
	const char *eq = v ? strchr (v, '=') : NULL;
	if (!eq || eq == v)
		return ab_error (err, 0, AB_E_INVALID, "%s %s: expected KEY=VALUE", opt,
		                 v ? v : "");
	cleanup_free char *k = xstrndup (v, (size_t)(eq - v));
	json_object_set_new (obj, k, json_string (eq + 1));
	return 0;
}

/* The claim's options; *cmd is the first word after "--" (run). */
static json_t *
claim_request (int argc, char **argv, bool *as_json, int *cmd, ab_error_t *err)
{
	json_t *req = json_object (), *env = json_object (), *labels = json_object ();
	int i;

	*cmd = argc;
	for (i = 1; i < argc; i++) {
		const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
		int r = 0;
		if (strcmp (a, "--") == 0) {
			*cmd = i + 1;
			break;
		}
		if (strncmp (a, "--pool=", 7) == 0)
			json_object_set_new (req, "pool", json_string (a + 7));
		else if (strcmp (a, "--pool-only") == 0)
			json_object_set_new (req, "pool_only", json_true ());
		else if (strcmp (a, "--json") == 0)
			*as_json = true;
		else if (!v
		         && (!strcmp (a, "--pool") || !strcmp (a, "--env") || !strcmp (a, "-e")
		             || !strcmp (a, "--label") || !strcmp (a, "--ttl")))
			r = ab_error (err, 0, AB_E_INVALID, "missing value for %s", a);
		else if (strcmp (a, "--pool") == 0)
			json_object_set_new (req, "pool", json_string (argv[++i]));
		else if (strcmp (a, "--env") == 0 || strcmp (a, "-e") == 0)
			r = kv_into (env, a, argv[++i], err);
		else if (strcmp (a, "--label") == 0)
			r = kv_into (labels, a, argv[++i], err);
		else if (strcmp (a, "--ttl") == 0)
			json_object_set_new (req, "ttl", json_string (argv[++i]));
		else
			r = ab_error (
			        err, 0, AB_E_INVALID,
			        "'%s': with --pool, only --env, --label, --ttl, --pool-only and "
			        "--json (the rest is the pool's spec)",
			        a);
		if (r < 0) {
			json_decref (req);
			json_decref (env);
			json_decref (labels);
			return NULL;
		}
	}
	json_object_set_new (req, "env", env);
	json_object_set_new (req, "labels", labels);
	return req;
}

/* One request: claim, run, stream (daemon/pool-run.c); the exit event
 * ends it, and the daemon tears the sandbox down after. */
static int
run_oneshot (const char *host, json_t *req, int argc, char **argv, int cmd)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *argv_j = json_array ();
	int code;

	for (int i = cmd; i < argc; i++)
		json_array_append_new (argv_j, json_string (argv[i]));
	json_object_set_new (req, "run", json_pack ("{s:o}", "cmd", argv_j));
	signal (SIGPIPE, SIG_IGN);
	code = ab_cli_exec_events (host, "/v1/sandboxes", req, &err);
	json_decref (req);
	if (code < 0) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	return code;
}

int
ab_pool_claim_cli (const char *host, int argc, char **argv, bool run)
{
	ab_error_t err = AB_ERROR_INIT;
	bool as_json = false;
	int cmd;
	json_t *req = claim_request (argc, argv, &as_json, &cmd, &err);

	if (req && run && cmd >= argc)
		ab_error (&err, 0, AB_E_INVALID, "run --pool: missing command (-- CMD)");
	else if (req && !run && cmd < argc)
		ab_error (&err, 0, AB_E_INVALID, "create takes no command");
	if (!req || err.kind) {
		json_decref (req);
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	if (run)
		return run_oneshot (host, req, argc, argv, cmd);
	return ab_cli_post_print (host, "/v1/sandboxes", req, as_json, "id");
}

/* --- pool create, ls, rm --- */

static bool
has_opt (int argc, char **argv, const char *opt)
{
	size_t len = strlen (opt);
	for (int i = 1; i < argc && strcmp (argv[i], "--") != 0; i++)
		if (strcmp (argv[i], opt) == 0
		    || (strncmp (argv[i], opt, len) == 0 && argv[i][len] == '='))
			return true;
	return false;
}

static int
pool_create (const char *host, int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char **rest = xcalloc ((size_t)argc + 1, sizeof *rest);
	json_t *def, *spec;
	const char *min = NULL, *max = NULL, *disk = NULL;
	bool as_json = false;
	int n = 0;

	if (argc < 2 || argv[1][0] == '-') {
		fputs (pool_usage, stderr);
		return AB_EXIT_FAILED;
	}
	rest[n++] = (char *)"pool-create";
	for (int i = 2; i < argc; i++) {
		const char **slot = !strcmp (argv[i], "--min")          ? &min
		                    : !strcmp (argv[i], "--max")        ? &max
		                    : !strcmp (argv[i], "--disk-limit") ? &disk
		                                                        : NULL;
		if (slot && i + 1 < argc)
			*slot = argv[++i];
		else if (slot) {
			fprintf (stderr, "agentbox: missing value for %s\n", argv[i]);
			return AB_EXIT_FAILED;
		} else
			rest[n++] = argv[i];
	}
	if (!min) {
		fputs ("agentbox: pool create needs --min N\n", stderr);
		return AB_EXIT_FAILED;
	}
	if (has_opt (n, rest, "--workspace") || has_opt (n, rest, "--ttl")
	    || has_opt (n, rest, "--label") || has_opt (n, rest, "--credential")) {
		fputs ("agentbox: a pool's entries get their own workspace; --ttl, --label and "
		       "--credential are a claim's (agentbox create --pool NAME ...)\n",
		       stderr);
		return AB_EXIT_FAILED;
	}
	spec = ab_create_request (n, rest, &as_json, &err);
	if (!spec) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	json_object_del (spec, "workspace"); /* create's default, the current directory */
	json_object_del (spec, "labels");
	def = json_pack ("{s:s, s:o, s:I}", "name", argv[1], "spec", spec, "min_ready",
	                 (json_int_t)strtoll (min, NULL, 10));
	if (max)
		json_object_set_new (def, "max_ready", json_integer (strtoll (max, NULL, 10)));
	if (disk)
		json_object_set_new (def, "disk_limit", json_string (disk));
	return ab_cli_post_print (host, "/v1/pools", def, as_json, "name");
}

static int
pool_ls (const char *host, int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *resp = ab_client_call (host, "GET", "/v1/pools", NULL, NULL, &err), *v;
	size_t i;

	if (!resp) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	if (argc > 1 && strcmp (argv[1], "--json") == 0) {
		json_dumpf (json_object_get (resp, "pools"), stdout, JSON_INDENT (2));
		putchar ('\n');
	} else {
		printf ("%-20s %5s %5s %6s %8s %8s %8s %8s  %s\n", "NAME", "MIN", "MAX", "READY",
		        "STARTING", "CLAIMS", "MISSES", "FAILURES", "LAST ERROR");
		json_array_foreach (json_object_get (resp, "pools"), i, v)
		{
			const char *le = json_string_value (json_object_get (v, "last_error"));
			printf ("%-20s %5lld %5lld %6lld %8lld %8lld %8lld %8lld  %s\n",
			        json_string_value (json_object_get (v, "name")),
			        json_integer_value (json_object_get (v, "min_ready")),
			        json_integer_value (json_object_get (v, "max_ready")),
			        json_integer_value (json_object_get (v, "ready")),
			        json_integer_value (json_object_get (v, "starting")),
			        json_integer_value (json_object_get (v, "claims")),
			        json_integer_value (json_object_get (v, "misses")),
			        json_integer_value (json_object_get (v, "failures")),
			        le ? le : "-");
		}
	}
	json_decref (resp);
	return 0;
}

static int
pool_rm (const char *host, int argc, char **argv)
{
	int rc = 0;

	if (argc < 2) {
		fputs (pool_usage, stderr);
		return AB_EXIT_FAILED;
	}
	for (int i = 1; i < argc; i++) {
		ab_error_t err = AB_ERROR_INIT;
		cleanup_free char *esc = ab_client_escape (argv[i]);
		cleanup_free char *path = xasprintf ("/v1/pools/%s", esc);
		json_t *j = ab_client_call (host, "DELETE", path, NULL, NULL, &err);
		if (!j && err.kind) {
			ab_cli_report (&err);
			rc = AB_EXIT_FAILED;
		}
		json_decref (j);
	}
	return rc;
}

int
ab_cmd_pool (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);

	if (argc < 2 || !strcmp (argv[1], "-h") || !strcmp (argv[1], "--help")) {
		fputs (pool_usage, argc < 2 ? stderr : stdout);
		return argc < 2 ? AB_EXIT_FAILED : 0;
	}
	if (strcmp (argv[1], "create") == 0)
		return pool_create (host, argc - 1, argv + 1);
	if (strcmp (argv[1], "ls") == 0)
		return pool_ls (host, argc - 1, argv + 1);
	if (strcmp (argv[1], "rm") == 0)
		return pool_rm (host, argc - 1, argv + 1);
	fprintf (stderr, "agentbox: pool: unknown subcommand '%s'\n%s", argv[1], pool_usage);
	return AB_EXIT_FAILED;
}
