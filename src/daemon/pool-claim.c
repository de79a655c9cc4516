/* POST /v1/sandboxes {"pool": NAME, ...}: claim a pool's ready entry.
 * The entry leaves its pool under the daemon lock (so two claims never get
 * the same one, and the replenisher never evicts it), its agent is pinged
 * (a dead entry is removed, never handed out), then the claim's own
 * settings are applied — env, labels, ttl, credentials, egress — and only
 * then does the agent get its one-time configuration.  The state file,
 * written without the pool's name, is the commit: an entry never returns
 * to a pool.  A miss makes a cold sandbox of the pool's spec, or 503 with
 * "pool_only". */
#include "daemon/pool.h"

#include <string.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/xalloc.h"
#include "policy/egress-policy.h"
#include "session/egress-relay.h"
#include "spec/spec-json.h"

#define CLAIM_PING_MS 1000
#define CLAIM_TRIES   8

static const char *const claim_keys[] = { "pool", "pool_only",   "env",    "labels",
	                                  "ttl",  "credentials", "egress", "run" };

struct claim_s {
	const char *pool;
	bool pool_only;
	json_t *env, *labels, *ttl, *creds, *egress; /* borrowed from the request */
	json_t *run; /* a one-shot's command (pool-run.c), borrowed */
	uint64_t ttl_ms;
};

/* env and egress through the spec's own reader, before any entry is
 * taken: a bad claim is a 400 that costs the pool nothing. */
static int
check_settings (const struct claim_s *c, ab_error_t *err)
{
	struct ab_spec_s tmp;
	json_t *wrap = json_object ();
	int r;

	if (c->env)
		json_object_set (wrap, "env", c->env);
	if (c->egress) {
		json_object_set_new (wrap, "network", json_string ("proxy"));
		json_object_set (wrap, "egress", c->egress);
	}
	ab_spec_init (&tmp);
	r = ab_spec_from_json (wrap, 0, &tmp, err);
	ab_spec_free (&tmp);
	json_decref (wrap);
	return r;
}

static int
parse_claim (const json_t *req, struct claim_s *c, ab_error_t *err)
{
	const char *k;
	json_t *v;

	json_object_foreach ((json_t *)req, k, v)
	{
		bool known = false;
		for (size_t i = 0; i < sizeof claim_keys / sizeof *claim_keys; i++)
			known |= strcmp (k, claim_keys[i]) == 0;
		if (!known)
			return ab_error (err, 0, AB_E_INVALID,
			                 "'%s': a claim takes only env, labels, ttl, credentials, "
			                 "egress and run (the rest is the pool's spec)",
			                 k);
	}
	c->pool = json_string_value (json_object_get (req, "pool"));
	if (!c->pool)
		return ab_error (err, 0, AB_E_INVALID, "'pool' must be a pool's name");
	c->pool_only = json_is_true (json_object_get (req, "pool_only"));
	c->env = json_object_get (req, "env");
	c->labels = json_object_get (req, "labels");
	c->ttl = json_object_get (req, "ttl");
	c->creds = json_object_get (req, "credentials");
	c->egress = json_object_get (req, "egress");
	c->run = json_object_get (req, "run");
	if (c->run && ab_pool_run_check (c->run, err) < 0)
		return -1;
	if (c->labels && ab_labels_check (c->labels, err) < 0)
		return -1;
	if (c->ttl && !json_is_null (c->ttl)
	    && ab_json_duration_ms (c->ttl, "ttl", &c->ttl_ms, err) < 0)
		return -1;
	if (c->egress && !json_is_object (c->egress))
		return ab_error (err, 0, AB_E_INVALID, "'egress' must be an object");
	return check_settings (c, err);
}

/* The oldest current entry of the pool, out of it, with a reference. */
static struct ab_box_s *
pick (struct ab_daemon_s *d, const char *name)
{
	struct ab_pool_s *pool;
	struct ab_box_s *best = NULL;

	pthread_mutex_lock (&d->pools->lock);
	pool = ab_pool_find (d->pools, name);
	pthread_mutex_lock (&d->lock);
	for (struct ab_box_s *b = d->boxes; pool && b; b = b->next)
		if (b->pool && b->pool_ready && b->state == AB_BOX_RUNNING
		    && strcmp (b->pool, name) == 0 && strcmp (b->pool_hash, pool->hash) == 0
		    && (!best || b->created_ms < best->created_ms))
			best = b;
	if (best) {
		best->refs++;
		free (best->pool);
		best->pool = NULL;
	}
	pthread_mutex_unlock (&d->lock);
	pthread_mutex_unlock (&d->pools->lock);
	return best;
}

static int
apply_env (struct ab_box_s *b, const json_t *env, ab_error_t *err)
{
	struct ab_spec_s tmp;
	json_t *wrap = json_pack ("{s:O}", "env", env);
	char **swap;
	int r;

	ab_spec_init (&tmp);
	for (char **e = b->spec.env; e && *e; e++)
		ab_strv_push (&tmp.env, *e);
	r = ab_spec_from_json (wrap, 0, &tmp, err);
	json_decref (wrap);
	if (r == 0) {
		swap = b->spec.env;
		b->spec.env = tmp.env;
		tmp.env = swap;
	}
	ab_spec_free (&tmp);
	return r;
}

static int
apply_egress (struct ab_box_s *b, const json_t *egress, ab_error_t *err)
{
	struct ab_spec_s tmp;
	struct ab_egress_spec_s swap;
	struct ab_egress_policy_s *p;
	json_t *wrap;
	int r;

	if (b->spec.network != AB_NETWORK_PROXY)
		return ab_error (err, 0, AB_E_INVALID,
		                 "'egress' needs a pool whose spec has \"network\": \"proxy\"");
	ab_spec_init (&tmp);
	wrap = json_pack ("{s:s, s:O}", "network", "proxy", "egress", egress);
	r = ab_spec_from_json (wrap, 0, &tmp, err);
	json_decref (wrap);
	if (r == 0 && !(p = ab_egress_policy_from_spec (&tmp.egress, err)))
		r = -1;
	else if (r == 0)
		ab_egress_policy_free (p);
	if (r == 0) {
		swap = b->spec.egress;
		b->spec.egress = tmp.egress;
		tmp.egress = swap;
	}
	ab_spec_free (&tmp);
	return r;
}

/* The claim's settings on the entry, the commit, the configuration. */
static int
apply_claim (struct ab_daemon_s *d, struct ab_box_s *b, const struct claim_s *cl,
             ab_agent_conn_t *c, ab_error_t *err)
{
	if ((cl->env && apply_env (b, cl->env, err) < 0)
	    || (cl->egress && apply_egress (b, cl->egress, err) < 0)
	    || (cl->creds && !json_is_null (cl->creds) && ab_box_cred_take (b, cl->creds, err) < 0))
		return -1;
	pthread_mutex_lock (&d->lock);
	if (cl->labels) {
		json_decref (b->labels);
		b->labels = json_deep_copy (cl->labels);
	}
	b->ttl_ms = (int64_t)cl->ttl_ms;
	b->created_ms = (int64_t)ab_unix_ms ();
	b->expires_ms = b->ttl_ms ? b->created_ms + b->ttl_ms : 0;
	pthread_mutex_unlock (&d->lock);
	/* A one-shot's mark goes first: a daemon that dies after the commit
	 * finds it at adoption and finishes the teardown. */
	if (cl->run && ab_pool_oneshot_mark (b, err) < 0)
		return -1;
	/* The commit.  Not fsynced: it must survive the daemon's death (the
	 * page cache does), and a host crash ends the entry's processes too,
	 * so a lost write can never hand it out again. */
	if (ab_box_cred_save (b, err) < 0 || ab_box_save_ex (d, b, false, err) < 0)
		return -1;
	return ab_box_configure (d, b, c, err);
}

static void
drop_entry (struct ab_daemon_s *d, struct ab_box_s *b, const char *why)
{
	ab_error_t err = AB_ERROR_INIT;

	ab_log (AB_LOG_WARN, "pool entry %s: not handed out: %s", b->id, why);
	if (ab_box_destroy (d, b, true, &err) < 0)
		ab_log_error (AB_LOG_WARN, &err, "pool entry %s", b->id);
}

/* 1 claimed (b set; a one-shot's agent connection in *conn, kept for its
 * exec), 0 no entry, -1 error (err set). */
static int
claim_entry (struct ab_daemon_s *d, const struct claim_s *cl, struct ab_box_s **out,
             ab_agent_conn_t **conn, ab_error_t *err)
{
	for (int tries = 0; tries < CLAIM_TRIES; tries++) {
		struct ab_box_s *b = pick (d, cl->pool);
		ab_error_t e = AB_ERROR_INIT;
		ab_agent_conn_t *c;
		if (!b)
			return 0;
		c = ab_box_connect (d, b, &e);
		if (c)
			ab_agent_set_timeout (c, CLAIM_PING_MS);
		if (!c || ab_agent_ping (c, &e) < 0) {
			ab_agent_close (c);
			drop_entry (d, b, e.msg);
			ab_box_unref (d, b);
			continue;
		}
		ab_agent_set_timeout (c, AB_AGENT_CALL_TIMEOUT_MS);
		int r = apply_claim (d, b, cl, c, err);
		if (r == 0 && cl->run)
			*conn = steal_pointer (&c);
		ab_agent_close (c);
		if (r < 0) {
			drop_entry (d, b, err->msg);
			ab_box_unref (d, b);
			return -1;
		}
		*out = b;
		return 1;
	}
	return 0;
}

/* A miss: the pool's spec with the claim's settings on top, created cold. */
static json_t *
cold_request (const json_t *spec, const struct claim_s *cl)
{
	json_t *req = json_deep_copy (spec);

	if (cl->env) {
		json_t *env = json_object_get (req, "env");
		if (json_is_object (env) && json_is_object (cl->env))
			json_object_update (env, cl->env);
		else
			json_object_set (req, "env", cl->env);
	}
	if (cl->egress)
		json_object_set (req, "egress", cl->egress);
	if (cl->labels)
		json_object_set (req, "labels", cl->labels);
	if (cl->ttl)
		json_object_set (req, "ttl", cl->ttl);
	if (cl->creds)
		json_object_set (req, "credentials", cl->creds);
	return req;
}

static void
count (struct ab_daemon_s *d, const struct claim_s *cl, bool hit, uint64_t us)
{
	struct ab_pool_s *pool;

	pthread_mutex_lock (&d->pools->lock);
	pool = ab_pool_find (d->pools, cl->pool);
	if (pool && hit) {
		pool->claims++;
		ab_pool_observe_claim (pool, us);
		if (cl->run)
			pool->hold_until_ms = ab_mono_ms () + AB_POOL_ONESHOT_HOLD_MS;
	} else if (pool)
		pool->misses++;
	d->pools->dirty = true;
	pthread_cond_broadcast (&d->pools->cond); /* a replacement starts */
	pthread_mutex_unlock (&d->pools->lock);
}

static void
respond_box (struct ab_req_s *r, struct ab_box_s *b, bool from_pool)
{
	json_t *j = ab_box_json (r->d, b);
	json_object_set_new (j, "port_token", json_string (b->port_token));
	json_object_set_new (j, "from_pool", json_boolean (from_pool));
	ab_resp_json (r, 201, j);
	ab_box_unref (r->d, b);
}

/* No ready entry: 503 with pool_only, else a cold sandbox of the pool's
 * spec with the claim's settings (a one-shot's marked before it runs). */
static void
claim_miss (struct ab_req_s *r, const json_t *spec, const struct claim_s *cl)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_box_s *b;
	json_t *creq;
	int rc;

	if (cl->pool_only) {
		ab_resp_fail (r, 503, "pool_empty", "pool %s has no ready entry", cl->pool);
		return;
	}
	creq = cold_request (spec, cl);
	rc = ab_box_create (r->d, creq, &b, &err);
	json_decref (creq);
	if (rc < 0)
		ab_resp_error (r, &err);
	else if (!cl->run)
		respond_box (r, b, false);
	else if (ab_pool_oneshot_mark (b, &err) < 0) {
		ab_resp_error (r, &err);
		ab_pool_oneshot_finish (r->d, b);
		ab_box_unref (r->d, b);
	} else
		ab_pool_run (r, cl->pool, b, NULL, cl->run);
}

void
ab_api_pool_claim (struct ab_req_s *r, json_t *req)
{
	struct ab_daemon_s *d = r->d;
	ab_error_t err = AB_ERROR_INIT;
	struct claim_s cl = { 0 };
	struct ab_box_s *b = NULL;
	ab_agent_conn_t *conn = NULL;
	struct ab_pool_s *pool;
	uint64_t t0 = ab_mono_us ();
	json_t *spec;
	int got;

	if (parse_claim (req, &cl, &err) < 0) {
		ab_resp_error (r, &err);
		return;
	}
	pthread_mutex_lock (&d->pools->lock);
	pool = ab_pool_find (d->pools, cl.pool);
	spec = pool ? json_deep_copy (pool->spec) : NULL;
	pthread_mutex_unlock (&d->pools->lock);
	if (!spec) {
		ab_resp_fail (r, 404, "not_found", "no pool %.64s", cl.pool);
		return;
	}
	got = claim_entry (d, &cl, &b, &conn, &err);
	if (got > 0)
		count (d, &cl, true, ab_mono_us () - t0);
	if (got < 0)
		ab_resp_error (r, &err);
	else if (got > 0 && cl.run)
		ab_pool_run (r, cl.pool, b, conn, cl.run);
	else if (got > 0)
		respond_box (r, b, true);
	else {
		count (d, &cl, false, 0);
		claim_miss (r, spec, &cl);
	}
	json_decref (spec);
}
