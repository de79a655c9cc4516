/* A growable byte buffer for socket I/O: bytes live in data[start, end).
 * Allocated lazily and released when empty, so an idle connection costs no
 * buffer memory (10,000 idle clients must fit in a few MiB). */
#ifndef AB_NET_IOBUF_H
#define AB_NET_IOBUF_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

struct ab_iobuf_s {
	char *data;
	size_t cap;
	size_t start;
	size_t end;
	/* The bytes may be secret (a head with injected credentials): growing
	 * the buffer wipes the old block instead of leaving a copy in freed
	 * memory (realloc would). */
	bool secret;
};

static inline size_t
ab_iobuf_len (const struct ab_iobuf_s *b)
{
	return b->end - b->start;
}

/* Never NULL: a buffer not allocated yet (length 0) points at "" (NULL +
 * 0 would be undefined behaviour). */
static inline const char *
ab_iobuf_peek (const struct ab_iobuf_s *b)
{
	return b->data ? b->data + b->start : "";
}

/* Drop n bytes from the front; an emptied buffer restarts at 0. */
void ab_iobuf_consume (struct ab_iobuf_s *b, size_t n);
/* Make room for at least `want` more bytes without exceeding `max_cap`
 * (moving the live bytes to the front first); returns the free space,
 * which may be less than `want` (0 when the buffer is at max_cap and full). */
size_t ab_iobuf_reserve (struct ab_iobuf_s *b, size_t want, size_t max_cap);
void ab_iobuf_append (struct ab_iobuf_s *b, const void *p, size_t n);
void ab_iobuf_printf (struct ab_iobuf_s *b, const char *fmt, ...)
        __attribute__ ((format (printf, 2, 3)));
/* Free the memory if the buffer is empty. */
void ab_iobuf_trim (struct ab_iobuf_s *b);
/* A secret buffer's bytes are overwritten first. */
void ab_iobuf_free (struct ab_iobuf_s *b);
/* Free after overwriting every byte the buffer held: for heads that may
 * carry secrets (the credential proxy's injected fields). */
void ab_iobuf_wipe (struct ab_iobuf_s *b);

/* read(2) into the buffer (at most max_cap bytes held); returns what read
 * returned (-1 with errno, EAGAIN included). */
ssize_t ab_iobuf_read (struct ab_iobuf_s *b, int fd, size_t chunk, size_t max_cap);

#endif
