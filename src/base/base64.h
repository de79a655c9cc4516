/* Base64 (RFC 4648 section 4, the standard alphabet with padding): the
 * preview bridge's and the API's JSON bodies (bodyBase64, data_b64) and the
 * WebSocket keys.  Libc only: the agent links base/ statically.
 *
 * Decoding is strict: a body that two decoders read differently is a body
 * whose meaning depends on who reads it, so whitespace, a missing or
 * misplaced '=', non-zero pad bits and characters outside the alphabet are
 * refused instead of skipped (RFC 4648 3.3 and 3.5).  Pure code. */
#ifndef AB_BASE_BASE64_H
#define AB_BASE_BASE64_H

#include <stddef.h>
#include <stdint.h>

/* Characters ab_base64_encode writes for n bytes, without the NUL. */
static inline size_t
ab_base64_len (size_t n)
{
	return (n + 2) / 3 * 4;
}

/* Encode src[0..n) into a new NUL-terminated string. */
char *ab_base64_encode (const void *src, size_t n);

/* Decode text[0..len) into a new buffer (*out, *out_len; NUL-terminated
 * for convenience, the NUL not counted).  Returns 0, or -1 when the text
 * is not canonical base64 (then *out is untouched). */
int ab_base64_decode (const char *text, size_t len, uint8_t **out, size_t *out_len);

#endif
