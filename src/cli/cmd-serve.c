/* `agentbox serve`: run the daemon. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/fsutil.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "daemon/daemon.h"
#include "spec/spec.h"

enum {
	OPT_SOCKET = 256,
	OPT_STATE_DIR,
	OPT_LISTEN,
	OPT_TOKEN_FILE,
	OPT_LISTEN_ANY,
	OPT_MAX_SANDBOXES,
	OPT_MAX_EXECS,
	OPT_MAX_CONNECTIONS,
	OPT_MAX_BODY,
	OPT_MAX_UPLOAD,
	OPT_OUTPUT_CAP,
	OPT_IDLE_TIMEOUT,
	OPT_E2B_LISTEN,
	OPT_E2B_KEY_FILE,
	OPT_E2B_GENERATE_KEY,
	OPT_E2B_DOMAIN,
	OPT_E2B_TEMPLATE,
	OPT_POOL_FILE,
};

static const struct option serve_options[] = {
	{ "socket", required_argument, NULL, OPT_SOCKET },
	{ "state-dir", required_argument, NULL, OPT_STATE_DIR },
	{ "listen", required_argument, NULL, OPT_LISTEN },
	{ "token-file", required_argument, NULL, OPT_TOKEN_FILE },
	{ "listen-non-loopback", no_argument, NULL, OPT_LISTEN_ANY },
	{ "max-sandboxes", required_argument, NULL, OPT_MAX_SANDBOXES },
	{ "max-execs", required_argument, NULL, OPT_MAX_EXECS },
	{ "max-connections", required_argument, NULL, OPT_MAX_CONNECTIONS },
	{ "max-body", required_argument, NULL, OPT_MAX_BODY },
	{ "max-upload", required_argument, NULL, OPT_MAX_UPLOAD },
	{ "output-cap", required_argument, NULL, OPT_OUTPUT_CAP },
	{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
	{ "e2b-listen", required_argument, NULL, OPT_E2B_LISTEN },
	{ "e2b-api-key-file", required_argument, NULL, OPT_E2B_KEY_FILE },
	{ "e2b-generate-key", no_argument, NULL, OPT_E2B_GENERATE_KEY },
	{ "e2b-domain", required_argument, NULL, OPT_E2B_DOMAIN },
	{ "e2b-template", required_argument, NULL, OPT_E2B_TEMPLATE },
	{ "pool-file", required_argument, NULL, OPT_POOL_FILE },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char serve_usage[] =
        "usage: agentbox serve [OPTIONS]\n"
        "  --socket PATH          API socket, 0600 in a 0700 directory\n"
        "                         (default /run/agentbox/agentbox.sock as root, else "
        "$XDG_RUNTIME_DIR/agentbox.sock)\n"
        "  --state-dir DIR        sandbox state (default /var/lib/agentbox as root, else "
        "$XDG_STATE_HOME/agentbox)\n"
        "  --listen 127.0.0.1:PORT  also serve TCP on a loopback address; needs --token-file\n"
        "  --token-file FILE      bearer token for --listen (at least 16 characters)\n"
        "  --listen-non-loopback  allow --listen on a non-loopback address (dangerous)\n"
        "  --max-sandboxes N (1024)  --max-execs N per sandbox (64)  --max-connections N (1024)\n"
        "  --max-body SIZE (1m)   --max-upload SIZE (8g, 0 = none)  --output-cap SIZE (1m, "
        "\"wait\": true)\n"
        "  --idle-timeout DURATION  close a keep-alive connection idle this long, or a head\n"
        "                         not complete by then (120s)\n"
        "  --e2b-listen 127.0.0.1:PORT  serve the E2B-compatible API (docs/e2b.md); needs\n"
        "                         --e2b-api-key-file\n"
        "  --e2b-api-key-file FILE  its API key (e2b_ + at least 32 hex digits)\n"
        "  --e2b-generate-key     write a new key to that file if it does not exist\n"
        "  --e2b-domain DOMAIN    domain of previews, <port>-<id>.DOMAIN (localhost)\n"
        "  --e2b-template NAME=SPEC.json | DIR  a template: a sandbox spec (repeatable)\n"

        "  --pool-file FILE       warm pools to keep ({\"pools\": [{name, spec, min_ready, "
        "max_ready}]}, docs/pools.md)\n";

static int
count (const char *arg, const char *what, unsigned *out, ab_error_t *err)
{
	uint64_t v;
	if (ab_parse_uint (arg, 1, 1000000, &v, err) < 0)
		return ab_error_wrap (err, "%s", what);
	*out = (unsigned)v;
	return 0;
}

static int
size_opt (const char *arg, const char *what, uint64_t *out, ab_error_t *err)
{
	if (strcmp (arg, "0") == 0)
		return (int)(*out = 0);
	return ab_parse_size (arg, out, err) < 0 ? ab_error_wrap (err, "%s", what) : 0;
}

static int
apply (struct ab_daemon_config_s *c, int opt, const char *arg, ab_error_t *err)
{
	uint64_t v;
	switch (opt) {
	case OPT_SOCKET:
		free (c->socket_path);
		c->socket_path = xstrdup (arg);
		return 0;
	case OPT_STATE_DIR:
		free (c->state_dir);
		c->state_dir = xstrdup (arg);
		return 0;
	case OPT_LISTEN:
		free (c->listen);
		c->listen = xstrdup (arg);
		return 0;
	case OPT_TOKEN_FILE:
		free (c->token_file);
		c->token_file = xstrdup (arg);
		return 0;
	case OPT_LISTEN_ANY: c->listen_any = true; return 0;
	case OPT_E2B_LISTEN:
		free (c->e2b_listen);
		c->e2b_listen = xstrdup (arg);
		return 0;
	case OPT_E2B_KEY_FILE:
		free (c->e2b_key_file);
		c->e2b_key_file = xstrdup (arg);
		return 0;
	case OPT_E2B_GENERATE_KEY: c->e2b_generate_key = true; return 0;
	case OPT_E2B_DOMAIN:
		free (c->e2b_domain);
		c->e2b_domain = xstrdup (arg);
		return 0;
	case OPT_E2B_TEMPLATE: ab_strv_push (&c->e2b_templates, arg); return 0;
	case OPT_POOL_FILE:
		free (c->pool_file);
		c->pool_file = xstrdup (arg);
		return 0;
	case OPT_MAX_SANDBOXES: return count (arg, "--max-sandboxes", &c->max_sandboxes, err);
	case OPT_MAX_EXECS: return count (arg, "--max-execs", &c->max_execs, err);
	case OPT_MAX_CONNECTIONS: return count (arg, "--max-connections", &c->max_connections, err);
	case OPT_MAX_UPLOAD: return size_opt (arg, "--max-upload", &c->max_upload, err);
	case OPT_IDLE_TIMEOUT:
		if (ab_parse_duration (arg, &c->idle_timeout_ms, err) < 0
		    || c->idle_timeout_ms == 0)
			return err->kind ? ab_error_wrap (err, "--idle-timeout")
			                 : ab_error (err, 0, AB_E_INVALID,
			                             "--idle-timeout must be > 0");
		return 0;
	case OPT_MAX_BODY:
		if (size_opt (arg, "--max-body", &v, err) < 0 || v == 0)
			return err->kind
			               ? -1
			               : ab_error (err, 0, AB_E_INVALID, "--max-body must be > 0");
		c->max_body = (size_t)v;
		return 0;
	default:
		if (size_opt (arg, "--output-cap", &v, err) < 0)
			return -1;
		c->output_cap = (size_t)v;
		return 0;
	}
}

int
ab_cmd_serve (int argc, char **argv)
{
	struct ab_daemon_config_s c;
	ab_error_t err = AB_ERROR_INIT;
	int opt, r = 0;

	ab_log_set_program ("agentbox serve"); /* before any thread (base/log.h) */
	ab_daemon_config_init (&c);
	opterr = 0;
	optind = 1;
	while (r == 0 && (opt = getopt_long (argc, argv, "h", serve_options, NULL)) != -1) {
		if (opt == 'h') {
			fputs (serve_usage, stdout);
			ab_daemon_config_free (&c);
			return 0;
		}
		if (opt == '?' || opt == ':')
			r = ab_error (&err, 0, AB_E_INVALID,
			              "serve: unknown option or missing value '%s' (see agentbox "
			              "serve --help)",
			              argv[optind - 1]);
		else
			r = apply (&c, opt, optarg, &err);
	}
	if (r == 0 && optind < argc)
		r = ab_error (&err, 0, AB_E_INVALID, "serve: unexpected argument '%s'",
		              argv[optind]);
	if (r == 0 && !c.socket_path)
		c.socket_path = ab_daemon_default_socket ();
	if (r == 0 && !c.state_dir && !(c.state_dir = ab_default_state_dir ()))
		r = ab_error (&err, 0, AB_E_INVALID,
		              "no --state-dir and no $XDG_STATE_HOME or $HOME");
	if (r == 0) {
		/* Process-wide, so here at the program's edge (daemon.h); the
		 * spawner gives sandboxes the default back (daemon/spawn.c). */
		signal (SIGPIPE, SIG_IGN);
		r = ab_daemon_run (&c, &err);
	}
	if (r < 0)
		ab_cli_report (&err);
	ab_daemon_config_free (&c);
	return r < 0 ? AB_EXIT_FAILED : 0;
}
