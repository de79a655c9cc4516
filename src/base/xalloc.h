/* Allocation that aborts on exhaustion: running out of memory is not an
 * error path in agentbox. */
#ifndef AB_BASE_XALLOC_H
#define AB_BASE_XALLOC_H

#include <stddef.h>

void *xmalloc (size_t size);
void *xcalloc (size_t n, size_t size);
void *xrealloc (void *p, size_t size);
char *xstrdup (const char *s);
char *xstrndup (const char *s, size_t n);
char *xasprintf (const char *fmt, ...) __attribute__ ((format (printf, 1, 2)));

#endif
