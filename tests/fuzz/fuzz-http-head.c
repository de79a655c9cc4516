/* libFuzzer harness for the egress proxy's HTTP/1.1 head parser and chunked
 * decoder (src/net/http-head.c).  Besides "no crash, no sanitizer report",
 * it checks properties the proxy's framing relies on:
 *   - finding the end of a head gives the same answer whole and fed one
 *     byte at a time (a client choosing its TCP segments cannot change it);
 *   - an accepted head never has both Content-Length and
 *     Transfer-Encoding, and its fields lie inside the head;
 *   - the chunked decoder consumes the same bytes whole and bytewise;
 *   - an accepted absolute URI's authority holds no '@', '/', '?' or '#'.
 * Build with clang-14 -fsanitize=fuzzer,address,undefined together with
 * src/net/http-head.c; run with -max_total_time=60 on a copy of
 * tests/fuzz/corpus/http-head. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "net/http-head.h"

#define MAX_FIELDS 32

static const struct ab_http_limits_s limits = { .max_head = 4096, .max_fields = MAX_FIELDS };

static void
check_head (const char *buf, size_t len, bool request)
{
	struct ab_http_field_s fields[MAX_FIELDS];
	struct ab_http_head_s h = { .fields = fields };
	struct ab_http_error_s e;
	int r = request ? ab_http_parse_request (buf, len, &limits, &h, &e)
	                : ab_http_parse_response (buf, len, &limits, false, &h, &e);

	if (r < 0) {
		if (e.reason == NULL || e.status < 400)
			abort ();
		return;
	}
	if (h.has_content_length && h.has_transfer_encoding)
		abort ();
	for (unsigned i = 0; i < h.n_fields; i++) {
		const struct ab_http_field_s *f = &fields[i];
		if (f->name < buf || f->name + f->name_len > buf + len || f->value < buf
		    || f->value + f->value_len > buf + len || f->name_len == 0)
			abort ();
		if (memchr (f->value, '\r', f->value_len) || memchr (f->value, '\n', f->value_len))
			abort ();
	}
	if (request) {
		struct ab_http_uri_s u;
		ab_http_uri_kind k = ab_http_split_uri (h.target, h.target_len, &u);
		if (k == AB_URI_HTTP || k == AB_URI_HTTPS || k == AB_URI_OTHER_SCHEME) {
			if (u.authority_len == 0 || memchr (u.authority, '@', u.authority_len)
			    || memchr (u.authority, '/', u.authority_len)
			    || memchr (u.authority, '?', u.authority_len)
			    || memchr (u.authority, '#', u.authority_len))
				abort ();
		}
	}
}

static void
check_head_end (const char *buf, size_t len)
{
	struct ab_http_error_s e;
	size_t scan = 0, scan2 = 0;
	ssize_t whole = ab_http_head_end (buf, len, &scan, &limits, &e);
	ssize_t step = 0;

	for (size_t i = 1; i <= len && step == 0; i++)
		step = ab_http_head_end (buf, i, &scan2, &limits, &e);
	if (whole != step)
		abort ();
	if (whole > 0) {
		check_head (buf, (size_t)whole, true);
		check_head (buf, (size_t)whole, false);
	}
}

static void
check_chunked (const char *buf, size_t len)
{
	struct ab_http_chunked_s a, b;
	struct ab_http_error_s e;
	ssize_t whole, total = 0;

	ab_http_chunked_init (&a);
	whole = ab_http_chunked_advance (&a, buf, len, &e);
	if (whole > (ssize_t)len)
		abort ();
	ab_http_chunked_init (&b);
	for (size_t i = 0; i < len && !b.done; i++) {
		ssize_t n = ab_http_chunked_advance (&b, buf + i, 1, &e);
		if (n < 0) {
			total = -1;
			break;
		}
		total += n;
	}
	if (whole != total || (whole >= 0 && a.done != b.done))
		abort ();
}

int LLVMFuzzerTestOneInput (const uint8_t *data, size_t size);

int
LLVMFuzzerTestOneInput (const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data;

	if (size > 8192)
		return 0;
	check_head_end (buf, size);
	check_chunked (buf, size);
	return 0;
}
