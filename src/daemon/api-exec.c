/* POST /v1/sandboxes/{id}/exec: start a process and stream its events as
 * NDJSON (start, stdout, stderr, exit) over chunked HTTP, or with
 * "wait": true answer once with the captured output (capped), or with
 * "detach": true answer with the pid at once.
 *
 * Back-pressure end to end: this thread writes each chunk to the client
 * before it asks the agent for the next event, and the agent client grants
 * credit only as events are consumed, so a client that reads slowly makes
 * the process block on its pipe; neither the daemon nor the agent buffers
 * more than one flow-control window per stream. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "spec/spec-json.h"

#define PEER_CHECK_MS 1000

void
ab_exec_req_free (struct ab_exec_req_s *x)
{
	ab_cleanup_strvp (&x->argv);
	ab_cleanup_strvp (&x->env);
	free (x->cwd);
	memset (x, 0, sizeof *x);
}

static int
parse_cmd (const json_t *v, struct ab_exec_req_s *x, ab_error_t *err)
{
	size_t i;
	json_t *e;

	if (json_is_string (v) && json_string_length (v) > 0) {
		ab_strv_push (&x->argv, "/bin/sh");
		ab_strv_push (&x->argv, "-c");
		ab_strv_push (&x->argv, json_string_value (v));
		return 0;
	}
	if (!json_is_array (v) || json_array_size (v) == 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'cmd' must be a non-empty array of strings or a shell command");
	json_array_foreach (v, i, e)
	{
		if (!json_is_string (e) || strlen (json_string_value (e)) != json_string_length (e))
			return ab_error (err, 0, AB_E_INVALID,
			                 "'cmd[%zu]' must be a string without NUL", i);
		ab_strv_push (&x->argv, json_string_value (e));
	}
	if (x->argv[0][0] == '\0')
		return ab_error (err, 0, AB_E_INVALID, "'cmd[0]' must not be empty");
	return 0;
}

/* The sandbox's environment with the request's variables on top. */
static int
parse_env (struct ab_box_s *b, const json_t *v, struct ab_exec_req_s *x, ab_error_t *err)
{
	struct ab_spec_s tmp;
	json_t *wrap;
	int r;

	ab_spec_init (&tmp);
	for (char **e = b->spec.env; e && *e; e++)
		ab_strv_push (&tmp.env, *e);
	wrap = json_pack ("{s:O}", "env", v);
	r = v ? ab_spec_from_json (wrap, 0, &tmp, err) : 0;
	json_decref (wrap);
	x->env = tmp.env;
	tmp.env = NULL;
	ab_spec_free (&tmp);
	if (!x->env)
		x->env = xcalloc (1, sizeof (char *));
	return r;
}

static int
parse_user (const json_t *v, struct ab_exec_req_s *x, ab_error_t *err)
{
	struct ab_spec_s tmp;
	json_t *wrap = json_pack ("{s:O}", "user", v);
	int r;

	ab_spec_init (&tmp);
	r = ab_spec_from_json (wrap, 0, &tmp, err);
	x->ps.uid = tmp.uid;
	x->ps.gid = tmp.gid;
	json_decref (wrap);
	ab_spec_free (&tmp);
	return r;
}

static int
get_dims (const json_t *rows, const json_t *cols, struct ab_exec_req_s *x, ab_error_t *err)
{
	if ((rows
	     && (!json_is_integer (rows) || json_integer_value (rows) < 0
	         || json_integer_value (rows) > 65535))
	    || (cols
	        && (!json_is_integer (cols) || json_integer_value (cols) < 0
	            || json_integer_value (cols) > 65535)))
		return ab_error (err, 0, AB_E_INVALID,
		                 "'rows' and 'cols' must be integers in [0, 65535]");
	x->ps.rows = rows ? (uint16_t)json_integer_value (rows) : 0;
	x->ps.cols = cols ? (uint16_t)json_integer_value (cols) : 0;
	return 0;
}

int
ab_exec_req_parse (struct ab_box_s *b, const json_t *j, struct ab_exec_req_s *x, ab_error_t *err)
{
	json_t *cmd = NULL, *env = NULL, *user = NULL, *timeout = NULL, *rows = NULL, *cols = NULL;
	const char *cwd = NULL;
	int in = 0, tty = 0, wait = 0, detach = 0;
	json_error_t je;

	memset (x, 0, sizeof *x);
	if (json_unpack_ex ((json_t *)j, &je, JSON_STRICT,
	                    "{s:o, s?o, s?s, s?o, s?b, s?b, s?o, s?b, s?b, s?o, s?o}", "cmd", &cmd,
	                    "env", &env, "cwd", &cwd, "user", &user, "stdin", &in, "tty", &tty,
	                    "timeout", &timeout, "wait", &wait, "detach", &detach, "rows", &rows,
	                    "cols", &cols)
	    < 0)
		return ab_error (err, 0, AB_E_INVALID, "exec request: %s", je.text);
	x->ps.uid = b->spec.uid;
	x->ps.gid = b->spec.gid;
	x->ps.timeout_ms = b->spec.limits.timeout_ms;
	if (parse_cmd (cmd, x, err) < 0 || parse_env (b, env, x, err) < 0
	    || (user && parse_user (user, x, err) < 0) || get_dims (rows, cols, x, err) < 0
	    || (timeout && ab_json_duration_ms (timeout, "timeout", &x->ps.timeout_ms, err) < 0))
		return -1;
	if (wait && detach)
		return ab_error (err, 0, AB_E_INVALID, "'wait' and 'detach' exclude each other");
	if (cwd && cwd[0] != '/')
		return ab_error (err, 0, AB_E_INVALID, "'cwd' must be an absolute path");
	x->cwd = xstrdup (cwd ? cwd : b->spec.workdir);
	x->ps.argv = x->argv;
	x->ps.env = x->env;
	x->ps.cwd = x->cwd;
	x->ps.tty = tty;
	x->ps.stdin_open = in;
	x->ps.grace_ms = b->spec.limits.kill_grace_ms;
	x->ps.detach = detach;
	x->wait = wait;
	return 0;
}

int
ab_exit_code (const struct ab_agent_exit_s *e)
{
	if (e->exec_errno)
		return e->exec_errno == ENOENT ? 127 : 126;
	if (e->timed_out)
		return 124;
	if (WIFSIGNALED (e->wait_status))
		return 128 + WTERMSIG (e->wait_status);
	return WEXITSTATUS (e->wait_status);
}

json_t *
ab_exit_json (const struct ab_agent_exit_s *e)
{
	json_t *j =
	        json_pack ("{s:s, s:i, s:i, s:b}", "type", "exit", "exit_code", ab_exit_code (e),
	                   "signal", WIFSIGNALED (e->wait_status) ? WTERMSIG (e->wait_status) : 0,
	                   "timed_out", e->timed_out);
	if (e->exec_errno)
		json_object_set_new (j, "exec_error", json_string (strerror (e->exec_errno)));
	return j;
}

/* Output as JSON text when it is UTF-8 (a sequence split across two
 * chunks is held back for the next), else base64 in "data_b64". */
struct utf8_hold_s {
	uint8_t bytes[2][4];
	size_t n[2];
};

static size_t
complete_prefix (const uint8_t *p, size_t n)
{
	for (size_t back = 1; back <= 3 && back <= n; back++) {
		uint8_t c = p[n - back];
		if ((c & 0xc0) == 0x80)
			continue;
		size_t need = c >= 0xf0 ? 4 : c >= 0xe0 ? 3 : c >= 0xc0 ? 2 : 1;
		return need > back ? n - back : n;
	}
	return n;
}

static json_t *
output_event (struct utf8_hold_s *h, int s, const uint8_t *data, size_t len, bool flush)
{
	static const char *const names[] = { "stdout", "stderr" };
	size_t n = h->n[s] + len, cut;
	cleanup_free uint8_t *buf = xmalloc (n + 1);
	json_t *text;

	memcpy (buf, h->bytes[s], h->n[s]);
	memcpy (buf + h->n[s], data, len);
	h->n[s] = 0;
	cut = flush ? n : complete_prefix (buf, n);
	text = cut ? json_stringn ((const char *)buf, cut) : NULL;
	if (text || cut == 0) {
		memcpy (h->bytes[s], buf + cut, n - cut);
		h->n[s] = n - cut;
		if (!text)
			return NULL;
		return json_pack ("{s:s, s:o}", "type", names[s], "data", text);
	}
	cleanup_free char *b64 = ab_base64_encode (buf, n);
	return json_pack ("{s:s, s:s}", "type", names[s], "data_b64", b64);
}

static int
stream_output (struct ab_req_s *r, struct utf8_hold_s *h, int s, const uint8_t *d, size_t len,
               bool flush)
{
	json_t *ev = output_event (h, s, d, len, flush);
	ab_metrics_add_bytes (s ? "exec_stderr_bytes" : "exec_stdout_bytes", len);
	return ev ? ab_resp_stream_json (r, ev) : 0;
}

int
ab_exec_stream_events (struct ab_req_s *r, ab_agent_conn_t *c, struct ab_agent_proc_s *p)
{
	struct utf8_hold_s hold = { 0 };
	ab_error_t err = AB_ERROR_INIT;

	for (;;) {
		struct ab_agent_event_s ev;
		int rc = ab_agent_proc_next_event (c, p, &ev, PEER_CHECK_MS, &err);
		if (rc < 0) {
			ab_resp_stream_json (r, json_pack ("{s:s, s:{s:s, s:s}}", "type", "error",
			                                   "error", "code",
			                                   ab_error_kind_name (err.kind), "message",
			                                   err.msg));
			break;
		}
		if (rc == 0) {
			if (ab_req_peer_gone (r)) {
				r->close = true;
				return -1; /* the process lives on; output stays retained in the
				              agent */
			}
			continue;
		}
		if (ev.kind == AB_AGENT_EV_EXIT) {
			for (int s = 0; s < 2; s++)
				if (hold.n[s] && stream_output (r, &hold, s, NULL, 0, true) < 0)
					return -1;
			ab_resp_stream_json (r, ab_exit_json (&ev.exit));
			break;
		}
		if (stream_output (r, &hold, ev.kind == AB_AGENT_EV_STDERR, ev.data, ev.len, false)
		    < 0)
			return -1;
	}
	return ab_resp_stream_end (r);
}

struct capture_s {
	char *buf;
	size_t len;
	bool truncated;
};

static void
capture (struct capture_s *c, const uint8_t *d, size_t len, size_t cap)
{
	size_t room = cap - c->len;
	if (len > room) {
		c->truncated = true;
		len = room;
	}
	c->buf = xrealloc (c->buf, c->len + len + 1);
	memcpy (c->buf + c->len, d, len);
	c->len += len;
}

static void
put_capture (json_t *j, const char *name, struct capture_s *c)
{
	json_t *text = json_stringn (c->buf ? c->buf : "", c->len);
	cleanup_free char *key = xasprintf ("%s_truncated", name);

	if (text)
		json_object_set_new (j, name, text);
	else {
		cleanup_free char *b64 = ab_base64_encode (c->buf, c->len);
		cleanup_free char *bkey = xasprintf ("%s_b64", name);
		json_object_set_new (j, bkey, json_string (b64));
	}
	json_object_set_new (j, key, json_boolean (c->truncated));
	free (c->buf);
}

/* "wait": true: collect (capped; the rest is read and dropped so the
 * process never blocks on a full pipe) and answer once. */
static void
exec_wait (struct ab_req_s *r, ab_agent_conn_t *c, struct ab_agent_proc_s *p)
{
	struct capture_s out[2] = { { 0 } };
	size_t cap = r->d->cfg->output_cap;
	ab_error_t err = AB_ERROR_INIT;

	for (;;) {
		struct ab_agent_event_s ev;
		int rc = ab_agent_proc_next_event (c, p, &ev, PEER_CHECK_MS, &err);
		if (rc < 0 || (rc == 0 && ab_req_peer_gone (r))) {
			free (out[0].buf);
			free (out[1].buf);
			if (rc < 0)
				ab_resp_error (r, &err);
			else
				r->close = r->responded = true;
			return;
		}
		if (rc == 0)
			continue;
		if (ev.kind == AB_AGENT_EV_EXIT) {
			json_t *j = ab_exit_json (&ev.exit);
			json_object_del (j, "type");
			json_object_set_new (j, "pid", json_integer (p->pid));
			put_capture (j, "stdout", &out[0]);
			put_capture (j, "stderr", &out[1]);
			ab_resp_json (r, 200, j);
			return;
		}
		capture (&out[ev.kind == AB_AGENT_EV_STDERR], ev.data, ev.len, cap);
	}
}

/* The agent connection of this HTTP connection's last exec (REST exec,
 * or E2B process.Process/Start), kept for its next one: a keep-alive
 * client's exec into the same sandbox then skips the connect, the
 * agent's accept and the HELLO round trip (under gVisor each costs the
 * agent trapped system calls).  One per thread, and the daemon's server
 * runs one thread per HTTP connection, so it is never shared and goes
 * when the HTTP connection goes.  Only an idle connection is kept (the
 * exec ended: nothing followed, nothing queued) and it is checked again
 * before reuse: a sandbox that ended shows as EOF, and the connection is
 * then replaced by a fresh one. */
struct kept_conn_s {
	char id[AB_BOX_ID_LEN + 1];
	ab_agent_conn_t *c;
};

static pthread_key_t kept_key;
static pthread_once_t kept_once = PTHREAD_ONCE_INIT;

static void
kept_free (void *p)
{
	struct kept_conn_s *k = p;

	ab_agent_close (k->c);
	free (k);
}

static void
kept_init (void)
{
	pthread_key_create (&kept_key, kept_free);
}

ab_agent_conn_t *
ab_exec_connect (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	struct kept_conn_s *k;
	ab_agent_conn_t *c;

	pthread_once (&kept_once, kept_init);
	k = pthread_getspecific (kept_key);
	if (!k || !k->c)
		return ab_box_connect (d, b, err);
	c = k->c;
	k->c = NULL;
	if (strcmp (k->id, b->id) != 0 || !ab_agent_idle (c)) {
		ab_agent_close (c);
		return ab_box_connect (d, b, err);
	}
	/* What ab_box_connect checks on every connection. */
	if (ab_box_unpaused (d, b, err) < 0) {
		ab_agent_close (c);
		return NULL;
	}
	return c;
}

void
ab_exec_release (const struct ab_box_s *b, ab_agent_conn_t *c)
{
	struct kept_conn_s *k;

	if (!c || !ab_agent_idle (c)) {
		ab_agent_close (c); /* a process still followed is let go */
		return;
	}
	k = pthread_getspecific (kept_key);
	if (!k) {
		k = xcalloc (1, sizeof *k);
		if (pthread_setspecific (kept_key, k) != 0) {
			free (k);
			ab_agent_close (c);
			return;
		}
	}
	ab_agent_close (k->c);
	snprintf (k->id, sizeof k->id, "%s", b->id);
	k->c = c;
}

void
ab_api_exec (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_api_box (r, true);
	struct ab_exec_req_s x = { 0 };
	struct ab_agent_proc_s p;
	ab_agent_conn_t *c = NULL;
	uint64_t t0 = ab_mono_us ();
	json_t *req = NULL;
	bool slot = false;

	if (!b)
		return;
	if (ab_req_body_json (r, &req, &err) < 0 || ab_exec_req_parse (b, req, &x, &err) < 0)
		goto fail;
	if (!x.ps.detach) {
		if (ab_box_exec_begin (r->d, b, &err) < 0)
			goto fail;
		slot = true;
	}
	if (!(c = ab_exec_connect (r->d, b, &err)) || ab_agent_proc_start (c, &x.ps, &p, &err) < 0)
		goto fail;
	ab_metrics_observe (AB_M_EXEC_START, ab_mono_us () - t0);
	ab_metrics_inc ("execs");
	if (x.ps.detach)
		ab_resp_json (r, 201, json_pack ("{s:i}", "pid", (int)p.pid));
	else if (x.wait)
		exec_wait (r, c, &p);
	else if (ab_resp_stream_begin (r, 200, "application/x-ndjson") == 0
	         && ab_resp_stream_json (
	                    r, json_pack ("{s:s, s:i}", "type", "start", "pid", (int)p.pid))
	                    == 0)
		ab_exec_stream_events (r, c, &p);
	goto done;
fail:
	ab_resp_error (r, &err);
done:
	ab_exec_release (b, c);
	if (slot)
		ab_box_exec_end (r->d, b);
	ab_exec_req_free (&x);
	json_decref (req);
	ab_box_unref (r->d, b);
}
