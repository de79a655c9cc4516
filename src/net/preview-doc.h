/* The preview bridge's input documents: what `request` and
 * `websocket-framed` read from stdin, checked field by field before any
 * byte goes upstream.  Pure code apart from ab_preview_read_all.
 *
 * The header rules are the (names over 128 or values over 8192
 * characters are dropped) plus what keeps a caller from writing a second
 * request into ours: a name must be an HTTP token and a value must hold no
 * control character but HTAB (RFC 9110 5.1, 5.5), or the header is
 * dropped, never repaired (CR/LF injection, CWE-113).  Framing and
 * hop-by-hop fields are ours to write, so the caller's copies are dropped
 * too. */
#ifndef AB_NET_PREVIEW_DOC_H
#define AB_NET_PREVIEW_DOC_H

#include <jansson.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "net/iobuf.h"

#define AB_PREVIEW_HOSTNAME_MAX     128
#define AB_PREVIEW_HEADER_NAME_MAX  128
#define AB_PREVIEW_HEADER_VALUE_MAX 8192
/* A request-target longer than this is refused (it must fit in one head). */
#define AB_PREVIEW_PATH_MAX 8192
/* Header fields forwarded at most: the rest are dropped. */
#define AB_PREVIEW_MAX_HEADERS 100

struct ab_preview_target_s {
	char hostname[AB_PREVIEW_HOSTNAME_MAX + 1];
	uint16_t port;
	char host_header[AB_PREVIEW_HOSTNAME_MAX + 8]; /* "hostname:port" */
};

struct ab_preview_header_s {
	char *name;
	char *value;
};

struct ab_preview_headers_s {
	struct ab_preview_header_s *v;
	size_t n;
};

/* Which caller-supplied fields are never forwarded. */
typedef enum {
	AB_PREVIEW_HDRS_HTTP = 0, /* host, framing and hop-by-hop fields */
	AB_PREVIEW_HDRS_WEBSOCKET /* the same plus sec-websocket-* */
} ab_preview_hdrs_mode;

/* {hostname, port}: hostname matches ^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$
 * and is not a numeric form that getaddrinfo would read as an IPv4
 * address other than a canonical dotted quad ("2130706433", "127.1");
 * port is an integer 1..65535.  Returns 0 or -1. */
int ab_preview_parse_target (const json_t *v, struct ab_preview_target_s *t);

/* A request path: "/" followed by visible ASCII, no '#', at most
 * AB_PREVIEW_PATH_MAX bytes.  NULL (absent) means "/". */
bool ab_preview_path_valid (const char *path);

/* An HTTP token (RFC 9110 5.6.2) of 1..max bytes. */
bool ab_preview_token_valid (const char *s, size_t len, size_t max);

/* The headers object: each string value (or array of strings, joined with
 * ", ") that passes the rules above goes into *out, in the object's order.
 * v NULL means none.  Returns 0, or -1 when v is not an object. */
int ab_preview_parse_headers (const json_t *v, ab_preview_hdrs_mode mode,
                              struct ab_preview_headers_s *out);
void ab_preview_headers_free (struct ab_preview_headers_s *h);

/* Characters in s[0..len): UTF-8 sequences count once (the limits are in
 * characters, and a value of 8192 "é" is 16384 bytes); stray bytes count
 * one each. */
size_t ab_preview_char_count (const char *s, size_t len);

/* An optional integer member in [min, max]; absent = def.  Returns 0 or -1. */
int ab_preview_get_uint (const json_t *obj, const char *key, uint64_t min, uint64_t max,
                         uint64_t def, uint64_t *out);
/* An optional string member; absent = def.  Returns 0 or -1 (not a string). */
int ab_preview_get_string (const json_t *obj, const char *key, const char *def, const char **out);

/* Read fd to EOF into out; -1 with errno (EFBIG when more than max bytes). */
int ab_preview_read_all (int fd, size_t max, struct ab_iobuf_s *out);

#endif
