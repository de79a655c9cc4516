/* The credential proxy's configuration: one JSON document,
 *
 *   {"threadToken": "...",
 *    "upstreams": [{"name": "anthropic",
 *                   "baseUrl": "https://api.anthropic.com",
 *                   "inject": [{"header": "x-api-key", "value": "..."}],
 *                   "stripRequestHeaders": ["authorization"]}]}
 *
 * validated whole: any invalid entry rejects the whole document, so a
 * half-applied configuration never exists.  Rules:
 *   - threadToken: 1..4096 visible ASCII characters (it travels in a
 *     header); only its SHA-256 digest is compared (constant time).
 *   - name: ^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$, unique.
 *   - baseUrl: https://host[:port][/path], or http:// to a loopback host
 *     only (SECURITY.md: secrets travel over verified TLS; loopback never
 *     leaves the machine); no userinfo, query or fragment.
 *   - inject[].header and stripRequestHeaders[]: field names (RFC 9110
 *     5.1 tokens), and never a framing or routing field (Host,
 *     Content-Length, Transfer-Encoding, Connection, ...);
 *     inject[].value: field-vchar text (no CR, LF or NUL: no header
 *     injection), at most 8192 characters.
 *   - duplicate object keys are refused (JSON_REJECT_DUPLICATES); unknown
 *     keys are ignored.
 *
 * A loaded configuration is immutable and reference-counted: requests in
 * flight keep the one they started with across a reload. */
#ifndef AB_NET_CREDENTIAL_CONFIG_H
#define AB_NET_CREDENTIAL_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"
#include "net/http-client.h"

#define AB_CRED_NAME_MAX  64
#define AB_CRED_TOKEN_MAX 4096
#define AB_CRED_VALUE_MAX 8192
#define AB_CRED_FILE_MAX  (1024 * 1024)

struct ab_cred_header_s {
	char *name;
	char *value;
};

struct ab_cred_upstream_s {
	char name[AB_CRED_NAME_MAX + 1];
	struct ab_url_s url;
	char host_field[AB_HOST_MAX + 16]; /* Host value sent upstream */
	struct ab_cred_header_s *inject;
	size_t n_inject;
	char **strip;
	size_t n_strip;
};

struct ab_cred_config_s {
	unsigned refs;
	unsigned char token_digest[32];
	char *token;
	struct ab_cred_upstream_s *ups;
	size_t n_ups;
};

/* Parse and validate; NULL with an AB_E_INVALID error naming the field
 * (never quoting a value: values are secrets). */
struct ab_cred_config_s *ab_cred_config_parse (const char *text, size_t len, ab_error_t *err);
/* Read a file (at most AB_CRED_FILE_MAX bytes) and parse it; a missing
 * file is AB_E_NOT_FOUND. */
struct ab_cred_config_s *ab_cred_config_load (const char *path, ab_error_t *err);

struct ab_cred_config_s *ab_cred_config_ref (struct ab_cred_config_s *c);
/* Drops a reference; the last one wipes the secrets and frees. */
void ab_cred_config_unref (struct ab_cred_config_s *c);

const struct ab_cred_upstream_s *ab_cred_config_find (const struct ab_cred_config_s *c,
                                                      const char *name, size_t len);
/* The names in order, comma-separated, in a malloc'ed string ("a,b"). */
char *ab_cred_config_names (const struct ab_cred_config_s *c);

/* Whether `presented` is the thread token: both are hashed with SHA-256
 * and the digests compared with CRYPTO_memcmp, so the time taken depends
 * neither on where the first difference is nor on the lengths. */
bool ab_cred_token_ok (const struct ab_cred_config_s *c, const char *presented, size_t len);

/* Whether a field name is one the proxy always controls (framing,
 * routing, hop-by-hop): never injected, never configurable. */
bool ab_cred_reserved_header (const char *name, size_t len);

#endif
