/* GET /v1/sandboxes/{id}/exec/ws: an interactive session over a WebSocket
 * (RFC 6455).  The client's first message is the exec request (JSON text,
 * as for POST .../exec; "stdin" and "tty" default to true).  Then:
 *   server -> client  binary [1|2][bytes]: stdout / stderr
 *                     text {"type":"start","pid":N}, {"type":"exit",...}
 *   client -> server  binary [0][bytes]: stdin
 *                     text {"type":"resize","rows":R,"cols":C},
 *                          {"type":"signal","signal":"INT"}, {"type":"close_stdin"}
 * The output side runs on this thread with one agent connection; a second
 * thread reads the client with a second connection (a connection is not
 * thread-safe), so neither direction waits for the other.  A client that
 * goes away before the process ends sends it SIGHUP, as a closed terminal
 * does. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/ws-io.h"

struct ws_session_s {
	struct ab_req_s *r;
	struct ab_box_s *b;
	pthread_mutex_t wlock;
	uint32_t pid;
	volatile int client_gone;
	volatile int done;
};

static int
ws_send (struct ws_session_s *s, int op, const void *buf, size_t len)
{
	int rc;
	pthread_mutex_lock (&s->wlock);
	rc = ab_ws_send (s->r->fd, op, buf, len, false);
	pthread_mutex_unlock (&s->wlock);
	return rc;
}

static int
ws_send_json (struct ws_session_s *s, json_t *j)
{
	cleanup_free char *text = json_dumps (j, JSON_COMPACT);
	json_decref (j);
	return ws_send (s, AB_WS_OP_TEXT, text, strlen (text));
}

static int
control (struct ws_session_s *s, ab_agent_conn_t *c, const char *text, ab_error_t *err)
{
	json_error_t je;
	json_t *j = json_loads (text, JSON_REJECT_DUPLICATES, &je);
	const char *type = json_string_value (json_object_get (j, "type"));
	int rc, sig;

	if (!type)
		rc = ab_error (err, 0, AB_E_INVALID, "control message needs a 'type'");
	else if (strcmp (type, "resize") == 0) {
		json_int_t rows = json_integer_value (json_object_get (j, "rows"));
		json_int_t cols = json_integer_value (json_object_get (j, "cols"));
		rc = rows > 0 && rows < 65536 && cols > 0 && cols < 65536
		             ? ab_agent_proc_resize (c, s->pid, (uint16_t)rows, (uint16_t)cols, err)
		             : ab_error (err, 0, AB_E_INVALID, "resize needs rows and cols");
	} else if (strcmp (type, "signal") == 0)
		rc = ab_signal_parse (json_object_get (j, "signal"), &sig, err) < 0
		             ? -1
		             : ab_agent_proc_signal (c, s->pid, sig, err);
	else if (strcmp (type, "close_stdin") == 0)
		rc = ab_agent_proc_close_stdin (c, s->pid, err);
	else
		rc = ab_error (err, 0, AB_E_INVALID, "unknown control message '%s'", type);
	json_decref (j);
	return rc;
}

static void *
input_main (void *arg)
{
	struct ws_session_s *s = arg;
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_box_connect (s->r->d, s->b, &err);

	while (c && !s->done) {
		struct ab_ws_msg_s m;
		int rc = ab_ws_recv (s->r->io, true, &m, &err);
		if (rc <= 0 || m.opcode == AB_WS_OP_CLOSE) {
			if (rc > 0)
				free (m.data);
			break;
		}
		if (m.opcode == AB_WS_OP_PING)
			ws_send (s, AB_WS_OP_PONG, m.data, m.len);
		else if (m.opcode == AB_WS_OP_BINARY && m.len > 1 && m.data[0] == AB_WS_STDIN) {
			if (ab_agent_proc_write_stdin (c, s->pid, m.data + 1, m.len - 1, &err) == 0)
				ab_metrics_add_bytes ("exec_stdin_bytes", m.len - 1);
		} else if (m.opcode == AB_WS_OP_TEXT
		           && control (s, c, (const char *)m.data, &err) < 0)
			ws_send_json (s, json_pack ("{s:s, s:{s:s, s:s}}", "type", "error", "error",
			                            "code", ab_error_kind_name (err.kind),
			                            "message", err.msg));
		ab_error_clear (&err);
		free (m.data);
	}
	s->client_gone = 1;
	if (c && !s->done)
		ab_agent_proc_signal (c, s->pid, SIGHUP, &err); /* the terminal went away */
	ab_agent_close (c);
	return NULL;
}

static void
output_loop (struct ws_session_s *s, ab_agent_conn_t *c, struct ab_agent_proc_s *p)
{
	ab_error_t err = AB_ERROR_INIT;
	uint8_t *buf = NULL;

	for (;;) {
		struct ab_agent_event_s ev;
		int rc = ab_agent_proc_next_event (c, p, &ev, 500, &err);
		if (rc < 0 || (rc == 0 && s->client_gone))
			break;
		if (rc == 0)
			continue;
		if (ev.kind == AB_AGENT_EV_EXIT) {
			ws_send_json (s, ab_exit_json (&ev.exit));
			break;
		}
		buf = xrealloc (buf, ev.len + 1);
		buf[0] = ev.kind == AB_AGENT_EV_STDERR ? AB_WS_STDERR : AB_WS_STDOUT;
		memcpy (buf + 1, ev.data, ev.len);
		ab_metrics_add_bytes (ev.kind == AB_AGENT_EV_STDERR ? "exec_stderr_bytes"
		                                                    : "exec_stdout_bytes",
		                      ev.len);
		if (ws_send (s, AB_WS_OP_BINARY, buf, ev.len + 1) < 0)
			break;
	}
	free (buf);
}

static bool
has_token (const char *v, size_t len, const char *tok)
{
	size_t n = strlen (tok);
	for (size_t i = 0; v && i + n <= len; i++)
		if (strncasecmp (v + i, tok, n) == 0)
			return true;
	return false;
}

int
ab_api_ws_handshake (struct ab_req_s *r)
{
	size_t ulen = 0, clen = 0, klen = 0, vlen = 0;
	const char *up = ab_http_io_field (r->io, "upgrade", &ulen);
	const char *conn = ab_http_io_field (r->io, "connection", &clen);
	const char *key = ab_http_io_field (r->io, "sec-websocket-key", &klen);
	const char *ver = ab_http_io_field (r->io, "sec-websocket-version", &vlen);
	char accept[AB_WS_ACCEPT_LEN + 1], head[512];

	if (!up || !has_token (up, ulen, "websocket") || !has_token (conn, clen, "upgrade") || !key
	    || klen != 24 || !ver || vlen != 2 || memcmp (ver, "13", 2) != 0)
		return ab_resp_fail (r, 400, "invalid",
		                     "a WebSocket upgrade (version 13) is required here"),
		       -1;
	ab_ws_accept_key (key, klen, accept);
	snprintf (
	        head, sizeof head,
	        "HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
	        "Sec-WebSocket-Accept: %s\r\n%s\r\n",
	        accept, r->resp_headers ? r->resp_headers : "");
	r->responded = true;
	r->close = true; /* the connection is the session's now */
	r->status = 101;
	ab_metrics_request (101);
	return ab_http_write (r->fd, head, strlen (head));
}

/* The first message: the exec request. */
static int
first_message (struct ws_session_s *s, struct ab_exec_req_s *x, ab_error_t *err)
{
	struct ab_ws_msg_s m;
	json_error_t je;
	json_t *j;
	int rc = ab_ws_recv (s->r->io, true, &m, err);

	if (rc <= 0)
		return rc < 0 ? -1
		              : ab_error (err, 0, AB_E_INVALID, "closed before the exec request");
	j = m.opcode == AB_WS_OP_TEXT
	            ? json_loadb ((char *)m.data, m.len, JSON_REJECT_DUPLICATES, &je)
	            : NULL;
	free (m.data);
	if (!json_is_object (j)) {
		json_decref (j);
		return ab_error (err, 0, AB_E_INVALID,
		                 "the first message must be the exec request (JSON text)");
	}
	if (!json_object_get (j, "stdin"))
		json_object_set_new (j, "stdin", json_true ());
	if (!json_object_get (j, "tty"))
		json_object_set_new (j, "tty", json_true ());
	rc = ab_exec_req_parse (s->b, j, x, err);
	json_decref (j);
	if (rc == 0 && (x->wait || x->ps.detach))
		rc = ab_error (err, 0, AB_E_INVALID,
		               "'wait' and 'detach' have no meaning on a WebSocket");
	return rc;
}

static void
session (struct ws_session_s *s)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_exec_req_s x = { 0 };
	struct ab_agent_proc_s p;
	ab_agent_conn_t *c = NULL;
	pthread_t input;

	if (first_message (s, &x, &err) < 0 || ab_box_exec_begin (s->r->d, s->b, &err) < 0) {
		ws_send_json (s, json_pack ("{s:s, s:{s:s, s:s}}", "type", "error", "error", "code",
		                            ab_error_kind_name (err.kind), "message", err.msg));
		ab_exec_req_free (&x);
		return;
	}
	if (!(c = ab_box_connect (s->r->d, s->b, &err))
	    || ab_agent_proc_start (c, &x.ps, &p, &err) < 0)
		ws_send_json (s, json_pack ("{s:s, s:{s:s, s:s}}", "type", "error", "error", "code",
		                            ab_error_kind_name (err.kind), "message", err.msg));
	else {
		ab_metrics_inc ("execs");
		s->pid = p.pid;
		ws_send_json (s, json_pack ("{s:s, s:i}", "type", "start", "pid", (int)p.pid));
		if (pthread_create (&input, NULL, input_main, s) == 0) {
			output_loop (s, c, &p);
			s->done = 1;
			ws_send (s, AB_WS_OP_CLOSE, "\x03\xe8", 2); /* 1000: normal closure */
			shutdown (s->r->fd, SHUT_RD);               /* wakes the input thread */
			pthread_join (input, NULL);
		}
	}
	ab_agent_close (c);
	ab_box_exec_end (s->r->d, s->b);
	ab_exec_req_free (&x);
}

void
ab_api_exec_ws (struct ab_req_s *r)
{
	struct ws_session_s s = { .r = r };

	s.b = ab_api_box (r, true);
	if (!s.b)
		return;
	if (ab_api_ws_handshake (r) == 0) {
		pthread_mutex_init (&s.wlock, NULL);
		session (&s);
		pthread_mutex_destroy (&s.wlock);
	}
	ab_box_unref (r->d, s.b);
}
