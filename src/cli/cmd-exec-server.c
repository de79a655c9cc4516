/* `agentbox exec-server (--sandbox ID | --create [create options] [--keep])
 *                       (--stdio | --listen ws://127.0.0.1:PORT [--token-file F])`
 *
 * Serves the Codex exec-server protocol for an agentbox sandbox by relaying
 * whole messages to the daemon's exec-server endpoint: --stdio speaks
 * newline-delimited JSON on stdin/stdout (Codex's environments.toml
 * `program =`), --listen a WebSocket (exec-server-listen.c).  With
 * --create each client connection gets a sandbox of its own, removed when
 * the connection ends unless --keep. */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/exec-server-cli.h"
#include "net/ws-io.h"
#include "spec/spec.h"

static const char usage[] = "exec-server (--sandbox ID | --create [create options] [--keep])\n"
                            "       (--stdio | --listen ws://127.0.0.1:PORT [--token-file FILE] "
                            "[--listen-non-loopback]) [--host SOCKET]";

int
ab_xs_cli_daemon_recv (struct ab_client_s *d, char **text, size_t *len, ab_error_t *err)
{
	for (;;) {
		struct ab_ws_msg_s m;
		int r = ab_ws_recv (&d->io, false, &m, err);
		if (r <= 0)
			return r;
		if (m.opcode == AB_WS_OP_TEXT || m.opcode == AB_WS_OP_BINARY) {
			*text = (char *)m.data;
			*len = m.len;
			return 1;
		}
		if (m.opcode == AB_WS_OP_PING)
			ab_ws_send (d->fd, AB_WS_OP_PONG, m.data, m.len, true);
		free (m.data);
		if (m.opcode == AB_WS_OP_CLOSE)
			return 0;
	}
}

/* `agentbox create ARGS` as a child: its stdout is the new id. */
static char *
create_sandbox (const struct ab_xs_cli_s *o, ab_error_t *err)
{
	cleanup_strv char **argv = NULL;
	char id[128];
	size_t n = 0;
	int p[2], status;
	pid_t pid;
	ssize_t r;

	ab_strv_push (&argv, "agentbox");
	ab_strv_push (&argv, "create");
	if (o->host) {
		ab_strv_push (&argv, "--host");
		ab_strv_push (&argv, o->host);
	}
	for (char **a = o->create_args; *a; a++)
		ab_strv_push (&argv, *a);
	if (pipe2 (p, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe"), NULL;
	pid = fork ();
	if (pid < 0) {
		close (p[0]);
		close (p[1]);
		return ab_error (err, errno, AB_E_SYSTEM, "fork"), NULL;
	}
	if (pid == 0) {
		dup2 (p[1], STDOUT_FILENO);
		execv ("/proc/self/exe", argv);
		_exit (127);
	}
	close (p[1]);
	while (n < sizeof id - 1 && (r = read (p[0], id + n, sizeof id - 1 - n)) != 0) {
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		n += (size_t)r;
	}
	close (p[0]);
	id[n] = 0;
	id[strcspn (id, "\n")] = 0;
	while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0 || !id[0])
		return ab_error (err, 0, AB_E_SYSTEM,
		                 "agentbox create failed (its message is above)"),
		       NULL;
	return xstrdup (id);
}

char *
ab_xs_cli_begin (const struct ab_xs_cli_s *o, bool *made, ab_error_t *err)
{
	*made = false;
	if (!o->create_args)
		return xstrdup (o->sandbox);
	*made = true;
	return create_sandbox (o, err);
}

void
ab_xs_cli_end (const struct ab_xs_cli_s *o, const char *id, bool made)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *path = NULL;
	json_t *r;

	if (!made || !id)
		return;
	if (o->keep) {
		fprintf (stderr, "agentbox exec-server: kept sandbox %s\n", id);
		return;
	}
	path = xasprintf ("/v1/sandboxes/%s?force=1", id);
	r = ab_client_call (o->host, "DELETE", path, NULL, NULL, &err);
	if (!r && err.kind != AB_E_NONE)
		fprintf (stderr, "agentbox exec-server: remove sandbox %s: %s\n", id, err.msg);
	json_decref (r);
}

/* --- --stdio ------------------------------------------------------------ */

/* Complete lines of *buf go to the daemon as text messages. */
static int
send_lines (struct ab_client_s *d, char *buf, size_t *len)
{
	size_t start = 0;

	for (size_t i = 0; i < *len; i++) {
		if (buf[i] != '\n')
			continue;
		size_t n = i - start;
		if (n > 0 && buf[start + n - 1] == '\r')
			n--;
		if (n > 0 && ab_ws_send (d->fd, AB_WS_OP_TEXT, buf + start, n, true) < 0)
			return -1;
		start = i + 1;
	}
	memmove (buf, buf + start, *len - start);
	*len -= start;
	return 0;
}

static int
stdio_relay (struct ab_client_s *d, ab_error_t *err)
{
	size_t cap = 1 << 16, len = 0;
	cleanup_free char *buf = xmalloc (cap);
	bool in_open = true;

	for (;;) {
		struct pollfd p[2] = { { .fd = d->fd, .events = POLLIN },
			               { .fd = in_open ? STDIN_FILENO : -1, .events = POLLIN } };
		if (d->io.off == d->io.len && poll (p, 2, -1) < 0) {
			if (errno == EINTR)
				continue;
			return ab_error (err, errno, AB_E_SYSTEM, "poll");
		}
		if (d->io.off < d->io.len || (p[0].revents & (POLLIN | POLLHUP | POLLERR))) {
			char *text;
			size_t n;
			int r = ab_xs_cli_daemon_recv (d, &text, &n, err);
			if (r <= 0)
				return r;
			/* One message per line: JSON text has no raw newline. */
			int w = ab_write_all (STDOUT_FILENO, text, n);
			if (w == 0)
				w = ab_write_all (STDOUT_FILENO, "\n", 1);
			free (text);
			if (w < 0)
				return 0; /* the client went away */
			continue;
		}
		if (p[1].revents & (POLLIN | POLLHUP | POLLERR)) {
			ssize_t r;
			if (len == cap) {
				if (cap >= AB_XS_CLI_MAX_MESSAGE)
					return ab_error (err, 0, AB_E_LIMIT,
					                 "a line of more than %u MiB on stdin",
					                 AB_XS_CLI_MAX_MESSAGE >> 20);
				cap *= 2;
				buf = xrealloc (buf, cap);
			}
			r = read (STDIN_FILENO, buf + len, cap - len);
			if (r < 0 && errno == EINTR)
				continue;
			if (r <= 0) {
				/* stdin closed: the client is done; the server ends
				 * its processes when the WebSocket closes. */
				in_open = false;
				ab_ws_send (d->fd, AB_WS_OP_CLOSE, "\x03\xe8", 2, true);
				continue;
			}
			len += (size_t)r;
			if (send_lines (d, buf, &len) < 0)
				return ab_error (err, errno, AB_E_SYSTEM, "write to the daemon");
		}
	}
}

static int
serve_stdio (const struct ab_xs_cli_s *o, ab_error_t *err)
{
	struct ab_client_s d = { .fd = -1 };
	bool made;
	cleanup_free char *id = ab_xs_cli_begin (o, &made, err);
	cleanup_free char *path = NULL;
	int rc = -1;

	if (!id)
		return -1;
	path = xasprintf ("/v1/sandboxes/%s/exec-server", id);
	if (ab_client_ws_open (&d, o->host, path, AB_XS_CLI_MAX_MESSAGE, err) == 0)
		rc = stdio_relay (&d, err);
	ab_client_close (&d);
	ab_xs_cli_end (o, id, made);
	return rc;
}

/* --- options ------------------------------------------------------------ */

static int
parse (int argc, char **argv, struct ab_xs_cli_s *o, bool *stdio_mode, ab_error_t *err)
{
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (strcmp (a, "--stdio") == 0)
			*stdio_mode = true;
		else if (strcmp (a, "--keep") == 0)
			o->keep = true;
		else if (strcmp (a, "--listen-non-loopback") == 0)
			o->non_loopback = true;
		else if ((strcmp (a, "--sandbox") == 0 || strcmp (a, "--listen") == 0
		          || strcmp (a, "--token-file") == 0)
		         && i + 1 < argc) {
			const char **slot = a[2] == 's'   ? &o->sandbox
			                    : a[2] == 'l' ? &o->listen
			                                  : &o->token_file;
			*slot = argv[++i];
		} else if (strcmp (a, "--create") == 0) {
			/* Everything after --create that is not ours is create's. */
			cleanup_strv char **rest = NULL;
			for (i++; i < argc; i++) {
				if (strcmp (argv[i], "--stdio") == 0
				    || strcmp (argv[i], "--keep") == 0
				    || strcmp (argv[i], "--listen-non-loopback") == 0
				    || ((strcmp (argv[i], "--listen") == 0
				         || strcmp (argv[i], "--token-file") == 0)
				        && i + 1 < argc)) {
					i--;
					break;
				}
				ab_strv_push (&rest, argv[i]);
			}
			if (!rest)
				rest = xcalloc (1, sizeof *rest);
			o->create_args = steal_pointer (&rest);
		} else
			return ab_error (err, 0, AB_E_INVALID, "unknown option %s", a);
	}
	if (!o->sandbox == !o->create_args)
		return ab_error (err, 0, AB_E_INVALID, "give --sandbox ID or --create");
	if (*stdio_mode == !!o->listen)
		return ab_error (err, 0, AB_E_INVALID, "give --stdio or --listen URL");
	if (o->token_file && !o->listen)
		return ab_error (err, 0, AB_E_INVALID, "--token-file goes with --listen");
	return 0;
}

int
ab_cmd_exec_server (int argc, char **argv)
{
	struct ab_xs_cli_s o = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	bool stdio_mode = false;
	int rc;

	o.host = ab_client_take_host (&argc, argv);
	if (parse (argc, argv, &o, &stdio_mode, &err) < 0) {
		fprintf (stderr, "agentbox exec-server: %s\nusage: agentbox %s\n", err.msg, usage);
		ab_cleanup_strvp (&o.create_args);
		return 2;
	}
	signal (SIGPIPE, SIG_IGN);
	rc = stdio_mode ? serve_stdio (&o, &err) : ab_xs_cli_listen (&o, &err);
	ab_cleanup_strvp (&o.create_args);
	if (rc < 0) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	return 0;
}
