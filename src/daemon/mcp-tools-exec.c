/* sandbox_exec and sandbox_process: OpenClaw's exec/process semantics on
 * the agent's process service.
 *
 * sandbox_exec starts the process with the REST API's request parser
 * (ab_exec_req_parse: the sandbox's environment, user, workdir, grace) and
 * follows it on the request's thread for yield_ms; a run that ends by then
 * answers {exit_code, stdout, stderr, truncated}, one that does not is
 * handed to a reader thread and answers {status: "running", session_id,
 * tail}.  sandbox_process then reads that process's bounded log by byte
 * offset, writes its stdin, types keys into its pty and signals its
 * process group (the agent signals the group, not just the pid). */
#include "daemon/mcp-internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define KILL_WAIT_MS  2000
#define COMMAND_SHOWN 200

/* --- sandbox_exec ------------------------------------------------------- */

struct exec_args_s {
	const char *command, *workdir, *in;
	json_t *argv, *env, *timeout;
	int pty, background;
	json_int_t yield_ms;
};

static int
exec_args (const json_t *a, struct exec_args_s *x, ab_error_t *err)
{
	json_error_t je;

	memset (x, 0, sizeof *x);
	x->yield_ms = AB_MCP_YIELD_MS;
	if (json_unpack_ex ((json_t *)a, &je, JSON_STRICT,
	                    "{s?s, s?o, s?s, s?o, s?o, s?b, s?b, s?I, s?s}", "command", &x->command,
	                    "argv", &x->argv, "workdir", &x->workdir, "env", &x->env, "timeout",
	                    &x->timeout, "pty", &x->pty, "background", &x->background, "yield_ms",
	                    &x->yield_ms, "stdin", &x->in)
	    < 0)
		return ab_error (err, 0, AB_E_INVALID, "sandbox_exec: %s", je.text);
	if (!x->command == !x->argv)
		return ab_error (err, 0, AB_E_INVALID,
		                 "sandbox_exec needs exactly one of 'command' and 'argv'");
	if (x->command && !x->command[0])
		return ab_error (err, 0, AB_E_INVALID, "'command' must not be empty");
	if (x->timeout && (!json_is_number (x->timeout) || json_number_value (x->timeout) <= 0))
		return ab_error (err, 0, AB_E_INVALID,
		                 "'timeout' must be a positive number of seconds");
	if (x->yield_ms < 0 || x->yield_ms > AB_MCP_YIELD_MAX_MS)
		return ab_error (err, 0, AB_E_INVALID, "'yield_ms' must be in [0, %d]",
		                 AB_MCP_YIELD_MAX_MS);
	return 0;
}

/* The REST API's exec request for the same run. */
static json_t *
rest_request (const struct exec_args_s *x)
{
	json_t *j = json_pack ("{s:b, s:b}", "tty", x->pty, "stdin",
	                       x->pty || x->background || x->in != NULL);

	if (x->command)
		json_object_set_new (j, "cmd", json_string (x->command));
	else
		json_object_set (j, "cmd", x->argv);
	if (x->env)
		json_object_set (j, "env", x->env);
	if (x->workdir)
		json_object_set_new (j, "cwd", json_string (x->workdir));
	if (x->timeout)
		json_object_set (j, "timeout", x->timeout);
	return j;
}

static char *
command_text (const struct exec_args_s *x)
{
	char *s;

	if (x->command)
		s = xstrdup (x->command);
	else {
		s = xstrdup ("");
		size_t i;
		json_t *v;
		json_array_foreach (x->argv, i, v)
		{
			char *t = xasprintf ("%s%s%s", s, i ? " " : "", json_string_value (v));
			free (s);
			s = t;
		}
	}
	if (strlen (s) > COMMAND_SHOWN)
		strcpy (s + COMMAND_SHOWN - 3, "...");
	return s;
}

static const char *
status_of (const struct ab_mcp_job_s *j)
{
	if (j->running)
		return "running";
	if (j->error)
		return "failed";
	return j->exit.timed_out ? "timed_out" : "exited";
}

/* The finished run's answer (under s->lock). */
static json_t *
exited_result (const struct ab_mcp_job_s *j, const struct exec_args_s *x)
{
	size_t n_out, n_err;
	cleanup_free char *out = ab_mcp_utf8 (j->out[0].buf, j->out[0].len, &n_out);
	cleanup_free char *errs = ab_mcp_utf8 (j->out[1].buf, j->out[1].len, &n_err);
	bool trunc = j->out[0].total > j->out[0].len || j->out[1].total > j->out[1].len;
	int code = ab_exit_code (&j->exit);
	int sig = WIFSIGNALED (j->exit.wait_status) ? WTERMSIG (j->exit.wait_status) : 0;
	json_t *st = json_pack ("{s:s, s:i, s:i, s:b, s:s%, s:s%, s:b, s:I, s:I, s:I}", "status",
	                        status_of (j), "exit_code", code, "signal", sig, "timed_out",
	                        j->exit.timed_out, "stdout", out, n_out, "stderr", errs, n_err,
	                        "truncated", trunc, "stdout_bytes", (json_int_t)j->out[0].total,
	                        "stderr_bytes", (json_int_t)j->out[1].total, "duration_ms",
	                        (json_int_t)(j->ended_ms - j->started_ms));
	cleanup_free char *tail = NULL;
	bool failed = j->exit.timed_out || j->exit.exec_errno;

	if (j->exit.exec_errno)
		json_object_set_new (st, "exec_error", json_string (strerror (j->exit.exec_errno)));
	if (j->exit.timed_out)
		tail = xasprintf ("[timed out after %gs: the process group was killed]",
		                  x->timeout ? json_number_value (x->timeout)
		                             : (double)j->b->spec.limits.timeout_ms / 1000);
	else if (j->exit.exec_errno)
		tail = xasprintf ("[could not execute: %s]", strerror (j->exit.exec_errno));
	else
		tail = xasprintf ("[exit code %d]", code);
	cleanup_free char *text =
	        xasprintf ("%s%s%s%s%s%s", out, out[0] && out[strlen (out) - 1] != '\n' ? "\n" : "",
	                   errs[0] ? "[stderr]\n" : "", errs,
	                   errs[0] && errs[strlen (errs) - 1] != '\n' ? "\n" : "", tail);
	if (trunc) {
		char *t = xasprintf ("%s [output truncated at 1 MiB per stream]", text);
		free (text);
		text = t;
	}
	json_t *res = ab_mcp_result (st, text);
	json_object_set_new (res, "isError", json_boolean (failed));
	return res;
}

static json_t *
running_result (struct ab_mcp_job_s *j)
{
	uint64_t start;
	size_t len;
	cleanup_free char *raw =
	        ab_mcp_job_log (j, j->log_total > AB_MCP_TAIL ? j->log_total - AB_MCP_TAIL : 0,
	                        AB_MCP_TAIL, &start, &len);
	size_t n;
	cleanup_free char *tail = ab_mcp_utf8 (raw, len, &n);
	cleanup_free char *text =
	        xasprintf ("still running as %s (pid %u); follow it with sandbox_process poll%s%s",
	                   j->id, j->pid, tail[0] ? "; output so far:\n" : "", tail);

	return ab_mcp_result (json_pack ("{s:s, s:s, s:i, s:s%}", "status", "running", "session_id",
	                                 j->id, "pid", (int)j->pid, "tail", tail, n),
	                      text);
}

static struct ab_mcp_job_s *
job_new (struct ab_mcp_call_s *call, const struct exec_args_s *x, ab_agent_conn_t *c,
         const struct ab_agent_proc_s *p)
{
	struct ab_mcp_job_s *j = xcalloc (1, sizeof *j);

	j->refs = 1; /* the creator's */
	ab_box_ref (call->d, call->b);
	j->b = call->b;
	j->c = c;
	j->p = *p;
	j->pid = p->pid;
	j->command = command_text (x);
	if (call->rpc_id)
		j->rpc_id = json_dumps (call->rpc_id, JSON_COMPACT | JSON_ENCODE_ANY);
	j->tty = x->pty;
	j->stdin_open = x->pty || x->background || x->in != NULL;
	j->running = j->capturing = true;
	j->started_ms = (int64_t)ab_mono_ms ();
	return j;
}

/* Its stdin: the text, then closed unless the process stays interactive. */
static int
feed_stdin (struct ab_mcp_job_s *j, const struct exec_args_s *x, ab_error_t *err)
{
	if (x->in && x->in[0]
	    && ab_agent_proc_write_stdin (j->c, j->pid, x->in, strlen (x->in), err) < 0)
		return -1;
	if (x->in && !x->pty && !x->background) {
		j->stdin_open = false;
		return ab_agent_proc_close_stdin (j->c, j->pid, err);
	}
	return 0;
}

/* Follow the started job; the answer. */
static json_t *
follow (struct ab_mcp_call_s *call, struct ab_mcp_job_s *j, const struct exec_args_s *x,
        ab_error_t *err)
{
	struct ab_mcp_session_s *s = call->s;
	int64_t deadline = (int64_t)ab_mono_ms () + (x->background ? 0 : x->yield_ms);
	int rc = ab_mcp_job_pump (s, j, deadline);
	bool ended;
	json_t *res = NULL;

	pthread_mutex_lock (&s->lock);
	ended = s->ended;
	pthread_mutex_unlock (&s->lock);
	if (rc == 0 && ended) {
		/* DELETE came while we waited: the process goes with the session. */
		ab_agent_proc_signal (j->c, j->pid, SIGKILL, err);
		ab_error_clear (err);
		rc = ab_mcp_job_pump (s, j, (int64_t)ab_mono_ms () + 5000);
	}
	if (rc == 0) {
		if (ab_mcp_job_background (call->d, s, j, err) < 0) {
			ab_agent_proc_signal (j->c, j->pid, SIGKILL, err);
			goto finish;
		}
		pthread_mutex_lock (&s->lock);
		res = running_result (j);
		pthread_mutex_unlock (&s->lock);
		return res; /* the reader thread gives back the exec slot */
	}
	pthread_mutex_lock (&s->lock);
	if (rc > 0)
		res = exited_result (j, x);
	else
		ab_error (err, 0, AB_E_SYSTEM, "%s", j->error ? j->error : "lost the process");
	pthread_mutex_unlock (&s->lock);
finish:
	ab_mcp_job_drop (call->d, s, j);
	ab_box_exec_end (call->d, call->b);
	return res;
}

json_t *
ab_mcp_tool_exec (struct ab_mcp_call_s *call, ab_error_t *err)
{
	struct exec_args_s x;
	struct ab_exec_req_s req = { 0 };
	struct ab_agent_proc_s p;
	struct ab_mcp_job_s *j;
	ab_agent_conn_t *c = NULL;
	json_t *rest, *res;

	if (exec_args (call->args, &x, err) < 0)
		return NULL;
	rest = rest_request (&x);
	if (ab_exec_req_parse (call->b, rest, &req, err) < 0) {
		json_decref (rest);
		ab_exec_req_free (&req);
		return NULL;
	}
	json_decref (rest);
	if (ab_box_exec_begin (call->d, call->b, err) < 0) {
		ab_exec_req_free (&req);
		return NULL;
	}
	if (!(c = ab_box_connect (call->d, call->b, err))
	    || ab_agent_proc_start (c, &req.ps, &p, err) < 0) {
		ab_agent_close (c);
		ab_exec_req_free (&req);
		ab_box_exec_end (call->d, call->b);
		return NULL;
	}
	ab_exec_req_free (&req);
	ab_metrics_inc ("execs");
	j = job_new (call, &x, c, &p);
	if (ab_mcp_job_add (call->s, j, err) < 0 || feed_stdin (j, &x, err) < 0) {
		ab_error_t kerr = AB_ERROR_INIT;
		ab_agent_proc_signal (c, p.pid, SIGKILL, &kerr);
		ab_mcp_job_drop (call->d, call->s, j);
		ab_mcp_job_put (call->s, j);
		ab_box_exec_end (call->d, call->b);
		return NULL;
	}
	res = follow (call, j, &x, err);
	ab_mcp_job_put (call->s, j);
	return res;
}

/* --- sandbox_process ---------------------------------------------------- */

struct proc_args_s {
	const char *action, *id, *data;
	int eof;
	json_t *keys, *signal;
	json_int_t offset, limit, wait_ms;
	bool has_offset;
};

static json_t *
job_summary (const struct ab_mcp_job_s *j)
{
	json_t *o = json_pack (
	        "{s:s, s:i, s:s, s:s, s:b, s:I, s:I}", "session_id", j->id, "pid", (int)j->pid,
	        "command", j->command, "status", status_of (j), "pty", j->tty, "output_bytes",
	        (json_int_t)j->log_total, "runtime_ms",
	        (json_int_t)((j->running ? (int64_t)ab_mono_ms () : j->ended_ms) - j->started_ms));
	if (!j->running && !j->error)
		json_object_set_new (o, "exit_code", json_integer (ab_exit_code (&j->exit)));
	return o;
}

static json_t *
do_list (struct ab_mcp_call_s *call)
{
	struct ab_mcp_session_s *s = call->s;
	json_t *arr = json_array ();
	cleanup_free char *text = xstrdup ("");

	pthread_mutex_lock (&s->lock);
	for (struct ab_mcp_job_s *j = s->jobs; j; j = j->next) {
		if (j->b != call->b || !j->background)
			continue;
		json_array_insert_new (arr, 0, job_summary (j));
		char *t = xasprintf ("%s%s pid %u %s: %s\n", text, j->id, j->pid, status_of (j),
		                     j->command);
		free (text);
		text = t;
	}
	pthread_mutex_unlock (&s->lock);
	return ab_mcp_result (json_pack ("{s:s, s:o}", "action", "list", "sessions", arr),
	                      text[0] ? text : "no processes");
}

static void
put_status (json_t *o, const struct ab_mcp_job_s *j)
{
	json_object_set_new (o, "status", json_string (status_of (j)));
	if (!j->running && !j->error) {
		json_object_set_new (o, "exit_code", json_integer (ab_exit_code (&j->exit)));
		json_object_set_new (o, "signal",
		                     json_integer (WIFSIGNALED (j->exit.wait_status)
		                                           ? WTERMSIG (j->exit.wait_status)
		                                           : 0));
	}
}

/* Wait (bounded) under s->lock until j has output past off or has ended. */
static void
wait_for (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j, uint64_t off, json_int_t ms)
{
	struct timespec until;

	if (ms <= 0)
		return;
	clock_gettime (CLOCK_REALTIME, &until);
	until.tv_sec += ms / 1000;
	until.tv_nsec += (ms % 1000) * 1000000;
	if (until.tv_nsec >= 1000000000) {
		until.tv_sec++;
		until.tv_nsec -= 1000000000;
	}
	while (j->running && j->log_total <= off
	       && pthread_cond_timedwait (&s->cond, &s->lock, &until) == 0)
		;
}

static json_t *
do_read (struct ab_mcp_call_s *call, struct ab_mcp_job_s *j, const struct proc_args_s *a, bool poll)
{
	struct ab_mcp_session_s *s = call->s;
	size_t limit =
	        a->limit > 0 && a->limit < AB_MCP_OUTPUT_CAP ? (size_t)a->limit : AB_MCP_OUTPUT_CAP;
	uint64_t off, start;
	size_t len;
	json_t *o;

	pthread_mutex_lock (&s->lock);
	off = a->has_offset ? (uint64_t)a->offset : poll ? j->poll_off : 0;
	if (poll)
		wait_for (s, j, off, a->wait_ms);
	cleanup_free char *raw = ab_mcp_job_log (j, off, limit, &start, &len);
	if (poll)
		j->poll_off = start + len;
	size_t n;
	cleanup_free char *text = ab_mcp_utf8 (raw, len, &n);
	o = json_pack ("{s:s, s:s, s:s%, s:I, s:I, s:I, s:b}", "action", a->action, "session_id",
	               j->id, "output", text, n, "offset", (json_int_t)start, "next_offset",
	               (json_int_t)(start + len), "dropped",
	               (json_int_t)(start > off ? start - off : 0), "more",
	               j->log_total > start + len);
	put_status (o, j);
	cleanup_free char *shown = xasprintf (
	        "%s%s[%s%s]", text, text[0] && text[strlen (text) - 1] != '\n' ? "\n" : "",
	        status_of (j), j->log_total > start + len ? "; more output: poll again" : "");
	pthread_mutex_unlock (&s->lock);
	return ab_mcp_result (o, shown);
}

/* tmux-style key names (send-keys) as the bytes a terminal sends. */
static const struct {
	const char *name, *bytes;
} keys[] = {
	{ "Enter", "\r" },       { "Return", "\r" },      { "Tab", "\t" },
	{ "BTab", "\x1b[Z" },    { "Escape", "\x1b" },    { "Esc", "\x1b" },
	{ "Space", " " },        { "BSpace", "\x7f" },    { "Backspace", "\x7f" },
	{ "Up", "\x1b[A" },      { "Down", "\x1b[B" },    { "Right", "\x1b[C" },
	{ "Left", "\x1b[D" },    { "Home", "\x1b[H" },    { "End", "\x1b[F" },
	{ "PageUp", "\x1b[5~" }, { "PPage", "\x1b[5~" },  { "PageDown", "\x1b[6~" },
	{ "NPage", "\x1b[6~" },  { "Delete", "\x1b[3~" }, { "DC", "\x1b[3~" },
	{ "Insert", "\x1b[2~" }, { "IC", "\x1b[2~" },     { "F1", "\x1bOP" },
	{ "F2", "\x1bOQ" },      { "F3", "\x1bOR" },      { "F4", "\x1bOS" },
	{ "F5", "\x1b[15~" },    { "F6", "\x1b[17~" },    { "F7", "\x1b[18~" },
	{ "F8", "\x1b[19~" },    { "F9", "\x1b[20~" },    { "F10", "\x1b[21~" },
	{ "F11", "\x1b[23~" },   { "F12", "\x1b[24~" },
};

/* One key: a name above, C-x (control), M-x (escape prefix), else literal. */
static void
key_bytes (const char *k, char **buf, size_t *len)
{
	char one[2] = { 0 };
	const char *add = k;

	for (size_t i = 0; i < sizeof keys / sizeof *keys; i++)
		if (strcmp (k, keys[i].name) == 0)
			add = keys[i].bytes;
	if (add == k && strncmp (k, "M-", 2) == 0 && k[2]) {
		key_bytes ("Escape", buf, len);
		key_bytes (k + 2, buf, len);
		return;
	}
	if (add == k && strncmp (k, "C-", 2) == 0 && k[2] && !k[3]) {
		char ch = k[2];
		if (ch >= 'a' && ch <= 'z')
			ch = (char)(ch - 'a' + 'A');
		one[0] = ch == '?' ? 0x7f : (char)(ch & 0x1f);
		add = one;
		*buf = xrealloc (*buf, *len + 1);
		(*buf)[(*len)++] = one[0];
		return;
	}
	*buf = xrealloc (*buf, *len + strlen (add));
	memcpy (*buf + *len, add, strlen (add));
	*len += strlen (add);
}

static json_t *
do_write (struct ab_mcp_call_s *call, struct ab_mcp_job_s *j, const struct proc_args_s *a,
          ab_error_t *err)
{
	cleanup_free char *buf = NULL;
	size_t len = 0;
	ab_agent_conn_t *c;
	int rc = 0;

	if (strcmp (a->action, "write") == 0) {
		if (!a->data && !a->eof)
			return ab_error (err, 0, AB_E_INVALID, "write needs 'data' (or 'eof')"),
			       NULL;
		buf = xstrdup (a->data ? a->data : "");
		len = strlen (buf);
	} else {
		size_t i;
		json_t *k;
		if (!json_is_array (a->keys) || json_array_size (a->keys) == 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "send_keys needs 'keys', an array of key names or text"),
			       NULL;
		json_array_foreach (a->keys, i, k)
		{
			if (!json_is_string (k))
				return ab_error (err, 0, AB_E_INVALID,
				                 "'keys[%zu]' must be a string", i),
				       NULL;
			key_bytes (json_string_value (k), &buf, &len);
		}
	}
	pthread_mutex_lock (&call->s->lock);
	bool open = j->stdin_open;
	if (a->eof)
		j->stdin_open = false;
	pthread_mutex_unlock (&call->s->lock);
	if (!open)
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "%s has no open stdin (start it with pty or background)", j->id),
		       NULL;
	if (!(c = ab_box_connect (call->d, j->b, err)))
		return NULL;
	if (len)
		rc = ab_agent_proc_write_stdin (c, j->pid, buf, len, err);
	if (rc == 0 && a->eof)
		rc = ab_agent_proc_close_stdin (c, j->pid, err);
	ab_agent_close (c);
	if (rc < 0)
		return NULL;
	return ab_mcp_result_json (json_pack ("{s:s, s:s, s:I}", "action", a->action, "session_id",
	                                      j->id, "written", (json_int_t)len));
}

static json_t *
do_kill (struct ab_mcp_call_s *call, struct ab_mcp_job_s *j, const struct proc_args_s *a,
         ab_error_t *err)
{
	struct ab_mcp_session_s *s = call->s;
	int sig = SIGKILL;
	json_t *o;

	if (a->signal && ab_signal_parse (a->signal, &sig, err) < 0)
		return NULL;
	pthread_mutex_lock (&s->lock);
	bool running = j->running;
	pthread_mutex_unlock (&s->lock);
	if (!running)
		return ab_error (err, 0, AB_E_CONFLICT, "%s has already ended", j->id), NULL;
	if (ab_mcp_job_signal (call->d, j, sig, err) < 0)
		return NULL;
	pthread_mutex_lock (&s->lock);
	if (sig == SIGKILL || sig == SIGTERM || sig == SIGINT || sig == SIGHUP)
		wait_for (s, j, UINT64_MAX, KILL_WAIT_MS);
	o = json_pack ("{s:s, s:s}", "action", "kill", "session_id", j->id);
	put_status (o, j);
	pthread_mutex_unlock (&s->lock);
	return ab_mcp_result_json (o);
}

static int
proc_args (const json_t *v, struct proc_args_s *a, ab_error_t *err)
{
	json_error_t je;

	memset (a, 0, sizeof *a);
	a->offset = -1;
	if (json_unpack_ex ((json_t *)v, &je, JSON_STRICT,
	                    "{s:s, s?s, s?s, s?b, s?o, s?I, s?I, s?I, s?o}", "action", &a->action,
	                    "session_id", &a->id, "data", &a->data, "eof", &a->eof, "keys",
	                    &a->keys, "offset", &a->offset, "limit", &a->limit, "wait_ms",
	                    &a->wait_ms, "signal", &a->signal)
	    < 0)
		return ab_error (err, 0, AB_E_INVALID, "sandbox_process: %s", je.text);
	a->has_offset = a->offset >= 0;
	if (json_object_get (v, "offset") && a->offset < 0)
		return ab_error (err, 0, AB_E_INVALID, "'offset' must not be negative");
	if (a->wait_ms < 0 || a->wait_ms > AB_MCP_WAIT_MAX_MS)
		return ab_error (err, 0, AB_E_INVALID, "'wait_ms' must be in [0, %d]",
		                 AB_MCP_WAIT_MAX_MS);
	if (a->limit < 0)
		return ab_error (err, 0, AB_E_INVALID, "'limit' must be positive");
	return 0;
}

static json_t *
on_job (struct ab_mcp_call_s *call, struct ab_mcp_job_s *j, const struct proc_args_s *a,
        ab_error_t *err)
{
	const char *act = a->action;

	if (strcmp (act, "poll") == 0 || strcmp (act, "log") == 0)
		return do_read (call, j, a, act[0] == 'p');
	if (strcmp (act, "write") == 0 || strcmp (act, "send_keys") == 0)
		return do_write (call, j, a, err);
	if (strcmp (act, "kill") == 0)
		return do_kill (call, j, a, err);
	if (strcmp (act, "remove") == 0) {
		ab_mcp_job_drop (call->d, call->s, j);
		return ab_mcp_result_json (json_pack ("{s:s, s:s, s:b}", "action", "remove",
		                                      "session_id", a->id, "removed", true));
	}
	return ab_error (err, 0, AB_E_INVALID,
	                 "unknown action '%s' (list, poll, log, write, send_keys, kill, remove)",
	                 act),
	       NULL;
}

json_t *
ab_mcp_tool_process (struct ab_mcp_call_s *call, ab_error_t *err)
{
	struct proc_args_s a;
	struct ab_mcp_job_s *j;
	json_t *res;

	if (proc_args (call->args, &a, err) < 0)
		return NULL;
	if (strcmp (a.action, "list") == 0)
		return do_list (call);
	if (!a.id)
		return ab_error (err, 0, AB_E_INVALID, "action '%s' needs 'session_id'", a.action),
		       NULL;
	j = ab_mcp_job_find (call->s, a.id);
	if (j && (j->b != call->b || !j->background)) {
		ab_mcp_job_put (call->s, j);
		j = NULL;
	}
	if (!j)
		return ab_error (err, 0, AB_E_NOT_FOUND,
		                 "no process '%s' in this MCP session and sandbox (action list "
		                 "shows them)",
		                 a.id),
		       NULL;
	res = on_job (call, j, &a, err);
	ab_mcp_job_put (call->s, j);
	return res;
}
