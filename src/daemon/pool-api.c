/* POST/GET /v1/pools, GET/DELETE /v1/pools/{name} (docs/pools.md). */
#include "daemon/pool.h"

#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

/* How long DELETE waits for an entry being started to finish. */
#define DELETE_WAIT_MS 60000

void
ab_api_pool_create (struct ab_req_s *r)
{
	struct ab_pools_s *p = r->d->pools;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_pool_s *pool;
	json_t *req;

	if (ab_req_body_json (r, &req, &err) < 0) {
		ab_resp_error (r, &err);
		return;
	}
	pool = ab_pool_from_json (req, &err);
	json_decref (req);
	if (!pool) {
		ab_resp_error (r, &err);
		return;
	}
	pthread_mutex_lock (&p->lock);
	if (ab_pool_find (p, pool->name)) {
		pthread_mutex_unlock (&p->lock);
		ab_resp_fail (r, 409, "conflict", "pool %s exists (remove it first)", pool->name);
		ab_pool_free (pool);
		return;
	}
	pool->next = p->list;
	p->list = pool;
	if (ab_pools_save (r->d, &err) < 0) {
		p->list = pool->next;
		pthread_mutex_unlock (&p->lock);
		ab_pool_free (pool);
		ab_resp_error (r, &err);
		return;
	}
	pthread_cond_broadcast (&p->cond);
	ab_resp_json (r, 201, ab_pool_json (r->d, pool, false));
	pthread_mutex_unlock (&p->lock);
}

void
ab_api_pool_list (struct ab_req_s *r)
{
	struct ab_pools_s *p = r->d->pools;
	json_t *arr = json_array ();

	pthread_mutex_lock (&p->lock);
	for (struct ab_pool_s *pool = p->list; pool; pool = pool->next)
		if (!pool->deleted)
			json_array_append_new (arr, ab_pool_json (r->d, pool, false));
	pthread_mutex_unlock (&p->lock);
	ab_resp_json (r, 200, json_pack ("{s:o}", "pools", arr));
}

void
ab_api_pool_get (struct ab_req_s *r)
{
	struct ab_pools_s *p = r->d->pools;
	struct ab_pool_s *pool;

	pthread_mutex_lock (&p->lock);
	pool = ab_pool_find (p, r->params[0]);
	if (pool)
		ab_resp_json (r, 200, ab_pool_json (r->d, pool, true));
	pthread_mutex_unlock (&p->lock);
	if (!pool)
		ab_resp_fail (r, 404, "not_found", "no pool %.64s", r->params[0]);
}

/* The definition goes at once (no claim finds it, nothing new starts);
 * the answer waits for an entry being started, then every entry is
 * destroyed, so nothing of the pool is left when it comes. */
void
ab_api_pool_delete (struct ab_req_s *r)
{
	struct ab_pools_s *p = r->d->pools;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_pool_s *pool;
	uint64_t deadline = ab_mono_ms () + DELETE_WAIT_MS;
	cleanup_free char *name = NULL;

	pthread_mutex_lock (&p->lock);
	pool = ab_pool_find (p, r->params[0]);
	if (!pool) {
		pthread_mutex_unlock (&p->lock);
		ab_resp_fail (r, 404, "not_found", "no pool %.64s", r->params[0]);
		return;
	}
	pool->deleted = true;
	name = xstrdup (pool->name);
	int saved = ab_pools_save (r->d, &err);
	while (pool->busy && ab_mono_ms () < deadline) {
		struct timespec ts;
		clock_gettime (CLOCK_REALTIME, &ts);
		ts.tv_sec += 1;
		pthread_cond_timedwait (&p->cond, &p->lock, &ts);
	}
	/* Freed only when the replenisher no longer holds it. */
	if (!pool->busy) {
		for (struct ab_pool_s **pp = &p->list; *pp; pp = &(*pp)->next)
			if (*pp == pool) {
				*pp = pool->next;
				break;
			}
		ab_pool_free (pool);
	}
	pthread_mutex_unlock (&p->lock);
	ab_pool_destroy_entries (r->d, name);
	if (saved < 0)
		ab_resp_error (r, &err);
	else
		ab_resp_empty (r, 204);
}
