/* A one-shot through a pool (`agentbox run --pool NAME -- CMD`): one
 * request claims, runs and streams, `POST /v1/sandboxes {"pool": NAME,
 * ..., "run": {"cmd", "env", "cwd", "user", "timeout"}}` answers the
 * command's NDJSON exec stream (start with the sandbox's id, stdout,
 * stderr, exit), and the sandbox is destroyed after the exit event went
 * out, so the caller's exit never waits for the teardown.
 *
 * Nothing is left behind: <dir>/oneshot is written before the claim's
 * commit (pool-claim.c), so a daemon that dies between the claim and the
 * teardown destroys the sandbox when it adopts it again
 * (ab_daemon_adopt); a caller that goes away mid-command ends it too. */
#include "daemon/pool.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/xalloc.h"

#define ONESHOT_FILE "oneshot"

static const char *const run_keys[] = { "cmd", "env", "cwd", "user", "timeout" };

int
ab_pool_run_check (const json_t *run, ab_error_t *err)
{
	struct ab_box_s tmp;
	struct ab_exec_req_s x;
	const char *k;
	json_t *v;
	int r;

	if (!json_is_object (run))
		return ab_error (err, 0, AB_E_INVALID,
		                 "'run' must be an object ({\"cmd\": [...]})");
	json_object_foreach ((json_t *)run, k, v)
	{
		bool known = false;
		for (size_t i = 0; i < sizeof run_keys / sizeof *run_keys; i++)
			known |= strcmp (k, run_keys[i]) == 0;
		if (!known)
			return ab_error (
			        err, 0, AB_E_INVALID,
			        "'run.%s': a one-shot takes cmd, env, cwd, user and timeout", k);
	}
	/* The exec request's own reader, on a spec of defaults: a bad command
	 * is a 400 before any entry leaves its pool. */
	memset (&tmp, 0, sizeof tmp);
	ab_spec_init (&tmp.spec);
	r = ab_exec_req_parse (&tmp, run, &x, err);
	ab_exec_req_free (&x);
	ab_spec_free (&tmp.spec);
	return r;
}

int
ab_pool_oneshot_mark (struct ab_box_s *b, ab_error_t *err)
{
	cleanup_free char *path = xasprintf ("%s/" ONESHOT_FILE, b->dir);
	int fd = open (path, O_WRONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "mark %s as a one-shot", b->id);
	close (fd);
	return 0;
}

bool
ab_pool_oneshot_marked (const struct ab_box_s *b)
{
	cleanup_free char *path = xasprintf ("%s/" ONESHOT_FILE, b->dir);

	return access (path, F_OK) == 0;
}

void
ab_pool_oneshot_finish (struct ab_daemon_s *d, struct ab_box_s *b)
{
	ab_error_t err = AB_ERROR_INIT;

	if (ab_box_destroy (d, b, true, &err) < 0)
		ab_log_error (AB_LOG_WARN, &err, "one-shot sandbox %s: teardown", b->id);
}

/* Start the command and stream it; -1 (err set) when nothing was
 * answered yet. */
static int
run_stream (struct ab_req_s *r, struct ab_box_s *b, ab_agent_conn_t *c, struct ab_exec_req_s *x,
            ab_error_t *err)
{
	struct ab_agent_proc_s p;
	uint64_t t0 = ab_mono_us ();

	if (ab_agent_proc_start (c, &x->ps, &p, err) < 0)
		return -1;
	ab_metrics_observe (AB_M_EXEC_START, ab_mono_us () - t0);
	ab_metrics_inc ("execs");
	if (ab_resp_stream_begin (r, 200, "application/x-ndjson") == 0
	    && ab_resp_stream_json (r, json_pack ("{s:s, s:i, s:s}", "type", "start", "pid",
	                                          (int)p.pid, "id", b->id))
	               == 0)
		ab_exec_stream_events (r, c, &p);
	return 0;
}

void
ab_pool_run (struct ab_req_s *r, const char *pool, struct ab_box_s *b, ab_agent_conn_t *conn,
             const json_t *run)
{
	struct ab_daemon_s *d = r->d;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_exec_req_s x = { 0 };
	ab_agent_conn_t *c = conn;
	int rc = -1;

	if (ab_exec_req_parse (b, run, &x, &err) == 0 && ab_box_exec_begin (d, b, &err) == 0) {
		if (c || (c = ab_box_connect (d, b, &err)))
			rc = run_stream (r, b, c, &x, &err);
		ab_box_exec_end (d, b);
	}
	if (rc < 0)
		ab_resp_error (r, &err);
	ab_agent_close (c);
	ab_exec_req_free (&x);
	ab_pool_release_hold (d, pool);
	/* The answer is complete (or the caller is gone): the teardown is
	 * this thread's, not the caller's. */
	r->close = true;
	ab_pool_oneshot_finish (d, b);
	ab_box_unref (d, b);
}
