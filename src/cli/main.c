/* agentbox: run untrusted commands in isolated sandboxes.
 *
 * The entry users run.  It links only libc and jansson: a plain native
 * `agentbox run` (no image, egress or credential proxy, pool or service
 * path: ab_cmd_run_lean) runs here, without loading the TLS, event-loop,
 * HTTP-client and archive libraries the rest of agentbox needs; those
 * would cost the one-shot path about half its start time and most of its
 * memory (docs/performance.md).  Everything else, and every multi-call
 * name (t3-egress-proxy, agentbox-runc, ...), is the full program,
 * agentbox-full next to this file, exec'd with the same argv. */
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "base/log.h"
#include "cli/cli.h"

static int
exec_full (char **argv)
{
	char self[PATH_MAX], path[PATH_MAX + sizeof "agentbox-full"];
	ssize_t n = readlink ("/proc/self/exe", self, sizeof self - 1);
	const char *slash;

	if (n < 0) {
		fprintf (stderr, "agentbox: readlink /proc/self/exe: %s\n", strerror (errno));
		return AB_EXIT_FAILED;
	}
	self[n] = '\0';
	slash = strrchr (self, '/');
	snprintf (path, sizeof path, "%.*sagentbox-full", slash ? (int)(slash - self + 1) : 0,
	          self);
	execv (path, argv);
	fprintf (stderr, "agentbox: %s: %s (install it next to agentbox)\n", path,
	         strerror (errno));
	return AB_EXIT_FAILED;
}

int
main (int argc, char **argv)
{
	const char *name = argv[0] ? strrchr (argv[0], '/') : NULL;
	ab_error_t err = AB_ERROR_INIT;

	name = name ? name + 1 : argv[0];
	/* Only under its own name: agentbox-runc has a `run` of its own. */
	if (argc >= 2 && name && strcmp (name, "agentbox") == 0 && strcmp (argv[1], "run") == 0) {
		int code;
		if (ab_log_setup_from_env (&err) < 0) {
			ab_cli_report (&err);
			return AB_EXIT_FAILED;
		}
		code = ab_cmd_run_lean (argc - 1, argv + 1);
		if (code != AB_RUN_NOT_LEAN)
			return code;
	}
	return exec_full (argv);
}
