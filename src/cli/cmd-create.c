/* `agentbox create [run options] [--ttl D] [--label K=V]... [--from-snapshot N]
 * [--auto-resume] [--json]`: a sandbox
 * that stays up, served by the daemon; prints its id.  The options are
 * `agentbox run`'s, parsed by the same code, with the same defaults (the
 * current directory as the workspace; --no-workspace for none). */
#include <stdio.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "cli/run-credentials.h"
#include "spec/spec-json.h"

/* Take --ttl, --label (the daemon's own) and --json out of argv.  --json
 * prints create's whole answer: the one place the sandbox's port token is
 * shown (docs/daemon.md, "Sandboxes"). */
static int
take_daemon_options (int *argc, char **argv, json_t *req, bool *as_json, ab_error_t *err)
{
	json_t *labels = json_object ();
	int o = 1;

	json_object_set_new (req, "labels", labels);
	for (int i = 1; i < *argc; i++) {
		const char *a = argv[i], *v = NULL;
		bool ttl = strcmp (a, "--ttl") == 0, label = strcmp (a, "--label") == 0;
		if (ab_cli_take_snapshot_option (argc, argv, &i, req, err) != 0) {
			if (err->kind)
				return -1;
			continue;
		}
		if (strcmp (a, "--") == 0) {
			while (i < *argc)
				argv[o++] = argv[i++];
			break;
		}
		if (strcmp (a, "--json") == 0) {
			*as_json = true;
			continue;
		}
		if ((ttl || label) && i + 1 >= *argc)
			return ab_error (err, 0, AB_E_INVALID, "missing value for %s", a);
		if (ttl || label)
			v = argv[++i];
		else if (strncmp (a, "--ttl=", 6) == 0)
			ttl = true, v = a + 6;
		else if (strncmp (a, "--label=", 8) == 0)
			label = true, v = a + 8;
		if (ttl)
			json_object_set_new (req, "ttl", json_string (v));
		else if (label) {
			const char *eq = strchr (v, '=');
			if (!eq || eq == v)
				return ab_error (err, 0, AB_E_INVALID,
				                 "--label %s: expected KEY=VALUE", v);
			cleanup_free char *k = xstrndup (v, (size_t)(eq - v));
			json_object_set_new (labels, k, json_string (eq + 1));
		} else
			argv[o++] = argv[i];
	}
	*argc = o;
	return 0;
}

json_t *
ab_create_request (int argc, char **argv, bool *as_json, ab_error_t *err)
{
	cleanup_free char **args = xcalloc ((size_t)argc + 2, sizeof *args);
	struct ab_spec_s spec;
	json_t *req = json_object (), *s;
	int n = argc;

	if (take_daemon_options (&n, argv, req, as_json, err) < 0) {
		json_decref (req);
		return NULL;
	}
	/* run's parser wants a command; `true` stands in, and must be all. */
	memcpy (args, argv, (size_t)n * sizeof *args);
	args[n] = (char *)"true";
	ab_spec_init (&spec);
	if (ab_run_parse_options (n + 1, args, &spec, err) < 0 || spec.argv[1]) {
		if (spec.argv && spec.argv[1])
			ab_error (err, 0, AB_E_INVALID,
			          "create takes no command (use: agentbox exec ID -- CMD)");
		ab_spec_free (&spec);
		json_decref (req);
		return NULL;
	}
	/* --credential: the files are read here, with the client's rights;
	 * the daemon gets the entries and never opens a client path. */
	if (spec.credentials) {
		json_t *ups;
		if (ab_run_credentials_entries (spec.credentials, &ups, err) < 0) {
			ab_spec_free (&spec);
			json_decref (req);
			return NULL;
		}
		json_object_set_new (req, "credentials", ups);
	}
	s = ab_spec_to_json (&spec, 0);
	ab_spec_free (&spec);
	/* A snapshot fills the daemon's own workspace, not the current directory. */
	if (json_object_get (req, "from_snapshot"))
		json_object_del (s, "workspace");
	json_object_update (req, s);
	json_decref (s);
	/* With an image, what the user did not give is the image's to set
	 * (the daemon's ab_image_prepare_spec). */
	if (json_object_get (req, "image")) {
		const struct ab_run_image_s *io = ab_run_image_options ();
		static const char *const pulls[] = { "missing", "always", "never" };
		if (!io->workdir_given)
			json_object_del (req, "workdir");
		if (!io->user_given)
			json_object_del (req, "user");
		json_object_set_new (req, "pull", json_string (pulls[io->pull % 3]));
	}
	return req;
}

int
ab_cmd_create (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	ab_error_t err = AB_ERROR_INIT;
	bool as_json = false;
	json_t *req;

	if (ab_pool_wanted (argc, argv))
		return ab_pool_claim_cli (host, argc, argv, false);
	req = ab_create_request (argc, argv, &as_json, &err);

	if (!req) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	return ab_cli_post_print (host, "/v1/sandboxes", req, as_json, "id");
}
