/* Percent-decoding (RFC 3986 2.1): query strings of the REST API, the
 * microVM's boot parameters. */
#ifndef AB_BASE_PCT_H
#define AB_BASE_PCT_H

#include <stdbool.h>
#include <stddef.h>

/* Decode s[0..len) into a new NUL-terminated string; '+' becomes a space
 * when plus_is_space (application/x-www-form-urlencoded).  NULL when an
 * escape is malformed or decodes to a NUL (which would cut the string). */
char *ab_pct_decode (const char *s, size_t len, bool plus_is_space);

#endif
