/* HTTP/1.1 over the daemon's unix socket, for the CLI's commands. */
#include "cli/client.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "daemon/daemon.h"
#include "net/websocket.h"

#define MAX_RESPONSE_JSON (64 << 20)

char *
ab_client_socket (const char *host_opt)
{
	const char *h = host_opt ? host_opt : getenv ("AGENTBOX_HOST");

	if (h && strncmp (h, "unix://", 7) == 0)
		h += 7;
	return h && *h ? xstrdup (h) : ab_daemon_default_socket ();
}

int
ab_client_open (struct ab_client_s *c, const char *host_opt, ab_error_t *err)
{
	memset (c, 0, sizeof *c);
	c->socket_path = ab_client_socket (host_opt);
	c->fd = ab_unix_connect (c->socket_path, err);
	if (c->fd < 0) {
		if (err->kind == AB_E_NOT_FOUND)
			return ab_error (
			        err, 0, AB_E_NOT_FOUND,
			        "no agentbox daemon at %s (start one with: agentbox serve%s%s)",
			        c->socket_path,
			        host_opt || getenv ("AGENTBOX_HOST") ? " --socket " : "",
			        host_opt || getenv ("AGENTBOX_HOST") ? c->socket_path : "");
		if (err->kind == AB_E_SYSTEM)
			return ab_error (err, err->errnum, AB_E_SYSTEM,
			                 "connect to agentbox daemon at %s", c->socket_path);
		return -1;
	}
	ab_http_io_init (&c->io, c->fd, AB_HTTP_IO_BUF);
	return 0;
}

void
ab_client_close (struct ab_client_s *c)
{
	if (c->fd >= 0) {
		ab_http_io_free (&c->io);
		close (c->fd);
	}
	c->fd = -1;
	free (c->socket_path);
	c->socket_path = NULL;
}

int
ab_client_send (struct ab_client_s *c, const char *method, const char *path, const char *ctype,
                const void *body, long long length, const char *extra, ab_error_t *err)
{
	char head[4096];
	int n = snprintf (head, sizeof head, "%s %s HTTP/1.1\r\nHost: agentbox\r\n", method, path);

	if (ctype)
		n += snprintf (head + n, sizeof head - (size_t)n, "Content-Type: %s\r\n", ctype);
	if (length >= 0 && (body || length > 0 || strcmp (method, "GET") != 0))
		n += snprintf (head + n, sizeof head - (size_t)n, "Content-Length: %lld\r\n",
		               length);
	else if (length == -1)
		n += snprintf (head + n, sizeof head - (size_t)n, "Transfer-Encoding: chunked\r\n");
	if (extra)
		n += snprintf (head + n, sizeof head - (size_t)n, "%s", extra);
	n += snprintf (head + n, sizeof head - (size_t)n, "\r\n");
	if ((size_t)n >= sizeof head)
		return ab_error (err, 0, AB_E_INVALID, "request too long");
	if (ab_http_write (c->fd, head, (size_t)n) < 0
	    || (body && length > 0 && ab_http_write (c->fd, body, (size_t)length) < 0))
		return ab_error (err, errno, AB_E_SYSTEM, "send to agentbox daemon");
	return 0;
}

int
ab_client_head (struct ab_client_s *c, ab_error_t *err)
{
	struct ab_http_error_s e;

	for (;;) {
		int r = ab_http_io_read_response (&c->io, false, &e);
		if (r <= 0)
			return ab_error (err, 0, AB_E_SYSTEM, "agentbox daemon: %s",
			                 r == 0 ? "closed the connection" : e.reason);
		c->status = c->io.head.status;
		if (c->status != 100)
			return 0;
	}
}

static ab_error_kind
kind_of (const char *code, int status)
{
	for (int k = AB_E_SYSTEM; k <= AB_E_INTERNAL; k++)
		if (code && strcmp (code, ab_error_kind_name ((ab_error_kind)k)) == 0)
			return (ab_error_kind)k;
	switch (status) {
	case 404: return AB_E_NOT_FOUND;
	case 409: return AB_E_CONFLICT;
	case 403:
	case 401: return AB_E_DENIED;
	case 413:
	case 429: return AB_E_LIMIT;
	case 400: return AB_E_INVALID;
	default: return AB_E_SYSTEM;
	}
}

int
ab_client_fail (struct ab_client_s *c, ab_error_t *err)
{
	cleanup_free char *body = NULL;
	size_t len;
	ab_error_t rerr = AB_ERROR_INIT;
	json_t *j;
	const char *code = NULL, *msg = NULL;

	if (ab_http_io_body_all (&c->io, 1 << 20, &body, &len, &rerr) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "agentbox daemon answered %d", c->status);
	j = json_loadb (body, len, JSON_ALLOW_NUL, NULL);
	json_unpack (j, "{s:{s?s, s?s}}", "error", "code", &code, "message", &msg);
	ab_error (err, 0, kind_of (code, c->status), "%s", msg ? msg : body);
	json_decref (j);
	return -1;
}

int
ab_client_ws_open (struct ab_client_s *c, const char *host, const char *path, size_t max_message,
                   ab_error_t *err)
{
	char key[AB_WS_KEY_LEN + 1], want[AB_WS_ACCEPT_LEN + 1];
	cleanup_free char *extra = NULL;
	const char *accept;
	size_t alen;

	if (ab_client_open (c, host, err) < 0)
		return -1;
	if (ab_ws_make_key (key) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	extra = xasprintf ("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
	                   "Sec-WebSocket-Version: 13\r\n",
	                   key);
	if (ab_client_send (c, "GET", path, NULL, NULL, -2, extra, err) < 0
	    || ab_client_head (c, err) < 0)
		return -1;
	if (c->status != 101)
		return ab_client_fail (c, err);
	ab_ws_accept_key (key, strlen (key), want);
	accept = ab_http_io_field (&c->io, "sec-websocket-accept", &alen);
	if (!accept || alen != strlen (want) || memcmp (accept, want, alen) != 0)
		return ab_error (err, 0, AB_E_SYSTEM, "the daemon's WebSocket handshake is wrong");
	ab_ws_assembler_init (&c->io.ws, max_message);
	return 0;
}

json_t *
ab_client_call (const char *host, const char *method, const char *path, json_t *body, int *status,
                ab_error_t *err)
{
	struct ab_client_s c;
	cleanup_free char *text = body ? json_dumps (body, JSON_COMPACT) : NULL;
	cleanup_free char *resp = NULL;
	json_t *j = NULL;
	json_error_t je;
	size_t len;

	if (ab_client_open (&c, host, err) < 0
	    || ab_client_send (&c, method, path, text ? "application/json" : NULL, text,
	                       text ? (long long)strlen (text) : -2, NULL, err)
	               < 0
	    || ab_client_head (&c, err) < 0) {
		ab_client_close (&c);
		return NULL;
	}
	if (status)
		*status = c.status;
	if (c.status >= 400)
		ab_client_fail (&c, err);
	else if (ab_http_io_body_all (&c.io, MAX_RESPONSE_JSON, &resp, &len, err) == 0) {
		j = len ? json_loadb (resp, len, JSON_ALLOW_NUL, &je) : json_object ();
		if (!j)
			ab_error (err, 0, AB_E_SYSTEM, "agentbox daemon sent malformed JSON: %s",
			          je.text);
	}
	ab_client_close (&c);
	return j;
}

char *
ab_client_escape (const char *s)
{
	char *out = xmalloc (strlen (s) * 3 + 1), *o = out;

	for (; *s; s++) {
		unsigned char ch = (unsigned char)*s;
		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') || (ch >= '0' && ch <= '9')
		    || strchr ("-._~/", ch))
			*o++ = (char)ch;
		else
			o += sprintf (o, "%%%02X", ch);
	}
	*o = '\0';
	return out;
}

/* --host HOST anywhere before the operands; the rest stays in argv. */
const char *
ab_client_take_host (int *argc, char **argv)
{
	const char *host = NULL;
	int o = 1;

	for (int i = 1; i < *argc; i++) {
		if (strcmp (argv[i], "--") == 0) {
			while (i < *argc)
				argv[o++] = argv[i++];
			break;
		}
		if (strcmp (argv[i], "--host") == 0 && i + 1 < *argc)
			host = argv[++i];
		else if (strncmp (argv[i], "--host=", 7) == 0)
			host = argv[i] + 7;
		else
			argv[o++] = argv[i];
	}
	*argc = o;
	argv[o] = NULL;
	return host;
}

int
ab_cli_post_print (const char *host, const char *path, json_t *body, bool as_json, const char *key)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *resp = ab_client_call (host, "POST", path, body, NULL, &err);

	json_decref (body);
	if (!resp) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	if (as_json) {
		json_dumpf (resp, stdout, JSON_INDENT (2));
		putchar ('\n');
	} else
		printf ("%s\n", json_string_value (json_object_get (resp, key)));
	json_decref (resp);
	return 0;
}
