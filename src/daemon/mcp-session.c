/* MCP sessions (Mcp-Session-Id) and the processes they started.
 *
 * A session is a capability: 128 random bits, valid only on the endpoint
 * that issued it (a session of /v1/sandboxes/A/mcp is unknown on
 * /v1/sandboxes/B/mcp and on /v1/mcp).  Its processes belong to it: each
 * has one agent connection that follows its output into a bounded log
 * (the last AB_MCP_LOG_CAP bytes, stdout and stderr as they came); a
 * foreground sandbox_exec pumps that connection on the request's thread,
 * a background one on a reader thread of its own, so the process never
 * blocks on a full pipe and the daemon's memory per process stays
 * bounded whatever it writes.  Ending the session (DELETE, idle expiry)
 * kills every process group it started and destroys the sandboxes it
 * created without "keep". */
#include "daemon/mcp-internal.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/cleanup.h"
#include "base/log.h"
#include "base/xalloc.h"

#define READER_STACK  (256 * 1024)
#define PUMP_SLICE_MS 500
#define STOP_WAIT_MS  10000

static pthread_mutex_t store_lock = PTHREAD_MUTEX_INITIALIZER;
static struct ab_mcp_session_s *sessions;
static unsigned n_sessions;

static void
session_unref_locked (struct ab_mcp_session_s *s, bool *last)
{
	*last = --s->refs == 0;
}

static void
session_free (struct ab_mcp_session_s *s)
{
	while (s->jobs) {
		struct ab_mcp_job_s *j = s->jobs;
		s->jobs = j->next;
		ab_mcp_job_free (s->d, j);
	}
	pthread_mutex_destroy (&s->lock);
	pthread_cond_destroy (&s->cond);
	ab_cleanup_strvp (&s->owned);
	free (s);
}

static void
session_ref (struct ab_mcp_session_s *s)
{
	pthread_mutex_lock (&store_lock);
	s->refs++;
	pthread_mutex_unlock (&store_lock);
}

void
ab_mcp_session_put (struct ab_mcp_session_s *s)
{
	bool last;

	if (!s)
		return;
	pthread_mutex_lock (&store_lock);
	session_unref_locked (s, &last);
	pthread_mutex_unlock (&store_lock);
	if (last)
		session_free (s);
}

static void
unlink_locked (struct ab_mcp_session_s *s)
{
	for (struct ab_mcp_session_s **p = &sessions; *p; p = &(*p)->next)
		if (*p == s) {
			*p = s->next;
			n_sessions--;
			return;
		}
}

/* Sessions unused for AB_MCP_IDLE_MS: taken out of the store (with a
 * reference each) for the caller to end. */
static struct ab_mcp_session_s **
take_idle (size_t *n)
{
	int64_t now = (int64_t)ab_mono_ms ();
	struct ab_mcp_session_s **v = NULL;

	*n = 0;
	pthread_mutex_lock (&store_lock);
	for (struct ab_mcp_session_s *s = sessions, *next; s; s = next) {
		next = s->next;
		if (now - s->last_ms < AB_MCP_IDLE_MS)
			continue;
		v = xrealloc (v, (*n + 1) * sizeof *v);
		v[(*n)++] = s;
		s->refs++;
	}
	pthread_mutex_unlock (&store_lock);
	return v;
}

struct ab_mcp_session_s *
ab_mcp_session_new (struct ab_daemon_s *d, const char *box_id, const char *version, ab_error_t *err)
{
	unsigned char raw[AB_MCP_SESSION_ID_LEN / 2];
	struct ab_mcp_session_s *s;
	size_t n_idle;
	struct ab_mcp_session_s **idle = take_idle (&n_idle);
	bool full;

	for (size_t i = 0; i < n_idle; i++) {
		ab_log (AB_LOG_INFO, "MCP session %.8s... idle for an hour: ended", idle[i]->id);
		ab_mcp_session_end (d, idle[i]);
		ab_mcp_session_put (idle[i]);
	}
	free (idle);
	s = xcalloc (1, sizeof *s);
	if (getrandom (raw, sizeof raw, 0) != (ssize_t)sizeof raw)
		abort (); /* a guessable session id would hand out another client's processes */
	for (size_t i = 0; i < sizeof raw; i++)
		snprintf (s->id + 2 * i, 3, "%02x", raw[i]);
	snprintf (s->box_id, sizeof s->box_id, "%s", box_id ? box_id : "");
	snprintf (s->version, sizeof s->version, "%s", version);
	pthread_mutex_init (&s->lock, NULL);
	pthread_cond_init (&s->cond, NULL);
	s->d = d;
	s->refs = 2; /* the store's and the caller's */
	s->last_ms = (int64_t)ab_mono_ms ();
	pthread_mutex_lock (&store_lock);
	full = n_sessions >= AB_MCP_MAX_SESSIONS;
	if (!full) {
		s->next = sessions;
		sessions = s;
		n_sessions++;
	}
	pthread_mutex_unlock (&store_lock);
	if (full) {
		session_free (s);
		ab_error (err, 0, AB_E_LIMIT,
		          "too many MCP sessions (%d): end one with DELETE first",
		          AB_MCP_MAX_SESSIONS);
		return NULL;
	}
	return s;
}

struct ab_mcp_session_s *
ab_mcp_session_get (const char *id, const char *box_id)
{
	struct ab_mcp_session_s *found = NULL;

	pthread_mutex_lock (&store_lock);
	for (struct ab_mcp_session_s *s = sessions; s; s = s->next)
		/* The id is 32 hex digits from getrandom: comparing it in
		 * variable time reveals nothing an attacker can use, the list
		 * is short, and an unknown id is simply 404. */
		if (strcmp (s->id, id) == 0 && strcmp (s->box_id, box_id ? box_id : "") == 0) {
			found = s;
			s->refs++;
			s->last_ms = (int64_t)ab_mono_ms ();
			break;
		}
	pthread_mutex_unlock (&store_lock);
	return found;
}

void
ab_mcp_session_own (struct ab_mcp_session_s *s, const char *box_id)
{
	pthread_mutex_lock (&s->lock);
	ab_strv_push (&s->owned, box_id);
	pthread_mutex_unlock (&s->lock);
}

void
ab_mcp_session_disown (struct ab_mcp_session_s *s, const char *box_id)
{
	pthread_mutex_lock (&s->lock);
	for (size_t i = 0; s->owned && s->owned[i]; i++)
		if (strcmp (s->owned[i], box_id) == 0) {
			free (s->owned[i]);
			do
				s->owned[i] = s->owned[i + 1];
			while (s->owned[++i]);
			break;
		}
	pthread_mutex_unlock (&s->lock);
}

/* --- jobs --------------------------------------------------------------- */

void
ab_mcp_job_free (struct ab_daemon_s *d, struct ab_mcp_job_s *j)
{
	if (!j)
		return;
	ab_agent_close (j->c);
	if (j->b)
		ab_box_unref (d, j->b);
	free (j->command);
	free (j->rpc_id);
	free (j->error);
	free (j->log);
	free (j->out[0].buf);
	free (j->out[1].buf);
	free (j);
}

struct ab_mcp_job_s *
ab_mcp_job_find (struct ab_mcp_session_s *s, const char *id)
{
	struct ab_mcp_job_s *found = NULL;

	pthread_mutex_lock (&s->lock);
	for (struct ab_mcp_job_s *j = s->jobs; j && !found; j = j->next)
		if (strcmp (j->id, id) == 0) {
			found = j;
			j->refs++;
		}
	pthread_mutex_unlock (&s->lock);
	return found;
}

void
ab_mcp_job_put (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j)
{
	bool last;

	if (!j)
		return;
	pthread_mutex_lock (&s->lock);
	last = --j->refs == 0;
	pthread_mutex_unlock (&s->lock);
	if (last)
		ab_mcp_job_free (s->d, j);
}

/* A finished background process, the oldest, to forget for room. */
static struct ab_mcp_job_s *
victim_locked (struct ab_mcp_session_s *s)
{
	struct ab_mcp_job_s *victim = NULL;

	for (struct ab_mcp_job_s *j = s->jobs; j; j = j->next)
		if (!j->running && j->background)
			victim = j; /* the list is newest first: the last one is oldest */
	return victim;
}

int
ab_mcp_job_add (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j, ab_error_t *err)
{
	for (;;) {
		struct ab_mcp_job_s *victim = NULL;

		pthread_mutex_lock (&s->lock);
		if (s->ended) {
			pthread_mutex_unlock (&s->lock);
			return ab_error (err, 0, AB_E_CONFLICT, "the MCP session has ended");
		}
		if (s->n_jobs < AB_MCP_MAX_JOBS) {
			snprintf (j->id, sizeof j->id, "proc-%u", ++s->next_job);
			j->refs++;
			j->next = s->jobs;
			s->jobs = j;
			s->n_jobs++;
			pthread_mutex_unlock (&s->lock);
			return 0;
		}
		victim = victim_locked (s);
		if (victim)
			victim->refs++;
		pthread_mutex_unlock (&s->lock);
		if (!victim)
			return ab_error (err, 0, AB_E_LIMIT,
			                 "this MCP session already has %d processes running: kill "
			                 "or remove one (sandbox_process)",
			                 AB_MCP_MAX_JOBS);
		ab_mcp_job_drop (s->d, s, victim);
		ab_mcp_job_put (s, victim);
	}
}

/* The last AB_MCP_LOG_CAP bytes; the ring is allocated as output comes. */
static void
log_append (struct ab_mcp_job_s *j, const uint8_t *d, size_t len)
{
	j->log_total += len;
	if (len >= AB_MCP_LOG_CAP) {
		d += len - AB_MCP_LOG_CAP;
		len = AB_MCP_LOG_CAP;
	}
	if (!j->log)
		j->log = xmalloc (AB_MCP_LOG_CAP);
	for (size_t i = 0; i < len;) {
		size_t tail = (j->log_head + j->log_len) % AB_MCP_LOG_CAP;
		size_t n = len - i;
		if (n > AB_MCP_LOG_CAP - tail)
			n = AB_MCP_LOG_CAP - tail;
		memcpy (j->log + tail, d + i, n);
		i += n;
		j->log_len += n;
		if (j->log_len > AB_MCP_LOG_CAP) {
			j->log_head = (j->log_head + j->log_len - AB_MCP_LOG_CAP) % AB_MCP_LOG_CAP;
			j->log_len = AB_MCP_LOG_CAP;
		}
	}
}

char *
ab_mcp_job_log (const struct ab_mcp_job_s *j, uint64_t off, size_t limit, uint64_t *start,
                size_t *len)
{
	uint64_t first = j->log_total - j->log_len;
	size_t n, at;
	char *out;

	if (off < first)
		off = first;
	if (off > j->log_total)
		off = j->log_total;
	n = (size_t)(j->log_total - off);
	if (n > limit)
		n = limit;
	out = xmalloc (n + 1);
	at = (size_t)((j->log_head + (off - first)) % AB_MCP_LOG_CAP);
	for (size_t i = 0; i < n;) {
		size_t k = n - i;
		if (k > AB_MCP_LOG_CAP - at)
			k = AB_MCP_LOG_CAP - at;
		memcpy (out + i, j->log + at, k);
		i += k;
		at = (at + k) % AB_MCP_LOG_CAP;
	}
	out[n] = '\0';
	*start = off;
	*len = n;
	return out;
}

static void
capture (struct ab_mcp_capture_s *c, const uint8_t *d, size_t len)
{
	size_t room = AB_MCP_OUTPUT_CAP - c->len;
	size_t n = len < room ? len : room;

	c->total += len;
	if (n == 0)
		return;
	c->buf = xrealloc (c->buf, c->len + n + 1);
	memcpy (c->buf + c->len, d, n);
	c->len += n;
}

int
ab_mcp_job_pump (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j, int64_t deadline_ms)
{
	ab_error_t err = AB_ERROR_INIT;

	for (;;) {
		struct ab_agent_event_s ev;
		int64_t left = deadline_ms - (int64_t)ab_mono_ms ();
		int rc;

		if (left <= 0)
			return 0;
		rc = ab_agent_proc_next_event (
		        j->c, &j->p, &ev, left < PUMP_SLICE_MS ? (int)left : PUMP_SLICE_MS, &err);
		if (rc == 0)
			continue;
		pthread_mutex_lock (&s->lock);
		if (rc < 0) {
			free (j->error);
			j->error = xasprintf ("following process %u failed: %s", j->pid, err.msg);
			j->running = false;
			j->ended_ms = (int64_t)ab_mono_ms ();
		} else if (ev.kind == AB_AGENT_EV_EXIT) {
			j->exit = ev.exit;
			j->running = false;
			j->ended_ms = (int64_t)ab_mono_ms ();
		} else {
			log_append (j, ev.data, ev.len);
			if (j->capturing)
				capture (&j->out[ev.kind == AB_AGENT_EV_STDERR], ev.data, ev.len);
		}
		pthread_cond_broadcast (&s->cond);
		pthread_mutex_unlock (&s->lock);
		if (rc < 0)
			return -1;
		if (ev.kind == AB_AGENT_EV_EXIT)
			return 1;
	}
}

struct reader_s {
	struct ab_daemon_s *d;
	struct ab_mcp_session_s *s;
	struct ab_mcp_job_s *j;
};

static void *
reader_main (void *arg)
{
	struct reader_s *r = arg;

	ab_mcp_job_pump (r->s, r->j, INT64_MAX);
	pthread_mutex_lock (&r->s->lock);
	ab_agent_close (r->j->c);
	r->j->c = NULL;
	pthread_mutex_unlock (&r->s->lock);
	ab_box_exec_end (r->d, r->j->b);
	ab_mcp_job_put (r->s, r->j);
	ab_mcp_session_put (r->s);
	free (r);
	return NULL;
}

int
ab_mcp_job_background (struct ab_daemon_s *d, struct ab_mcp_session_s *s, struct ab_mcp_job_s *j,
                       ab_error_t *err)
{
	struct reader_s *r = xcalloc (1, sizeof *r);
	pthread_attr_t attr;
	int rc;

	*r = (struct reader_s){ .d = d, .s = s, .j = j };
	session_ref (s);
	pthread_mutex_lock (&s->lock);
	j->background = true;
	j->capturing = false;
	free (j->out[0].buf);
	free (j->out[1].buf);
	memset (j->out, 0, sizeof j->out);
	j->has_thread = true;
	j->refs++; /* the reader's */
	pthread_mutex_unlock (&s->lock);
	pthread_attr_init (&attr);
	pthread_attr_setstacksize (&attr, READER_STACK);
	rc = pthread_create (&j->thread, &attr, reader_main, r);
	pthread_attr_destroy (&attr);
	if (rc != 0) {
		pthread_mutex_lock (&s->lock);
		j->has_thread = false;
		j->refs--;
		pthread_mutex_unlock (&s->lock);
		ab_mcp_session_put (s);
		free (r);
		return ab_error (err, rc, AB_E_LIMIT, "cannot start a reader thread");
	}
	return 0;
}

int
ab_mcp_job_signal (struct ab_daemon_s *d, struct ab_mcp_job_s *j, int sig, ab_error_t *err)
{
	ab_agent_conn_t *c = ab_box_connect (d, j->b, err);
	int rc;

	if (!c)
		return -1;
	rc = ab_agent_proc_signal (c, j->pid, sig, err);
	ab_agent_close (c);
	return rc;
}

void
ab_mcp_cancel (struct ab_mcp_session_s *s, const json_t *id)
{
	cleanup_free char *want = id ? json_dumps (id, JSON_COMPACT | JSON_ENCODE_ANY) : NULL;
	ab_error_t err = AB_ERROR_INIT;
	struct ab_mcp_job_s *found = NULL;

	if (!want)
		return;
	pthread_mutex_lock (&s->lock);
	for (struct ab_mcp_job_s *j = s->jobs; j && !found; j = j->next)
		if (j->running && !j->background && j->rpc_id && strcmp (j->rpc_id, want) == 0) {
			found = j;
			j->refs++;
		}
	pthread_mutex_unlock (&s->lock);
	if (!found)
		return;
	if (ab_mcp_job_signal (s->d, found, SIGKILL, &err) < 0)
		ab_error_clear (&err);
	ab_mcp_job_put (s, found);
}

/* Wait (bounded) for j's reader thread after its process was killed; a
 * thread that does not end in time is left detached to finish alone. */
static void
join_reader (struct ab_mcp_session_s *s, struct ab_mcp_job_s *j)
{
	struct timespec until;
	bool done;

	clock_gettime (CLOCK_REALTIME, &until);
	until.tv_sec += STOP_WAIT_MS / 1000;
	pthread_mutex_lock (&s->lock);
	while (j->running && pthread_cond_timedwait (&s->cond, &s->lock, &until) == 0)
		;
	done = !j->running;
	pthread_mutex_unlock (&s->lock);
	if (done)
		pthread_join (j->thread, NULL);
	else
		pthread_detach (j->thread);
	j->has_thread = false;
}

void
ab_mcp_job_drop (struct ab_daemon_s *d, struct ab_mcp_session_s *s, struct ab_mcp_job_s *j)
{
	ab_error_t err = AB_ERROR_INIT;
	bool linked = false, kill_it, join;

	pthread_mutex_lock (&s->lock);
	for (struct ab_mcp_job_s **p = &s->jobs; *p; p = &(*p)->next)
		if (*p == j) {
			*p = j->next;
			s->n_jobs--;
			linked = true;
			break;
		}
	kill_it = linked && j->running && j->has_thread;
	join = linked && j->has_thread;
	pthread_mutex_unlock (&s->lock);
	if (!linked)
		return; /* another caller dropped it */
	if (kill_it && ab_mcp_job_signal (d, j, SIGKILL, &err) < 0)
		ab_error_clear (&err);
	if (join)
		join_reader (s, j);
	ab_mcp_job_put (s, j);
}

static void
end_jobs (struct ab_daemon_s *d, struct ab_mcp_session_s *s)
{
	ab_error_t err = AB_ERROR_INIT;

	for (;;) {
		struct ab_mcp_job_s *j = NULL;

		/* Foreground calls still pumping see `ended` and clean up their own. */
		pthread_mutex_lock (&s->lock);
		for (struct ab_mcp_job_s *k = s->jobs; k && !j; k = k->next)
			if (k->background) {
				j = k;
				j->refs++;
			}
		if (!j)
			for (struct ab_mcp_job_s *k = s->jobs; k; k = k->next)
				if (k->running && !k->stop) {
					k->stop = true;
					if (ab_mcp_job_signal (d, k, SIGKILL, &err) < 0)
						ab_error_clear (&err);
				}
		pthread_mutex_unlock (&s->lock);
		if (!j)
			return;
		ab_mcp_job_drop (d, s, j);
		ab_mcp_job_put (s, j);
	}
}

static void
destroy_owned (struct ab_daemon_s *d, struct ab_mcp_session_s *s)
{
	char **owned;

	pthread_mutex_lock (&s->lock);
	owned = s->owned;
	s->owned = NULL;
	pthread_mutex_unlock (&s->lock);
	for (size_t i = 0; owned && owned[i]; i++) {
		ab_error_t err = AB_ERROR_INIT;
		struct ab_box_s *b = ab_registry_get (d, owned[i], &err);
		if (b && ab_box_destroy (d, b, true, &err) < 0)
			ab_log_error (AB_LOG_WARN, &err, "MCP session end: sandbox %s", owned[i]);
		if (b)
			ab_box_unref (d, b);
	}
	ab_cleanup_strvp (&owned);
}

void
ab_mcp_session_end (struct ab_daemon_s *d, struct ab_mcp_session_s *s)
{
	bool in_store = false, last;

	pthread_mutex_lock (&store_lock);
	for (struct ab_mcp_session_s *k = sessions; k; k = k->next)
		in_store |= k == s;
	if (in_store) {
		unlink_locked (s);
		session_unref_locked (s, &last); /* the store's; the caller still holds one */
	}
	pthread_mutex_unlock (&store_lock);
	if (!in_store)
		return; /* another caller ends it */
	pthread_mutex_lock (&s->lock);
	s->ended = true;
	pthread_mutex_unlock (&s->lock);
	end_jobs (d, s);
	destroy_owned (d, s);
}
