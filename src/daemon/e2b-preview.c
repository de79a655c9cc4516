/* E2B previews: a request whose Host is <port>-<id>.<domain> (what
 * sandbox.getHost(port) returns) goes to 127.0.0.1:<port> inside sandbox
 * <id> through the daemon's port relay (api-port.c), WebSocket upgrades
 * included.  It needs that sandbox's access token (e2b-traffic-access-token
 * or X-Access-Token), which is not forwarded. */
#include "daemon/e2b-internal.h"

#include <openssl/crypto.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

/* <port>-<id>.<domain>[:p]: 1 with port and id, 0 when Host is not that. */
static int
parse_host (struct ab_req_s *r, uint16_t *port, char id[AB_BOX_ID_LEN + 1])
{
	size_t len, dl = strlen (r->d->e2b->domain);
	const char *h = ab_http_io_field (r->io, "host", &len);
	const char *colon, *dash, *dot;
	unsigned long p = 0;

	if (!h)
		return 0;
	if ((colon = memchr (h, ':', len)))
		len = (size_t)(colon - h);
	dash = memchr (h, '-', len);
	if (!dash || dash == h || dash - h > 5)
		return 0;
	for (const char *c = h; c < dash; c++) {
		if (*c < '0' || *c > '9')
			return 0;
		p = p * 10 + (unsigned long)(*c - '0');
	}
	dot = memchr (dash, '.', len - (size_t)(dash - h));
	if (!dot || p == 0 || p > 65535 || p == AB_E2B_ENVD_PORT
	    || (size_t)(dot - dash - 1) > AB_BOX_ID_LEN || dot == dash + 1
	    || len - (size_t)(dot + 1 - h) != dl
	    || strncasecmp (dot + 1, r->d->e2b->domain, dl) != 0)
		return 0;
	*port = (uint16_t)p;
	memcpy (id, dash + 1, (size_t)(dot - dash - 1));
	id[dot - dash - 1] = '\0';
	return 1;
}

static bool
token_field_ok (struct ab_req_s *r, const char *name, const char *tok)
{
	size_t len;
	const char *v = ab_http_io_field (r->io, name, &len);
	uint8_t a[32], b[32];

	if (!v)
		return false;
	SHA256 ((const unsigned char *)v, len, a);
	SHA256 ((const unsigned char *)tok, strlen (tok), b);
	return CRYPTO_memcmp (a, b, sizeof a) == 0;
}

int
ab_e2b_preview (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	char id[AB_BOX_ID_LEN + 1], tok[AB_E2B_TOKEN_LEN + 1];
	struct ab_box_s *b;
	uint16_t port;

	if (!parse_host (r, &port, id))
		return 0;
	b = ab_registry_get (r->d, id, &err);
	if (!b || ab_box_get_state (r->d, b) != AB_BOX_RUNNING
	    || ab_e2b_token_load (b, tok, &err) < 0)
		ab_e2b_api_fail (r, 502, "sandbox %s is not running", id);
	else if (!token_field_ok (r, "e2b-traffic-access-token", tok)
	         && !token_field_ok (r, "x-access-token", tok))
		ab_e2b_api_fail (r, 401, "missing or wrong access token for this preview");
	else
		ab_port_proxy_raw (r, b, port);
	explicit_bzero (tok, sizeof tok);
	if (b)
		ab_box_unref (r->d, b);
	return 1;
}
