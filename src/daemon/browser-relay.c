/* GET /v1/sandboxes/{id}/browser/{session}/cdp: a WebSocket relayed byte
 * for byte to the session's browser DevTools endpoint inside the sandbox,
 * through the agent's port relay, so that Playwright's connectOverCDP and
 * Puppeteer's connect work unmodified.  Open to the daemon's own
 * credentials (its socket, its TCP bearer token) or, on the TCP listener,
 * to the sandbox's port token (Authorization: Bearer or ?token=); an
 * Origin, when sent, must be a loopback one (a web page in the user's
 * browser must not drive the sandbox's). */
#include "daemon/browser.h"

#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "daemon/relay.h"
#include "policy/hostname.h"

#define CDP_IDLE_MS        (30 * 60 * 1000)
#define CDP_SEND_TIMEOUT_S 60

/* http://localhost, http://127.0.0.1, http://[::1], any port. */
bool
ab_browser_origin_ok (const char *v, size_t len)
{
	cleanup_free char *o = xstrndup (v, len);
	const char *h = strstr (o, "://");
	struct ab_hostport_s hp;
	ab_error_t ignored = AB_ERROR_INIT;

	if (!h || (strncmp (o, "http://", 7) != 0 && strncmp (o, "https://", 8) != 0))
		return false;
	if (ab_hostport_parse (h + 3, 80, &hp, &ignored) < 0)
		return false;
	return strcmp (hp.host, "localhost") == 0 || strcmp (hp.host, "127.0.0.1") == 0
	       || strcmp (hp.host, "::1") == 0;
}

static char *
upstream_head (const struct ab_browser_s *s, const char *key, size_t key_len)
{
	return xasprintf ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\nUpgrade: websocket\r\n"
	                  "Connection: Upgrade\r\nSec-WebSocket-Key: %.*s\r\n"
	                  "Sec-WebSocket-Version: 13\r\n\r\n",
	                  s->browser_path, (unsigned)s->port, (int)key_len, key);
}

static void
relay (struct ab_req_s *r, struct ab_box_s *b, struct ab_browser_s *s, const char *key,
       size_t key_len)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_box_connect (r->d, b, &err);
	int fd = c ? ab_agent_port_open (&c, s->port, &err) : -1;
	cleanup_free char *head = upstream_head (s, key, key_len);
	struct timeval snd = { .tv_sec = CDP_SEND_TIMEOUT_S };
	size_t buffered = r->io->len - r->io->off;

	ab_agent_close (c);
	if (fd < 0) {
		ab_resp_fail (r, 502, "bad_gateway",
		              "the browser's DevTools endpoint is unreachable");
		return;
	}
	setsockopt (fd, SOL_SOCKET, SO_SNDTIMEO, &snd, sizeof snd);
	r->responded = true;
	r->status = 101; /* Chromium's own answer is relayed */
	ab_metrics_request (101);
	if (ab_http_write (fd, head, strlen (head)) == 0
	    && (!buffered || ab_http_write (fd, r->io->buf + r->io->off, buffered) == 0)) {
		r->io->off = r->io->len;
		ab_relay_fds_first_eof (r->fd, fd, CDP_IDLE_MS);
	}
	close (fd);
}

void
ab_api_browser_cdp (struct ab_req_s *r)
{
	struct ab_box_s *b;
	struct ab_browser_s *s;
	const char *key, *up, *origin;
	size_t key_len = 0, up_len = 0, olen = 0;

	r->close = true;
	key = ab_http_io_field (r->io, "sec-websocket-key", &key_len);
	up = ab_http_io_field (r->io, "upgrade", &up_len);
	origin = ab_http_io_field (r->io, "origin", &olen);
	if (!key || key_len != AB_WS_KEY_LEN || !up
	    || !ab_http_token_eq (up, up_len, "websocket")) {
		ab_resp_fail (r, 400, "invalid", "needs a WebSocket upgrade");
		return;
	}
	if (origin && !ab_browser_origin_ok (origin, olen)) {
		ab_resp_fail (r, 403, "forbidden", "origin not allowed");
		return;
	}
	if (!(b = ab_api_box (r, true)))
		return;
	if ((s = ab_browser_get (r, b))) {
		relay (r, b, s, key, key_len);
		ab_browser_unref (s);
	}
	ab_box_unref (r->d, b);
}

/* /v1/sandboxes/ID/browser/SESSION/cdp, the query aside. */
static bool
door_box (const struct ab_http_io_s *io, char id[AB_BOX_ID_LEN + 1])
{
	static const char pre[] = "/v1/sandboxes/";
	const char *t = io->head.target, *p, *q;
	size_t len = io->head.target_len, n, plen;

	q = memchr (t, '?', len);
	plen = q ? (size_t)(q - t) : len;
	if (plen < sizeof pre - 1 || memcmp (t, pre, sizeof pre - 1) != 0)
		return false;
	p = t + sizeof pre - 1;
	n = strcspn (p, "/?");
	if (n == 0 || n > AB_BOX_ID_LEN || (size_t)(p - t) + n > plen)
		return false;
	memcpy (id, p, n);
	id[n] = '\0';
	p += n;
	n = plen - (size_t)(p - t);
	if (n == 4 && memcmp (p, "/vnc", 4) == 0)
		return true;
	if (n < sizeof "/browser/x/cdp" - 1 || memcmp (p, "/browser/", 9) != 0
	    || memcmp (p + n - 4, "/cdp", 4) != 0)
		return false;
	return memchr (p + 9, '/', n - 13) == NULL;
}

bool
ab_browser_door_target (const struct ab_http_io_s *io)
{
	char id[AB_BOX_ID_LEN + 1];
	return door_box (io, id);
}

static const char *
query_token (const struct ab_http_io_s *io, size_t *len)
{
	const char *t = io->head.target, *end = t + io->head.target_len;
	const char *p = memchr (t, '?', io->head.target_len);

	while (p && ++p < end) {
		const char *amp = memchr (p, '&', (size_t)(end - p));
		const char *e = amp ? amp : end;
		if ((size_t)(e - p) >= 6 && memcmp (p, "token=", 6) == 0) {
			*len = (size_t)(e - p - 6);
			return p + 6;
		}
		p = amp;
	}
	return NULL;
}

bool
ab_browser_request_token_ok (const struct ab_box_s *b, const struct ab_http_io_s *io)
{
	static const char scheme[] = "bearer ";
	const char *v;
	size_t len = 0;

	v = ab_http_io_field (io, "authorization", &len);
	if (v && len > sizeof scheme - 1 && strncasecmp (v, scheme, sizeof scheme - 1) == 0)
		return ab_port_token_ok (b, v + sizeof scheme - 1, len - (sizeof scheme - 1));
	return (v = query_token (io, &len)) && ab_port_token_ok (b, v, len);
}

bool
ab_browser_door_token_ok (struct ab_daemon_s *d, const struct ab_http_io_s *io)
{
	char id[AB_BOX_ID_LEN + 1];
	ab_error_t ignored = AB_ERROR_INIT;
	struct ab_box_s *b;
	bool ok;

	if (!door_box (io, id) || !(b = ab_registry_get (d, id, &ignored)))
		return false;
	ok = ab_browser_request_token_ok (b, io);
	ab_box_unref (d, b);
	return ok;
}
