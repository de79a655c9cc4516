#include "net/iobuf.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/xalloc.h"

void
ab_iobuf_consume (struct ab_iobuf_s *b, size_t n)
{
	b->start += n;
	if (b->start >= b->end)
		b->start = b->end = 0;
}

size_t
ab_iobuf_reserve (struct ab_iobuf_s *b, size_t want, size_t max_cap)
{
	size_t len = ab_iobuf_len (b);
	size_t cap;

	if (b->cap - b->end >= want)
		return b->cap - b->end;
	if (b->start > 0 && b->cap - len >= want) {
		memmove (b->data, b->data + b->start, len);
		b->start = 0;
		b->end = len;
		return b->cap - b->end;
	}
	cap = b->cap ? b->cap : 1024;
	while (cap - len < want && cap < max_cap)
		cap *= 2;
	if (cap > max_cap)
		cap = max_cap > b->cap ? max_cap : b->cap;
	if (b->start > 0) {
		memmove (b->data, b->data + b->start, len);
		b->start = 0;
		b->end = len;
	}
	if (cap != b->cap && b->secret && b->data != NULL) {
		char *d = xmalloc (cap);
		memcpy (d, b->data, b->end);
		explicit_bzero (b->data, b->cap);
		free (b->data);
		b->data = d;
		b->cap = cap;
	} else if (cap != b->cap) {
		b->data = xrealloc (b->data, cap);
		b->cap = cap;
	}
	return b->cap - b->end;
}

void
ab_iobuf_append (struct ab_iobuf_s *b, const void *p, size_t n)
{
	if (n == 0)
		return; /* an empty buffer has no data pointer: NULL + 0 is UB */
	ab_iobuf_reserve (b, n, (size_t)-1 / 2);
	memcpy (b->data + b->end, p, n);
	b->end += n;
}

void
ab_iobuf_printf (struct ab_iobuf_s *b, const char *fmt, ...)
{
	va_list ap;
	size_t room;
	int n;

	/* One formatting pass when the text fits the free space (heads are
	 * written this way on every request); a second only when it did not. */
	room = ab_iobuf_reserve (b, 256, (size_t)-1 / 2);
	va_start (ap, fmt);
	n = vsnprintf (b->data + b->end, room, fmt, ap);
	va_end (ap);
	if (n < 0)
		abort ();
	if ((size_t)n >= room) {
		ab_iobuf_reserve (b, (size_t)n + 1, (size_t)-1 / 2);
		va_start (ap, fmt);
		vsnprintf (b->data + b->end, (size_t)n + 1, fmt, ap);
		va_end (ap);
	}
	b->end += (size_t)n;
}

void
ab_iobuf_trim (struct ab_iobuf_s *b)
{
	if (ab_iobuf_len (b) == 0)
		ab_iobuf_free (b);
}

void
ab_iobuf_free (struct ab_iobuf_s *b)
{
	if (b->secret && b->data != NULL)
		explicit_bzero (b->data, b->cap);
	free (b->data);
	b->data = NULL;
	b->cap = b->start = b->end = 0;
}

void
ab_iobuf_wipe (struct ab_iobuf_s *b)
{
	if (b->data && !b->secret)
		explicit_bzero (b->data, b->cap);
	ab_iobuf_free (b);
}

ssize_t
ab_iobuf_read (struct ab_iobuf_s *b, int fd, size_t chunk, size_t max_cap)
{
	size_t room = ab_iobuf_reserve (b, chunk, max_cap);
	ssize_t n;

	if (room == 0) {
		errno = ENOBUFS;
		return -1;
	}
	do
		n = read (fd, b->data + b->end, room);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		b->end += (size_t)n;
	return n;
}
