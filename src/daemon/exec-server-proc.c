/* process/ methods: processes of one exec-server connection.
 *
 * Each process has a pump thread with its own agent connection (the
 * stream is bound to the connection that started it); the pump numbers
 * every event with the process's one seq counter (output, exited, closed
 * share it, as the reference), keeps the last AB_XS_RETAIN_BYTES of output
 * for process/read and sends the notifications.  The connection's thread
 * only looks records up; long polls wait on the connection's condition
 * variable in threads of their own.  Records are forgotten AB_XS_EVICT_MS
 * after closed, and every process of a connection is killed when it ends. */
#include "daemon/exec-server.h"

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <time.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

struct chunk_s {
	struct chunk_s *next;
	uint64_t seq;
	bool err;
	size_t len;
	uint8_t data[];
};

struct ab_xs_proc_s {
	struct ab_xs_proc_s *next;
	struct ab_xs_conn_s *x;
	char *id;
	uint32_t pid;
	bool tty, stdin_open;
	bool exited, closed;
	int exit_code;
	char *failure;
	uint64_t seq; /* the last seq given out */
	uint64_t closed_ms;
	struct chunk_s *head, *tail;
	size_t retained;
	ab_agent_conn_t *c; /* the pump's */
	struct ab_agent_proc_s p;
	pthread_t pump;
};

/* The pump's bound on a process that does not end after the connection
 * killed it (an agent that stopped answering). */
#define SHUTDOWN_WAIT_MS 10000
#define RUN_CAPTURE_MAX  (64U << 10)
#define RUN_CAPTURE_MS   10000

static struct ab_xs_proc_s *
find (struct ab_xs_conn_s *x, const char *id)
{
	for (struct ab_xs_proc_s *p = x->procs; p; p = p->next)
		if (strcmp (p->id, id) == 0)
			return p;
	return NULL;
}

static void
proc_free (struct ab_xs_proc_s *p)
{
	while (p->head) {
		struct chunk_s *c = p->head;
		p->head = c->next;
		free (c);
	}
	free (p->failure);
	free (p->id);
	free (p);
}

static const char *
stream_name (const struct ab_xs_proc_s *p, bool err)
{
	return p->tty ? "pty" : err ? "stderr" : "stdout";
}

/* Under x->lock. */
static uint64_t
retain (struct ab_xs_proc_s *p, const uint8_t *data, size_t len, bool err)
{
	struct chunk_s *c = xmalloc (sizeof *c + len);

	c->next = NULL;
	c->seq = ++p->seq;
	c->err = err;
	c->len = len;
	memcpy (c->data, data, len);
	if (p->tail)
		p->tail->next = c;
	else
		p->head = c;
	p->tail = c;
	p->retained += len;
	while (p->retained > AB_XS_RETAIN_BYTES && p->head != p->tail) {
		struct chunk_s *old = p->head;
		p->head = old->next;
		p->retained -= old->len;
		free (old);
	}
	return c->seq;
}

static void
output (struct ab_xs_proc_s *p, const struct ab_agent_event_s *ev)
{
	struct ab_xs_conn_s *x = p->x;
	bool err = ev->kind == AB_AGENT_EV_STDERR;
	cleanup_free char *b64 = ab_base64_encode (ev->data, ev->len);
	uint64_t seq;

	pthread_mutex_lock (&x->lock);
	seq = retain (p, ev->data, ev->len, err);
	pthread_cond_broadcast (&x->cond);
	pthread_mutex_unlock (&x->lock);
	ab_xs_notify (x, "process/output",
	              json_pack ("{s:s, s:I, s:s, s:s}", "processId", p->id, "seq", (json_int_t)seq,
	                         "stream", stream_name (p, err), "chunk", b64));
}

static void
finish (struct ab_xs_proc_s *p, int code, const char *failure)
{
	struct ab_xs_conn_s *x = p->x;
	uint64_t seq;

	pthread_mutex_lock (&x->lock);
	p->exited = true;
	p->exit_code = code;
	p->failure = failure ? xstrdup (failure) : NULL;
	seq = ++p->seq;
	pthread_cond_broadcast (&x->cond);
	pthread_mutex_unlock (&x->lock);
	ab_xs_notify (x, "process/exited",
	              json_pack ("{s:s, s:I, s:i, s:b}", "processId", p->id, "seq", (json_int_t)seq,
	                         "exitCode", code, "sandboxDenied", 0));
	pthread_mutex_lock (&x->lock);
	p->closed = true;
	p->closed_ms = ab_mono_ms ();
	seq = ++p->seq;
	pthread_cond_broadcast (&x->cond);
	pthread_mutex_unlock (&x->lock);
	ab_xs_notify (x, "process/closed",
	              json_pack ("{s:s, s:I}", "processId", p->id, "seq", (json_int_t)seq));
}

static void *
pump_main (void *arg)
{
	struct ab_xs_proc_s *p = arg;
	struct ab_xs_conn_s *x = p->x;
	ab_error_t err = AB_ERROR_INIT;
	uint64_t kill_ms = 0;

	for (;;) {
		struct ab_agent_event_s ev;
		int rc = ab_agent_proc_next_event (p->c, &p->p, &ev, 1000, &err);
		if (rc < 0) {
			finish (p, -1, err.msg);
			break;
		}
		if (rc == 0) {
			bool closing;
			pthread_mutex_lock (&x->lock);
			closing = x->closing;
			pthread_mutex_unlock (&x->lock);
			if (closing && !kill_ms)
				kill_ms = ab_mono_ms ();
			if (kill_ms && ab_mono_ms () - kill_ms > SHUTDOWN_WAIT_MS) {
				finish (p, -1, "the sandbox's agent did not report the exit");
				break;
			}
			continue;
		}
		if (ev.kind == AB_AGENT_EV_EXIT) {
			cleanup_free char *why = ev.exit.exec_errno
			                                 ? xasprintf ("could not start: %s",
			                                              strerror (ev.exit.exec_errno))
			                                 : NULL;
			finish (p, ab_exit_code (&ev.exit), why);
			break;
		}
		output (p, &ev);
	}
	ab_agent_close (p->c);
	p->c = NULL;
	ab_box_exec_end (x->r->d, x->b);
	return NULL;
}

/* Forget processes closed long enough ago (the connection's thread). */
static void
evict (struct ab_xs_conn_s *x)
{
	uint64_t now = ab_mono_ms ();

	pthread_mutex_lock (&x->lock);
	for (struct ab_xs_proc_s **pp = &x->procs; *pp;) {
		struct ab_xs_proc_s *p = *pp;
		if (p->closed && now - p->closed_ms >= AB_XS_EVICT_MS) {
			*pp = p->next;
			pthread_mutex_unlock (&x->lock);
			pthread_join (p->pump, NULL);
			proc_free (p);
			pthread_mutex_lock (&x->lock);
			pp = &x->procs; /* the list may have changed meanwhile */
		} else
			pp = &(*pp)->next;
	}
	pthread_mutex_unlock (&x->lock);
}

static unsigned
live_count (struct ab_xs_conn_s *x)
{
	unsigned n = 0;

	for (struct ab_xs_proc_s *p = x->procs; p; p = p->next)
		n += !p->closed;
	return n;
}

static const char *
get_id (const json_t *params, struct ab_xs_reply_s *out)
{
	json_t *v = json_object_get (params, "processId");

	if (!json_is_object (params) || !json_is_string (v))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "missing field `processId`"), NULL;
	if (json_string_length (v) == 0 || json_string_length (v) > AB_XS_MAX_ID
	    || strlen (json_string_value (v)) != json_string_length (v))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS,
		                   "processId must be 1 to %d characters without NUL",
		                   AB_XS_MAX_ID),
		       NULL;
	return json_string_value (v);
}

static char **
get_argv (const json_t *params, struct ab_xs_reply_s *out)
{
	json_t *a = json_object_get (params, "argv"), *e;
	char **argv = NULL;
	size_t i;

	if (!json_is_array (a))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "missing field `argv`"), NULL;
	if (json_array_size (a) == 0)
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "argv must not be empty"), NULL;
	json_array_foreach (a, i, e)
	{
		if (!json_is_string (e)
		    || strlen (json_string_value (e)) != json_string_length (e)) {
			ab_cleanup_strvp (&argv);
			return ab_xs_fail (out, AB_XS_BAD_PARAMS,
			                   "argv[%zu] must be a string without NUL", i),
			       NULL;
		}
		ab_strv_push (&argv, json_string_value (e));
	}
	return argv;
}

/* What the agent cannot honour is refused, never ignored. */
static int
check_unsupported (const json_t *params, struct ab_xs_reply_s *out)
{
	json_t *arg0 = json_object_get (params, "arg0");
	json_t *enforce = json_object_get (params, "enforceManagedNetwork");

	if (arg0 && !json_is_null (arg0))
		return ab_xs_fail (out, AB_XS_BAD_PARAMS,
		                   "arg0 is not supported by agentbox: argv[0] is the program"),
		       -1;
	if (json_is_true (enforce))
		return ab_xs_fail (
		               out, AB_XS_BAD_PARAMS,
		               "enforceManagedNetwork is not supported by agentbox: the sandbox's "
		               "own network policy applies"),
		       -1;
	return 0;
}

static bool
flag (const json_t *params, const char *name)
{
	return json_is_true (json_object_get (params, name));
}

static int
launch (struct ab_xs_conn_s *x, struct ab_xs_proc_s *p, const struct ab_agent_proc_spec_s *ps,
        struct ab_xs_reply_s *out)
{
	ab_error_t err = AB_ERROR_INIT;

	if (ab_box_exec_begin (x->r->d, x->b, &err) < 0)
		return ab_xs_fail_agent (x, out, &err), -1;
	p->c = ab_box_connect (x->r->d, x->b, &err);
	if (!p->c || ab_agent_proc_start (p->c, ps, &p->p, &err) < 0) {
		ab_agent_close (p->c);
		ab_box_exec_end (x->r->d, x->b);
		return ab_xs_fail_agent (x, out, &err), -1;
	}
	p->pid = p->p.pid;
	if (pthread_create (&p->pump, NULL, pump_main, p) != 0) {
		ab_agent_proc_signal (p->c, p->pid, SIGKILL, &err);
		ab_agent_close (p->c);
		ab_box_exec_end (x->r->d, x->b);
		return ab_xs_fail (out, AB_XS_INTERNAL, "cannot start a thread"), -1;
	}
	return 0;
}

void
ab_xs_proc_start (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	const char *id = get_id (params, out);
	cleanup_strv char **argv = NULL, **env = NULL;
	cleanup_free char *cwd = NULL;
	struct ab_agent_proc_spec_s ps = { 0 };
	struct ab_xs_proc_s *p;
	json_t *cwdv;
	bool host_form, dup;
	unsigned live;

	if (!id)
		return;
	evict (x);
	pthread_mutex_lock (&x->lock);
	dup = find (x, id) != NULL;
	live = live_count (x);
	pthread_mutex_unlock (&x->lock);
	if (dup)
		return ab_xs_fail (out, AB_XS_INVALID_REQUEST, "process %s already exists", id);
	if (live >= AB_XS_MAX_PROCS)
		return ab_xs_fail (out, AB_XS_INTERNAL, "at most %d live processes per connection",
		                   AB_XS_MAX_PROCS);
	cwdv = json_object_get (params, "cwd");
	if (!(argv = get_argv (params, out)) || check_unsupported (params, out) < 0
	    || ab_xs_check_profile (x->b, json_object_get (params, "sandbox"), out) < 0
	    || (cwdv && !json_is_null (cwdv)
	        && !(cwd = ab_xs_uri_path (x->b, cwdv, "cwd", &host_form, out)))
	    || !(env = ab_xs_build_env (x->b, json_object_get (params, "env"),
	                                json_object_get (params, "envPolicy"), out)))
		return;
	ps.argv = argv;
	ps.env = env;
	ps.cwd = cwd ? cwd : x->b->spec.workdir;
	ps.uid = x->b->spec.uid;
	ps.gid = x->b->spec.gid;
	ps.tty = flag (params, "tty");
	ps.rows = ps.tty ? 24 : 0;
	ps.cols = ps.tty ? 80 : 0;
	ps.stdin_open = ps.tty || flag (params, "pipeStdin");
	ps.timeout_ms = x->b->spec.limits.timeout_ms;
	ps.grace_ms = x->b->spec.limits.kill_grace_ms;

	p = xcalloc (1, sizeof *p);
	p->x = x;
	p->id = xstrdup (id);
	p->tty = ps.tty;
	p->stdin_open = ps.stdin_open;
	/* Listed before the pump runs, so its first event finds the record. */
	pthread_mutex_lock (&x->lock);
	p->next = x->procs;
	x->procs = p;
	pthread_mutex_unlock (&x->lock);
	if (launch (x, p, &ps, out) < 0) {
		pthread_mutex_lock (&x->lock);
		x->procs = p->next;
		pthread_mutex_unlock (&x->lock);
		proc_free (p);
		return;
	}
	ab_metrics_inc ("exec_server_processes");
	/* Codex 0.171 knows only its own sandboxes' names here (none,
	 * linuxSeccomp, ...) and fails exec_command on any other value; "none"
	 * is the truth for Codex: it applied none of its own.  The wall that
	 * does apply is the sandbox's backend (environmentInfo says which). */
	out->result = json_pack ("{s:s, s:s}", "processId", id, "sandboxType", "none");
}

/* --- process/read ------------------------------------------------------ */

struct reader_s {
	struct ab_xs_conn_s *x;
	json_t *id;
	char *pid;
	uint64_t after, max_bytes;
	uint64_t deadline_ms;
};

static bool
has_news (const struct ab_xs_proc_s *p, uint64_t after)
{
	return p->closed || (p->tail && p->tail->seq > after);
}

/* The answer from a record (under x->lock). */
static json_t *
read_result (const struct ab_xs_proc_s *p, uint64_t after, uint64_t max_bytes)
{
	json_t *chunks = json_array ();
	uint64_t next = p->seq + 1, total = 0;

	for (const struct chunk_s *c = p->head; c; c = c->next) {
		if (c->seq <= after)
			continue;
		if (json_array_size (chunks) > 0 && total + c->len > max_bytes) {
			next = c->seq;
			break;
		}
		cleanup_free char *b64 = ab_base64_encode (c->data, c->len);
		json_array_append_new (chunks,
		                       json_pack ("{s:I, s:s, s:s}", "seq", (json_int_t)c->seq,
		                                  "stream", stream_name (p, c->err), "chunk", b64));
		total += c->len;
	}
	return json_pack ("{s:o, s:I, s:b, s:o, s:b, s:o, s:b}", "chunks", chunks, "nextSeq",
	                  (json_int_t)next, "exited", p->exited, "exitCode",
	                  p->exited ? json_integer (p->exit_code) : json_null (), "closed",
	                  p->closed, "failure",
	                  p->failure ? json_string (p->failure) : json_null (), "sandboxDenied", 0);
}

/* Under x->lock: the answer, or NULL while waiting is still due. */
static json_t *
try_read (struct reader_s *rd, bool final, struct ab_xs_reply_s *out)
{
	struct ab_xs_proc_s *p = find (rd->x, rd->pid);

	if (!p) {
		ab_xs_fail (out, AB_XS_INVALID_REQUEST, "unknown process id %s", rd->pid);
		return NULL;
	}
	if (!final && !has_news (p, rd->after) && !rd->x->closing)
		return NULL;
	return read_result (p, rd->after, rd->max_bytes);
}

static void
reader_answer (struct reader_s *rd, bool final)
{
	struct ab_xs_reply_s rep = { 0 };

	rep.result = try_read (rd, final, &rep);
	pthread_mutex_unlock (&rd->x->lock);
	ab_xs_answer (rd->x, rd->id, &rep);
	pthread_mutex_lock (&rd->x->lock);
}

static void
reader_free (struct reader_s *rd)
{
	json_decref (rd->id);
	free (rd->pid);
	free (rd);
}

static void *
reader_main (void *arg)
{
	struct reader_s *rd = arg;
	struct ab_xs_conn_s *x = rd->x;
	struct ab_xs_reply_s probe = { 0 };
	json_t *j;

	pthread_mutex_lock (&x->lock);
	while (!(j = try_read (rd, false, &probe)) && probe.code == 0) {
		uint64_t now = ab_mono_ms ();
		struct timespec ts;
		if (now >= rd->deadline_ms)
			break;
		clock_gettime (CLOCK_MONOTONIC, &ts);
		ts.tv_sec += (time_t)((rd->deadline_ms - now) / 1000);
		ts.tv_nsec += (long)((rd->deadline_ms - now) % 1000) * 1000000L;
		if (ts.tv_nsec >= 1000000000L)
			ts.tv_sec++, ts.tv_nsec -= 1000000000L;
		pthread_cond_timedwait (&x->cond, &x->lock, &ts);
	}
	json_decref (j);
	reader_answer (rd, true);
	x->n_readers--;
	pthread_cond_broadcast (&x->cond);
	pthread_mutex_unlock (&x->lock);
	reader_free (rd);
	return NULL;
}

static int
get_u64 (const json_t *params, const char *name, uint64_t dflt, uint64_t *out,
         struct ab_xs_reply_s *rep)
{
	json_t *v = json_object_get (params, name);

	*out = dflt;
	if (!v || json_is_null (v))
		return 0;
	if (!json_is_integer (v) || json_integer_value (v) < 0)
		return ab_xs_fail (rep, AB_XS_BAD_PARAMS, "%s must be a non-negative integer",
		                   name),
		       -1;
	*out = (uint64_t)json_integer_value (v);
	return 0;
}

void
ab_xs_proc_read (struct ab_xs_conn_s *x, json_t *id, json_t *params)
{
	struct ab_xs_reply_s rep = { 0 };
	const char *pid = get_id (params, &rep);
	struct reader_s *rd;
	uint64_t wait = 0;
	pthread_attr_t attr;
	pthread_t t;
	bool ok;

	rd = xcalloc (1, sizeof *rd);
	if (!pid || get_u64 (params, "afterSeq", 0, &rd->after, &rep) < 0
	    || get_u64 (params, "maxBytes", UINT64_MAX, &rd->max_bytes, &rep) < 0
	    || get_u64 (params, "waitMs", 0, &wait, &rep) < 0) {
		free (rd);
		ab_xs_answer (x, id, &rep);
		return;
	}
	evict (x);
	rd->x = x;
	rd->id = json_incref (id);
	rd->pid = xstrdup (pid);
	rd->deadline_ms = ab_mono_ms () + (wait < AB_XS_MAX_WAIT_MS ? wait : AB_XS_MAX_WAIT_MS);
	pthread_mutex_lock (&x->lock);
	if (wait == 0 || x->n_readers >= AB_XS_MAX_READERS) {
		/* no wait asked, or too many waiting: answer with what there is */
		reader_answer (rd, true);
		pthread_mutex_unlock (&x->lock);
		reader_free (rd);
		return;
	}
	x->n_readers++;
	pthread_mutex_unlock (&x->lock);
	pthread_attr_init (&attr);
	pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
	ok = pthread_create (&t, &attr, reader_main, rd) == 0;
	pthread_attr_destroy (&attr);
	if (!ok) {
		pthread_mutex_lock (&x->lock);
		x->n_readers--;
		reader_answer (rd, true);
		pthread_mutex_unlock (&x->lock);
		reader_free (rd);
	}
}

/* --- write, signal, terminate ------------------------------------------ */

/* The pid of a running process, 0 when unknown or finished. */
static uint32_t
running_pid (struct ab_xs_conn_s *x, const char *id, bool *known, bool *stdin_open)
{
	struct ab_xs_proc_s *p;
	uint32_t pid = 0;

	evict (x);
	pthread_mutex_lock (&x->lock);
	p = find (x, id);
	*known = p != NULL;
	if (stdin_open)
		*stdin_open = p && p->stdin_open;
	if (p && !p->exited)
		pid = p->pid;
	pthread_mutex_unlock (&x->lock);
	return pid;
}

void
ab_xs_proc_write (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	const char *id = get_id (params, out), *status = "accepted";
	json_t *chunk = json_object_get (params, "chunk");
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free uint8_t *buf = NULL;
	size_t len = 0;
	bool known, open;
	uint32_t pid;
	ab_agent_conn_t *c;

	if (!id)
		return;
	if (!json_is_string (chunk)
	    || ab_base64_decode (json_string_value (chunk), json_string_length (chunk), &buf, &len)
	               < 0)
		return ab_xs_fail (out, AB_XS_BAD_PARAMS, "chunk must be base64");
	pid = running_pid (x, id, &known, &open);
	if (!known)
		status = "unknownProcess";
	else if (!pid || !open)
		status = "stdinClosed";
	else if (len > 0) {
		if (!(c = ab_xs_agent (x, &err)))
			return ab_xs_fail_agent (x, out, &err);
		if (ab_agent_proc_write_stdin (c, pid, buf, len, &err) < 0) {
			if (err.kind != AB_E_CONFLICT && err.kind != AB_E_NOT_FOUND)
				return ab_xs_fail_agent (x, out, &err);
			status = "stdinClosed";
		}
	}
	out->result = json_pack ("{s:s}", "status", status);
}

static int
kill_pid (struct ab_xs_conn_s *x, uint32_t pid, int sig, struct ab_xs_reply_s *out)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_xs_agent (x, &err);

	if (!c || (ab_agent_proc_signal (c, pid, sig, &err) < 0 && err.kind != AB_E_NOT_FOUND)) {
		if (out)
			ab_xs_fail_agent (x, out, &err);
		return -1;
	}
	return 0;
}

void
ab_xs_proc_signal (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	const char *id = get_id (params, out);
	json_t *sig = json_object_get (params, "signal");
	bool known;
	uint32_t pid;

	if (!id)
		return;
	/* The reference's one signal. */
	if (!json_is_string (sig) || strcmp (json_string_value (sig), "interrupt") != 0)
		return ab_xs_fail (out, AB_XS_BAD_PARAMS,
		                   "unknown variant of signal, expected `interrupt`");
	pid = running_pid (x, id, &known, NULL);
	if (pid && kill_pid (x, pid, SIGINT, out) < 0)
		return;
	out->result = json_object ();
}

void
ab_xs_proc_terminate (struct ab_xs_conn_s *x, json_t *params, struct ab_xs_reply_s *out)
{
	const char *id = get_id (params, out);
	bool known;
	uint32_t pid;

	if (!id)
		return;
	pid = running_pid (x, id, &known, NULL);
	if (pid && kill_pid (x, pid, SIGKILL, out) < 0)
		return;
	out->result = json_pack ("{s:b}", "running", pid != 0);
}

void
ab_xs_proc_shutdown (struct ab_xs_conn_s *x)
{
	pthread_mutex_lock (&x->lock);
	x->closing = true;
	pthread_cond_broadcast (&x->cond);
	for (struct ab_xs_proc_s *p = x->procs; p; p = p->next)
		if (!p->exited) {
			uint32_t pid = p->pid;
			pthread_mutex_unlock (&x->lock);
			kill_pid (x, pid, SIGKILL, NULL);
			pthread_mutex_lock (&x->lock);
		}
	while (x->n_readers > 0)
		pthread_cond_wait (&x->cond, &x->lock);
	pthread_mutex_unlock (&x->lock);
	while (x->procs) {
		struct ab_xs_proc_s *p = x->procs;
		x->procs = p->next;
		pthread_join (p->pump, NULL);
		proc_free (p);
	}
}

/* --- a helper run ------------------------------------------------------ */

int
ab_xs_run_capture (struct ab_xs_conn_s *x, char *const *argv, char **out, int *code,
                   ab_error_t *err)
{
	struct ab_agent_proc_spec_s ps = { .argv = argv, .env = x->b->spec.env, .cwd = "/" };
	ab_agent_conn_t *c = ab_box_connect (x->r->d, x->b, err);
	struct ab_agent_proc_s p;
	uint64_t deadline = ab_mono_ms () + RUN_CAPTURE_MS;
	size_t len = 0;
	char *buf = xcalloc (1, 1);
	int rc = -1;

	ps.uid = x->b->spec.uid;
	ps.gid = x->b->spec.gid;
	*code = 127;
	if (c && ab_agent_proc_start (c, &ps, &p, err) == 0)
		for (;;) {
			struct ab_agent_event_s ev;
			int r = ab_agent_proc_next_event (c, &p, &ev, 500, err);
			if (r < 0)
				break;
			if (r == 0 && ab_mono_ms () < deadline)
				continue;
			if (r == 0) {
				ab_agent_proc_signal (c, p.pid, SIGKILL, err);
				ab_error (err, ETIMEDOUT, AB_E_SYSTEM, "%s did not finish",
				          argv[0]);
				break;
			}
			if (ev.kind == AB_AGENT_EV_EXIT) {
				*code = ab_exit_code (&ev.exit);
				rc = 0;
				break;
			}
			if (ev.kind == AB_AGENT_EV_STDOUT && len + ev.len <= RUN_CAPTURE_MAX) {
				buf = xrealloc (buf, len + ev.len + 1);
				memcpy (buf + len, ev.data, ev.len);
				len += ev.len;
				buf[len] = 0;
			}
		}
	ab_agent_close (c);
	*out = buf;
	return rc;
}
