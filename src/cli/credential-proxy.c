/* `agentbox credential-proxy serve` and its multi-call twin
 * `t3-credential-proxy serve`: the credential proxy as a standalone
 * sidecar (docs/credential-proxy.md). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "net/credential-proxy.h"

#define EXIT_USAGE 2
#define DEFAULT_LISTEN "127.0.0.1:8288"
#define DEFAULT_CONFIG "/tmp/credential.json"

static const char usage_fmt[] = "usage: %s serve [--listen host:port] [--config /tmp/credential.json]\n";

static int bad_usage (const char *progname, const char *fmt, ...)
	__attribute__ ((format (printf, 2, 3)));

static int
bad_usage (const char *progname, const char *fmt, ...)
{
	va_list ap;

	fprintf (stderr, "%s: ", progname);
	va_start (ap, fmt);
	vfprintf (stderr, fmt, ap);
	va_end (ap);
	fputc ('\n', stderr);
	fprintf (stderr, usage_fmt, progname);
	return EXIT_USAGE;
}

/* "--flag value" or "--flag=value": the value, NULL when absent; *i moves
 * past a separate value. */
static const char *
flag_value (int argc, char **argv, int *i, const char *flag, bool *matched)
{
	size_t n = strlen (flag);

	*matched = strncmp (argv[*i], flag, n) == 0 && (argv[*i][n] == '\0' || argv[*i][n] == '=');
	if (!*matched)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (*i + 1 >= argc)
		return NULL;
	return argv[++*i];
}

/* "HOST:PORT", split at the last ':' so "[::1]:8288" works; brackets are
 * dropped; an empty host means 127.0.0.1 (this proxy hands out secrets:
 * loopback unless asked otherwise). */
static int
split_listen (const char *text, char **host, char **port)
{
	const char *colon = strrchr (text, ':');
	size_t hl;
	unsigned long pv;
	char *end;

	if (colon == NULL || colon[1] < '0' || colon[1] > '9')
		return -1;
	errno = 0;
	pv = strtoul (colon + 1, &end, 10);
	if (*end != '\0' || errno != 0 || pv > 65535)
		return -1;
	hl = (size_t) (colon - text);
	if (hl >= 2 && text[0] == '[' && text[hl - 1] == ']') {
		text++;
		hl -= 2;
	}
	*host = hl ? xstrndup (text, hl) : xstrdup ("127.0.0.1");
	*port = xstrdup (colon + 1);
	return 0;
}

static int
serve (const char *listen, const char *config, const char *progname)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_cred_proxy_config_s cfg = {.config_path = config, .log = stderr};
	ab_cred_proxy_t *proxy = NULL;
	cleanup_free char *host = NULL;
	cleanup_free char *port = NULL;
	char bound[128];
	int rc = 1;

	if (split_listen (listen, &host, &port) < 0)
		return bad_usage (progname, "--listen wants HOST:PORT, not '%s'", listen);
	ab_cred_limits_default (&cfg.limits);
	proxy = ab_cred_proxy_new (NULL, &cfg, &err);
	if (proxy == NULL || ab_cred_proxy_listen (proxy, host, port, bound, sizeof bound, &err) < 0)
		goto out;
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
			printf (usage_fmt, progname);
			return 0;
		}
	if (argc < 2 || strcmp (argv[1], "serve") != 0)
		return bad_usage (progname, "expected the 'serve' command");
	for (int i = 2; i < argc; i++) {
		bool matched;
		const char *v = flag_value (argc, argv, &i, "--listen", &matched);
		if (matched) {
			if (v == NULL || v[0] == '\0')
				return bad_usage (progname, "--listen needs a value");
			listen = v;
			continue;
		}
		v = flag_value (argc, argv, &i, "--config", &matched);
		if (matched) {
			if (v == NULL || v[0] == '\0')
				return bad_usage (progname, "--config needs a value");
			config = v;
			continue;
		}
		return bad_usage (progname, "unknown option '%s'", argv[i]);
	}
	return serve (listen, config, progname);
}
