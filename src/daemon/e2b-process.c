/* envd's process.Process service over the sandbox's agent: Start and
 * Connect stream a process's events (start, data, keepalive, end) as
 * envelopes; List, SendInput, SendSignal, CloseStdin and Update are unary.
 *
 * Flow control is the REST exec stream's (api-exec.c): each envelope is
 * written to the client before the next event is asked of the agent, and
 * the agent client grants credit only as events are consumed, so a client
 * that reads slowly makes the process block on its pipe; memory stays at
 * one flow-control window per stream.  A client that goes away leaves the
 * process running (envd does the same); Connect re-attaches by pid or tag.
 *
 * What the agent does not keep (the tag, cmd and args as the SDK sent
 * them, envs, cwd) is kept here per started process, bounded, and lost
 * with the daemon: List then answers the agent's argv. */
#include "daemon/e2b-internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

#define MAX_KEPT      4096 /* remembered process configs, daemon-wide */
#define PEER_CHECK_MS 1000

struct kept_s {
	char box[AB_BOX_ID_LEN + 1];
	uint32_t pid;
	char *tag;
	json_t *config; /* {cmd, args, envs, cwd} */
};

static pthread_mutex_t kept_lock = PTHREAD_MUTEX_INITIALIZER;
static struct kept_s kept[MAX_KEPT];
static size_t kept_next;

static void
keep (const char *box, uint32_t pid, const char *tag, json_t *config)
{
	pthread_mutex_lock (&kept_lock);
	struct kept_s *k = &kept[kept_next++ % MAX_KEPT];
	free (k->tag);
	json_decref (k->config);
	snprintf (k->box, sizeof k->box, "%s", box);
	k->pid = pid;
	k->tag = tag ? xstrdup (tag) : NULL;
	k->config = json_incref (config);
	pthread_mutex_unlock (&kept_lock);
}

/* A copy of what is kept for pid, or for tag (then *pid is set). */
static bool
kept_find (const char *box, uint32_t *pid, const char *tag, char **tag_out, json_t **config)
{
	bool found = false;

	pthread_mutex_lock (&kept_lock);
	for (size_t i = 0; i < MAX_KEPT && !found; i++) {
		struct kept_s *k = &kept[(kept_next - 1 - i) % MAX_KEPT];
		if (!k->config || strcmp (k->box, box) != 0)
			continue;
		if (tag ? (k->tag && strcmp (k->tag, tag) == 0) : k->pid == *pid) {
			*pid = k->pid;
			if (tag_out)
				*tag_out = k->tag ? xstrdup (k->tag) : NULL;
			if (config)
				*config = json_deep_copy (k->config);
			found = true;
		}
	}
	pthread_mutex_unlock (&kept_lock);
	return found;
}

/* {"process":{"pid":N}} or {"process":{"tag":".."}} -> pid. */
static int
selector (struct ab_e2b_call_s *call, const json_t *sel, uint32_t *pid)
{
	json_t *p = json_object_get (sel, "pid");
	const char *tag = json_string_value (json_object_get (sel, "tag"));

	if (json_is_integer (p) && json_integer_value (p) > 0
	    && json_integer_value (p) <= INT32_MAX) {
		*pid = (uint32_t)json_integer_value (p);
		return 0;
	}
	if (tag) {
		if (kept_find (call->b->id, pid, tag, NULL, NULL))
			return 0;
		return ab_e2b_fail (call, "not_found", "no process with tag '%s'", tag), -1;
	}
	return ab_e2b_fail (call, "invalid_argument", "'process' needs a pid or a tag"), -1;
}

static int
push_strings (char ***v, const json_t *arr, const char *what, ab_error_t *err)
{
	size_t i;
	json_t *e;

	if (!arr)
		return 0;
	if (!json_is_array (arr))
		return ab_error (err, 0, AB_E_INVALID, "'%s' must be an array of strings", what);
	json_array_foreach (arr, i, e)
	{
		if (!json_is_string (e) || strlen (json_string_value (e)) != json_string_length (e))
			return ab_error (err, 0, AB_E_INVALID, "'%s[%zu]' must be a string", what,
			                 i);
		ab_strv_push (v, json_string_value (e));
	}
	return 0;
}

static void
env_put (char ***env, const char *k, const char *v, bool keep_old)
{
	size_t kl = strlen (k);
	cleanup_free char *kv = xasprintf ("%s=%s", k, v);

	for (char **p = *env; p && *p; p++)
		if (strncmp (*p, k, kl) == 0 && (*p)[kl] == '=') {
			if (!keep_old) {
				free (*p);
				*p = xstrdup (kv);
			}
			return;
		}
	ab_strv_push (env, kv);
}

struct start_s {
	char **argv, **env;
	char *cwd;
	struct ab_agent_proc_spec_s ps;
};

static void
start_free (struct start_s *s)
{
	ab_cleanup_strvp (&s->argv);
	ab_cleanup_strvp (&s->env);
	free (s->cwd);
}

static int
parse_start (struct ab_e2b_call_s *call, const json_t *pr, const json_t *pty, struct start_s *s,
             ab_error_t *err)
{
	const char *cmd = json_string_value (json_object_get (pr, "cmd"));
	json_t *envs = json_object_get (pr, "envs");
	const char *cwd = json_string_value (json_object_get (pr, "cwd"));
	json_t *size = json_object_get (pty, "size");
	const char *k;
	json_t *v;

	if (!cmd || !*cmd)
		return ab_error (err, 0, AB_E_INVALID, "'process.cmd' is required");
	ab_strv_push (&s->argv, cmd);
	if (push_strings (&s->argv, json_object_get (pr, "args"), "process.args", err) < 0)
		return -1;
	for (char **e = call->b->spec.env; e && *e; e++)
		ab_strv_push (&s->env, *e);
	env_put (&s->env, "HOME", call->uid == 0 ? "/root" : call->home, false);
	env_put (&s->env, "USER", call->user, false);
	env_put (&s->env, "PATH", "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
	         true);
	if (envs && !json_is_object (envs))
		return ab_error (err, 0, AB_E_INVALID, "'process.envs' must be an object");
	json_object_foreach (envs, k, v)
	{
		if (!json_is_string (v) || !*k || strchr (k, '='))
			return ab_error (err, 0, AB_E_INVALID, "'process.envs.%s' must be a string",
			                 k);
		env_put (&s->env, k, json_string_value (v), false);
	}
	s->cwd = ab_e2b_path (call, cwd);
	s->ps.argv = s->argv;
	s->ps.env = s->env;
	s->ps.cwd = s->cwd;
	s->ps.uid = call->uid;
	s->ps.gid = call->gid;
	s->ps.tty = pty != NULL;
	s->ps.rows = (uint16_t)json_integer_value (json_object_get (size, "rows"));
	s->ps.cols = (uint16_t)json_integer_value (json_object_get (size, "cols"));
	s->ps.stdin_open = pty || json_is_true (json_object_get (call->msg, "stdin"));
	s->ps.timeout_ms = ab_e2b_timeout_ms (call);
	s->ps.grace_ms = call->b->spec.limits.kill_grace_ms;
	return 0;
}

static json_t *
end_event (const struct ab_agent_exit_s *e)
{
	json_t *end = json_object ();
	char status[64];

	if (e->exec_errno) {
		json_object_set_new (end, "exitCode",
		                     json_integer (e->exec_errno == ENOENT ? 127 : 126));
		json_object_set_new (end, "error", json_string (strerror (e->exec_errno)));
		snprintf (status, sizeof status, "exit status %d",
		          e->exec_errno == ENOENT ? 127 : 126);
	} else if (WIFSIGNALED (e->wait_status)) {
		json_object_set_new (end, "exitCode", json_integer (-1));
		snprintf (status, sizeof status, "signal: %s",
		          strsignal (WTERMSIG (e->wait_status)));
		json_object_set_new (end, "error", json_string (status));
	} else {
		json_object_set_new (end, "exitCode", json_integer (WEXITSTATUS (e->wait_status)));
		json_object_set_new (end, "exited", json_true ());
		snprintf (status, sizeof status, "exit status %d", WEXITSTATUS (e->wait_status));
	}
	if (e->timed_out)
		json_object_set_new (end, "error", json_string ("the command's timeout passed"));
	json_object_set_new (end, "status", json_string (status));
	return json_pack ("{s:{s:o}}", "event", "end", end);
}

static json_t *
data_event (const char *stream, const uint8_t *d, size_t len)
{
	cleanup_free char *b64 = ab_base64_encode (d, len);
	return json_pack ("{s:{s:{s:s}}}", "event", "data", stream, b64);
}

/* Events until the end; the stream is already begun with the start event. */
static void
follow (struct ab_e2b_call_s *call, ab_agent_conn_t *c, struct ab_agent_proc_s *p, bool tty)
{
	ab_error_t err = AB_ERROR_INIT;
	uint64_t keepalive_ms = (uint64_t)ab_e2b_keepalive_s (call) * 1000, quiet_ms = 0;

	for (;;) {
		struct ab_agent_event_s ev;
		int rc = ab_agent_proc_next_event (c, p, &ev, PEER_CHECK_MS, &err);
		if (rc < 0) {
			ab_e2b_stream_end (call, ab_e2b_code_of (&err), err.msg);
			return;
		}
		if (rc == 0) {
			if (ab_req_peer_gone (call->r)) {
				call->r->close = true;
				return; /* the process lives on */
			}
			quiet_ms += PEER_CHECK_MS;
			if (quiet_ms >= keepalive_ms) {
				quiet_ms = 0;
				if (ab_e2b_stream_msg (
				            call, json_pack ("{s:{s:{}}}", "event", "keepalive"))
				    < 0)
					return;
			}
			continue;
		}
		quiet_ms = 0;
		if (ev.kind == AB_AGENT_EV_EXIT) {
			ab_e2b_stream_last (call, end_event (&ev.exit));
			return;
		}
		if (ab_e2b_stream_msg (call, data_event (tty                             ? "pty"
		                                         : ev.kind == AB_AGENT_EV_STDERR ? "stderr"
		                                                                         : "stdout",
		                                         ev.data, ev.len))
		    < 0)
			return;
	}
}

static int
begin_with_start (struct ab_e2b_call_s *call, uint32_t pid)
{
	return ab_e2b_stream_begin_msg (
	        call, json_pack ("{s:{s:{s:i}}}", "event", "start", "pid", (int)pid));
}

static void
do_start (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *pr = json_object_get (call->msg, "process");
	json_t *pty = json_object_get (call->msg, "pty");
	const char *tag = json_string_value (json_object_get (call->msg, "tag"));
	struct start_s s = { 0 };
	struct ab_agent_proc_s p;
	ab_agent_conn_t *c = NULL;
	bool slot = false;

	if (pty && json_is_null (pty))
		pty = NULL;
	if (!json_is_object (pr) || parse_start (call, pr, pty, &s, &err) < 0
	    || ab_box_exec_begin (call->r->d, call->b, &err) < 0
	    || (slot = true, !(c = ab_exec_connect (call->r->d, call->b, &err)))
	    || ab_agent_proc_start (c, &s.ps, &p, &err) < 0) {
		if (!err.kind)
			ab_error (&err, 0, AB_E_INVALID, "'process' is required");
		ab_e2b_fail_err (call, &err);
	} else {
		json_t *config =
		        json_pack ("{s:O, s:O*, s:O*, s:s}", "cmd", json_object_get (pr, "cmd"),
		                   "args", json_object_get (pr, "args"), "envs",
		                   json_object_get (pr, "envs"), "cwd", s.cwd);
		keep (call->b->id, p.pid, tag, config);
		json_decref (config);
		ab_metrics_inc ("execs");
		if (begin_with_start (call, p.pid) == 0)
			follow (call, c, &p, s.ps.tty);
	}
	ab_exec_release (call->b, c);
	if (slot)
		ab_box_exec_end (call->r->d, call->b);
	start_free (&s);
}

static void
do_connect (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_proc_info_s *v = NULL;
	size_t n = 0;
	struct ab_agent_proc_s p;
	ab_agent_conn_t *c = NULL;
	uint32_t pid;
	bool tty = false, found = false;

	if (selector (call, json_object_get (call->msg, "process"), &pid) < 0)
		return;
	if (!(c = ab_box_connect (call->r->d, call->b, &err))
	    || ab_agent_proc_list (c, &v, &n, &err) < 0) {
		ab_e2b_fail_err (call, &err);
		ab_agent_close (c);
		return;
	}
	for (size_t i = 0; i < n; i++)
		if (v[i].pid == pid && v[i].running) {
			found = true;
			tty = v[i].tty;
		}
	ab_agent_proc_info_free (v, n);
	if (!found)
		ab_e2b_fail (call, "not_found", "process %u is not running", (unsigned)pid);
	else if (ab_agent_proc_attach (c, pid, &p, &err) < 0)
		ab_e2b_fail_err (call, &err);
	else if (begin_with_start (call, pid) == 0)
		follow (call, c, &p, tty);
	ab_agent_close (c);
}

static json_t *
listed (const char *box, const struct ab_agent_proc_info_s *pi)
{
	uint32_t pid = pi->pid;
	char *tag = NULL;
	json_t *config = NULL, *j;

	if (!kept_find (box, &pid, NULL, &tag, &config)) {
		json_t *args = json_array ();
		for (char **a = pi->argv && pi->argv[0] ? pi->argv + 1 : NULL; a && *a; a++)
			json_array_append_new (args, json_string (*a));
		config = json_pack ("{s:s, s:o}", "cmd", pi->argv && pi->argv[0] ? pi->argv[0] : "",
		                    "args", args);
	}
	j = json_pack ("{s:o, s:i}", "config", config, "pid", (int)pi->pid);
	if (tag)
		json_object_set_new (j, "tag", json_string (tag));
	free (tag);
	return j;
}

static void
do_list (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_proc_info_s *v = NULL;
	size_t n = 0;
	ab_agent_conn_t *c = ab_box_connect (call->r->d, call->b, &err);
	json_t *arr;

	if (!c || ab_agent_proc_list (c, &v, &n, &err) < 0) {
		ab_e2b_fail_err (call, &err);
		ab_agent_close (c);
		return;
	}
	ab_agent_close (c);
	arr = json_array ();
	for (size_t i = 0; i < n; i++)
		if (v[i].running)
			json_array_append_new (arr, listed (call->b->id, &v[i]));
	ab_agent_proc_info_free (v, n);
	ab_e2b_unary (call, json_pack ("{s:o}", "processes", arr));
}

/* The unary calls on one process: input, signal, close stdin, resize. */
typedef int (*proc_op) (struct ab_e2b_call_s *call, ab_agent_conn_t *c, uint32_t pid,
                        ab_error_t *err);

static int
op_input (struct ab_e2b_call_s *call, ab_agent_conn_t *c, uint32_t pid, ab_error_t *err)
{
	json_t *in = json_object_get (call->msg, "input");
	json_t *d = json_object_get (in, "stdin");
	cleanup_free uint8_t *buf = NULL;
	size_t len;
	int r;

	if (!d)
		d = json_object_get (in, "pty");
	if (!json_is_string (d)
	    || ab_base64_decode (json_string_value (d), json_string_length (d), &buf, &len) < 0)
		return ab_error (err, 0, AB_E_INVALID, "'input' needs base64 'stdin' or 'pty'");
	r = len ? ab_agent_proc_write_stdin (c, pid, buf, len, err) : 0;
	explicit_bzero (buf, len); /* input may be a password typed into a pty */
	return r;
}

static int
op_signal (struct ab_e2b_call_s *call, ab_agent_conn_t *c, uint32_t pid, ab_error_t *err)
{
	const char *s = json_string_value (json_object_get (call->msg, "signal"));
	int sig;

	if (s && strcmp (s, "SIGNAL_SIGKILL") == 0)
		sig = SIGKILL;
	else if (s && strcmp (s, "SIGNAL_SIGTERM") == 0)
		sig = SIGTERM;
	else
		return ab_error (err, 0, AB_E_INVALID,
		                 "'signal' must be SIGNAL_SIGKILL or SIGNAL_SIGTERM");
	return ab_agent_proc_signal (c, pid, sig, err);
}

static int
op_close_stdin (struct ab_e2b_call_s *call, ab_agent_conn_t *c, uint32_t pid, ab_error_t *err)
{
	return ab_agent_proc_close_stdin (c, pid, err);
}

static int
op_update (struct ab_e2b_call_s *call, ab_agent_conn_t *c, uint32_t pid, ab_error_t *err)
{
	json_t *size = json_object_get (json_object_get (call->msg, "pty"), "size");
	json_t *rows = json_object_get (size, "rows"), *cols = json_object_get (size, "cols");

	if (!size)
		return 0; /* nothing to update */
	if (!json_is_integer (rows) || !json_is_integer (cols) || json_integer_value (rows) <= 0
	    || json_integer_value (rows) > 65535 || json_integer_value (cols) <= 0
	    || json_integer_value (cols) > 65535)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'pty.size' needs rows and cols in 1..65535");
	return ab_agent_proc_resize (c, pid, (uint16_t)json_integer_value (rows),
	                             (uint16_t)json_integer_value (cols), err);
}

static void
do_unary (struct ab_e2b_call_s *call, proc_op op)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	uint32_t pid;

	if (selector (call, json_object_get (call->msg, "process"), &pid) < 0)
		return;
	c = ab_box_connect (call->r->d, call->b, &err);
	if (c)
		ab_agent_set_timeout (c, AB_AGENT_CALL_TIMEOUT_MS);
	if (!c || op (call, c, pid, &err) < 0)
		ab_e2b_fail_err (call, &err);
	else
		ab_e2b_unary (call, json_object ());
	ab_agent_close (c);
}

/* StreamInput (client streaming): {start:{process}}, then {data:{input}}
 * and {keepalive:{}} envelopes; answered once the client's stream ends. */
static void
do_stream_input (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = NULL;
	json_t *m = NULL;
	uint32_t pid = 0;
	int r;

	call->streaming = true;
	if (ab_req_continue (call->r) < 0)
		return;
	while ((r = ab_e2b_envelope_next (call, &m, &err)) == 1) {
		json_t *start = json_object_get (m, "start"), *data = json_object_get (m, "data");
		if (start && !pid) {
			if (selector (call, json_object_get (start, "process"), &pid) < 0)
				break;
			if (!(c = ab_box_connect (call->r->d, call->b, &err)))
				r = -1;
		} else if (data && pid) {
			json_t *saved = call->msg;
			call->msg = data;
			r = op_input (call, c, pid, &err);
			call->msg = saved;
		} else if (!json_object_get (m, "keepalive"))
			r = ab_error (&err, 0, AB_E_INVALID, "StreamInput: start first, then data");
		json_decref (m);
		m = NULL;
		if (r < 0)
			break;
	}
	if (!call->r->responded) {
		if (r < 0)
			ab_e2b_fail_err (call, &err);
		else if (!pid)
			ab_e2b_fail (call, "invalid_argument", "StreamInput without a start");
		else if (ab_e2b_stream_begin_msg (call, json_object ()) == 0)
			ab_e2b_stream_end (call, NULL, NULL);
	}
	ab_agent_close (c);
}

void
ab_e2b_process (struct ab_e2b_call_s *call)
{
	static const struct {
		const char *name;
		proc_op op;
	} unary[] = {
		{ "SendInput", op_input },
		{ "SendSignal", op_signal },
		{ "CloseStdin", op_close_stdin },
		{ "Update", op_update },
	};
	ab_error_t err = AB_ERROR_INIT;

	if (strcmp (call->method, "StreamInput") == 0) {
		do_stream_input (call);
		return;
	}
	if (ab_e2b_call_read (call, &err) < 0) {
		ab_e2b_fail_err (call, &err);
		return;
	}
	if (strcmp (call->method, "Start") == 0)
		do_start (call);
	else if (strcmp (call->method, "Connect") == 0)
		do_connect (call);
	else if (strcmp (call->method, "List") == 0)
		do_list (call);
	else {
		for (size_t i = 0; i < sizeof unary / sizeof *unary; i++)
			if (strcmp (call->method, unary[i].name) == 0) {
				do_unary (call, unary[i].op);
				json_decref (call->msg);
				return;
			}
		ab_e2b_fail (call, "unimplemented", "process.Process/%s is not implemented",
		             call->method);
	}
	json_decref (call->msg);
}
