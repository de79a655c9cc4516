/* envd's directory watches (filesystem.Filesystem WatchDir, CreateWatcher,
 * GetWatcherEvents, RemoveWatcher) over the agent's inotify watches
 * (agent/watch.c): every change is an event as it happens, nothing is
 * polled.  Event types as envd's: CREATE, WRITE, REMOVE, RENAME (the old
 * name of a rename; the new one comes as CREATE), CHMOD.  A watch past
 * the agent's bounds (directories, depth, events not taken) ends with
 * resource_exhausted, one whose directory went with not_found.
 *
 * WatchDir holds one agent connection for the stream; a watcher made by
 * CreateWatcher holds one until RemoveWatcher (or until a
 * GetWatcherEvents finds it ended), its events waiting in the agent and
 * on that connection (a window's worth) between two GetWatcherEvents. */
#include "daemon/e2b-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

#define PEER_CHECK_MS 1000
#define MAX_WATCHERS  64
#define MAX_BATCH     10000 /* events in one GetWatcherEvents answer */

static const char *
type_name (ab_agent_watch_op op)
{
	switch (op) {
	case AB_AGENT_WATCH_CREATE: return "EVENT_TYPE_CREATE";
	case AB_AGENT_WATCH_WRITE: return "EVENT_TYPE_WRITE";
	case AB_AGENT_WATCH_REMOVE: return "EVENT_TYPE_REMOVE";
	case AB_AGENT_WATCH_RENAME: return "EVENT_TYPE_RENAME";
	case AB_AGENT_WATCH_CHMOD: return "EVENT_TYPE_CHMOD";
	default: return "EVENT_TYPE_UNSPECIFIED";
	}
}

/* {name, type[, entry]}; the entry (envd >= 0.6.3's includeEntry) is the
 * path's EntryInfo now, absent when it is already gone. */
static json_t *
event_json (ab_agent_conn_t *c, const char *dir, const struct ab_agent_watch_event_s *ev,
            bool with_entry, struct ab_e2b_names_s *names)
{
	json_t *e = json_pack ("{s:s, s:s}", "name", ev->name, "type", type_name (ev->op));
	cleanup_free char *path = NULL;
	cleanup_free char *target = NULL;
	cleanup_strv char **xattrs = NULL;
	struct ab_agent_stat_s st;
	ab_error_t err = AB_ERROR_INIT;

	if (!with_entry || ev->op == AB_AGENT_WATCH_REMOVE || ev->op == AB_AGENT_WATCH_RENAME)
		return e;
	path = xasprintf ("%s%s%s", dir, dir[strlen (dir) - 1] == '/' ? "" : "/", ev->name);
	if (ab_agent_file_stat_target (c, path, &st, &target, &xattrs, &err) == 0)
		json_object_set_new (e, "entry", ab_e2b_entry (path, &st, target, xattrs, names));
	return e;
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

/* The watch of call's `path` on a new connection. */
static int
watch_begin (struct ab_e2b_call_s *call, ab_agent_conn_t **c, char **path, uint32_t *watch,
             ab_error_t *err)
{
	const char *p = json_string_value (json_object_get (call->msg, "path"));
	bool rec = json_is_true (json_object_get (call->msg, "recursive"));

	*c = NULL;
	*path = NULL;
	if (!p)
		return ab_error (err, 0, AB_E_INVALID, "'path' is required");
	*path = ab_e2b_path (call, p);
	if (open_conn (call, c, err) < 0 || ab_agent_watch_start (*c, *path, rec, watch, err) < 0) {
		ab_agent_close (*c);
		*c = NULL;
		free (*path);
		*path = NULL;
		return -1;
	}
	return 0;
}

void
ab_e2b_watch_dir (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	cleanup_free char *path = NULL;
	bool with_entry = json_is_true (json_object_get (call->msg, "includeEntry"));
	uint64_t keep_ms = (uint64_t)ab_e2b_keepalive_s (call) * 1000, quiet = 0;
	uint32_t watch;
	struct ab_e2b_names_s names = { 0 };

	if (watch_begin (call, &c, &path, &watch, &err) < 0) {
		ab_e2b_fail_err (call, &err);
		return;
	}
	names.c = c;
	if (ab_e2b_stream_begin_msg (call, json_pack ("{s:{}}", "start")) < 0)
		goto out;
	for (;;) {
		struct ab_agent_watch_event_s ev;
		int rc = ab_agent_watch_next (c, watch, &ev, PEER_CHECK_MS, &err);
		if (rc < 0) {
			ab_e2b_stream_end (call, ab_e2b_code_of (&err), err.msg);
			break;
		}
		if (rc == 0) {
			if (ab_req_peer_gone (call->r)) {
				call->r->close = true;
				break;
			}
			quiet += PEER_CHECK_MS;
			if (quiet >= keep_ms) {
				quiet = 0;
				if (ab_e2b_stream_msg (call, json_pack ("{s:{}}", "keepalive")) < 0)
					break;
			}
			continue;
		}
		quiet = 0;
		if (ab_e2b_stream_msg (call,
		                       json_pack ("{s:o}", "filesystem",
		                                  event_json (c, path, &ev, with_entry, &names)))
		    < 0)
			break;
	}
out:
	ab_e2b_names_free (&names);
	ab_agent_close (c); /* the agent drops the watch with the session */
}

/* ---- watchers read by GetWatcherEvents ------------------------------------ */

struct watcher_s {
	char id[33];
	char box[AB_BOX_ID_LEN + 1];
	char *path;
	bool with_entry;
	ab_agent_conn_t *c;
	uint32_t watch;
	bool used;
};

/* Held while a watcher's connection is used: GetWatcherEvents only takes
 * what has already arrived, so it is held for a short while. */
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
watcher_clear (struct watcher_s *w)
{
	ab_agent_close (w->c);
	free (w->path);
	memset (w, 0, sizeof *w);
}

static void
create_watcher (struct ab_e2b_call_s *call)
{
	ab_error_t err = AB_ERROR_INIT;
	struct watcher_s *w = NULL;
	ab_agent_conn_t *c;
	char *path;
	uint32_t watch;
	uint8_t raw[16];

	if (watch_begin (call, &c, &path, &watch, &err) < 0) {
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
		w->path = path;
		w->with_entry = json_is_true (json_object_get (call->msg, "includeEntry"));
		w->c = c;
		w->watch = watch;
		w->used = true;
	}
	pthread_mutex_unlock (&watchers_lock);
	if (!w) {
		ab_agent_close (c);
		free (path);
		ab_e2b_fail (call, "resource_exhausted", "at most %d watchers", MAX_WATCHERS);
		return;
	}
	ab_e2b_unary (call, json_pack ("{s:s}", "watcherId", w->id));
}

/* What has arrived for w, into evs; -1 when the watch ended (err says why). */
static int
drain (struct watcher_s *w, json_t *evs, ab_error_t *err)
{
	struct ab_e2b_names_s names = { .c = w->c };
	int rc = 0;

	while (json_array_size (evs) < MAX_BATCH) {
		struct ab_agent_watch_event_s ev;
		if ((rc = ab_agent_watch_next (w->c, w->watch, &ev, 0, err)) <= 0)
			break;
		json_array_append_new (evs, event_json (w->c, w->path, &ev, w->with_entry, &names));
	}
	ab_e2b_names_free (&names);
	return rc < 0 ? -1 : 0;
}

static void
watcher_events (struct ab_e2b_call_s *call, bool remove)
{
	ab_error_t err = AB_ERROR_INIT;
	const char *id = json_string_value (json_object_get (call->msg, "watcherId"));
	struct watcher_s *w;
	json_t *evs = json_array ();
	int r = 0;

	pthread_mutex_lock (&watchers_lock);
	w = find (call->b->id, id);
	if (w && !remove && (r = drain (w, evs, &err)) < 0)
		remove = true; /* ended: events were lost or the directory went */
	if (w && remove)
		watcher_clear (w);
	pthread_mutex_unlock (&watchers_lock);
	if (!w)
		ab_e2b_fail (call, "not_found", "no watcher '%s'", id ? id : "");
	else if (r < 0)
		ab_e2b_fail_err (call, &err);
	else if (remove)
		ab_e2b_unary (call, json_object ());
	else
		ab_e2b_unary (call, json_pack ("{s:O}", "events", evs));
	json_decref (evs);
}

void
ab_e2b_watchers (struct ab_e2b_call_s *call)
{
	if (strcmp (call->method, "CreateWatcher") == 0)
		create_watcher (call);
	else
		watcher_events (call, strcmp (call->method, "RemoveWatcher") == 0);
}
