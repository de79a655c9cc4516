/* /v1/sandboxes/{id}/processes[/{pid}/...]: list, stdin, close-stdin,
 * signal, resize and output (attach).  Every call names the process by its
 * pid inside the sandbox and goes through a connection of its own: the
 * agent routes by pid, so it does not matter which request started it. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <strings.h>
#include <sys/wait.h>

#include "base/cleanup.h"
#include "base/parse.h"
#include "base/xalloc.h"

#define STDIN_CHUNK (64 * 1024)

static const struct {
	const char *name;
	int sig;
} signal_names[] = {
	{ "HUP", SIGHUP },   { "INT", SIGINT },   { "QUIT", SIGQUIT },   { "KILL", SIGKILL },
	{ "USR1", SIGUSR1 }, { "USR2", SIGUSR2 }, { "TERM", SIGTERM },   { "CONT", SIGCONT },
	{ "STOP", SIGSTOP }, { "TSTP", SIGTSTP }, { "WINCH", SIGWINCH }, { "ALRM", SIGALRM },
	{ "PIPE", SIGPIPE },
};

int
ab_signal_parse (const json_t *v, int *sig, ab_error_t *err)
{
	const char *s = json_string_value (v);

	if (json_is_integer (v) && json_integer_value (v) >= 1 && json_integer_value (v) <= 64) {
		*sig = (int)json_integer_value (v);
		return 0;
	}
	if (s) {
		if (strncasecmp (s, "SIG", 3) == 0)
			s += 3;
		for (size_t i = 0; i < sizeof signal_names / sizeof *signal_names; i++)
			if (strcasecmp (s, signal_names[i].name) == 0) {
				*sig = signal_names[i].sig;
				return 0;
			}
	}
	return ab_error (err, 0, AB_E_INVALID,
	                 "'signal' must be a signal name (\"TERM\") or number 1-64");
}

static int
pid_param (struct ab_req_s *r, uint32_t *pid)
{
	uint64_t v;
	ab_error_t err = AB_ERROR_INIT;

	if (ab_parse_uint (r->params[1], 1, 4194304, &v, &err) < 0) {
		ab_resp_fail (r, 400, "invalid", "process id '%s' is not a pid", r->params[1]);
		return -1;
	}
	*pid = (uint32_t)v;
	return 0;
}

/* The sandbox, a connection to its agent and the pid, or a response sent. */
static ab_agent_conn_t *
open_proc (struct ab_req_s *r, struct ab_box_s **b, uint32_t *pid)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;

	*b = ab_api_box (r, true);
	if (!*b)
		return NULL;
	if (pid && pid_param (r, pid) < 0) {
		ab_box_unref (r->d, *b);
		return NULL;
	}
	c = ab_box_connect (r->d, *b, &err);
	if (!c) {
		ab_resp_error (r, &err);
		ab_box_unref (r->d, *b);
	}
	return c;
}

static void
finish (struct ab_req_s *r, struct ab_box_s *b, ab_agent_conn_t *c, int rc, const ab_error_t *err)
{
	if (rc < 0)
		ab_resp_error (r, err);
	else if (!r->responded)
		ab_resp_empty (r, 204);
	ab_agent_close (c);
	ab_box_unref (r->d, b);
}

static json_t *
proc_json (const struct ab_agent_proc_info_s *p)
{
	json_t *argv = json_array ();
	json_t *j;

	for (char **a = p->argv; a && *a; a++)
		json_array_append_new (argv, json_string (*a));
	j = json_pack ("{s:i, s:o, s:b, s:b, s:I}", "pid", (int)p->pid, "argv", argv, "running",
	               p->running, "tty", p->tty, "started_unix_ms",
	               (json_int_t)p->started_unix_ms);
	if (!p->running) {
		json_t *e = ab_exit_json (&p->exit);
		json_object_del (e, "type");
		json_object_update (j, e);
		json_decref (e);
	}
	return j;
}

void
ab_api_proc_list (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_proc_info_s *v = NULL;
	struct ab_box_s *b;
	size_t n = 0;
	ab_agent_conn_t *c = open_proc (r, &b, NULL);
	int rc;

	if (!c)
		return;
	rc = ab_agent_proc_list (c, &v, &n, &err);
	if (rc == 0) {
		json_t *arr = json_array ();
		for (size_t i = 0; i < n; i++)
			json_array_append_new (arr, proc_json (&v[i]));
		ab_agent_proc_info_free (v, n);
		ab_resp_json (r, 200, json_pack ("{s:o}", "processes", arr));
	}
	finish (r, b, c, rc, &err);
}

/* The body is copied to the process's stdin as it arrives; ?close=1
 * closes stdin after it. */
void
ab_api_proc_stdin (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b;
	uint32_t pid;
	uint64_t total = 0;
	ab_agent_conn_t *c = open_proc (r, &b, &pid);
	cleanup_free char *buf = NULL;
	int rc = 0;

	if (!c)
		return;
	buf = xmalloc (STDIN_CHUNK);
	if (ab_req_continue (r) < 0)
		rc = ab_error (&err, errno, AB_E_SYSTEM, "write 100 Continue");
	while (rc == 0) {
		ssize_t n = ab_http_io_body_read (r->io, buf, STDIN_CHUNK, &err);
		if (n <= 0) {
			rc = (int)n;
			break;
		}
		rc = ab_agent_proc_write_stdin (c, pid, buf, (size_t)n, &err);
		total += (uint64_t)n;
	}
	if (rc == 0 && ab_req_query_flag (r, "close"))
		rc = ab_agent_proc_close_stdin (c, pid, &err);
	ab_metrics_add_bytes ("exec_stdin_bytes", total);
	if (rc == 0)
		ab_resp_json (r, 200, json_pack ("{s:I}", "written", (json_int_t)total));
	finish (r, b, c, rc, &err);
}

void
ab_api_proc_close_stdin (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b;
	uint32_t pid;
	ab_agent_conn_t *c = open_proc (r, &b, &pid);

	if (c)
		finish (r, b, c, ab_agent_proc_close_stdin (c, pid, &err), &err);
}

void
ab_api_proc_signal (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b;
	uint32_t pid;
	json_t *req = NULL, *sigv;
	int sig = SIGTERM, rc;
	ab_agent_conn_t *c = open_proc (r, &b, &pid);

	if (!c)
		return;
	rc = ab_req_body_json (r, &req, &err);
	if (rc == 0 && (sigv = json_object_get (req, "signal"))
	    && (rc = ab_signal_parse (sigv, &sig, &err)) == 0 && json_object_size (req) > 1)
		rc = ab_error (&err, 0, AB_E_INVALID, "signal request: only 'signal' is known");
	if (rc == 0)
		rc = ab_agent_proc_signal (c, pid, sig, &err);
	json_decref (req);
	finish (r, b, c, rc, &err);
}

void
ab_api_proc_resize (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b;
	uint32_t pid;
	json_t *req = NULL;
	int rows = 0, cols = 0, rc;
	json_error_t je;
	ab_agent_conn_t *c = open_proc (r, &b, &pid);

	if (!c)
		return;
	rc = ab_req_body_json (r, &req, &err);
	if (rc == 0
	    && (json_unpack_ex (req, &je, JSON_STRICT, "{s:i, s:i}", "rows", &rows, "cols", &cols)
	                < 0
	        || rows < 1 || rows > 65535 || cols < 1 || cols > 65535))
		rc = ab_error (&err, 0, AB_E_INVALID,
		               "resize needs integer 'rows' and 'cols' in [1, 65535]");
	if (rc == 0)
		rc = ab_agent_proc_resize (c, pid, (uint16_t)rows, (uint16_t)cols, &err);
	json_decref (req);
	finish (r, b, c, rc, &err);
}

/* The retained output of a process (also a finished one that is still
 * kept), then its live output and exit: what a client that lost its exec
 * stream (or a restarted daemon) reads. */
void
ab_api_proc_output (struct ab_req_s *r)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_agent_proc_s p;
	struct ab_box_s *b;
	uint32_t pid;
	ab_agent_conn_t *c = open_proc (r, &b, &pid);
	int rc;

	if (!c)
		return;
	rc = ab_agent_proc_attach (c, pid, &p, &err);
	if (rc == 0 && ab_resp_stream_begin (r, 200, "application/x-ndjson") == 0
	    && ab_resp_stream_json (r, json_pack ("{s:s, s:i}", "type", "attach", "pid", (int)pid))
	               == 0)
		ab_exec_stream_events (r, c, &p);
	finish (r, b, c, rc, &err);
}
