/* `agentbox image pull|import|ls|inspect|rm|prune`: the image store
 * (image/image.h, docs/images.md) from the command line. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/fsutil.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "image/image.h"

static const char image_usage[] =
        "usage: agentbox image [--state-dir DIR] <command>\n"
        "  pull REF [--insecure-registry HOST:PORT] [--platform linux/amd64] [--ca-file F] "
        "[--quiet]\n"
        "  import SRC [NAME]   an OCI layout (dir or tar), a docker/podman save archive, or a "
        "root dir or tar\n"
        "  ls [--json]  inspect NAME  rm NAME...  prune\n";

static int
cmd_pull (const char *state, int argc, char **argv, ab_error_t *err)
{
	static const struct option opts[] = {
		{ "insecure-registry", required_argument, NULL, 'k' },
		{ "platform", required_argument, NULL, 'p' },
		{ "ca-file", required_argument, NULL, 'c' },
		{ "quiet", no_argument, NULL, 'q' },
		{ NULL, 0, NULL, 0 },
	};
	struct ab_image_pull_opts_s o = { 0 };
	cleanup_strv char **insecure = NULL;
	cleanup_free char *dg = NULL;
	int opt, r;

	optind = 1;
	opterr = 0;
	while ((opt = getopt_long (argc, argv, "+q", opts, NULL)) != -1)
		switch (opt) {
		case 'k': ab_strv_push (&insecure, optarg); break;
		case 'p': o.platform = optarg; break;
		case 'c': o.ca_file = optarg; break;
		case 'q': o.quiet = true; break;
		default:
			return ab_error (err, 0, AB_E_INVALID, "image pull: bad option '%s'",
			                 argv[optind - 1]);
		}
	if (optind != argc - 1)
		return ab_error (err, 0, AB_E_INVALID, "usage: agentbox image pull REF");
	o.insecure = insecure;
	r = ab_image_pull (state, argv[optind], &o, &dg, err);
	if (r == 0)
		printf ("%s\n", dg);
	return r;
}

static int
print_json (json_t *j)
{
	if (!j)
		return -1;
	json_dumpf (j, stdout, JSON_INDENT (2) | JSON_SORT_KEYS);
	fputc ('\n', stdout);
	json_decref (j);
	return 0;
}

static int
cmd_ls (const char *state, int argc, char **argv, ab_error_t *err)
{
	json_t *l = ab_image_list (state, err), *e, *n;
	size_t i, k;

	if (!l)
		return -1;
	if (argc > 1 && strcmp (argv[1], "--json") == 0)
		return print_json (l);
	printf ("%-60s %-14s %10s %s\n", "NAME", "DIGEST", "SIZE", "IN USE");
	json_array_foreach (l, i, e)
	{
		const char *d = json_string_value (json_object_get (e, "digest"));
		double mib = (double)json_integer_value (json_object_get (e, "size")) / 1048576.0;
		const char *use = json_is_true (json_object_get (e, "in_use")) ? "yes" : "";
		if (json_array_size (json_object_get (e, "names")) == 0)
			printf ("%-60s %.12s   %8.1fM %s\n", "<none>", d + 7, mib, use);
		json_array_foreach (json_object_get (e, "names"), k, n) printf (
		        "%-60s %.12s   %8.1fM %s\n", json_string_value (n), d + 7, mib, use);
	}
	json_decref (l);
	return 0;
}

int
ab_cmd_image (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *state = NULL;
	const char *cmd;
	int r = 0;

	argc--, argv++;
	if (argc >= 2 && strcmp (argv[0], "--state-dir") == 0) {
		state = xstrdup (argv[1]);
		argc -= 2, argv += 2;
	} else if (argc >= 1 && strncmp (argv[0], "--state-dir=", 12) == 0) {
		state = xstrdup (argv[0] + 12);
		argc--, argv++;
	}
	if (!state)
		state = ab_default_state_dir ();
	if (argc < 1 || strcmp (argv[0], "--help") == 0 || strcmp (argv[0], "-h") == 0) {
		fputs (image_usage, argc < 1 ? stderr : stdout);
		return argc < 1 ? AB_EXIT_FAILED : 0;
	}
	cmd = argv[0];
	if (strcmp (cmd, "pull") == 0)
		r = cmd_pull (state, argc, argv, &err);
	else if (strcmp (cmd, "import") == 0) {
		cleanup_free char *dg = NULL;
		if (argc < 2 || argc > 3)
			r = ab_error (&err, 0, AB_E_INVALID,
			              "usage: agentbox image import SRC [NAME]");
		else if ((r = ab_image_import (state, argv[1], argc > 2 ? argv[2] : NULL, &dg,
		                               &err))
		         == 0)
			printf ("%s\n", dg);
	} else if (strcmp (cmd, "ls") == 0)
		r = cmd_ls (state, argc, argv, &err);
	else if (strcmp (cmd, "inspect") == 0)
		r = argc != 2
		            ? ab_error (&err, 0, AB_E_INVALID, "usage: agentbox image inspect NAME")
		            : print_json (ab_image_inspect (state, argv[1], &err));
	else if (strcmp (cmd, "rm") == 0) {
		if (argc < 2)
			r = ab_error (&err, 0, AB_E_INVALID, "usage: agentbox image rm NAME...");
		for (int i = 1; i < argc && r == 0; i++)
			r = ab_image_remove (state, argv[i], &err);
	} else if (strcmp (cmd, "prune") == 0) {
		uint64_t freed = 0;
		if ((r = ab_image_prune (state, &freed, &err)) == 0)
			printf ("freed %.1f MiB\n", (double)freed / 1048576.0);
	} else
		r = ab_error (&err, 0, AB_E_INVALID, "image: unknown command '%s'", cmd);
	if (r < 0) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	return 0;
}
