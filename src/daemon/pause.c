/* Pausing a daemon sandbox (docs/snapshots.md): the backend freezes every
 * process of it (backend/pause.c), the daemon remembers it in state.json
 * ("paused", "paused_ms"), so a restarted daemon adopts it frozen, and
 * the TTL clock stops: on resume the expiry moves by the time spent
 * paused.  The state stays RUNNING; `paused` is a flag beside it, shown
 * as the state "paused".  Calls that need the agent get 409 "paused",
 * unless the sandbox was created with "auto_resume": true.  One mutex
 * orders every pause, resume and snapshot of this daemon, so two callers
 * never race a freeze against a thaw. */
#include "daemon/daemon-internal.h"

#include <string.h>

#include "backend/backend.h"
#include "base/clock.h"
#include "base/xalloc.h"

static pthread_mutex_t pause_lock = PTHREAD_MUTEX_INITIALIZER;

bool
ab_box_is_paused (struct ab_daemon_s *d, struct ab_box_s *b)
{
	bool p;

	pthread_mutex_lock (&d->lock);
	p = b->paused;
	pthread_mutex_unlock (&d->lock);
	return p;
}

void
ab_box_pause_state_save (const struct ab_box_s *b, json_t *j)
{
	if (b->backend_id[0])
		json_object_set_new (j, "backend_id", json_string (b->backend_id));
	json_object_set_new (j, "paused", json_boolean (b->paused));
	if (b->paused)
		json_object_set_new (j, "paused_ms", json_integer (b->paused_ms));
	json_object_set_new (j, "auto_resume", json_boolean (b->auto_resume));
	if (b->from_snapshot)
		json_object_set_new (j, "from_snapshot", json_string (b->from_snapshot));
}

void
ab_box_pause_state_load (struct ab_box_s *b, const json_t *j)
{
	const char *id = json_string_value (json_object_get (j, "backend_id"));
	const char *snap = json_string_value (json_object_get (j, "from_snapshot"));

	if (id && strlen (id) < sizeof b->backend_id)
		snprintf (b->backend_id, sizeof b->backend_id, "%s", id);
	b->paused = json_is_true (json_object_get (j, "paused"));
	b->paused_ms = json_integer_value (json_object_get (j, "paused_ms"));
	b->auto_resume = json_is_true (json_object_get (j, "auto_resume"));
	free (b->from_snapshot);
	b->from_snapshot = snap ? xstrdup (snap) : NULL;
}

/* The backend's view of the sandbox, for its pause slots. */
static const struct ab_backend_ops_s *
backend_of (struct ab_box_s *b, struct ab_sandbox_s *sb, ab_error_t *err)
{
	const struct ab_backend_ops_s *ops = ab_backend_find (b->backend);

	if (!ops || !ops->pause)
		return ab_error (err, 0, AB_E_CONFLICT, "the %s backend cannot pause a sandbox",
		                 b->backend),
		       NULL;
	if (!b->backend_id[0])
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "sandbox %s was started by an agentbox that did not record its "
		                 "backend id: it cannot be paused",
		                 b->id),
		       NULL;
	ab_sandbox_attach (sb, ops, b->backend_id, b->monitor_pid, b->agent_sock);
	return ops;
}

static int
set_paused (struct ab_daemon_s *d, struct ab_box_s *b, bool pause, uint64_t *op_us, ab_error_t *err)
{
	const struct ab_backend_ops_s *ops;
	struct ab_sandbox_s sb;
	int64_t now = (int64_t)ab_unix_ms ();
	int r;

	if (ab_box_get_state (d, b) != AB_BOX_RUNNING)
		return ab_error (err, 0, AB_E_CONFLICT, "sandbox %s is %s", b->id,
		                 ab_box_state_name (ab_box_get_state (d, b)));
	if (ab_box_is_paused (d, b) == pause)
		return 0;
	if (!(ops = backend_of (b, &sb, err)))
		return -1;
	uint64_t t0 = ab_mono_us ();
	r = pause ? ops->pause (&sb, err) : ops->resume (&sb, err);
	*op_us = ab_mono_us () - t0;
	if (r < 0)
		return ab_error_wrap (err, "%s sandbox %s", pause ? "pause" : "resume", b->id);
	pthread_mutex_lock (&d->lock);
	b->paused = pause;
	if (pause)
		b->paused_ms = now;
	else if (b->expires_ms && b->paused_ms && now > b->paused_ms)
		b->expires_ms += now - b->paused_ms;
	pthread_mutex_unlock (&d->lock);
	ab_metrics_inc (pause ? "sandboxes_paused" : "sandboxes_resumed");
	/* Not fsynced: the flag must survive the daemon's death (the page
	 * cache does), and a host crash ends the frozen processes with it, so
	 * a lost write never leaves a sandbox adopted in the wrong state.  A
	 * snapshot's pause and resume are two of these per copy. */
	return ab_box_save_ex (d, b, false, err);
}

static int
locked_set_paused (struct ab_daemon_s *d, struct ab_box_s *b, bool pause, uint64_t *op_us,
                   ab_error_t *err)
{
	int r;

	*op_us = 0;
	pthread_mutex_lock (&pause_lock);
	r = set_paused (d, b, pause, op_us, err);
	pthread_mutex_unlock (&pause_lock);
	return r;
}

int
ab_box_pause (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	uint64_t us;
	return locked_set_paused (d, b, true, &us, err);
}

int
ab_box_resume (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	uint64_t us;
	return locked_set_paused (d, b, false, &us, err);
}

int
ab_box_unpaused (struct ab_daemon_s *d, struct ab_box_s *b, ab_error_t *err)
{
	if (!ab_box_is_paused (d, b))
		return 0;
	if (!b->auto_resume)
		return ab_error (err, 0, AB_E_CONFLICT, "sandbox %s is paused", b->id);
	return ab_box_resume (d, b, err);
}

int
ab_api_unpaused (struct ab_req_s *r, struct ab_box_s *b)
{
	ab_error_t err = AB_ERROR_INIT;

	if (!ab_box_is_paused (r->d, b))
		return 0;
	if (!b->auto_resume)
		return ab_resp_fail (r, 409, "paused",
		                     "sandbox %s is paused (resume it first, or create it with "
		                     "\"auto_resume\": true)",
		                     b->id),
		       -1;
	if (ab_box_resume (r->d, b, &err) < 0)
		return ab_resp_error (r, &err), -1;
	return 0;
}

static void
pause_handler (struct ab_req_s *r, bool pause)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b = ab_api_box (r, false);
	uint64_t t0 = ab_mono_us (), op_us;

	if (!b)
		return;
	if (locked_set_paused (r->d, b, pause, &op_us, &err) < 0) {
		ab_resp_error (r, &err);
	} else {
		/* backend_us: the freeze or thaw itself; took_us adds the
		 * durable state write (fsync). */
		json_t *j = ab_box_json (r->d, b);
		json_object_set_new (j, "backend_us", json_integer ((json_int_t)op_us));
		json_object_set_new (j, "took_us", json_integer ((json_int_t)(ab_mono_us () - t0)));
		ab_resp_json (r, 200, j);
	}
	ab_box_unref (r->d, b);
}

void
ab_api_sandbox_pause (struct ab_req_s *r)
{
	pause_handler (r, true);
}

void
ab_api_sandbox_resume (struct ab_req_s *r)
{
	pause_handler (r, false);
}
