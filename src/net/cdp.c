/* The CDP client: see cdp.h. */
#include "net/cdp.h"

#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/sys.h"
#include "base/xalloc.h"
#include "net/ws-io.h"

#define CDP_HEAD_MAX   (16 * 1024)
#define CDP_TIMEOUT_MS 30000
#define CDP_HTTP_MAX   (1024 * 1024)

/* Chromium answers DevTools requests only with a Host that is an IP
 * literal or localhost (its DNS-rebinding guard), and refuses WebSockets
 * that carry an Origin unless allowed; we send neither a name nor an
 * Origin. */
static int
send_head (int fd, uint16_t port, const char *path, const char *extra, ab_error_t *err)
{
	cleanup_free char *head = xasprintf ("GET %s HTTP/1.1\r\nHost: 127.0.0.1:%u\r\n%s\r\n",
	                                     path, (unsigned)port, extra ? extra : "");

	if (ab_http_write (fd, head, strlen (head)) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "writing to the browser");
	return 0;
}

static int
read_head (struct ab_http_io_s *io, ab_error_t *err)
{
	struct ab_http_error_s he = { 0 };

	io->deadline_ms = ab_mono_ms () + CDP_TIMEOUT_MS;
	if (ab_http_io_read_response (io, false, &he) <= 0)
		return ab_error (err, 0, AB_E_SYSTEM,
		                 "the browser's DevTools endpoint did not answer");
	return 0;
}

json_t *
ab_cdp_http_json (int fd_in, uint16_t port, const char *path, ab_error_t *err)
{
	cleanup_close int fd = fd_in;
	struct ab_http_io_s io;
	cleanup_free char *body = NULL;
	size_t len = 0;
	json_t *j = NULL;

	if (fd < 0 || send_head (fd, port, path, "Connection: close\r\n", err) < 0)
		return NULL;
	ab_http_io_init (&io, fd, CDP_HEAD_MAX);
	if (read_head (&io, err) == 0) {
		if (io.head.status != 200)
			ab_error (err, 0, AB_E_SYSTEM, "the browser answered %d to %s",
			          io.head.status, path);
		else if (ab_http_io_body_all (&io, CDP_HTTP_MAX, &body, &len, err) == 0
		         && !(j = json_loadb (body, len, 0, NULL)))
			ab_error (err, 0, AB_E_SYSTEM, "the browser sent malformed JSON for %s",
			          path);
	}
	ab_http_io_free (&io);
	return j;
}

static int
ws_handshake (struct ab_cdp_s *c, uint16_t port, const char *path, ab_error_t *err)
{
	char key[AB_WS_KEY_LEN + 1], want[AB_WS_ACCEPT_LEN + 1];
	cleanup_free char *extra = NULL;
	const char *accept;
	size_t alen;

	if (ab_ws_make_key (key) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	extra = xasprintf ("Upgrade: websocket\r\nConnection: Upgrade\r\nSec-WebSocket-Key: %s\r\n"
	                   "Sec-WebSocket-Version: 13\r\n",
	                   key);
	if (send_head (c->fd, port, path, extra, err) < 0 || read_head (&c->io, err) < 0)
		return -1;
	if (c->io.head.status != 101)
		return ab_error (err, 0, AB_E_SYSTEM,
		                 "the browser refused the DevTools WebSocket (%d)",
		                 c->io.head.status);
	ab_ws_accept_key (key, strlen (key), want);
	accept = ab_http_io_field (&c->io, "sec-websocket-accept", &alen);
	if (!accept || alen != strlen (want) || memcmp (accept, want, alen) != 0)
		return ab_error (err, 0, AB_E_SYSTEM, "the browser's WebSocket handshake is wrong");
	ab_ws_assembler_init (&c->io.ws, AB_CDP_MESSAGE_MAX);
	return 0;
}

int
ab_cdp_attach (struct ab_cdp_s *c, int fd, uint16_t port, const char *path, ab_error_t *err)
{
	memset (c, 0, sizeof *c);
	c->fd = fd;
	ab_http_io_init (&c->io, c->fd, CDP_HEAD_MAX);
	c->next_id = 1;
	c->timeout_ms = CDP_TIMEOUT_MS;
	if (ws_handshake (c, port, path, err) < 0) {
		ab_cdp_close (c);
		return -1;
	}
	return 0;
}

void
ab_cdp_close (struct ab_cdp_s *c)
{
	if (c->fd < 0)
		return;
	ab_ws_send (c->fd, AB_WS_OP_CLOSE, "\x03\xe8", 2, true);
	ab_http_io_free (&c->io);
	close (c->fd);
	c->fd = -1;
}

/* The answer with this id: its result, or its error as AB_E_INVALID. */
static int
take_answer (json_t *msg, json_t **result, ab_error_t *err)
{
	json_t *e = json_object_get (msg, "error");

	if (e) {
		const char *m = json_string_value (json_object_get (e, "message"));
		return ab_error (err, 0, AB_E_INVALID, "%s",
		                 m ? m : "the browser refused the command");
	}
	*result = json_incref (json_object_get (msg, "result"));
	if (!*result)
		*result = json_object ();
	return 0;
}

/* The page's renderer died: no answer will come. */
static bool
crashed (const json_t *msg)
{
	const char *m = json_string_value (json_object_get (msg, "method"));

	return m && strcmp (m, "Inspector.targetCrashed") == 0;
}

int
ab_cdp_call (struct ab_cdp_s *c, const char *method, json_t *params, json_t **result,
             ab_error_t *err)
{
	int id = c->next_id++;
	json_t *msg = json_pack ("{s:i,s:s,s:o}", "id", id, "method", method, "params",
	                         params ? params : json_object ());
	cleanup_free char *text = json_dumps (msg, JSON_COMPACT);

	json_decref (msg);
	*result = NULL;
	if (ab_ws_send (c->fd, AB_WS_OP_TEXT, text, strlen (text), true) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "the browser went away");
	c->io.deadline_ms = ab_mono_ms () + (uint64_t)c->timeout_ms;
	for (;;) {
		struct ab_ws_msg_s m = { 0 };
		json_t *j;
		int r = ab_ws_recv (&c->io, false, &m, err);
		if (r <= 0) {
			free (m.data);
			if (r == 0)
				ab_error (err, 0, AB_E_SYSTEM,
				          "the browser closed its DevTools connection");
			return ab_error_wrap (err, "%s", method);
		}
		if (m.opcode != AB_WS_OP_TEXT) {
			free (m.data);
			continue;
		}
		j = json_loadb ((const char *)m.data, m.len, 0, NULL);
		free (m.data);
		if (j && json_integer_value (json_object_get (j, "id")) == id) {
			int rc = take_answer (j, result, err);
			json_decref (j);
			return rc;
		}
		if (crashed (j)) {
			json_decref (j);
			return ab_error (err, 0, AB_E_SYSTEM,
			                 "%s: the page crashed (its renderer was killed: out of "
			                 "memory?)",
			                 method);
		}
		json_decref (j); /* an event, or another id: not ours */
	}
}

json_t *
ab_cdp_eval (struct ab_cdp_s *c, const char *expr, ab_error_t *err)
{
	json_t *res = NULL, *v, *exc;

	if (ab_cdp_call (c, "Runtime.evaluate",
	                 json_pack ("{s:s,s:b,s:b}", "expression", expr, "returnByValue", 1,
	                            "awaitPromise", 1),
	                 &res, err)
	    < 0)
		return NULL;
	if ((exc = json_object_get (res, "exceptionDetails"))) {
		json_t *d = json_object_get (json_object_get (exc, "exception"), "description");
		const char *t = json_string_value (d ? d : json_object_get (exc, "text"));
		ab_error (err, 0, AB_E_INVALID, "evaluation threw: %s", t ? t : "an exception");
		json_decref (res);
		return NULL;
	}
	v = json_object_get (json_object_get (res, "result"), "value");
	v = v ? json_incref (v) : json_null ();
	json_decref (res);
	return v;
}
