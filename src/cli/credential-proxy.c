/* `agentbox credential-proxy serve` and its multi-call twin
 * `t3-credential-proxy serve`: the credential proxy as a standalone
 * sidecar (docs/credential-proxy.md). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/listen-arg.h"
#include "net/credential-proxy.h"

#define EXIT_USAGE     2
#define DEFAULT_LISTEN "127.0.0.1:8288"
#define DEFAULT_CONFIG "/tmp/credential.json"

static const char usage[] = "serve [--listen host:port] [--config /tmp/credential.json]\n";

#define bad_usage(progname, ...) ab_cli_usage_error (progname, usage, EXIT_USAGE, __VA_ARGS__)

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
	ab_cred_proxy_stop (proxy);
}

static int
serve (const char *listen, const char *config, const char *progname)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cred_proxy_config_s cfg = { .config_path = config, .log = stderr };
	ab_cred_proxy_t *proxy = NULL;
	cleanup_free char *host = NULL;
	cleanup_free char *port = NULL;
	char bound[128];
	int rc = 1;

	/* This proxy hands out secrets: loopback unless asked otherwise. */
	if (ab_cli_split_listen (listen, "127.0.0.1", &host, &port) < 0)
		return bad_usage (progname, "--listen wants HOST:PORT, not '%s'", listen);
	ab_cred_limits_default (&cfg.limits);
	cfg.report = report_error;
	/* Configuration and failure lines go to stderr, often a pipe: a
	 * reader that goes away must fail those writes, not kill the proxy. */
	signal (SIGPIPE, SIG_IGN);
	proxy = ab_cred_proxy_new (NULL, &cfg, &err);
	if (proxy == NULL
	    || ab_cred_proxy_listen (proxy, host, port, bound, sizeof bound, &err) < 0)
		goto out;
	ab_cli_stop_on_signals (stop_proxy, proxy);
	fprintf (stderr, "%s listening on %s\n", progname, bound);
	fflush (stderr);
	if (ab_cred_proxy_run (proxy, &err) < 0)
		goto out;
	rc = 0;
out:
	if (rc != 0)
		fprintf (stderr, "%s: %s\n", progname, err.msg);
	ab_cred_proxy_free (proxy);
	return rc;
}

int
ab_cmd_credential_proxy (int argc, char **argv, const char *progname)
{
	const char *listen = DEFAULT_LISTEN;
	const char *config = DEFAULT_CONFIG;

	/* --help anywhere wins, and nothing else happens. */
	for (int i = 1; i < argc; i++)
		if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0) {
			printf ("usage: %s %s", progname, usage);
			return 0;
		}
	if (argc < 2 || strcmp (argv[1], "serve") != 0)
		return bad_usage (progname, "expected the 'serve' command");
	for (int i = 2; i < argc; i++) {
		const char *v;

		if (ab_cli_flag (argc, argv, &i, "--listen", &v)) {
			if (v == NULL || v[0] == '\0')
				return bad_usage (progname, "--listen needs a value");
			listen = v;
		} else if (ab_cli_flag (argc, argv, &i, "--config", &v)) {
			if (v == NULL || v[0] == '\0')
				return bad_usage (progname, "--config needs a value");
			config = v;
		} else
			return bad_usage (progname, "unknown option '%s'", argv[i]);
	}
	return serve (listen, config, progname);
}
