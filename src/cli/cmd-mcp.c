/* `agentbox mcp [--host SOCKET] [--sandbox ID]`: the stdio transport of
 * MCP (newline-delimited JSON-RPC on stdin and stdout) as a thin relay to
 * the daemon's Streamable HTTP endpoint (POST /v1/mcp, or
 * /v1/sandboxes/ID/mcp when bound).  Every message is one POST carrying
 * the Mcp-Session-Id the daemon issued at initialize; the answer (if any)
 * is one line on stdout.  Nothing else is ever written to stdout; logs go
 * to stderr.  Requests after initialize run on threads of their own, so a
 * long sandbox_exec does not hold up a ping.  At EOF on stdin the session
 * is deleted (which ends its background processes) and the relay exits. */
#include "cli/cmd-mcp.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/fd.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"

/* The daemon refuses bodies over 8 MiB; a longer line is answered here
 * and never buffered whole. */
#define LINE_MAX_BYTES ((8U << 20) + 1)
#define MAX_RESPONSE   (64U << 20)
#define MAX_INFLIGHT   16
#define DRAIN_WAIT_S   10

static const char usage[] =
        "usage: agentbox mcp [--host SOCKET] [--sandbox ID]\n"
        "  An MCP server on stdin/stdout (for Claude Code, Codex, Cursor, ...), relayed to\n"
        "  the agentbox daemon. --sandbox binds it to one sandbox; without it the tools\n"
        "  take a sandbox_id and sandbox_create/sandbox_list/sandbox_destroy manage them.\n";

struct relay_s {
	const char *host;
	char *path;
	pthread_mutex_t lock; /* stdout, the session, inflight */
	pthread_cond_t idle;
	char session[64];
	char version[16];
	unsigned inflight;
	char *init_line;        /* the client's initialize, replayed after a lost session */
	pthread_mutex_t reinit; /* one re-initialize at a time */
};

struct job_s {
	struct relay_s *r;
	char *line;
	json_t *id; /* the request's id, NULL for a notification */
	bool parsed;
};

static void
emit (struct relay_s *r, json_t *msg)
{
	cleanup_free char *text = json_dumps (msg, JSON_COMPACT);
	size_t n = strlen (text);

	text = xrealloc (text, n + 2);
	text[n++] = '\n';
	pthread_mutex_lock (&r->lock);
	if (ab_write_all (STDOUT_FILENO, text, n) < 0) {
		/* Nobody reads our answers any more: nothing left to do. */
		ab_log (AB_LOG_ERROR, "stdout: %s", strerror (errno));
		_exit (1);
	}
	pthread_mutex_unlock (&r->lock);
	json_decref (msg);
}

static void
emit_error (struct relay_s *r, json_t *id, int code, const char *msg)
{
	emit (r, json_pack ("{s:s, s:O, s:{s:i, s:s}}", "jsonrpc", "2.0", "id",
	                    id ? id : json_null (), "error", "code", code, "message", msg));
}

/* The headers of every POST; the session sent goes to sent (if not NULL). */
static char *
headers (struct relay_s *r, bool with_session, char sent[64])
{
	const char *sid;
	char *h;

	pthread_mutex_lock (&r->lock);
	sid = with_session ? r->session : "";
	if (sent)
		strcpy (sent, sid);
	h = xasprintf ("Accept: application/json, text/event-stream\r\n%s%s%s%s%s%s",
	               sid[0] ? "Mcp-Session-Id: " : "", sid, sid[0] ? "\r\n" : "",
	               r->version[0] ? "MCP-Protocol-Version: " : "", r->version,
	               r->version[0] ? "\r\n" : "");
	pthread_mutex_unlock (&r->lock);
	return h;
}

/* One POST and its whole answer; c stays open for its head's fields. */
static int
post (struct relay_s *r, const char *line, bool with_session, char sent[64], struct ab_client_s *c,
      char **body, size_t *len, ab_error_t *err)
{
	cleanup_free char *extra = headers (r, with_session, sent);

	if (ab_client_open (c, r->host, err) < 0
	    || ab_client_send (c, "POST", r->path, "application/json", line,
	                       (long long)strlen (line), extra, err)
	               < 0
	    || ab_client_head (c, err) < 0
	    || ab_http_io_body_all (&c->io, MAX_RESPONSE, body, len, err) < 0) {
		ab_client_close (c);
		return -1;
	}
	return 0;
}

/* After initialize: keep the session id and the version the daemon chose. */
static void
note_session (struct relay_s *r, struct ab_client_s *c, const char *body, size_t len)
{
	size_t n;
	const char *sid = ab_http_io_field (&c->io, "mcp-session-id", &n);
	json_t *j = json_loadb (body, len, 0, NULL);
	const char *v = json_string_value (
	        json_object_get (json_object_get (j, "result"), "protocolVersion"));

	pthread_mutex_lock (&r->lock);
	if (sid && n < sizeof r->session) {
		memcpy (r->session, sid, n);
		r->session[n] = '\0';
	}
	if (v && strlen (v) < sizeof r->version)
		strcpy (r->version, v);
	pthread_mutex_unlock (&r->lock);
	json_decref (j);
}

/* A daemon answer that is not 200/202: pass a JSON-RPC error body on, or
 * say what happened in one of our own. */
static void
relay_failure (struct relay_s *r, json_t *id, bool parsed, int status, const char *body, size_t len)
{
	json_t *j = json_loadb (body, len, 0, NULL);
	json_t *e = json_object_get (j, "error");
	const char *msg = json_string_value (json_object_get (e, "message"));
	json_int_t code = json_integer_value (json_object_get (e, "code"));
	cleanup_free char *text = NULL;

	/* A notification gets no answer; a line that was not JSON gets -32700. */
	if (id || !parsed) {
		text = xasprintf ("agentbox daemon answered %d: %s", status,
		                  msg ? msg : "(no message)");
		if (!json_is_integer (json_object_get (e, "code")))
			code = status == 404 ? -32001 : -32603;
		emit_error (r, id, (int)code, json_object_get (j, "jsonrpc") && msg ? msg : text);
	}
	json_decref (j);
}

static bool
is_method (const char *line, const char *method)
{
	json_t *req = json_loads (line, 0, NULL);
	const char *m = json_string_value (json_object_get (req, "method"));
	bool yes = m && strcmp (m, method) == 0;

	json_decref (req);
	return yes;
}

/* The daemon forgot the session `lost` (it restarted, or the session sat
 * idle too long): start a new one with the client's own initialize, once
 * per lost session.  True when there is a new one to retry with. */
static bool
reinitialize (struct relay_s *r, const char *lost)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_client_s c;
	cleanup_free char *body = NULL;
	size_t len;
	bool again;

	pthread_mutex_lock (&r->reinit);
	pthread_mutex_lock (&r->lock);
	again = r->init_line && strcmp (r->session, lost) == 0;
	pthread_mutex_unlock (&r->lock);
	if (again && post (r, r->init_line, false, NULL, &c, &body, &len, &err) == 0) {
		if (c.status == 200)
			note_session (r, &c, body, len);
		ab_client_close (&c);
		free (body);
		body = NULL;
		if (post (r, "{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}", true,
		          NULL, &c, &body, &len, &err)
		    == 0)
			ab_client_close (&c);
		ab_log (AB_LOG_WARN, "the daemon had lost the MCP session: started a new one");
	}
	pthread_mutex_lock (&r->lock);
	again = r->session[0] && strcmp (r->session, lost) != 0;
	pthread_mutex_unlock (&r->lock);
	pthread_mutex_unlock (&r->reinit);
	return again;
}

/* One message to the daemon and its answer to stdout. */
static void
forward (struct relay_s *r, const char *line, json_t *id, bool parsed)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_client_s c;
	cleanup_free char *body = NULL;
	char sent[64];
	size_t len = 0;

	for (int attempt = 0;; attempt++) {
		if (post (r, line, true, sent, &c, &body, &len, &err) < 0) {
			ab_log_error (AB_LOG_WARN, &err, "relay to the daemon");
			if (id)
				emit_error (r, id, -32603, err.msg);
			return;
		}
		if (c.status != 404 || !sent[0] || attempt > 0 || !reinitialize (r, sent))
			break;
		ab_client_close (&c);
		free (body);
		body = NULL;
	}
	if (c.status == 200) {
		json_t *j = json_loadb (body, len, 0, NULL);
		if (!j && id)
			emit_error (r, id, -32603, "the agentbox daemon sent malformed JSON");
		else if (j) {
			if (is_method (line, "initialize"))
				note_session (r, &c, body, len);
			emit (r, j);
		}
	} else if (c.status != 202)
		relay_failure (r, id, parsed, c.status, body, len);
	ab_client_close (&c);
}

static void *
job_main (void *arg)
{
	struct job_s *j = arg;
	struct relay_s *r = j->r;

	forward (r, j->line, j->id, j->parsed);
	free (j->line);
	json_decref (j->id);
	free (j);
	pthread_mutex_lock (&r->lock);
	r->inflight--;
	pthread_cond_broadcast (&r->idle);
	pthread_mutex_unlock (&r->lock);
	return NULL;
}

/* Requests once the session exists go to a thread (at most MAX_INFLIGHT);
 * everything else (initialize, notifications, responses) is sent in order. */
static void
dispatch (struct relay_s *r, char *line)
{
	json_t *msg = json_loads (line, 0, NULL);
	json_t *id = json_is_object (msg) ? json_object_get (msg, "id") : NULL;
	bool request = id && json_object_get (msg, "method"), parsed = msg != NULL;
	struct job_s *j;
	pthread_t t;
	bool threaded;

	if (id)
		json_incref (id);
	if (request && is_method (line, "initialize")) {
		pthread_mutex_lock (&r->lock);
		free (r->init_line);
		r->init_line = xstrdup (line);
		pthread_mutex_unlock (&r->lock);
	}
	json_decref (msg);
	pthread_mutex_lock (&r->lock);
	threaded = request && r->session[0] && r->inflight < MAX_INFLIGHT;
	if (threaded)
		r->inflight++;
	pthread_mutex_unlock (&r->lock);
	if (!threaded) {
		forward (r, line, id, parsed);
		json_decref (id);
		free (line);
		return;
	}
	j = xcalloc (1, sizeof *j);
	*j = (struct job_s){ .r = r, .line = line, .id = id, .parsed = parsed };
	if (pthread_create (&t, NULL, job_main, j) != 0)
		job_main (j); /* here, then */
	else
		pthread_detach (t);
}

/* The next line of stdin without its newline: 1, 0 at EOF; a line longer
 * than LINE_MAX_BYTES is skipped to its end and reported with *too_long. */
static int
read_line (char **out, size_t *len, bool *too_long)
{
	size_t cap = 4096, n = 0;
	char *buf = xmalloc (cap);
	int ch;

	*too_long = false;
	while ((ch = getc_unlocked (stdin)) != EOF && ch != '\n') {
		if (n + 1 >= LINE_MAX_BYTES) {
			*too_long = true;
			continue;
		}
		if (n + 1 >= cap)
			buf = xrealloc (buf, cap *= 2);
		buf[n++] = (char)ch;
	}
	if (ch == EOF && n == 0 && !*too_long) {
		free (buf);
		return 0;
	}
	if (n && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
	*out = buf;
	*len = n;
	return 1;
}

static void
end_session (struct relay_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_client_s c;
	cleanup_free char *extra = NULL;

	if (!r->session[0])
		return;
	extra = headers (r, true, NULL);
	if (ab_client_open (&c, r->host, &err) < 0
	    || ab_client_send (&c, "DELETE", r->path, NULL, NULL, 0, extra, &err) < 0
	    || ab_client_head (&c, &err) < 0)
		ab_log_error (AB_LOG_WARN, &err, "ending the MCP session");
	ab_client_close (&c);
}

static void
drain (struct relay_s *r, int seconds)
{
	struct timespec until;

	clock_gettime (CLOCK_REALTIME, &until);
	until.tv_sec += seconds;
	pthread_mutex_lock (&r->lock);
	while (r->inflight && pthread_cond_timedwait (&r->idle, &r->lock, &until) == 0)
		;
	pthread_mutex_unlock (&r->lock);
}

/* "--NAME VALUE" or "--NAME=VALUE" at argv[*i]: the value, else NULL. */
static const char *
option (int argc, char **argv, int *i, const char *name)
{
	size_t n = strlen (name);

	if (strncmp (argv[*i], name, n) != 0)
		return NULL;
	if (argv[*i][n] == '=')
		return argv[*i] + n + 1;
	if (argv[*i][n] == '\0' && *i + 1 < argc)
		return argv[++*i];
	return NULL;
}

static int
parse_args (int argc, char **argv, const char **host, const char **sandbox)
{
	const char *v;

	*host = ab_client_take_host (&argc, argv);
	*sandbox = NULL;
	for (int i = 1; i < argc; i++) {
		if ((v = option (argc, argv, &i, "--sandbox")))
			*sandbox = v;
		else if ((v = option (argc, argv, &i, "--socket")))
			*host = v;
		else if (strcmp (argv[i], "--help") == 0 || strcmp (argv[i], "-h") == 0) {
			fputs (usage, stderr);
			return 1;
		} else {
			fprintf (stderr, "agentbox mcp: unknown argument '%s'\n%s", argv[i], usage);
			return -1;
		}
	}
	return 0;
}

/* SIGTERM, SIGINT, SIGHUP (a client that stops us rather than closing
 * stdin): end the session, its processes with it, then exit. */
static void
stop_signals (sigset_t *set)
{
	sigemptyset (set);
	sigaddset (set, SIGTERM);
	sigaddset (set, SIGINT);
	sigaddset (set, SIGHUP);
}

static void *
signal_main (void *arg)
{
	struct relay_s *r = arg;
	sigset_t set;
	int sig;

	stop_signals (&set);
	if (sigwait (&set, &sig) == 0) {
		end_session (r);
		_exit (128 + sig);
	}
	return NULL;
}

static void
watch_signals (struct relay_s *r)
{
	sigset_t set;
	pthread_t t;

	stop_signals (&set);
	/* Blocked before any other thread starts, so only sigwait takes them. */
	pthread_sigmask (SIG_BLOCK, &set, NULL);
	if (pthread_create (&t, NULL, signal_main, r) == 0)
		pthread_detach (t);
}

int
ab_cmd_mcp (int argc, char **argv)
{
	struct relay_s r = { 0 };
	const char *sandbox;
	int rc = parse_args (argc, argv, &r.host, &sandbox);

	if (rc)
		return rc > 0 ? 0 : AB_EXIT_FAILED;
	if (sandbox && (!sandbox[0] || strchr (sandbox, '/') || strchr (sandbox, '?'))) {
		fprintf (stderr, "agentbox mcp: --sandbox '%s' is not a sandbox id\n", sandbox);
		return AB_EXIT_FAILED;
	}
	ab_log_set_program ("agentbox mcp");
	signal (SIGPIPE, SIG_IGN);
	pthread_mutex_init (&r.lock, NULL);
	pthread_cond_init (&r.idle, NULL);
	pthread_mutex_init (&r.reinit, NULL);
	r.path = sandbox ? xasprintf ("/v1/sandboxes/%s/mcp", sandbox) : xstrdup ("/v1/mcp");
	watch_signals (&r);
	for (;;) {
		char *line = NULL;
		size_t len;
		bool too_long;

		if (read_line (&line, &len, &too_long) == 0)
			break;
		if (too_long)
			emit_error (&r, NULL, -32600, "message larger than 8 MiB");
		if (too_long || strspn (line, " \t") == len) {
			free (line);
			continue;
		}
		dispatch (&r, line);
	}
	/* The client is gone: let the answers in flight arrive (bounded),
	 * then end the session, and its processes with it (which also makes
	 * a request still waiting on one return). */
	drain (&r, DRAIN_WAIT_S);
	end_session (&r);
	drain (&r, 2);
	free (r.path);
	free (r.init_line);
	return 0;
}
