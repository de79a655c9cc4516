/* Command-line pieces shared by the sidecars: see listen-arg.h. */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "cli/listen-arg.h"
#include "policy/hostname.h"

bool
ab_cli_flag (int argc, char **argv, int *i, const char *flag, const char **value)
{
	size_t n = strlen (flag);

	if (strncmp (argv[*i], flag, n) != 0 || (argv[*i][n] != '\0' && argv[*i][n] != '='))
		return false;
	if (argv[*i][n] == '=')
		*value = argv[*i] + n + 1;
	else if (*i + 1 < argc)
		*value = argv[++*i];
	else
		*value = NULL;
	return true;
}

int
ab_cli_usage_error (const char *progname, const char *usage, int rc, const char *fmt, ...)
{
	va_list ap;

	fprintf (stderr, "%s: ", progname);
	va_start (ap, fmt);
	vfprintf (stderr, fmt, ap);
	va_end (ap);
	fputc ('\n', stderr);
	fprintf (stderr, "usage: %s %s", progname, usage);
	return rc;
}

int
ab_cli_split_listen (const char *text, const char *default_host, char **host, char **port)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_hostport_s hp;

	if (ab_listen_parse (text, default_host, &hp, &err) < 0)
		return -1;
	*host = xstrdup (hp.host);
	*port = xasprintf ("%u", (unsigned)hp.port);
	return 0;
}

static void (*stop_fn) (void *arg);
static void *stop_arg;

static void
on_stop_signal (int sig)
{
	(void)sig;
	stop_fn (stop_arg);
}

void
ab_cli_stop_on_signals (void (*stop) (void *arg), void *arg)
{
	struct sigaction sa = { .sa_handler = on_stop_signal, .sa_flags = SA_RESTART };

	stop_fn = stop;
	stop_arg = arg;
	sigemptyset (&sa.sa_mask);
	sigaction (SIGINT, &sa, NULL);
	sigaction (SIGTERM, &sa, NULL);
}
