/* `agentbox pause`, `resume`, `snapshot`, `fork`: a daemon sandbox's
 * pause, its filesystem snapshots and forks (docs/snapshots.md). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"

static int
fail (const ab_error_t *err)
{
	ab_cli_report (err);
	return AB_EXIT_FAILED;
}

static bool
valid_id (const char *id)
{
	return *id && strlen (id) <= 64 && strspn (id, "0123456789abcdef") == strlen (id);
}

static int
usage (const char *text)
{
	fprintf (stderr, "usage: agentbox %s\n", text);
	return AB_EXIT_FAILED;
}

int
ab_cli_take_snapshot_option (int *argc, char **argv, int *i, json_t *req, ab_error_t *err)
{
	const char *a = argv[*i];

	if (strcmp (a, "--auto-resume") == 0) {
		json_object_set_new (req, "auto_resume", json_true ());
		return 1;
	}
	if (strncmp (a, "--from-snapshot=", 16) == 0) {
		json_object_set_new (req, "from_snapshot", json_string (a + 16));
		return 1;
	}
	if (strcmp (a, "--from-snapshot") != 0)
		return 0;
	if (*i + 1 >= *argc)
		return ab_error (err, 0, AB_E_INVALID, "missing value for %s", a);
	json_object_set_new (req, "from_snapshot", json_string (argv[++*i]));
	return 1;
}

static int
pause_verb (int argc, char **argv, const char *verb)
{
	const char *host = ab_client_take_host (&argc, argv);
	ab_error_t err = AB_ERROR_INIT;
	json_t *j;

	if (argc != 2 || !valid_id (argv[1])) {
		fprintf (stderr, "usage: agentbox %s [--host SOCKET] ID\n", verb);
		return AB_EXIT_FAILED;
	}
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/%s", argv[1], verb);
	json_t *body = json_object ();
	j = ab_client_call (host, "POST", path, body, NULL, &err);
	json_decref (body);
	if (!j)
		return fail (&err);
	printf ("%s %s\n", argv[1], json_string_value (json_object_get (j, "state")));
	json_decref (j);
	return 0;
}

int
ab_cmd_pause (int argc, char **argv)
{
	return pause_verb (argc, argv, "pause");
}

int
ab_cmd_resume (int argc, char **argv)
{
	return pause_verb (argc, argv, "resume");
}

static int
snapshot_create (const char *host, int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *req = json_object (), *j;
	const char *id = NULL;

	for (int i = 2; i < argc; i++)
		if (strcmp (argv[i], "--name") == 0 && i + 1 < argc)
			json_object_set_new (req, "name", json_string (argv[++i]));
		else if (strcmp (argv[i], "--memory") == 0)
			json_object_set_new (req, "memory", json_true ());
		else if (!id && valid_id (argv[i]))
			id = argv[i];
		else {
			json_decref (req);
			return usage ("snapshot create [--host SOCKET] ID [--name N] [--memory]");
		}
	if (!id) {
		json_decref (req);
		return usage ("snapshot create [--host SOCKET] ID [--name N] [--memory]");
	}
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/snapshots", id);
	j = ab_client_call (host, "POST", path, req, NULL, &err);
	json_decref (req);
	if (!j)
		return fail (&err);
	printf ("%s\n", json_string_value (json_object_get (j, "name")));
	json_decref (j);
	return 0;
}

static int
snapshot_ls (const char *host, int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	bool as_json = argc == 3 && strcmp (argv[2], "--json") == 0;
	json_t *j, *s, *arr;
	size_t i;

	if (argc > 3 || (argc == 3 && !as_json))
		return usage ("snapshot ls [--json] [--host SOCKET]");
	if (!(j = ab_client_call (host, "GET", "/v1/snapshots", NULL, NULL, &err)))
		return fail (&err);
	arr = json_object_get (j, "snapshots");
	if (as_json)
		json_dumpf (arr, stdout, JSON_INDENT (2)), putchar ('\n');
	else {
		printf ("%-30s %-18s %-8s %10s %14s\n", "NAME", "SOURCE", "BACKEND", "FILES",
		        "BYTES");
		json_array_foreach (arr, i, s)
		{
			json_t *c = json_object_get (s, "content");
			printf ("%-30s %-18s %-8s %10lld %14lld\n",
			        json_string_value (json_object_get (s, "name")),
			        json_string_value (json_object_get (s, "source")),
			        json_string_value (json_object_get (s, "backend")),
			        (long long)json_integer_value (json_object_get (c, "files")),
			        (long long)json_integer_value (json_object_get (c, "bytes")));
		}
	}
	json_decref (j);
	return 0;
}

static int
snapshot_rm (const char *host, int argc, char **argv)
{
	int rc = 0;

	if (argc < 3)
		return usage ("snapshot rm [--host SOCKET] NAME...");
	for (int i = 2; i < argc; i++) {
		ab_error_t err = AB_ERROR_INIT;
		cleanup_free char *esc = ab_client_escape (argv[i]);
		cleanup_free char *path = xasprintf ("/v1/snapshots/%s", esc);
		json_t *j = ab_client_call (host, "DELETE", path, NULL, NULL, &err);
		if (!j) {
			ab_cli_report (&err);
			rc = 1;
			continue;
		}
		json_decref (j);
		printf ("%s\n", argv[i]);
	}
	return rc;
}

int
ab_cmd_snapshot (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);

	if (argc >= 2 && strcmp (argv[1], "create") == 0)
		return snapshot_create (host, argc, argv);
	if (argc >= 2 && strcmp (argv[1], "ls") == 0)
		return snapshot_ls (host, argc, argv);
	if (argc >= 2 && strcmp (argv[1], "rm") == 0)
		return snapshot_rm (host, argc, argv);
	return usage ("snapshot create ID [--name N] | snapshot ls [--json] | snapshot rm NAME...");
}

int
ab_cmd_fork (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	ab_error_t err = AB_ERROR_INIT;
	const char *id = NULL;
	bool as_json = false;
	int count = 1;
	json_t *j, *sb;
	size_t i;

	for (int k = 1; k < argc; k++)
		if (strcmp (argv[k], "--count") == 0 && k + 1 < argc)
			count = atoi (argv[++k]);
		else if (strcmp (argv[k], "--json") == 0)
			as_json = true;
		else if (!id && valid_id (argv[k]))
			id = argv[k];
		else
			return usage ("fork [--host SOCKET] ID [--count N] [--json]");
	if (!id)
		return usage ("fork [--host SOCKET] ID [--count N] [--json]");
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/fork", id);
	json_t *body = json_pack ("{s:i}", "count", count);
	j = ab_client_call (host, "POST", path, body, NULL, &err);
	json_decref (body);
	if (!j)
		return fail (&err);
	if (as_json)
		json_dumpf (j, stdout, JSON_INDENT (2)), putchar ('\n');
	else
		json_array_foreach (json_object_get (j, "sandboxes"), i, sb)
		        printf ("%s\n", json_string_value (json_object_get (sb, "id")));
	json_decref (j);
	return 0;
}
