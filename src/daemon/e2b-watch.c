/* envd's directory watches (filesystem.Filesystem WatchDir, CreateWatcher,
 * GetWatcherEvents, RemoveWatcher), by polling: a snapshot of the tree
 * (the agent's confined FILE_LIST, `depth` levels, at most MAX_ENTRIES
 * entries) is taken every POLL_MS and compared with the last one; what
 * appeared is CREATE, what went is REMOVE, a size or mtime change WRITE,
 * a mode change CHMOD.  A rename shows as REMOVE + CREATE, and changes
 * that undo themselves within one poll are not seen.  No agent change:
 * it works the same on every backend; an inotify service in the agent
 * is what would replace it (docs/e2b.md). */
#include "daemon/e2b-internal.h"

#include <errno.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define POLL_MS      200
#define MAX_ENTRIES  10000
#define MAX_DEPTH    16
#define MAX_WATCHERS 64
#define MAX_PENDING  1000

struct snap_ent_s {
	char *rel;
	struct ab_agent_stat_s st;
};

struct snap_s {
	struct snap_ent_s *v;
	size_t n;
};

static void
snap_free (struct snap_s *s)
{
	for (size_t i = 0; i < s->n; i++)
		free (s->v[i].rel);
	free (s->v);
	s->v = NULL;
	s->n = 0;
}

static int
snap_walk (ab_agent_conn_t *c, const char *root, const char *rel, unsigned depth, struct snap_s *s,
           ab_error_t *err)
{
	cleanup_free char *dir = rel ? xasprintf ("%s/%s", root, rel) : xstrdup (root);
	struct ab_agent_dirent_s *v = NULL;
	size_t n = 0;
	int r = 0;

	if (ab_agent_file_list (c, dir, &v, &n, err) < 0)
		return -1;
	for (size_t i = 0; i < n && r == 0; i++) {
		char *name = rel ? xasprintf ("%s/%s", rel, v[i].name) : xstrdup (v[i].name);
		if (s->n == MAX_ENTRIES) {
			free (name);
			r = ab_error (err, 0, AB_E_LIMIT, "more than %d entries to watch",
			              MAX_ENTRIES);
			break;
		}
		s->v = xrealloc (s->v, (s->n + 1) * sizeof *s->v);
		s->v[s->n].rel = name;
		s->v[s->n++].st = v[i].st;
		if (depth > 1 && v[i].st.type == AB_AGENT_FT_DIR)
			r = snap_walk (c, root, name, depth - 1, s, err);
	}
	ab_agent_dirents_free (v, n);
	return r;
}

static int
by_rel (const void *a, const void *b)
{
	return strcmp (((const struct snap_ent_s *)a)->rel, ((const struct snap_ent_s *)b)->rel);
}

static int
snap_take (ab_agent_conn_t *c, const char *root, bool recursive, struct snap_s *s, ab_error_t *err)
{
	memset (s, 0, sizeof *s);
	if (snap_walk (c, root, NULL, recursive ? MAX_DEPTH : 1, s, err) < 0) {
		snap_free (s);
		return -1;
	}
	qsort (s->v, s->n, sizeof *s->v, by_rel);
	return 0;
}

static json_t *
event (const char *name, const char *type)
{
	return json_pack ("{s:s, s:s}", "name", name, "type", type);
}

/* The events from a to b, appended to out (at most max). */
static void
diff (const struct snap_s *a, const struct snap_s *b, json_t *out, size_t max)
{
	size_t i = 0, j = 0;

	while ((i < a->n || j < b->n) && json_array_size (out) < max) {
		int c = i == a->n ? 1 : j == b->n ? -1 : strcmp (a->v[i].rel, b->v[j].rel);
		if (c < 0) {
			json_array_append_new (out, event (a->v[i++].rel, "EVENT_TYPE_REMOVE"));
		} else if (c > 0) {
			json_array_append_new (out, event (b->v[j++].rel, "EVENT_TYPE_CREATE"));
		} else {
			const struct ab_agent_stat_s *x = &a->v[i].st, *y = &b->v[j].st;
			if (x->type != y->type) {
				json_array_append_new (out,
				                       event (a->v[i].rel, "EVENT_TYPE_REMOVE"));
				json_array_append_new (out,
				                       event (b->v[j].rel, "EVENT_TYPE_CREATE"));
			} else if (x->type != AB_AGENT_FT_DIR
			           && (x->size != y->size || x->mtime_ms != y->mtime_ms))
				json_array_append_new (out,
				                       event (b->v[j].rel, "EVENT_TYPE_WRITE"));
			else if (x->mode != y->mode)
				json_array_append_new (out,
				                       event (b->v[j].rel, "EVENT_TYPE_CHMOD"));
			i++;
			j++;
		}
	}
}

static int
open_conn (struct ab_e2b_call_s *call, ab_agent_conn_t **c, ab_error_t *err)
{
	*c = ab_box_connect (call->r->d, call->b, err);
	if (!*c)
		return -1;
	ab_agent_set_timeout (*c, AB_AGENT_CALL_TIMEOUT_MS);
	return 0;
}

/* The directory to watch: it must be one. */
static char *
watch_path (struct ab_e2b_call_s *call, ab_agent_conn_t *c, ab_error_t *err)
{
	const char *p = json_string_value (json_object_get (call->msg, "path"));
	char *path;
	struct ab_agent_stat_s st;

	if (!p)
		return ab_error (err, 0, AB_E_INVALID, "'path' is required"), NULL;
	path = ab_e2b_path (call, p);
	if (ab_agent_file_stat (c, path, &st, err) < 0) {
		free (path);
		return NULL;
	}
	if (st.type != AB_AGENT_FT_DIR) {
		ab_error (err, ENOTDIR, AB_E_INVALID, "%s is not a directory", path);
		free (path);
		return NULL;
	}
	return path;
}

void
ab_e2b_watch_dir (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = NULL;
	cleanup_free char *path = NULL;
	bool rec = json_is_true (json_object_get (call->msg, "recursive"));
	uint64_t keep_ms = (uint64_t)ab_e2b_keepalive_s (call) * 1000, quiet = 0;
	struct snap_s old, now;

	if (open_conn (call, &c, &err) < 0 || !(path = watch_path (call, c, &err))
	    || snap_take (c, path, rec, &old, &err) < 0) {
		ab_e2b_fail_err (call, &err);
		ab_agent_close (c);
		return;
	}
	if (ab_e2b_stream_begin (call) < 0
	    || ab_e2b_stream_msg (call, json_pack ("{s:{}}", "start")) < 0)
		goto out;
	for (;;) {
		json_t *evs = json_array ();
		size_t i;
		json_t *e;
		struct pollfd p = { .fd = call->r->fd, .events = POLLRDHUP };

		if (poll (&p, 1, POLL_MS) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR))) {
			json_decref (evs);
			call->r->close = true;
			break;
		}
		if (snap_take (c, path, rec, &now, &err) < 0) {
			json_decref (evs);
			ab_e2b_stream_end (call, ab_e2b_code_of (&err), err.msg);
			break;
		}
		diff (&old, &now, evs, MAX_PENDING);
		snap_free (&old);
		old = now;
		quiet = json_array_size (evs) ? 0 : quiet + POLL_MS;
		json_array_foreach (
		        evs, i,
		        e) if (ab_e2b_stream_msg (call, json_pack ("{s:O}", "filesystem", e))
		               < 0) break;
		json_decref (evs);
		if (quiet >= keep_ms) {
			quiet = 0;
			if (ab_e2b_stream_msg (call, json_pack ("{s:{}}", "keepalive")) < 0)
				break;
		}
		if (call->r->close)
			break;
	}
out:
	snap_free (&old);
	ab_agent_close (c);
}

/* ---- watchers polled by GetWatcherEvents ------------------------------------ */

struct watcher_s {
	char id[33];
	char box[AB_BOX_ID_LEN + 1];
	char *path;
	bool recursive;
	struct snap_s snap;
	bool used;
};

static pthread_mutex_t watchers_lock = PTHREAD_MUTEX_INITIALIZER;
static struct watcher_s watchers[MAX_WATCHERS];

static struct watcher_s *
find (const char *box, const char *id)
{
	for (size_t i = 0; i < MAX_WATCHERS; i++)
		if (watchers[i].used && strcmp (watchers[i].box, box) == 0 && id
		    && strcmp (watchers[i].id, id) == 0)
			return &watchers[i];
	return NULL;
}

static void
create_watcher (struct ab_e2b_call_s *call, ab_agent_conn_t *c)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *path = watch_path (call, c, &err);
	bool rec = json_is_true (json_object_get (call->msg, "recursive"));
	struct watcher_s *w = NULL;
	struct snap_s s;
	uint8_t raw[16];

	if (!path || snap_take (c, path, rec, &s, &err) < 0) {
		ab_e2b_fail_err (call, &err);
		return;
	}
	pthread_mutex_lock (&watchers_lock);
	for (size_t i = 0; i < MAX_WATCHERS && !w; i++)
		if (!watchers[i].used)
			w = &watchers[i];
	if (w) {
		if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
			abort ();
		for (size_t i = 0; i < sizeof raw; i++)
			snprintf (w->id + 2 * i, 3, "%02x", raw[i]);
		snprintf (w->box, sizeof w->box, "%s", call->b->id);
		w->path = xstrdup (path);
		w->recursive = rec;
		w->snap = s;
		w->used = true;
	}
	pthread_mutex_unlock (&watchers_lock);
	if (!w) {
		snap_free (&s);
		ab_e2b_fail (call, "resource_exhausted", "at most %d watchers", MAX_WATCHERS);
		return;
	}
	ab_e2b_unary (call, json_pack ("{s:s}", "watcherId", w->id));
}

static void
watcher_events (struct ab_e2b_call_s *call, ab_agent_conn_t *c, bool remove)
{
	ab_error_t err = AB_ERROR_INIT;
	const char *id = json_string_value (json_object_get (call->msg, "watcherId"));
	struct watcher_s *w;
	struct snap_s now = { 0 };
	json_t *evs = json_array ();
	int r = 0;

	/* Held across the agent's answer: watchers are few and polled. */
	pthread_mutex_lock (&watchers_lock);
	w = find (call->b->id, id);
	if (w && remove) {
		snap_free (&w->snap);
		free (w->path);
		memset (w, 0, sizeof *w);
	} else if (w && (r = snap_take (c, w->path, w->recursive, &now, &err)) == 0) {
		diff (&w->snap, &now, evs, MAX_PENDING);
		snap_free (&w->snap);
		w->snap = now;
	}
	pthread_mutex_unlock (&watchers_lock);
	if (!w)
		ab_e2b_fail (call, "not_found", "no watcher '%s'", id ? id : "");
	else if (r < 0)
		ab_e2b_fail_err (call, &err);
	else if (remove)
		ab_e2b_unary (call, json_object ());
	else {
		ab_e2b_unary (call, json_pack ("{s:O}", "events", evs));
	}
	json_decref (evs);
}

void
ab_e2b_watchers (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = NULL;

	if (open_conn (call, &c, &err) < 0)
		ab_e2b_fail_err (call, &err);
	else if (strcmp (call->method, "CreateWatcher") == 0)
		create_watcher (call, c);
	else
		watcher_events (call, c, strcmp (call->method, "RemoveWatcher") == 0);
	ab_agent_close (c);
}
