#include "net/preview-signal-store.h"

#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"

#define N_BUCKETS 2048

struct message_s {
	json_t *doc; /* {sessionId, role, type, payload, sequence} */
	const char *role;
	uint64_t sequence;
	size_t cost;
};

struct session_s {
	char *id;
	uint64_t next_sequence;
	struct message_s *ring; /* max_messages slots */
	size_t head;            /* oldest */
	size_t count;
	size_t bytes;
	struct session_s *hnext;               /* hash chain */
	struct session_s *lru_prev, *lru_next; /* most recent first */
};

struct ab_signal_store_s {
	struct ab_signal_limits_s lim;
	struct session_s *buckets[N_BUCKETS];
	struct session_s *lru_head, *lru_tail;
	size_t n_sessions;
	size_t bytes;
};

void
ab_signal_limits_default (struct ab_signal_limits_s *l)
{
	l->max_messages = 256;
	l->max_session_bytes = 8u << 20;
	l->max_sessions = 1024;
	l->max_total_bytes = 128u << 20;
}

struct ab_signal_store_s *
ab_signal_store_new (const struct ab_signal_limits_s *l)
{
	struct ab_signal_store_s *s = xcalloc (1, sizeof *s);

	s->lim = *l;
	return s;
}

/* FNV-1a: sessions ids come from clients, but the table is small and
 * chains are bounded by max_sessions, so a collision flood costs at most a
 * linear scan of 1024 entries. */
static size_t
bucket_of (const char *id)
{
	uint32_t h = 2166136261u;

	for (; *id; id++)
		h = (h ^ (uint8_t)*id) * 16777619u;
	return h % N_BUCKETS;
}

static struct session_s *
find (struct ab_signal_store_s *s, const char *id)
{
	for (struct session_s *x = s->buckets[bucket_of (id)]; x != NULL; x = x->hnext)
		if (strcmp (x->id, id) == 0)
			return x;
	return NULL;
}

static void
lru_unlink (struct ab_signal_store_s *s, struct session_s *x)
{
	if (x->lru_prev)
		x->lru_prev->lru_next = x->lru_next;
	else
		s->lru_head = x->lru_next;
	if (x->lru_next)
		x->lru_next->lru_prev = x->lru_prev;
	else
		s->lru_tail = x->lru_prev;
	x->lru_prev = x->lru_next = NULL;
}

static void
lru_push_front (struct ab_signal_store_s *s, struct session_s *x)
{
	x->lru_next = s->lru_head;
	if (s->lru_head)
		s->lru_head->lru_prev = x;
	s->lru_head = x;
	if (s->lru_tail == NULL)
		s->lru_tail = x;
}

static void
drop_oldest (struct ab_signal_store_s *s, struct session_s *x)
{
	struct message_s *m = &x->ring[x->head];

	x->bytes -= m->cost;
	s->bytes -= m->cost;
	json_decref (m->doc);
	memset (m, 0, sizeof *m);
	x->head = (x->head + 1) % s->lim.max_messages;
	x->count--;
}

static void
forget (struct ab_signal_store_s *s, struct session_s *x)
{
	struct session_s **pp = &s->buckets[bucket_of (x->id)];

	while (x->count > 0)
		drop_oldest (s, x);
	while (*pp != x)
		pp = &(*pp)->hnext;
	*pp = x->hnext;
	lru_unlink (s, x);
	s->n_sessions--;
	free (x->ring);
	free (x->id);
	free (x);
}

static struct session_s *
create (struct ab_signal_store_s *s, const char *id)
{
	struct session_s *x;
	size_t b = bucket_of (id);

	if (s->n_sessions >= s->lim.max_sessions && s->lru_tail != NULL)
		forget (s, s->lru_tail);
	x = xcalloc (1, sizeof *x);
	x->id = xstrdup (id);
	x->next_sequence = 1;
	x->ring = xcalloc (s->lim.max_messages, sizeof *x->ring);
	x->hnext = s->buckets[b];
	s->buckets[b] = x;
	lru_push_front (s, x);
	s->n_sessions++;
	return x;
}

void
ab_signal_store_free (struct ab_signal_store_s *s)
{
	if (s == NULL)
		return;
	while (s->lru_head != NULL)
		forget (s, s->lru_head);
	free (s);
}

size_t
ab_signal_store_sessions (const struct ab_signal_store_s *s)
{
	return s->n_sessions;
}

size_t
ab_signal_store_bytes (const struct ab_signal_store_s *s)
{
	return s->bytes;
}

/* Make room for cost more bytes in x: its own limits first, then the
 * store's, forgetting other sessions least recently used first. */
static void
make_room (struct ab_signal_store_s *s, struct session_s *x, size_t cost)
{
	while (x->count > 0
	       && (x->count >= s->lim.max_messages || x->bytes + cost > s->lim.max_session_bytes))
		drop_oldest (s, x);
	while (s->bytes + cost > s->lim.max_total_bytes && s->lru_tail != NULL && s->lru_tail != x)
		forget (s, s->lru_tail);
	while (x->count > 0 && s->bytes + cost > s->lim.max_total_bytes)
		drop_oldest (s, x);
}

static json_t *
publish (struct ab_signal_store_s *s, const char *id, const char *role, json_t *doc, size_t cost)
{
	struct session_s *x = find (s, id);
	struct message_s *m;
	json_t *payload = json_object_get (doc, "payload");

	if (x == NULL)
		x = create (s, id);
	lru_unlink (s, x);
	lru_push_front (s, x);
	make_room (s, x, cost);
	m = &x->ring[(x->head + x->count) % s->lim.max_messages];
	m->sequence = x->next_sequence++;
	m->cost = cost;
	m->doc = json_pack ("{s:s, s:s, s:O, s:O, s:I}", "sessionId", id, "role", role, "type",
	                    json_object_get (doc, "type"), "payload",
	                    payload ? payload : json_null (), "sequence", (json_int_t)m->sequence);
	m->role = json_string_value (json_object_get (m->doc, "role"));
	x->count++;
	x->bytes += cost;
	s->bytes += cost;
	return json_pack ("{s:I}", "sequence", (json_int_t)m->sequence);
}

static json_t *
poll_session (struct ab_signal_store_s *s, const char *id, const char *role, uint64_t after)
{
	struct session_s *x = find (s, id);
	json_t *list = json_array ();

	if (x != NULL) {
		lru_unlink (s, x);
		lru_push_front (s, x);
		for (size_t i = 0; i < x->count; i++) {
			const struct message_s *m = &x->ring[(x->head + i) % s->lim.max_messages];
			if (m->sequence > after && strcmp (m->role, role) != 0)
				json_array_append (list, m->doc);
		}
	}
	return json_pack ("{s:o}", "messages", list);
}

/* A member that must be absent or a string of 1..max bytes without NUL. */
static int
get_id (const json_t *doc, const char *key, bool required, size_t max, const char **out)
{
	const json_t *v = json_object_get (doc, key);

	if (v == NULL && !required)
		return 0;
	if (!json_is_string (v) || json_string_length (v) == 0 || json_string_length (v) > max
	    || strlen (json_string_value (v)) != json_string_length (v))
		return -1;
	*out = json_string_value (v);
	return 0;
}

int
ab_signal_store_handle (struct ab_signal_store_s *s, json_t *doc, size_t cost, json_t **answer)
{
	const char *id = NULL, *type = NULL, *role = "viewer";
	const json_t *seq = json_object_get (doc, "sequence");

	if (!json_is_object (doc)
	    || get_id (doc, "sessionId", true, AB_SIGNAL_MAX_SESSION_ID, &id) < 0
	    || get_id (doc, "type", true, AB_SIGNAL_MAX_TYPE, &type) < 0
	    || get_id (doc, "role", false, AB_SIGNAL_MAX_ROLE, &role) < 0) {
		*answer = json_pack ("{s:s}", "error", "invalid signal document");
		return 400;
	}
	if (strcmp (type, "poll") != 0) {
		*answer = publish (s, id, role, doc, cost);
		return 200;
	}
	if (seq != NULL && (!json_is_integer (seq) || json_integer_value (seq) < 0)) {
		*answer = json_pack ("{s:s}", "error", "invalid signal document");
		return 400;
	}
	*answer = poll_session (s, id, role, seq ? (uint64_t)json_integer_value (seq) : 0);
	return 200;
}
