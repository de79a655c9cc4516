/* `agentbox exec [-i] [-t] [-d] [-e K=V] [-w DIR] [-u UID[:GID]]
 * [--timeout D] ID -- CMD...`: run CMD in a daemon's sandbox.  Without -i
 * or -t the output streams as NDJSON over HTTP; with them the session is a
 * WebSocket (stdin both ways, the pty's window size); -d starts CMD
 * detached and prints its pid.  Exits with CMD's status (128+N for signal
 * N, 124 when its timeout fired, 127/126 when it could not be executed). */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "net/ws-io.h"

#define MAX_LINE (64u << 20)

struct exec_opts_s {
	bool interactive, tty, detach;
	const char *host, *id;
	json_t *req;
};

enum { OPT_TIMEOUT = 256, OPT_HOST };

static const struct option exec_options[] = {
	{ "interactive", no_argument, NULL, 'i' },
	{ "tty", no_argument, NULL, 't' },
	{ "detach", no_argument, NULL, 'd' },
	{ "env", required_argument, NULL, 'e' },
	{ "workdir", required_argument, NULL, 'w' },
	{ "user", required_argument, NULL, 'u' },
	{ "timeout", required_argument, NULL, OPT_TIMEOUT },
	{ "host", required_argument, NULL, OPT_HOST },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static const char exec_usage[] = "usage: agentbox exec [-i] [-t] [-d] [-e K=V] [-w DIR] [-u "
                                 "UID[:GID]] [--timeout D] [--host SOCKET] ID -- CMD [ARGS...]\n";

static int
add_env (json_t *env, const char *kv, ab_error_t *err)
{
	const char *eq = strchr (kv, '=');
	if (!eq || eq == kv)
		return ab_error (err, 0, AB_E_INVALID, "-e %s: expected KEY=VALUE", kv);
	cleanup_free char *k = xstrndup (kv, (size_t)(eq - kv));
	json_object_set_new (env, k, json_string (eq + 1));
	return 0;
}

static int
parse_args (int argc, char **argv, struct exec_opts_s *o, ab_error_t *err)
{
	json_t *env = json_object (), *cmd = json_array ();
	int opt;

	memset (o, 0, sizeof *o);
	o->req = json_pack ("{s:o, s:o}", "env", env, "cmd", cmd);
	opterr = 0;
	optind = 1;
	while ((opt = getopt_long (argc, argv, "+itde:w:u:h", exec_options, NULL)) != -1) {
		switch (opt) {
		case 'i': o->interactive = true; break;
		case 't': o->tty = true; break;
		case 'd': o->detach = true; break;
		case 'e':
			if (add_env (env, optarg, err) < 0)
				return -1;
			break;
		case 'w': json_object_set_new (o->req, "cwd", json_string (optarg)); break;
		case 'u': json_object_set_new (o->req, "user", json_string (optarg)); break;
		case OPT_TIMEOUT:
			json_object_set_new (o->req, "timeout", json_string (optarg));
			break;
		case OPT_HOST: o->host = optarg; break;
		case 'h': fputs (exec_usage, stdout); exit (0);
		default:
			return ab_error (err, 0, AB_E_INVALID,
			                 "exec: unknown option or missing value '%s'",
			                 argv[optind - 1]);
		}
	}
	if (optind >= argc)
		return ab_error (err, 0, AB_E_INVALID, "exec: missing sandbox id (%s)",
		                 "agentbox exec ID -- CMD");
	o->id = argv[optind++];
	if (optind < argc && strcmp (argv[optind], "--") == 0)
		optind++;
	if (optind >= argc)
		return ab_error (err, 0, AB_E_INVALID,
		                 "exec: missing command (agentbox exec ID -- CMD)");
	for (; optind < argc; optind++)
		json_array_append_new (cmd, json_string (argv[optind]));
	if (o->detach && (o->interactive || o->tty))
		return ab_error (err, 0, AB_E_INVALID, "exec: -d excludes -i and -t");
	if (strspn (o->id, "0123456789abcdef") != strlen (o->id) || !*o->id)
		return ab_error (err, 0, AB_E_INVALID, "exec: '%s' is not a sandbox id", o->id);
	return 0;
}

/* One NDJSON event of the stream; returns the exit code once it is known,
 * -1 to go on, -2 on an error event. */
static int
write_output (const json_t *ev, ab_error_t *err)
{
	const char *type = json_string_value (json_object_get (ev, "type"));
	json_t *data = json_object_get (ev, "data"), *b64 = json_object_get (ev, "data_b64");
	int fd = strcmp (type, "stderr") == 0 ? 2 : 1;
	uint8_t *raw = NULL;
	size_t len = 0;

	if (data)
		return ab_write_all (fd, json_string_value (data), json_string_length (data));
	if (b64
	    && ab_base64_decode (json_string_value (b64), json_string_length (b64), &raw, &len)
	               == 0) {
		int r = ab_write_all (fd, raw, len);
		free (raw);
		return r;
	}
	return ab_error (err, 0, AB_E_SYSTEM, "malformed output event");
}

static int
handle_event (const json_t *ev, ab_error_t *err)
{
	const char *type = json_string_value (json_object_get (ev, "type"));

	if (!type)
		return ab_error (err, 0, AB_E_SYSTEM, "malformed event from the daemon"), -2;
	if (strcmp (type, "stdout") == 0 || strcmp (type, "stderr") == 0)
		return write_output (ev, err) < 0 ? -2 : -1;
	if (strcmp (type, "exit") == 0) {
		const char *e = json_string_value (json_object_get (ev, "exec_error"));
		if (e)
			fprintf (stderr, "agentbox: cannot execute the command: %s\n", e);
		return (int)json_integer_value (json_object_get (ev, "exit_code"));
	}
	if (strcmp (type, "error") == 0) {
		const char *m = json_string_value (
		        json_object_get (json_object_get (ev, "error"), "message"));
		ab_error (err, 0, AB_E_SYSTEM, "%s", m ? m : "error");
		return -2;
	}
	return -1; /* start, attach: nothing to show */
}

static int
stream_events (struct ab_client_s *c, ab_error_t *err)
{
	size_t cap = 1 << 16, len = 0;
	cleanup_free char *line = xmalloc (cap);
	int code = -1;

	while (code == -1) {
		char *nl;
		ssize_t n;
		while (code == -1 && (nl = memchr (line, '\n', len))) {
			json_t *ev = json_loadb (line, (size_t)(nl - line), JSON_ALLOW_NUL, NULL);
			code = ev ? handle_event (ev, err)
			          : (ab_error (err, 0, AB_E_SYSTEM, "malformed event"), -2);
			json_decref (ev);
			len -= (size_t)(nl + 1 - line);
			memmove (line, nl + 1, len);
		}
		if (code != -1)
			break;
		if (len == cap) {
			if (cap >= MAX_LINE)
				return ab_error (err, 0, AB_E_SYSTEM, "event line too long");
			line = xrealloc (line, cap *= 2);
		}
		n = ab_http_io_body_read (&c->io, line + len, cap - len, err);
		if (n <= 0)
			return n < 0 ? -1
			             : ab_error (err, 0, AB_E_SYSTEM,
			                         "the stream ended before the command exited");
		len += (size_t)n;
	}
	return code == -2 ? -1 : code;
}

int
ab_cli_exec_events (const char *host, const char *path, const json_t *req, ab_error_t *err)
{
	struct ab_client_s c;
	cleanup_free char *body = json_dumps (req, JSON_COMPACT);
	int code = -1;

	if (ab_client_open (&c, host, err) == 0
	    && ab_client_send (&c, "POST", path, "application/json", body, (long long)strlen (body),
	                       NULL, err)
	               == 0
	    && ab_client_head (&c, err) == 0)
		code = c.status >= 400 ? ab_client_fail (&c, err) : stream_events (&c, err);
	ab_client_close (&c);
	return code;
}

static int
exec_stream (const struct exec_opts_s *o, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/exec", o->id);

	return ab_cli_exec_events (o->host, path, o->req, err);
}

static int
exec_detach (const struct exec_opts_s *o, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/exec", o->id);
	json_t *resp;

	json_object_set_new (o->req, "detach", json_true ());
	resp = ab_client_call (o->host, "POST", path, o->req, NULL, err);
	if (!resp)
		return -1;
	printf ("%lld\n", (long long)json_integer_value (json_object_get (resp, "pid")));
	json_decref (resp);
	return 0;
}

/* --- interactive: WebSocket ---------------------------------------------- */

static int winch_pipe[2] = { -1, -1 };

static void
on_winch (int sig)
{
	char c = 'w';
	(void)sig;
	if (write (winch_pipe[1], &c, 1) < 0) {
		/* the pipe is full: a resize is already pending */
	}
}

static int
send_json (int fd, json_t *j)
{
	cleanup_free char *text = json_dumps (j, JSON_COMPACT);
	json_decref (j);
	return ab_ws_send (fd, AB_WS_OP_TEXT, text, strlen (text), true);
}

static void
send_resize (int fd)
{
	struct winsize ws;
	if (ioctl (STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row && ws.ws_col)
		send_json (fd, json_pack ("{s:s, s:i, s:i}", "type", "resize", "rows", ws.ws_row,
		                          "cols", ws.ws_col));
}

/* One message from the daemon: -1 to go on, else the exit code (or -2). */
static int
ws_message (struct ab_client_s *c, ab_error_t *err)
{
	struct ab_ws_msg_s m;
	int code = -1, r = ab_ws_recv (&c->io, false, &m, err);

	if (r <= 0)
		return r < 0 ? -2
		             : (ab_error (err, 0, AB_E_SYSTEM,
		                          "the session ended before the command exited"),
		                -2);
	if (m.opcode == AB_WS_OP_BINARY && m.len >= 1)
		ab_write_all (m.data[0] == AB_WS_STDERR ? 2 : 1, m.data + 1, m.len - 1);
	else if (m.opcode == AB_WS_OP_TEXT) {
		json_t *ev = json_loadb ((char *)m.data, m.len, JSON_ALLOW_NUL, NULL);
		code = ev ? handle_event (ev, err) : -1;
		json_decref (ev);
	} else if (m.opcode == AB_WS_OP_CLOSE)
		code = (ab_error (err, 0, AB_E_SYSTEM,
		                  "the session ended before the command exited"),
		        -2);
	else if (m.opcode == AB_WS_OP_PING)
		ab_ws_send (c->fd, AB_WS_OP_PONG, m.data, m.len, true);
	free (m.data);
	return code;
}

static int
stdin_ready (struct ab_client_s *c, bool *open)
{
	uint8_t buf[1 + 65536];
	ssize_t n = read (STDIN_FILENO, buf + 1, sizeof buf - 1);

	if (n < 0 && (errno == EINTR || errno == EAGAIN))
		return 0;
	if (n <= 0) {
		*open = false;
		return send_json (c->fd, json_pack ("{s:s}", "type", "close_stdin"));
	}
	buf[0] = AB_WS_STDIN;
	return ab_ws_send (c->fd, AB_WS_OP_BINARY, buf, (size_t)n + 1, true);
}

static int
ws_loop (struct ab_client_s *c, bool stdin_open, ab_error_t *err)
{
	int code = -1;

	while (code == -1) {
		struct pollfd p[3] = { { .fd = c->fd, .events = POLLIN },
			               { .fd = stdin_open ? STDIN_FILENO : -1, .events = POLLIN },
			               { .fd = winch_pipe[0], .events = POLLIN } };
		if (c->io.off < c->io.len) { /* already buffered: no poll */
			code = ws_message (c, err);
			continue;
		}
		if (poll (p, 3, -1) < 0) {
			if (errno == EINTR)
				continue;
			return ab_error (err, errno, AB_E_SYSTEM, "poll");
		}
		if (p[2].revents) {
			char junk[16];
			if (read (winch_pipe[0], junk, sizeof junk) > 0)
				send_resize (c->fd);
		}
		if (p[1].revents && stdin_ready (c, &stdin_open) < 0)
			return ab_error (err, errno, AB_E_SYSTEM, "send stdin");
		if (p[0].revents)
			code = ws_message (c, err);
	}
	return code == -2 ? -1 : code;
}

static int
exec_ws (const struct exec_opts_s *o, ab_error_t *err)
{
	struct ab_client_s c;
	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/exec/ws", o->id);
	struct termios saved, raw;
	bool raw_mode = o->tty && isatty (STDIN_FILENO) && tcgetattr (STDIN_FILENO, &saved) == 0;
	struct winsize ws;
	int code = -1;

	json_object_set_new (o->req, "stdin", json_boolean (o->interactive));
	json_object_set_new (o->req, "tty", json_boolean (o->tty));
	if (o->tty && ioctl (STDIN_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_row) {
		json_object_set_new (o->req, "rows", json_integer (ws.ws_row));
		json_object_set_new (o->req, "cols", json_integer (ws.ws_col));
	}
	if (pipe2 (winch_pipe, O_CLOEXEC | O_NONBLOCK) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	if (ab_client_ws_open (&c, o->host, path, 0, err) == 0
	    && send_json (c.fd, json_incref (o->req)) == 0) {
		if (raw_mode) {
			raw = saved;
			cfmakeraw (&raw);
			tcsetattr (STDIN_FILENO, TCSANOW, &raw);
			signal (SIGWINCH, on_winch);
		}
		code = ws_loop (&c, o->interactive, err);
		if (raw_mode)
			tcsetattr (STDIN_FILENO, TCSANOW, &saved);
	}
	ab_client_close (&c);
	return code;
}

int
ab_cmd_exec (int argc, char **argv)
{
	struct exec_opts_s o;
	ab_error_t err = AB_ERROR_INIT;
	int code;

	signal (SIGPIPE, SIG_IGN);
	if (parse_args (argc, argv, &o, &err) < 0)
		code = -1;
	else if (o.detach)
		code = exec_detach (&o, &err);
	else if (o.interactive || o.tty)
		code = exec_ws (&o, &err);
	else
		code = exec_stream (&o, &err);
	json_decref (o.req);
	if (code < 0) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	return code;
}
