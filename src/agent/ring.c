/* Retained output: the last AB_RING_MAX bytes of a process's stream, so a
 * client that reconnects (PROC_ATTACH) can read what it missed.  Grows by
 * doubling up to the cap: a process that prints a line costs a few bytes,
 * not a megabyte. */
#include <stdlib.h>
#include <string.h>

#include "agent/service.h"
#include "base/xalloc.h"

/* Copy n bytes to absolute offset off of a buffer of size cap, wrapping. */
static void
put (uint8_t *buf, size_t cap, uint64_t off, const uint8_t *p, size_t n)
{
	while (n > 0) {
		size_t at = (size_t)(off % cap);
		size_t k = cap - at < n ? cap - at : n;
		memcpy (buf + at, p, k);
		off += k;
		p += k;
		n -= k;
	}
}

static void
grow (struct ab_ring_s *r, size_t need)
{
	size_t cap = r->cap ? r->cap : 4096;
	uint8_t *nb;

	while (cap < need && cap < AB_RING_MAX)
		cap *= 2;
	if (cap > AB_RING_MAX)
		cap = AB_RING_MAX;
	if (cap <= r->cap)
		return;
	/* The bytes [start, end) move to their slots in the larger buffer. */
	nb = xmalloc (cap);
	for (uint64_t off = r->start; off < r->end;) {
		const uint8_t *p = NULL;
		size_t n = ab_ring_peek (r, off, &p);
		if (n == 0)
			break;
		put (nb, cap, off, p, n);
		off += n;
	}
	free (r->buf);
	r->buf = nb;
	r->cap = cap;
}

void
ab_ring_append (struct ab_ring_s *r, const uint8_t *p, size_t n)
{
	if (n >= AB_RING_MAX) {
		p += n - AB_RING_MAX;
		r->start = r->end + n - AB_RING_MAX;
		r->end = r->start;
		n = AB_RING_MAX;
	}
	if (r->end - r->start + n > r->cap)
		grow (r, (size_t)(r->end - r->start) + n);
	put (r->buf, r->cap, r->end, p, n);
	r->end += n;
	if (r->end - r->start > r->cap)
		r->start = r->end - r->cap;
}

size_t
ab_ring_peek (const struct ab_ring_s *r, uint64_t off, const uint8_t **p)
{
	size_t at, n;

	if (off < r->start || off >= r->end || !r->cap)
		return 0;
	at = (size_t)(off % r->cap);
	n = r->cap - at;
	if (n > r->end - off)
		n = (size_t)(r->end - off);
	*p = r->buf + at;
	return n;
}

void
ab_ring_free (struct ab_ring_s *r)
{
	free (r->buf);
	memset (r, 0, sizeof *r);
}
