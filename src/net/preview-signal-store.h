/* The signalling store behind `preview-bridge serve`'s POST /signal: a
 * mailbox per session through which a viewer and the sandbox side swap
 * WebRTC-style offers, answers and candidates.  Pure code (no I/O, one
 * thread); the server hands it parsed documents.
 *
 *   {sessionId, role="viewer", type:"poll", sequence=0}
 *       -> 200 {messages: [...]}: the session's kept messages with a
 *          sequence above the request's, sent by another role, oldest first
 *   {sessionId, role="viewer", type, payload}   (any other type)
 *       -> 200 {sequence}: stored as {sessionId, role, type, payload,
 *          sequence}; sequences count from 1 per session
 *   sessionId or type missing (or not a non-empty string), role or
 *   sequence of the wrong type, ids over their length limits
 *       -> 400 {"error":"invalid signal document"}
 *
 * Memory is bounded three ways, each dropping the oldest first: the last
 * 256 messages of a session; 8 MiB of documents per session; and at most
 * 1024 sessions holding 128 MiB in all, beyond which the least recently
 * used session is forgotten.  A poll never creates a session.  A session
 * that was forgotten starts again at sequence 1. */
#ifndef AB_NET_PREVIEW_SIGNAL_STORE_H
#define AB_NET_PREVIEW_SIGNAL_STORE_H

#include <jansson.h>
#include <stddef.h>

struct ab_signal_limits_s {
	size_t max_messages;      /* kept per session (256) */
	size_t max_session_bytes; /* per session (8 MiB) */
	size_t max_sessions;      /* (1024) */
	size_t max_total_bytes;   /* all sessions (128 MiB) */
};

#define AB_SIGNAL_MAX_SESSION_ID 256
#define AB_SIGNAL_MAX_ROLE       64
#define AB_SIGNAL_MAX_TYPE       64

void ab_signal_limits_default (struct ab_signal_limits_s *l);

struct ab_signal_store_s;

struct ab_signal_store_s *ab_signal_store_new (const struct ab_signal_limits_s *l);
void ab_signal_store_free (struct ab_signal_store_s *s);

/* Handle one parsed document; cost is what storing it is charged (the
 * request body's size).  Returns the HTTP status and sets *answer (a new
 * reference). */
int ab_signal_store_handle (struct ab_signal_store_s *s, json_t *doc, size_t cost, json_t **answer);

/* For tests and the server's log: sessions and bytes held now. */
size_t ab_signal_store_sessions (const struct ab_signal_store_s *s);
size_t ab_signal_store_bytes (const struct ab_signal_store_s *s);

#endif
