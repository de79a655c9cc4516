#include "base/base64.h"

#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

char *
ab_base64_encode (const void *src, size_t n)
{
	const uint8_t *s = src;
	char *out = xmalloc (ab_base64_len (n) + 1);
	char *o = out;
	size_t i = 0;

	for (; i + 3 <= n; i += 3) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8 | s[i + 2];
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = alphabet[(v >> 6) & 63];
		*o++ = alphabet[v & 63];
	}
	if (n - i == 1) {
		uint32_t v = (uint32_t)s[i] << 16;
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = '=';
		*o++ = '=';
	} else if (n - i == 2) {
		uint32_t v = (uint32_t)s[i] << 16 | (uint32_t)s[i + 1] << 8;
		*o++ = alphabet[v >> 18];
		*o++ = alphabet[(v >> 12) & 63];
		*o++ = alphabet[(v >> 6) & 63];
		*o++ = '=';
	}
	*o = '\0';
	return out;
}

/* 0..63, or -1 for anything outside the alphabet ('=' included). */
static int
sextet (char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

/* One quantum of four characters; the last may end in "=" or "==". */
static int
decode_quantum (const char *q, bool last, uint8_t *o, size_t *produced)
{
	int a = sextet (q[0]), b = sextet (q[1]);
	int c = sextet (q[2]), d = sextet (q[3]);

	if (a < 0 || b < 0)
		return -1;
	if (c < 0 || d < 0) {
		if (!last || q[3] != '=')
			return -1;
		if (c < 0) {
			/* "xx==": the 4 low bits of b are padding and must be 0. */
			if (q[2] != '=' || (b & 15) != 0)
				return -1;
			o[0] = (uint8_t)(a << 2 | b >> 4);
			*produced = 1;
			return 0;
		}
		if ((c & 3) != 0) /* "xxx=": 2 pad bits */
			return -1;
		o[0] = (uint8_t)(a << 2 | b >> 4);
		o[1] = (uint8_t)((b & 15) << 4 | c >> 2);
		*produced = 2;
		return 0;
	}
	o[0] = (uint8_t)(a << 2 | b >> 4);
	o[1] = (uint8_t)((b & 15) << 4 | c >> 2);
	o[2] = (uint8_t)((c & 3) << 6 | d);
	*produced = 3;
	return 0;
}

int
ab_base64_decode (const char *text, size_t len, uint8_t **out, size_t *out_len)
{
	uint8_t *buf;
	size_t n = 0;

	if (len % 4 != 0)
		return -1;
	buf = xmalloc (len / 4 * 3 + 1);
	for (size_t i = 0; i < len; i += 4) {
		size_t produced;
		if (decode_quantum (text + i, i + 4 == len, buf + n, &produced) < 0) {
			free (buf);
			return -1;
		}
		n += produced;
	}
	buf[n] = '\0';
	*out = buf;
	*out_len = n;
	return 0;
}
