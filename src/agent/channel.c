/* Channels: byte streams inside a session, with credit-based flow control
 * in both directions.  We send at most `credit` bytes (the host grants more
 * with WINDOW as it delivers them); the host sends at most AB_PROTO_WINDOW
 * bytes we have not granted back, and a host that sends more is broken or
 * hostile: its session ends.  So neither side ever buffers more than one
 * window per channel and direction. */
#include <stdlib.h>
#include <string.h>

#include "agent/service.h"
#include "base/xalloc.h"

#define MAX_CHANNELS 1024

struct ab_channel_s *
ab_channel_open (struct ab_session_s *s, uint32_t id, const struct ab_channel_ops_s *ops, void *ctx,
                 ab_error_t *err)
{
	struct ab_channel_s **head = ab_session_channel_list (s);
	struct ab_channel_s *ch;
	size_t n = 0;

	if (id == 0) {
		ab_error (err, 0, AB_E_INVALID, "channel 0 is the control channel");
		return NULL;
	}
	if (ab_session_channel (s, id)) {
		ab_error (err, 0, AB_E_CONFLICT, "channel %u is in use", id);
		return NULL;
	}
	for (ch = *head; ch; ch = ch->next)
		n++;
	if (n >= MAX_CHANNELS) {
		ab_error (err, 0, AB_E_LIMIT, "too many channels on one connection");
		return NULL;
	}
	ch = xcalloc (1, sizeof *ch);
	ch->id = id;
	ch->ops = ops;
	ch->s = s;
	ch->ctx = ctx;
	ch->credit = AB_PROTO_WINDOW;
	ch->next = *head;
	*head = ch;
	return ch;
}

static void
unlink_channel (struct ab_channel_s *ch)
{
	for (struct ab_channel_s **pp = ab_session_channel_list (ch->s); *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			return;
		}
}

static void
destroy (struct ab_channel_s *ch)
{
	if (ch->closed)
		return;
	ch->closed = true;
	unlink_channel (ch);
	if (ch->ops->destroy)
		ch->ops->destroy (ch);
	ab_loop_defer_free (ch);
}

void
ab_channel_finish (struct ab_channel_s *ch, const ab_error_t *e)
{
	if (ch->closed)
		return;
	if (e) {
		struct ab_msg_s m;
		ab_msg_init (&m, AB_MSG_RESET);
		ab_msg_set (&m, code, AB_TAG_CODE, ab_wire_code_from_kind (e->kind));
		if (e->errnum > 0)
			ab_msg_set (&m, errnum, AB_TAG_ERRNO, (uint32_t)e->errnum);
		m.message = (char *)e->msg;
		ab_session_send_msg (ch->s, ch->id, &m);
	}
	destroy (ch);
}

void
ab_channel_destroy_all (struct ab_session_s *s)
{
	struct ab_channel_s **head = ab_session_channel_list (s);
	while (*head)
		destroy (*head);
}

void
ab_channel_pump_all (struct ab_session_s *s)
{
	struct ab_channel_s *ch, *next;

	/* A pump may finish its channel (unlinking it): hold the next first;
	 * freed channels live until the end of the batch. */
	for (ch = *ab_session_channel_list (s); ch; ch = next) {
		next = ch->next;
		if (!ch->closed && ch->ops->pump && ab_channel_writable (ch))
			ch->ops->pump (ch);
	}
}

bool
ab_channel_writable (const struct ab_channel_s *ch)
{
	return !ch->closed && ch->credit > 0 && ab_session_can_send (ch->s);
}

size_t
ab_channel_send_data (struct ab_channel_s *ch, uint16_t type, const uint8_t *p, size_t n)
{
	size_t sent = 0;

	while (sent < n && ab_channel_writable (ch)) {
		size_t k = n - sent;
		if (k > AB_PROTO_DATA_CHUNK)
			k = AB_PROTO_DATA_CHUNK;
		if (k > ch->credit)
			k = (size_t)ch->credit;
		ab_session_send (ch->s, type, ch->id, p + sent, k);
		ch->credit -= k;
		sent += k;
	}
	return sent;
}

void
ab_channel_send_eof (struct ab_channel_s *ch)
{
	if (!ch->closed)
		ab_session_send (ch->s, AB_MSG_EOF, ch->id, NULL, 0);
}

void
ab_channel_grant (struct ab_channel_s *ch, size_t n)
{
	struct ab_msg_s m;

	if (ch->closed || n == 0)
		return;
	if (n > ch->in_held)
		n = (size_t)ch->in_held;
	ch->in_held -= n;
	ab_msg_init (&m, AB_MSG_WINDOW);
	ab_msg_set (&m, bytes, AB_TAG_BYTES, (uint32_t)n);
	ab_session_send_msg (ch->s, ch->id, &m);
}

static bool
on_window (struct ab_channel_s *ch, const struct ab_frame_s *f)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s m;
	bool ok = ab_msg_decode (f->type, f->payload, f->length, &m, &err) == 0;

	/* More credit than a window in flight is a confused peer. */
	if (ok && ch->credit + m.bytes > 2ULL * AB_PROTO_WINDOW)
		ok = false;
	if (ok) {
		ch->credit += m.bytes;
		if (ch->ops->pump && ab_channel_writable (ch))
			ch->ops->pump (ch);
	}
	ab_msg_free (&m);
	return ok;
}

static bool
on_bytes (struct ab_channel_s *ch, const struct ab_frame_s *f)
{
	if (!ch->ops->data)
		return false; /* this channel takes no bytes from the host */
	if (ch->in_held + f->length > AB_PROTO_WINDOW)
		return false; /* past the window we granted */
	ch->in_held += f->length;
	if (f->length)
		ch->ops->data (ch, f->payload, f->length);
	return true;
}

/* Frames on a channel this session does not (or no longer) have are
 * dropped: the host may have sent them before our RESET or EXIT arrived. */
bool
ab_channel_frame (struct ab_session_s *s, const struct ab_frame_s *f)
{
	struct ab_channel_s *ch = ab_session_channel (s, f->channel);

	if (!ch)
		return true;
	switch (f->type) {
	case AB_MSG_DATA:
	case AB_MSG_STDIN: return on_bytes (ch, f);
	case AB_MSG_EOF:
		if (ch->ops->eof)
			ch->ops->eof (ch);
		return true;
	case AB_MSG_WINDOW: return on_window (ch, f);
	case AB_MSG_RESET: destroy (ch); return true;
	default: return false;
	}
}
