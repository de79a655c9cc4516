/* Warm pools (docs/pools.md): the parts pool.c, pool-claim.c and
 * pool-api.c share.  Lock order: the pools' lock, then the daemon's. */
#ifndef AB_DAEMON_POOL_H
#define AB_DAEMON_POOL_H

#include "daemon/daemon-internal.h"

#define AB_POOL_MAX_READY 256
#define AB_POOL_NAME_MAX  63
/* A failed replenish waits 5 s, doubling up to AB_POOL_BACKOFF_MAX_MS. */
#define AB_POOL_BACKOFF_MS     5000
#define AB_POOL_BACKOFF_MAX_MS 300000
#define AB_POOL_N_BOUNDS       12

struct ab_pool_s {
	struct ab_pool_s *next;
	char *name;
	json_t *spec; /* as POST /v1/pools gave it */
	char hash[17];
	unsigned min_ready, max_ready;
	uint64_t disk_limit; /* bytes over all ready entries, 0 = none */
	unsigned starting;
	unsigned busy; /* the replenisher uses it with the lock dropped: not freed */
	uint64_t claims, misses, failures;
	char *last_error;
	uint64_t backoff_ms;
	uint64_t next_try_ms; /* monotonic */
	uint64_t disk_bytes;  /* last measured */
	uint64_t entry_bytes; /* one entry's disk use, last measured */
	bool deleted;
	uint64_t lat_buckets[AB_POOL_N_BOUNDS + 1], lat_count, lat_sum_us;
};

struct ab_pools_s {
	pthread_mutex_t lock;
	pthread_cond_t cond; /* wakes the replenisher; DELETE waits on it too */
	struct ab_pool_s *list;
	char *path; /* <state-dir>/pools.json */
	bool dirty;
	pthread_t thread;
};

/* The pool named `name`, under p->lock, or NULL. */
struct ab_pool_s *ab_pool_find (struct ab_pools_s *p, const char *name);
/* Check a definition ({name, spec, min_ready, max_ready, disk_limit}). */
struct ab_pool_s *ab_pool_from_json (const json_t *j, ab_error_t *err);
void ab_pool_free (struct ab_pool_s *pool);
/* {name, spec, min_ready, max_ready, ready, starting, claims, misses,
 * failures, last_error, ...}; d->pools->lock held. */
json_t *ab_pool_json (struct ab_daemon_s *d, struct ab_pool_s *pool, bool entries);
int ab_pools_save (struct ab_daemon_s *d, ab_error_t *err);
void ab_pools_wake (struct ab_daemon_s *d);
/* Destroy every entry of `name` (the pool is gone or being replaced). */
void ab_pool_destroy_entries (struct ab_daemon_s *d, const char *name);
void ab_pool_observe_claim (struct ab_pool_s *pool, uint64_t us);

#endif
