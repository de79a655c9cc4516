/* Warm pools: definitions (validated, persisted in <state-dir>/pools.json,
 * also declared with `serve --pool-file`) and the replenisher, one thread
 * that keeps each pool at min_ready ready entries.  A ready entry is an
 * ordinary daemon sandbox whose state names its pool (b->pool), so a
 * restarted daemon re-adopts it into the pool; it is started and its agent
 * pinged, never configured (the claim does that, pool-claim.c).  The rules
 * follow OpenClaw vm-runner's internal/vm/pool.go: a failure backs off
 * (5 s doubling to AB_POOL_BACKOFF_MAX_MS, last_error shown), a disk limit
 * evicts the oldest ready entries (claimed ones have left the pool and are
 * never touched), entries of a changed spec are stale and replaced. */
#include "daemon/pool.h"

#include <errno.h>
#include <ftw.h>
#include <openssl/sha.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/parse.h"
#include "base/xalloc.h"
#include "spec/spec-json.h"

#define TICK_MS 250

static const double lat_bounds[AB_POOL_N_BOUNDS] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
	                                             0.01,   0.025,   0.05,   0.1,   0.5,    1 };

static bool
name_ok (const char *n)
{
	size_t len = strlen (n);
	return len > 0 && len <= AB_POOL_NAME_MAX
	       && strspn (n, "abcdefghijklmnopqrstuvwxyz0123456789-_") == len && n[0] != '-';
}

void
ab_pool_free (struct ab_pool_s *pool)
{
	if (!pool)
		return;
	free (pool->name);
	json_decref (pool->spec);
	free (pool->last_error);
	free (pool);
}

/* The spec's checks that need nothing on the host: its schema, and no key
 * that belongs to a claim.  Host paths are checked per entry, so a path
 * that goes away later is a replenish failure (backed off, reported). */
static int
check_pool_spec (const json_t *spec, ab_error_t *err)
{
	static const char *const per_claim[] = { "pool", "pool_only", "ttl", "labels",
		                                 "credentials" };
	struct ab_spec_s s;
	int r;

	if (!json_is_object (spec))
		return ab_error (err, 0, AB_E_INVALID, "a pool's 'spec' must be an object");
	for (size_t i = 0; i < sizeof per_claim / sizeof *per_claim; i++)
		if (json_object_get (spec, per_claim[i]))
			return ab_error (err, 0, AB_E_INVALID,
			                 "'%s' is a claim's setting, not a pool spec's",
			                 per_claim[i]);
	/* Every entry gets its own workspace: a host directory would be shared
	 * by every claim, and no state may cross tenants. */
	if (json_object_get (spec, "workspace"))
		return ab_error (err, 0, AB_E_INVALID,
		                 "a pool's entries get their own workspace; 'workspace' would "
		                 "share one host directory between claims");
	ab_spec_init (&s);
	r = ab_spec_from_json (spec, 0, &s, err);
	ab_spec_free (&s);
	return r < 0 ? ab_error_wrap (err, "pool spec") : 0;
}

static void
spec_hash (const json_t *spec, char out[17])
{
	cleanup_free char *text = json_dumps (spec, JSON_COMPACT | JSON_SORT_KEYS);
	unsigned char md[SHA256_DIGEST_LENGTH];

	SHA256 ((const unsigned char *)text, strlen (text), md);
	for (int i = 0; i < 8; i++)
		snprintf (out + 2 * i, 3, "%02x", md[i]);
}

struct ab_pool_s *
ab_pool_from_json (const json_t *j, ab_error_t *err)
{
	const char *name = NULL;
	json_t *spec = NULL, *disk = NULL;
	json_int_t min = -1, max = -1;
	json_error_t je;
	uint64_t disk_limit = 0;
	struct ab_pool_s *pool;

	if (!json_is_object (j)
	    || json_unpack_ex ((json_t *)j, &je, 0, "{s:s, s?o, s:I, s?I, s?o}", "name", &name,
	                       "spec", &spec, "min_ready", &min, "max_ready", &max, "disk_limit",
	                       &disk)
	               < 0) {
		ab_error (err, 0, AB_E_INVALID, "pool: %s",
		          json_is_object (j) ? je.text : "an object");
		return NULL;
	}
	if (!name_ok (name)) {
		ab_error (err, 0, AB_E_INVALID,
		          "pool name '%.64s': 1-%d of a-z 0-9 - _, not starting with '-'", name,
		          AB_POOL_NAME_MAX);
		return NULL;
	}
	if (max < 0)
		max = min > 0 ? min : 1;
	if (min < 0 || min > AB_POOL_MAX_READY || max < 1 || max > AB_POOL_MAX_READY || max < min) {
		ab_error (err, 0, AB_E_INVALID,
		          "pool %s: need 0 <= min_ready <= max_ready, 1 <= max_ready <= %d (got "
		          "%lld, "
		          "%lld)",
		          name, AB_POOL_MAX_READY, (long long)min, (long long)max);
		return NULL;
	}
	if (disk && json_is_string (disk)
	    && ab_parse_size (json_string_value (disk), &disk_limit, err) < 0)
		return NULL;
	if (disk && json_is_integer (disk) && json_integer_value (disk) >= 0)
		disk_limit = (uint64_t)json_integer_value (disk);
	else if (disk && !json_is_string (disk) && !json_is_null (disk)) {
		ab_error (err, 0, AB_E_INVALID, "pool %s: 'disk_limit' is a size", name);
		return NULL;
	}
	if (!spec)
		spec = json_object ();
	else
		json_incref (spec);
	if (check_pool_spec (spec, err) < 0) {
		json_decref (spec);
		return NULL;
	}
	pool = xcalloc (1, sizeof *pool);
	pool->name = xstrdup (name);
	pool->spec = spec;
	pool->min_ready = (unsigned)min;
	pool->max_ready = (unsigned)max;
	pool->disk_limit = disk_limit;
	pool->backoff_ms = AB_POOL_BACKOFF_MS;
	spec_hash (spec, pool->hash);
	return pool;
}

struct ab_pool_s *
ab_pool_find (struct ab_pools_s *p, const char *name)
{
	for (struct ab_pool_s *pool = p->list; pool; pool = pool->next)
		if (!pool->deleted && strcmp (pool->name, name) == 0)
			return pool;
	return NULL;
}

void
ab_pool_observe_claim (struct ab_pool_s *pool, uint64_t us)
{
	size_t i = 0;
	while (i < AB_POOL_N_BOUNDS && (double)us / 1e6 > lat_bounds[i])
		i++;
	pool->lat_buckets[i]++;
	pool->lat_count++;
	pool->lat_sum_us += us;
}

/* Ready entries of a pool; d->lock held. */
static unsigned
count_ready (struct ab_daemon_s *d, const struct ab_pool_s *pool)
{
	unsigned n = 0;
	for (struct ab_box_s *b = d->boxes; b; b = b->next)
		n += b->pool && b->pool_ready && b->state == AB_BOX_RUNNING
		     && strcmp (b->pool, pool->name) == 0 && strcmp (b->pool_hash, pool->hash) == 0;
	return n;
}

json_t *
ab_pool_json (struct ab_daemon_s *d, struct ab_pool_s *pool, bool entries)
{
	json_t *j, *v = entries ? json_array () : NULL;
	unsigned ready;

	pthread_mutex_lock (&d->lock);
	ready = count_ready (d, pool);
	for (struct ab_box_s *b = d->boxes; v && b; b = b->next)
		if (b->pool && strcmp (b->pool, pool->name) == 0)
			json_array_append_new (
			        v, json_pack ("{s:s, s:s, s:I, s:i, s:b}", "id", b->id, "state",
			                      ab_box_state_name (b->state), "created_ms",
			                      (json_int_t)b->created_ms, "monitor_pid",
			                      (int)b->monitor_pid, "stale",
			                      strcmp (b->pool_hash, pool->hash) != 0));
	pthread_mutex_unlock (&d->lock);
	j = json_pack ("{s:s, s:O, s:i, s:i, s:i, s:i, s:I, s:I, s:I, s:s?, s:I, s:I}", "name",
	               pool->name, "spec", pool->spec, "min_ready", (int)pool->min_ready,
	               "max_ready", (int)pool->max_ready, "ready", (int)ready, "starting",
	               (int)pool->starting, "claims", (json_int_t)pool->claims, "misses",
	               (json_int_t)pool->misses, "failures", (json_int_t)pool->failures,
	               "last_error", pool->last_error, "disk_limit", (json_int_t)pool->disk_limit,
	               "disk_bytes", (json_int_t)pool->disk_bytes);
	if (v)
		json_object_set_new (j, "entries", v);
	return j;
}

/* The definitions and their counters; p->lock held. */
int
ab_pools_save (struct ab_daemon_s *d, ab_error_t *err)
{
	struct ab_pools_s *p = d->pools;
	json_t *arr = json_array (), *j;
	cleanup_free char *text = NULL;

	for (struct ab_pool_s *pool = p->list; pool; pool = pool->next)
		if (!pool->deleted)
			json_array_append_new (
			        arr,
			        json_pack ("{s:s, s:O, s:i, s:i, s:I, s:I, s:I, s:I}", "name",
			                   pool->name, "spec", pool->spec, "min_ready",
			                   (int)pool->min_ready, "max_ready", (int)pool->max_ready,
			                   "disk_limit", (json_int_t)pool->disk_limit, "claims",
			                   (json_int_t)pool->claims, "misses",
			                   (json_int_t)pool->misses, "failures",
			                   (json_int_t)pool->failures));
	j = json_pack ("{s:i, s:o}", "version", 1, "pools", arr);
	text = json_dumps (j, JSON_COMPACT);
	json_decref (j);
	p->dirty = false;
	return ab_write_file_atomic (p->path, text, strlen (text), err);
}

void
ab_pool_release_hold (struct ab_daemon_s *d, const char *name)
{
	struct ab_pool_s *pool;

	pthread_mutex_lock (&d->pools->lock);
	if ((pool = ab_pool_find (d->pools, name)))
		pool->hold_until_ms = 0;
	pthread_cond_broadcast (&d->pools->cond);
	pthread_mutex_unlock (&d->pools->lock);
}

void
ab_pools_wake (struct ab_daemon_s *d)
{
	pthread_mutex_lock (&d->pools->lock);
	pthread_cond_broadcast (&d->pools->cond);
	pthread_mutex_unlock (&d->pools->lock);
}

/* --- the replenisher --- */

static __thread uint64_t du_sum;

static int
du_one (const char *path, const struct stat *st, int type, struct FTW *f)
{
	(void)path;
	(void)type;
	(void)f;
	du_sum += (uint64_t)st->st_blocks * 512;
	return 0;
}

static uint64_t
disk_usage (const char *dir)
{
	du_sum = 0;
	nftw (dir, du_one, 16, FTW_PHYS | FTW_MOUNT);
	return du_sum;
}

static void
destroy_box (struct ab_daemon_s *d, struct ab_box_s *b, const char *why)
{
	ab_error_t err = AB_ERROR_INIT;

	ab_log (AB_LOG_INFO, "pool entry %s: removing it (%s)", b->id, why);
	if (ab_box_destroy (d, b, true, &err) < 0)
		ab_log_error (AB_LOG_WARN, &err, "pool entry %s", b->id);
}

/* Entries to remove: dead, stale, orphaned (no such pool), or, with
 * `name`, every entry of that pool.  Takes them out of their pool under
 * the daemon lock first, so no claim can pick one meanwhile. */
static void
sweep (struct ab_daemon_s *d, const char *name)
{
	struct ab_box_s **v;
	size_t n, k = 0;
	const char **why;

	v = ab_registry_all (d, &n);
	why = xcalloc (n + 1, sizeof *why);
	pthread_mutex_lock (&d->pools->lock);
	pthread_mutex_lock (&d->lock);
	for (size_t i = 0; i < n; i++) {
		struct ab_box_s *b = v[i];
		struct ab_pool_s *pool = b->pool ? ab_pool_find (d->pools, b->pool) : NULL;
		if (!b->pool || !b->pool_ready || b->state == AB_BOX_CREATING
		    || b->state == AB_BOX_DELETING)
			continue;
		if (name && strcmp (b->pool, name) == 0)
			why[i] = "pool removed";
		else if (!pool)
			why[i] = "no such pool";
		else if (b->state == AB_BOX_DEAD)
			why[i] = "dead";
		else if (strcmp (b->pool_hash, pool->hash) != 0)
			why[i] = "stale: the pool's spec changed";
		if (why[i]) { /* out of the pool: no claim picks it now */
			free (b->pool);
			b->pool = NULL;
		}
	}
	pthread_mutex_unlock (&d->lock);
	pthread_mutex_unlock (&d->pools->lock);
	for (size_t i = 0; i < n; i++)
		if (why[i]) {
			destroy_box (d, v[i], why[i]);
			k++;
		}
	free (why);
	ab_registry_release (d, v, n);
	(void)k;
}

void
ab_pool_destroy_entries (struct ab_daemon_s *d, const char *name)
{
	sweep (d, name);
}

/* The oldest ready entry of a pool, taken out of it (a reference), or NULL. */
static struct ab_box_s *
take_oldest (struct ab_daemon_s *d, struct ab_pool_s *pool)
{
	struct ab_box_s *best = NULL;

	pthread_mutex_lock (&d->lock);
	for (struct ab_box_s *b = d->boxes; b; b = b->next)
		if (b->pool && b->pool_ready && b->state == AB_BOX_RUNNING
		    && strcmp (b->pool, pool->name) == 0
		    && (!best || b->created_ms < best->created_ms))
			best = b;
	if (best) {
		best->refs++;
		free (best->pool);
		best->pool = NULL;
	}
	pthread_mutex_unlock (&d->lock);
	return best;
}

/* Disk use of the ready entries; over the limit, or more than max_ready
 * entries, the oldest go first.  p->lock held on entry and exit. */
static void
enforce_bounds (struct ab_daemon_s *d, struct ab_pool_s *pool)
{
	for (int guard = 0; guard < AB_POOL_MAX_READY; guard++) {
		uint64_t used = 0;
		unsigned ready;
		struct ab_box_s **v;
		size_t n;
		bool over;

		v = ab_registry_all (d, &n);
		pthread_mutex_lock (&d->lock);
		ready = count_ready (d, pool);
		pthread_mutex_unlock (&d->lock);
		size_t k = 0;
		for (size_t i = 0; pool->disk_limit && i < n; i++)
			if (v[i]->pool && strcmp (v[i]->pool, pool->name) == 0) {
				used += disk_usage (v[i]->dir);
				k++;
			}
		ab_registry_release (d, v, n);
		pool->disk_bytes = used;
		if (k)
			pool->entry_bytes = used / k;
		over = ready > pool->max_ready || (pool->disk_limit && used > pool->disk_limit);
		if (!over)
			return;
		struct ab_box_s *b = take_oldest (d, pool);
		if (!b)
			return;
		pool->busy++;
		pthread_mutex_unlock (&d->pools->lock);
		destroy_box (d, b, ready > pool->max_ready ? "over max_ready" : "over disk_limit");
		ab_box_unref (d, b);
		pthread_mutex_lock (&d->pools->lock);
		pool->busy--;
		pthread_cond_broadcast (&d->pools->cond);
	}
}

static json_t *
entry_request (const struct ab_pool_s *pool)
{
	return json_deep_copy (pool->spec);
}

/* Start one entry of `pool`; p->lock held on entry and exit (dropped
 * while the sandbox starts). */
static void
start_entry (struct ab_daemon_s *d, struct ab_pool_s *pool)
{
	ab_error_t err = AB_ERROR_INIT;
	json_t *req = entry_request (pool);
	char hash[17];
	cleanup_free char *name = xstrdup (pool->name);
	struct ab_box_s *b = NULL;
	int r;

	memcpy (hash, pool->hash, sizeof hash);
	pool->starting++;
	pool->busy++;
	pthread_mutex_unlock (&d->pools->lock);
	r = ab_box_create_in (d, req, name, hash, &b, &err);
	json_decref (req);
	if (r == 0)
		ab_box_unref (d, b);
	pthread_mutex_lock (&d->pools->lock);
	pool->starting--;
	pool->busy--;
	if (r == 0) {
		pool->backoff_ms = AB_POOL_BACKOFF_MS;
		free (pool->last_error);
		pool->last_error = NULL;
	} else {
		pool->failures++;
		d->pools->dirty = true;
		free (pool->last_error);
		pool->last_error = xstrdup (err.msg);
		pool->next_try_ms = ab_mono_ms () + pool->backoff_ms;
		ab_log (AB_LOG_WARN, "pool %s: replenish failed (next try in %llu ms): %s",
		        pool->name, (unsigned long long)pool->backoff_ms, err.msg);
		pool->backoff_ms *= 2;
		if (pool->backoff_ms > AB_POOL_BACKOFF_MAX_MS)
			pool->backoff_ms = AB_POOL_BACKOFF_MAX_MS;
	}
	pthread_cond_broadcast (&d->pools->cond);
}

/* One round over the pools: the first that needs an entry gets one (one
 * start per round, so every pool gets a turn). */
static bool
round_once (struct ab_daemon_s *d)
{
	struct ab_pools_s *p = d->pools;
	bool started = false;

	sweep (d, NULL);
	pthread_mutex_lock (&p->lock);
	for (struct ab_pool_s *pool = p->list; pool && !d->stopping; pool = pool->next) {
		unsigned ready;
		if (pool->deleted)
			continue;
		enforce_bounds (d, pool);
		pthread_mutex_lock (&d->lock);
		ready = count_ready (d, pool);
		pthread_mutex_unlock (&d->lock);
		if (ready + pool->starting >= pool->min_ready || ab_mono_ms () < pool->next_try_ms
		    || (ready > 0 && ab_mono_ms () < pool->hold_until_ms))
			continue;
		/* Never start what the limit would evict at once: no spin. */
		if (pool->disk_limit && pool->disk_bytes + pool->entry_bytes > pool->disk_limit) {
			if (!ready && !pool->last_error)
				pool->last_error = xasprintf (
				        "disk_limit %llu bytes is less than one entry (%llu bytes)",
				        (unsigned long long)pool->disk_limit,
				        (unsigned long long)pool->entry_bytes);
			continue;
		}
		start_entry (d, pool);
		started = true;
		break; /* the list may have changed while the lock was dropped */
	}
	if (p->dirty) {
		ab_error_t err = AB_ERROR_INIT;
		if (ab_pools_save (d, &err) < 0)
			ab_log_error (AB_LOG_WARN, &err, "save %s", p->path);
	}
	pthread_mutex_unlock (&p->lock);
	return started;
}

static void *
replenisher (void *arg)
{
	struct ab_daemon_s *d = arg;
	struct ab_pools_s *p = d->pools;

	while (!d->stopping) {
		if (round_once (d))
			continue;
		struct timespec ts;
		clock_gettime (CLOCK_REALTIME, &ts);
		ts.tv_nsec += TICK_MS * 1000000L;
		ts.tv_sec += ts.tv_nsec / 1000000000L;
		ts.tv_nsec %= 1000000000L;
		pthread_mutex_lock (&p->lock);
		pthread_cond_timedwait (&p->cond, &p->lock, &ts);
		pthread_mutex_unlock (&p->lock);
	}
	return NULL;
}

/* --- loading --- */

/* Definitions from a file ({"pools": [...]} or [...]); `persisted` keeps
 * their counters.  A definition replaces one of the same name. */
static int
load_file (struct ab_daemon_s *d, const char *path, bool persisted, ab_error_t *err)
{
	json_error_t je;
	json_t *j = json_load_file (path, 0, &je), *arr, *v;
	size_t i;

	if (!j) {
		if (persisted && errno == ENOENT)
			return 0;
		return ab_error (err, 0, AB_E_INVALID, "%s: %s", path, je.text);
	}
	arr = json_is_array (j) ? j : json_object_get (j, "pools");
	if (!json_is_array (arr)) {
		json_decref (j);
		return ab_error (err, 0, AB_E_INVALID, "%s: expected {\"pools\": [...]}", path);
	}
	json_array_foreach (arr, i, v)
	{
		struct ab_pool_s *pool = ab_pool_from_json (v, err), **pp, *old = NULL;
		if (!pool) {
			json_decref (j);
			return ab_error_wrap (err, "%s", path);
		}
		if (persisted) {
			json_int_t c = 0, m = 0, f = 0;
			json_unpack (v, "{s?I, s?I, s?I}", "claims", &c, "misses", &m, "failures",
			             &f);
			pool->claims = (uint64_t)c, pool->misses = (uint64_t)m;
			pool->failures = (uint64_t)f;
		}
		for (pp = &d->pools->list; *pp; pp = &(*pp)->next)
			if (strcmp ((*pp)->name, pool->name) == 0) {
				old = *pp;
				*pp = old->next;
				break;
			}
		if (old) {
			pool->claims = old->claims, pool->misses = old->misses;
			pool->failures = old->failures;
			ab_pool_free (old);
		}
		pool->next = d->pools->list;
		d->pools->list = pool;
	}
	json_decref (j);
	return 0;
}

int
ab_pools_start (struct ab_daemon_s *d, ab_error_t *err)
{
	struct ab_pools_s *p = xcalloc (1, sizeof *p);

	pthread_mutex_init (&p->lock, NULL);
	pthread_cond_init (&p->cond, NULL);
	p->path = xasprintf ("%s/pools.json", d->cfg->state_dir);
	d->pools = p;
	if (load_file (d, p->path, true, err) < 0)
		return -1;
	if (d->cfg->pool_file) {
		if (load_file (d, d->cfg->pool_file, false, err) < 0)
			return -1;
		if (ab_pools_save (d, err) < 0)
			return -1;
	}
	if (pthread_create (&p->thread, NULL, replenisher, d) != 0)
		return ab_error (err, errno, AB_E_SYSTEM, "start the pool replenisher");
	pthread_detach (p->thread);
	return 0;
}

/* --- metrics --- */

struct pool_sample_s {
	const char *name;
	uint64_t v[7];
	uint64_t buckets[AB_POOL_N_BOUNDS + 1], count, sum_us;
};

static const char *const metric_heads[][3] = {
	{ "pool_target", "gauge", "Ready entries a pool keeps (min_ready)" },
	{ "pool_ready", "gauge", "Ready entries of a pool" },
	{ "pool_starting", "gauge", "Entries of a pool being started" },
	{ "pool_claims_total", "counter", "Claims served from a pool's ready entries" },
	{ "pool_misses_total", "counter", "Claims that found the pool empty" },
	{ "pool_replenish_failures_total", "counter", "Entries of a pool that failed to start" },
	{ "pool_disk_bytes", "gauge", "Disk used by a pool's ready entries (with a disk limit)" },
};

static void
render_hist (FILE *f, const struct pool_sample_s *s, size_t n)
{
	fputs ("# HELP agentbox_pool_claim_seconds Time to claim a ready entry\n"
	       "# TYPE agentbox_pool_claim_seconds histogram\n",
	       f);
	for (size_t k = 0; k < n; k++) {
		uint64_t cum = 0;
		for (size_t i = 0; i <= AB_POOL_N_BOUNDS; i++) {
			char le[32];
			cum += s[k].buckets[i];
			if (i < AB_POOL_N_BOUNDS)
				snprintf (le, sizeof le, "%g", lat_bounds[i]);
			else
				snprintf (le, sizeof le, "+Inf");
			fprintf (f,
			         "agentbox_pool_claim_seconds_bucket{pool=\"%s\",le=\"%s\"} %llu\n",
			         s[k].name, le, (unsigned long long)cum);
		}
		fprintf (f, "agentbox_pool_claim_seconds_sum{pool=\"%s\"} %.6f\n", s[k].name,
		         (double)s[k].sum_us / 1e6);
		fprintf (f, "agentbox_pool_claim_seconds_count{pool=\"%s\"} %llu\n", s[k].name,
		         (unsigned long long)s[k].count);
	}
}

/* Each metric's samples in one group, as the text format wants. */
void
ab_pool_metrics_render (struct ab_daemon_s *d, FILE *f)
{
	struct pool_sample_s *s = NULL;
	size_t n = 0;

	if (!d->pools)
		return;
	pthread_mutex_lock (&d->pools->lock);
	for (struct ab_pool_s *pool = d->pools->list; pool; pool = pool->next) {
		if (pool->deleted)
			continue;
		s = xrealloc (s, (n + 1) * sizeof *s);
		struct pool_sample_s *x = &s[n++];
		x->name = xstrdup (pool->name);
		pthread_mutex_lock (&d->lock);
		x->v[1] = count_ready (d, pool);
		pthread_mutex_unlock (&d->lock);
		x->v[0] = pool->min_ready, x->v[2] = pool->starting, x->v[3] = pool->claims;
		x->v[4] = pool->misses, x->v[5] = pool->failures, x->v[6] = pool->disk_bytes;
		memcpy (x->buckets, pool->lat_buckets, sizeof x->buckets);
		x->count = pool->lat_count, x->sum_us = pool->lat_sum_us;
	}
	pthread_mutex_unlock (&d->pools->lock);
	for (size_t m = 0; m < sizeof metric_heads / sizeof *metric_heads; m++) {
		fprintf (f, "# HELP agentbox_%s %s\n# TYPE agentbox_%s %s\n", metric_heads[m][0],
		         metric_heads[m][2], metric_heads[m][0], metric_heads[m][1]);
		for (size_t k = 0; k < n; k++)
			fprintf (f, "agentbox_%s{pool=\"%s\"} %llu\n", metric_heads[m][0],
			         s[k].name, (unsigned long long)s[k].v[m]);
	}
	render_hist (f, s, n);
	for (size_t k = 0; k < n; k++)
		free ((char *)s[k].name);
	free (s);
}
