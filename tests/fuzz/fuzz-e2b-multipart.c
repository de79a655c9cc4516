/* libFuzzer harness for the E2B front end's multipart/form-data reader
 * (src/daemon/e2b-multipart.c): what any client with a sandbox's token
 * sends to POST /files.  The body is handed over in reads whose sizes the
 * input picks (a client chooses its TCP segments).  Besides "no crash, no
 * sanitizer report, no leak", it checks:
 *   - a refusal is an error with a kind and a message;
 *   - every part's bytes come from the body and never hold its delimiter;
 *   - the parts' bytes together are fewer than the body's;
 *   - the same body read in one piece gives the same parts, the same
 *     bytes and the same verdict (chunking cannot change what is written).
 * Input: byte 0 = read size (1..256), then the Content-Type value up to
 * the first '\n', then the body.
 *
 * Built and run by `make fuzz` on a copy of tests/fuzz/corpus/e2b-multipart. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/e2b-wire.h"

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

struct feed_s {
	const uint8_t *p;
	size_t len, off, chunk;
};

static ssize_t
feed (void *ctx, void *buf, size_t cap, ab_error_t *err)
{
	struct feed_s *f = ctx;
	size_t n = f->len - f->off;

	(void)err;
	if (n > f->chunk)
		n = f->chunk;
	if (n > cap)
		n = cap;
	memcpy (buf, f->p + f->off, n);
	f->off += n;
	return (ssize_t)n;
}

struct result_s {
	int verdict; /* 0 = the closing delimiter reached, -1 = refused */
	size_t parts, files, bytes;
	uint64_t hash;
};

static void
run (const char *ct, size_t ct_len, const uint8_t *body, size_t len, size_t chunk,
     struct result_s *res)
{
	struct feed_s f = { body, len, 0, chunk };
	struct ab_mp_s m = { .read = feed, .ctx = &f };
	ab_error_t err = AB_ERROR_INIT;
	uint8_t buf[300];
	int more;

	memset (res, 0, sizeof *res);
	res->hash = 1469598103934665603ULL;
	if (ab_mp_begin (&m, ct, ct_len, &err) < 0)
		goto refused;
	for (;;) {
		char *fn = NULL;
		bool is_file;
		ssize_t n;

		if ((more = ab_mp_next_part (&m, &fn, &is_file, &err)) < 0)
			goto refused;
		free (fn);
		if (more == 0)
			break;
		res->parts++;
		if (!is_file)
			continue;
		res->files++;
		while ((n = ab_mp_part_read (&m, buf, sizeof buf, &err)) > 0) {
			if (memmem (buf, (size_t)n, m.delim, m.dlen))
				abort ();
			res->bytes += (size_t)n;
			for (ssize_t i = 0; i < n; i++)
				res->hash = (res->hash ^ buf[i]) * 1099511628211ULL;
		}
		if (n < 0)
			goto refused;
	}
	ab_mp_free (&m);
	if (res->bytes >= len)
		abort ();
	return;
refused:
	if (err.kind == AB_E_NONE || err.msg[0] == '\0')
		abort ();
	ab_mp_free (&m);
	res->verdict = -1;
}

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	const uint8_t *nl;
	struct result_s a, b;
	size_t chunk;

	if (size < 2)
		return 0;
	chunk = (size_t)data[0] + 1;
	nl = memchr (data + 1, '\n', size - 1);
	if (!nl)
		return 0;
	run ((const char *)data + 1, (size_t)(nl - data - 1), nl + 1,
	     size - (size_t)(nl + 1 - data), chunk, &a);
	run ((const char *)data + 1, (size_t)(nl - data - 1), nl + 1,
	     size - (size_t)(nl + 1 - data), AB_MP_BUF, &b);
	if (a.verdict != b.verdict
	    || (a.verdict == 0 && (a.parts != b.parts || a.bytes != b.bytes || a.hash != b.hash)))
		abort ();
	return 0;
}
