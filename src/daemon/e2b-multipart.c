/* multipart/form-data (RFC 7578), as E2B's POST /files sends it, read as
 * a stream (e2b-wire.h): at most AB_MP_BUF bytes of the body are held,
 * a part's bytes are handed on as soon as they cannot be the start of
 * its delimiter, and a part head longer than AB_MP_HEAD_MAX is refused. */
#include "daemon/e2b-wire.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

static int
mp_fill (struct ab_mp_s *m, ab_error_t *err)
{
	ssize_t n;

	if (m->off > 0) {
		memmove (m->buf, m->buf + m->off, m->len - m->off);
		m->len -= m->off;
		m->off = 0;
	}
	if (m->eof || m->len == AB_MP_BUF)
		return 0;
	n = m->read (m->ctx, m->buf + m->len, AB_MP_BUF - m->len, err);
	if (n < 0)
		return -1;
	if ((size_t)n > AB_MP_BUF - m->len)
		return ab_error (err, 0, AB_E_INTERNAL, "a multipart read returned too much");
	if (n == 0)
		m->eof = true;
	m->len += (size_t)n;
	return 0;
}

ssize_t
ab_mp_part_read (void *ctx, void *out, size_t cap, ab_error_t *err)
{
	struct ab_mp_s *m = ctx;

	for (;;) {
		size_t have = m->len - m->off, safe;
		const uint8_t *d;

		if (m->part_done)
			return 0;
		d = memmem (m->buf + m->off, have, m->delim, m->dlen);
		if (d) {
			size_t n = (size_t)(d - (m->buf + m->off));
			if (n == 0) {
				m->off += m->dlen;
				m->part_done = true;
				return 0;
			}
			n = n < cap ? n : cap;
			memcpy (out, m->buf + m->off, n);
			m->off += n;
			return (ssize_t)n;
		}
		/* Bytes that cannot start a delimiter can go now. */
		safe = have >= m->dlen ? have - (m->dlen - 1) : 0;
		if (safe > 0) {
			size_t n = safe < cap ? safe : cap;
			memcpy (out, m->buf + m->off, n);
			m->off += n;
			return (ssize_t)n;
		}
		if (m->eof)
			return ab_error (err, 0, AB_E_INVALID, "multipart body ends inside a part");
		if (mp_fill (m, err) < 0)
			return -1;
	}
}

/* At least n bytes buffered (or the body ended). */
static int
mp_need (struct ab_mp_s *m, size_t n, ab_error_t *err)
{
	while (m->len - m->off < n && !m->eof)
		if (mp_fill (m, err) < 0)
			return -1;
	return 0;
}

/* After a delimiter: "--" ends the body, CRLF starts a part.  1 = a part. */
static int
mp_after_delim (struct ab_mp_s *m, ab_error_t *err)
{
	if (mp_need (m, 2, err) < 0)
		return -1;
	if (m->len - m->off >= 2 && memcmp (m->buf + m->off, "--", 2) == 0)
		return 0;
	if (m->len - m->off >= 2 && memcmp (m->buf + m->off, "\r\n", 2) == 0) {
		m->off += 2;
		return 1;
	}
	return ab_error (err, 0, AB_E_INVALID, "malformed multipart delimiter");
}

/* The part's head; *filename and *is_file from Content-Disposition. */
static int
mp_part_head (struct ab_mp_s *m, char **filename, bool *is_file, ab_error_t *err)
{
	const uint8_t *end;
	cleanup_free char *head = NULL;
	char *fn, *q;

	for (;;) {
		end = memmem (m->buf + m->off, m->len - m->off, "\r\n\r\n", 4);
		if (end)
			break;
		/* No end within AB_MP_HEAD_MAX bytes and its CRLF CRLF: too long,
		 * whatever the reads' sizes were. */
		if (m->len - m->off >= AB_MP_HEAD_MAX + 4 || m->eof)
			return ab_error (err, 0, AB_E_INVALID, "malformed multipart part head");
		if (mp_fill (m, err) < 0)
			return -1;
	}
	if ((size_t)(end - (m->buf + m->off)) > AB_MP_HEAD_MAX)
		return ab_error (err, 0, AB_E_INVALID, "malformed multipart part head");
	head = xstrndup ((const char *)m->buf + m->off, (size_t)(end - (m->buf + m->off)));
	m->off = (size_t)(end - m->buf) + 4;
	m->part_done = false;
	*is_file = strcasestr (head, "name=\"file\"") != NULL;
	fn = strcasestr (head, "filename=\"");
	if (fn && (q = strchr (fn + 10, '"')))
		*filename = xstrndup (fn + 10, (size_t)(q - fn - 10));
	return 0;
}

int
ab_mp_next_part (struct ab_mp_s *m, char **filename, bool *is_file, ab_error_t *err)
{
	char skip[4096];
	ssize_t n;
	int more;

	*filename = NULL;
	*is_file = false;
	while ((n = ab_mp_part_read (m, skip, sizeof skip, err)) > 0)
		;
	if (n < 0 || (more = mp_after_delim (m, err)) < 0)
		return -1;
	if (more == 0)
		return 0;
	return mp_part_head (m, filename, is_file, err) < 0 ? -1 : 1;
}

int
ab_mp_begin (struct ab_mp_s *m, const char *content_type, size_t ct_len, ab_error_t *err)
{
	cleanup_free char *v = content_type ? xstrndup (content_type, ct_len) : NULL;
	char *b = v ? strcasestr (v, "boundary=") : NULL;
	size_t blen;

	m->buf = NULL;
	m->off = m->len = 0;
	m->eof = false;
	if (!b)
		return ab_error (err, 0, AB_E_INVALID, "multipart/form-data needs a boundary");
	b += 9;
	if (*b == '"')
		b++;
	blen = strcspn (b, "\";, ");
	if (blen == 0 || blen > AB_MP_BOUNDARY_MAX)
		return ab_error (err, 0, AB_E_INVALID, "a bad multipart boundary");
	m->dlen = (size_t)snprintf (m->delim, sizeof m->delim, "\r\n--%.*s", (int)blen, b);
	m->buf = xmalloc (AB_MP_BUF);
	/* The first delimiter has no CRLF before it. */
	if (mp_need (m, m->dlen - 2, err) < 0)
		return -1;
	if (m->len - m->off < m->dlen - 2 || memcmp (m->buf, m->delim + 2, m->dlen - 2) != 0)
		return ab_error (err, 0, AB_E_INVALID, "the body does not start with the boundary");
	m->off = m->dlen - 2;
	m->part_done = true; /* right after a delimiter */
	return 0;
}

void
ab_mp_free (struct ab_mp_s *m)
{
	free (m->buf);
	m->buf = NULL;
}
