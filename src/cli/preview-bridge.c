/* `agentbox preview-bridge <command>` and its multi-call twin
 * `t3-preview-bridge <command>`: previews of servers running in a sandbox
 * (docs/preview-bridge.md).  The work lives in src/net/preview-*.c; this
 * file reads the command line and stdio. */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/listen-arg.h"
#include "net/iobuf.h"
#include "net/preview-buf.h"
#include "net/preview-cdp.h"
#include "net/preview-doc.h"
#include "net/preview-framed.h"
#include "net/preview-request.h"
#include "net/preview-serve.h"
#include "net/preview-signal-client.h"

static const char usage[] = "<serve|request|websocket-framed|cdp-automation|signal> "
                            "[--stdio] [--listen host:port] [--signaling-relay]\n";

#define CDP_DOC_MAX (1u << 20)

struct opts_s {
	const char *listen;
	const char *endpoint;
};

#define bad_usage(progname, ...) ab_cli_usage_error (progname, usage, 1, __VA_ARGS__)

static int
parse_opts (int argc, char **argv, struct opts_s *o, const char *progname)
{
	for (int i = 2; i < argc; i++) {
		const char *v;

		/* Accepted for compatibility with the sidecar's callers: the
		 * one-shot commands always use stdio and serve always relays
		 * signalling. */
		if (strcmp (argv[i], "--stdio") == 0 || strcmp (argv[i], "--signaling-relay") == 0)
			continue;
		if (ab_cli_flag (argc, argv, &i, "--listen", &v))
			o->listen = v;
		else if (ab_cli_flag (argc, argv, &i, "--endpoint", &v))
			o->endpoint = v;
		else
			return bad_usage (progname, "unknown option '%s'", argv[i]);
		if (v == NULL)
			return bad_usage (progname, "%s needs a value", argv[i]);
	}
	return 0;
}

static int
print_json (json_t *doc)
{
	cleanup_free char *text = doc ? json_dumps (doc, JSON_COMPACT) : NULL;

	json_decref (doc);
	if (text == NULL)
		return 1;
	if (fputs (text, stdout) == EOF || fputc ('\n', stdout) == EOF || fflush (stdout) == EOF)
		return 1;
	return 0;
}

static int
cmd_serve (const struct opts_s *o, const char *progname)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_preview_serve_config_s cfg;
	ab_preview_server_t *srv = NULL;
	cleanup_free char *host = NULL;
	cleanup_free char *port = NULL;
	char bound[128];
	int rc = 1;

	/* An empty host means 0.0.0.0. */
	if (ab_cli_split_listen (o->listen ? o->listen : "0.0.0.0:8080", "0.0.0.0", &host, &port)
	    < 0)
		return bad_usage (progname, "--listen wants HOST:PORT, not '%s'", o->listen);
	ab_preview_serve_config_default (&cfg);
	/* Process-wide, so here at the program's edge (preview-serve.h). */
	signal (SIGPIPE, SIG_IGN);
	srv = ab_preview_server_new (&cfg, &err);
	if (srv != NULL
	    && ab_preview_server_listen (srv, host, port, bound, sizeof bound, &err) == 0) {
		fprintf (stderr, "%s listening on %s\n", progname, bound);
		if (ab_preview_server_run (srv, &err) == 0)
			rc = 0;
	}
	if (rc != 0)
		fprintf (stderr, "%s: %s\n", progname, err.msg);
	ab_preview_server_free (srv);
	return rc;
}

static int
cmd_request (void)
{
	struct ab_iobuf_s in = { 0 };
	int r = ab_preview_read_all (STDIN_FILENO, AB_PREVIEW_REQUEST_DOC_MAX, &in);
	json_t *doc =
	        ab_preview_request_run (r == 0 ? ab_preview_bytes (&in) : NULL, ab_iobuf_len (&in));

	ab_iobuf_free (&in);
	return print_json (doc);
}

static int
cmd_cdp (void)
{
	struct ab_iobuf_s in = { 0 };
	int r = ab_preview_read_all (STDIN_FILENO, CDP_DOC_MAX, &in);
	json_t *doc = ab_preview_cdp_answer (r == 0 ? ab_preview_bytes (&in) : NULL,
	                                     ab_iobuf_len (&in), "/tmp");

	ab_iobuf_free (&in);
	return print_json (doc);
}

static int
cmd_websocket_framed (const char *progname)
{
	ab_error_t err = AB_ERROR_INIT;

	if (ab_preview_framed_run (STDIN_FILENO, STDOUT_FILENO, &err) < 0) {
		fprintf (stderr, "%s: websocket-framed: %s\n", progname, err.msg);
		return 1;
	}
	return 0;
}

static int
cmd_signal (const struct opts_s *o, const char *progname)
{
	ab_error_t err = AB_ERROR_INIT;
	const char *url = o->endpoint;
	struct ab_preview_endpoint_s ep;
	struct ab_iobuf_s in = { 0 };
	cleanup_free char *line = NULL;

	if (url == NULL || *url == '\0')
		url = getenv (AB_PREVIEW_SIGNAL_ENDPOINT_ENV);
	if (url == NULL || *url == '\0')
		url = AB_PREVIEW_SIGNAL_DEFAULT_ENDPOINT;
	if (ab_preview_endpoint_parse (url, &ep, &err) < 0)
		return bad_usage (progname, "%s", err.msg);
	if (ab_preview_read_all (STDIN_FILENO, AB_PREVIEW_SIGNAL_DOC_MAX, &in) < 0) {
		ab_preview_endpoint_free (&ep);
		ab_iobuf_free (&in);
		fprintf (stderr, "%s: signal: cannot read the document: %s\n", progname,
		         errno == EFBIG ? "larger than 8 MiB" : strerror (errno));
		return 1;
	}
	line = ab_preview_signal_send (&ep, ab_preview_bytes (&in), ab_iobuf_len (&in),
	                               AB_PREVIEW_SIGNAL_TIMEOUT_MS);
	ab_preview_endpoint_free (&ep);
	ab_iobuf_free (&in);
	if (puts (line) == EOF || fflush (stdout) == EOF)
		return 1;
	return 0;
}

int
ab_cmd_preview_bridge (int argc, char **argv, const char *progname)
{
	struct opts_s o = { 0 };
	const char *cmd = argc >= 2 ? argv[1] : NULL;
	int rc;

	/* --help anywhere wins, and nothing else happens. */
	for (int i = 1; i < argc; i++)
		if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0) {
			printf ("usage: %s %s", progname, usage);
			return 0;
		}
	if (cmd == NULL)
		return bad_usage (progname, "expected a command");
	if ((rc = parse_opts (argc, argv, &o, progname)) != 0)
		return rc;
	if (strcmp (cmd, "serve") == 0)
		return cmd_serve (&o, progname);
	if (strcmp (cmd, "request") == 0)
		return cmd_request ();
	if (strcmp (cmd, "websocket-framed") == 0)
		return cmd_websocket_framed (progname);
	if (strcmp (cmd, "cdp-automation") == 0)
		return cmd_cdp ();
	if (strcmp (cmd, "signal") == 0)
		return cmd_signal (&o, progname);
	return bad_usage (progname, "unknown command '%s'", cmd);
}
