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
/* While a pool still has a ready entry, a one-shot's replacement waits
 * for its command to exit, at most this long: on a small host the
 * replacement's start would take the CPU from the very command the pool
 * made fast. */
#define AB_POOL_ONESHOT_HOLD_MS 250

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
	/* A one-shot in flight defers its replacement (monotonic; 0 = none):
	 * see AB_POOL_ONESHOT_HOLD_MS. */
	uint64_t hold_until_ms;
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

/* pool-run.c: a one-shot, `POST /v1/sandboxes {"pool", ..., "run": {cmd,
 * env, cwd, user, timeout}}`: the claimed sandbox runs one command, the
 * answer is its exec stream, and the sandbox is destroyed after the exit
 * event went out (the caller does not wait for the teardown). */
int ab_pool_run_check (const json_t *run, ab_error_t *err);
/* <dir>/oneshot: the sandbox is destroyed once its command ends, or at
 * the next adoption if the daemon died first. */
int ab_pool_oneshot_mark (struct ab_box_s *b, ab_error_t *err);
bool ab_pool_oneshot_marked (const struct ab_box_s *b);
/* Destroy it (forced); failures go to the log. */
void ab_pool_oneshot_finish (struct ab_daemon_s *d, struct ab_box_s *b);
/* Stream the command's events on r, then destroy b; takes b's reference
 * and conn (the claim's agent connection, or NULL). */
void ab_pool_run (struct ab_req_s *r, const char *pool, struct ab_box_s *b, ab_agent_conn_t *conn,
                  const json_t *run);
/* The one-shot's command exited: its replacement may start. */
void ab_pool_release_hold (struct ab_daemon_s *d, const char *name);

#endif
