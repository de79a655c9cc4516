/* `agentbox browser`: the browser inside a daemon's sandbox
 * (docs/browser.md).
 *
 *   agentbox browser ID launch [--headed] [--viewport WxH]   prints the session
 *   agentbox browser ID OP SESSION [JSON] [-o FILE]          runs an operation
 *   agentbox browser ID --cdp-listen 127.0.0.1:0 [--session S]
 *       a local ws:// endpoint relayed to the session's CDP (a new session
 *       when none is named) for tools that want a plain URL. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"

static const char usage[] =
        "usage: agentbox browser [--host SOCKET] ID launch [--headed] [--viewport WxH]\n"
        "       agentbox browser [--host SOCKET] ID OP SESSION [JSON] [-o FILE]\n"
        "         OP: navigate click type screenshot evaluate extract wait_for_selector\n"
        "             page_info close\n"
        "       agentbox browser [--host SOCKET] ID --cdp-listen 127.0.0.1:0 [--session S]\n";

struct cdp_fwd_s {
	const char *id, *session;
};

static int
launch (const char *host, const char *id, bool headed, const char *viewport, char **session)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/browser", id);
	json_t *body = json_pack ("{s:b}", "headless", !headed), *j;
	unsigned w, h;

	if (viewport) {
		if (sscanf (viewport, "%ux%u", &w, &h) != 2) {
			json_decref (body);
			fprintf (stderr, "agentbox browser: --viewport is WIDTHxHEIGHT\n");
			return -1;
		}
		json_object_set_new (body, "viewport",
		                     json_pack ("{s:i,s:i}", "width", w, "height", h));
	}
	j = ab_client_call (host, "POST", path, body, NULL, &err);
	json_decref (body);
	if (!j) {
		ab_cli_report (&err);
		return -1;
	}
	*session = xstrdup (json_string_value (json_object_get (j, "session")) ?: "");
	json_decref (j);
	return 0;
}

/* An operation; a screenshot's bytes go to out (a file or stdout). */
static int
run_op (const char *host, const char *id, const char *op, const char *session, const char *json,
        const char *out)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/browser/%s/%s", id, session, op);
	struct ab_client_s c;
	char buf[64 * 1024];
	ssize_t n;
	FILE *f = stdout;
	int rc = -1;

	if (ab_client_open (&c, host, &err) < 0
	    || ab_client_send (&c, "POST", path, "application/json", json ?: "{}",
	                       (long long)strlen (json ?: "{}"), NULL, &err)
	               < 0
	    || ab_client_head (&c, &err) < 0
	    || (c.status >= 400 && ab_client_fail (&c, &err) < 0)) {
		ab_client_close (&c);
		ab_cli_report (&err);
		return -1;
	}
	if (out && !(f = fopen (out, "we"))) {
		fprintf (stderr, "agentbox browser: %s: %s\n", out, strerror (errno));
		ab_client_close (&c);
		return -1;
	}
	while ((n = ab_http_io_body_read (&c.io, buf, sizeof buf, &err)) > 0)
		fwrite (buf, 1, (size_t)n, f);
	if (n == 0)
		rc = 0;
	else
		ab_cli_report (&err);
	if (!out)
		fflush (stdout);
	else if (fclose (f) != 0)
		rc = -1;
	ab_client_close (&c);
	return rc;
}

/* One local client: its WebSocket upgrade (any path) becomes the daemon's
 * /cdp upgrade with the client's key; the daemon's 101 (Chromium's accept
 * for that key) is answered to the client. */
static int
open_cdp (void *ctx, const char *host, int client_fd, struct ab_client_s *c, ab_error_t *err)
{
	const struct cdp_fwd_s *f = ctx;
	struct ab_http_io_s io;
	struct ab_http_error_s he = { 0 };
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/browser/%s/cdp", f->id, f->session);
	cleanup_free char *extra = NULL, *ok = NULL;
	const char *key, *accept;
	size_t klen = 0, alen = 0;
	int rc = -1;

	memset (c, 0, sizeof *c);
	c->fd = -1;
	ab_http_io_init (&io, client_fd, 16 * 1024);
	if (ab_http_io_read_request (&io, &he) <= 0
	    || !(key = ab_http_io_field (&io, "sec-websocket-key", &klen))) {
		static const char bad[] = "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n";
		ab_http_write (client_fd, bad, sizeof bad - 1);
		ab_http_io_free (&io);
		return ab_error (err, 0, AB_E_INVALID, "a client sent no WebSocket upgrade");
	}
	extra = xasprintf (
	        "Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %.*s\r\n"
	        "Sec-WebSocket-Version: 13\r\n",
	        (int)klen, key);
	if (ab_client_open (c, host, err) == 0
	    && ab_client_send (c, "GET", path, NULL, NULL, -2, extra, err) == 0
	    && ab_client_head (c, err) == 0) {
		if (c->status != 101)
			ab_client_fail (c, err);
		else if (!(accept = ab_http_io_field (&c->io, "sec-websocket-accept", &alen)))
			ab_error (err, 0, AB_E_SYSTEM, "the daemon's upgrade has no accept key");
		else {
			ok = xasprintf ("HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
			                "Connection: Upgrade\r\nSec-WebSocket-Accept: %.*s\r\n\r\n",
			                (int)alen, accept);
			rc = ab_http_write (client_fd, ok, strlen (ok));
			if (rc == 0 && io.len > io.off)
				rc = ab_http_write (c->fd, io.buf + io.off, io.len - io.off);
		}
	}
	ab_http_io_free (&io);
	return rc;
}

static int
cdp_listen (const char *host, const char *id, const char *session, const char *listen_spec)
{
	cleanup_free char *made = NULL;
	struct cdp_fwd_s f = { .id = id, .session = session };

	if (!session) {
		if (launch (host, id, false, NULL, &made) < 0)
			return AB_EXIT_FAILED;
		f.session = made;
		printf ("session %s\n", made);
	}
	return ab_cli_forward (host, listen_spec, open_cdp, &f);
}

int
ab_cmd_browser (int argc, char **argv)
{
	const char *host = ab_client_take_host (&argc, argv);
	const char *viewport = NULL, *out = NULL, *listen = NULL, *session = NULL, *json = NULL;
	const char *pos[3] = { 0 };
	bool headed = false;
	int npos = 0;

	for (int i = 1; i < argc; i++) {
		if (strcmp (argv[i], "--help") == 0) {
			fputs (usage, stdout);
			return 0;
		} else if (strcmp (argv[i], "--headed") == 0)
			headed = true;
		else if (strcmp (argv[i], "--viewport") == 0 && i + 1 < argc)
			viewport = argv[++i];
		else if (strcmp (argv[i], "-o") == 0 && i + 1 < argc)
			out = argv[++i];
		else if (strcmp (argv[i], "--cdp-listen") == 0 && i + 1 < argc)
			listen = argv[++i];
		else if (strcmp (argv[i], "--session") == 0 && i + 1 < argc)
			session = argv[++i];
		else if (npos < 3 && argv[i][0] != '-')
			pos[npos++] = argv[i];
		else if (npos == 3 && !json)
			json = argv[i];
		else {
			fputs (usage, stderr);
			return AB_EXIT_FAILED;
		}
	}
	if (listen && npos == 1)
		return cdp_listen (host, pos[0], session, listen);
	if (npos == 2 && strcmp (pos[1], "launch") == 0) {
		cleanup_free char *s = NULL;
		if (launch (host, pos[0], headed, viewport, &s) < 0)
			return AB_EXIT_FAILED;
		printf ("%s\n", s);
		return 0;
	}
	if (npos == 3)
		return run_op (host, pos[0], pos[1], pos[2], json, out) < 0 ? AB_EXIT_FAILED : 0;
	fputs (usage, stderr);
	return AB_EXIT_FAILED;
}
