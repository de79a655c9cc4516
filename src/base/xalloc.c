#include "base/xalloc.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void __attribute__ ((noreturn)) oom (void)
{
	static const char msg[] = "agentbox: out of memory\n";
	ssize_t r = write (STDERR_FILENO, msg, sizeof msg - 1);
	(void)r;
	abort ();
}

void *
xmalloc (size_t size)
{
	void *p = malloc (size ? size : 1);
	if (!p)
		oom ();
	return p;
}

void *
xcalloc (size_t n, size_t size)
{
	void *p = calloc (n ? n : 1, size ? size : 1);
	if (!p)
		oom ();
	return p;
}

void *
xrealloc (void *p, size_t size)
{
	void *q = realloc (p, size ? size : 1);
	if (!q)
		oom ();
	return q;
}

char *
xstrdup (const char *s)
{
	char *p = strdup (s);
	if (!p)
		oom ();
	return p;
}

char *
xstrndup (const char *s, size_t n)
{
	char *p = strndup (s, n);
	if (!p)
		oom ();
	return p;
}

char *
xasprintf (const char *fmt, ...)
{
	va_list ap;
	char *p;
	int r;

	va_start (ap, fmt);
	r = vasprintf (&p, fmt, ap);
	va_end (ap);
	if (r < 0)
		oom ();
	return p;
}
