/* Command-line pieces shared by the sidecars: see listen-arg.h. */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "cli/listen-arg.h"

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
	hl = (size_t)(colon - text);
	if (hl >= 2 && text[0] == '[' && text[hl - 1] == ']') {
		text++;
		hl -= 2;
	}
	*host = hl ? xstrndup (text, hl) : xstrdup (default_host);
	*port = xstrdup (colon + 1);
	return 0;
}
