/* `agentbox ls`, `ps`, `inspect`, `rm`: the daemon's sandboxes. */
#include <getopt.h>
#include <stdio.h>
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

static void
print_labels (const json_t *labels)
{
	const char *k;
	json_t *v;
	bool first = true;

	json_object_foreach ((json_t *)labels, k, v)
	{
		printf ("%s%s=%s", first ? "" : ",", k, json_string_value (v));
		first = false;
	}
	if (first)
		printf ("-");
}

int
ab_cmd_ls (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	ab_error_t err = AB_ERROR_INIT;
	bool as_json = argc == 2 && strcmp (argv[1], "--json") == 0;
	json_t *j, *sb, *arr;
	size_t i;

	if (argc > 2 || (argc == 2 && !as_json)) {
		fprintf (stderr, "usage: agentbox ls [--json] [--host SOCKET]\n");
		return AB_EXIT_FAILED;
	}
	j = ab_client_call (host, "GET", "/v1/sandboxes", NULL, NULL, &err);
	if (!j)
		return fail (&err);
	arr = json_object_get (j, "sandboxes");
	if (as_json)
		json_dumpf (arr, stdout, JSON_INDENT (2)), putchar ('\n');
	else {
		printf ("%-18s %-9s %-26s %-26s %s\n", "ID", "STATE", "CREATED", "EXPIRES",
		        "LABELS");
		json_array_foreach (arr, i, sb)
		{
			const char *exp = json_string_value (json_object_get (sb, "expires_at"));
			printf ("%-18s %-9s %-26s %-26s ",
			        json_string_value (json_object_get (sb, "id")),
			        json_string_value (json_object_get (sb, "state")),
			        json_string_value (json_object_get (sb, "created_at")),
			        exp ? exp : "-");
			print_labels (json_object_get (sb, "labels"));
			putchar ('\n');
		}
	}
	json_decref (j);
	return 0;
}

static bool
valid_id (const char *id)
{
	return *id && strlen (id) <= 64 && strspn (id, "0123456789abcdef") == strlen (id);
}

int
ab_cmd_inspect (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	ab_error_t err = AB_ERROR_INIT;
	json_t *j;

	if (argc != 2 || !valid_id (argv[1])) {
		fprintf (stderr, "usage: agentbox inspect [--host SOCKET] ID\n");
		return AB_EXIT_FAILED;
	}
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s", argv[1]);
	j = ab_client_call (host, "GET", path, NULL, NULL, &err);
	if (!j)
		return fail (&err);
	json_dumpf (j, stdout, JSON_INDENT (2));
	putchar ('\n');
	json_decref (j);
	return 0;
}

static void
print_proc (const json_t *p)
{
	const json_t *argv = json_object_get (p, "argv");
	bool running = json_is_true (json_object_get (p, "running"));
	char status[32];
	size_t i;
	json_t *a;

	if (running)
		snprintf (status, sizeof status, "running");
	else
		snprintf (status, sizeof status, "exited(%lld)",
		          (long long)json_integer_value (json_object_get (p, "exit_code")));
	printf ("%-8lld %-12s", (long long)json_integer_value (json_object_get (p, "pid")), status);
	json_array_foreach (argv, i, a) printf (" %s", json_string_value (a));
	putchar ('\n');
}

int
ab_cmd_ps (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	ab_error_t err = AB_ERROR_INIT;
	bool as_json = argc == 3 && strcmp (argv[1], "--json") == 0;
	const char *id = argv[argc - 1];
	json_t *j, *p;
	size_t i;

	if ((argc != 2 && !as_json) || !valid_id (id)) {
		fprintf (stderr, "usage: agentbox ps [--json] [--host SOCKET] ID\n");
		return AB_EXIT_FAILED;
	}
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/processes", id);
	j = ab_client_call (host, "GET", path, NULL, NULL, &err);
	if (!j)
		return fail (&err);
	if (as_json)
		json_dumpf (json_object_get (j, "processes"), stdout, JSON_INDENT (2)),
		        putchar ('\n');
	else {
		printf ("%-8s %-12s %s\n", "PID", "STATUS", "COMMAND");
		json_array_foreach (json_object_get (j, "processes"), i, p) print_proc (p);
	}
	json_decref (j);
	return 0;
}

int
ab_cmd_rm (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	bool force = false;
	int first = 1, rc = 0;

	if (argc > 1 && (strcmp (argv[1], "-f") == 0 || strcmp (argv[1], "--force") == 0)) {
		force = true;
		first = 2;
	}
	if (first >= argc) {
		fprintf (stderr, "usage: agentbox rm [-f] [--host SOCKET] ID...\n");
		return AB_EXIT_FAILED;
	}
	for (int i = first; i < argc; i++) {
		ab_error_t err = AB_ERROR_INIT;
		json_t *j;
		if (!valid_id (argv[i])) {
			fprintf (stderr, "agentbox: '%s' is not a sandbox id\n", argv[i]);
			rc = 1;
			continue;
		}
		cleanup_free char *path =
		        xasprintf ("/v1/sandboxes/%s%s", argv[i], force ? "?force=1" : "");
		j = ab_client_call (host, "DELETE", path, NULL, NULL, &err);
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
