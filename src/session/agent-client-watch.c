/* The agent client's directory watches: FILE_WATCH opens a channel on
 * which the agent sends one WATCH_EVENT frame per change; each event's
 * bytes are granted back as the caller takes it, so the agent holds what
 * the caller has not read (and ends the watch past its bound). */
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "session/agent-client-internal.h"

int
ab_agent_watch_start (ab_agent_conn_t *c, const char *path, bool recursive, uint32_t *watch,
                      ab_error_t *err)
{
	struct ab_ac_chan_s *ch;
	struct ab_msg_s m, reply;

	*watch = 0;
	if (!(c->info.features & AB_AGENT_FEATURE_WATCH))
		return ab_error (err, 0, AB_E_INVALID,
		                 "this sandbox's agent has no directory watches (an older agent)");
	ch = ab_ac_chan_new (c);
	ab_msg_init (&m, AB_MSG_FILE_WATCH);
	m.path = (char *)path;
	ab_msg_set (&m, channel, AB_TAG_CHANNEL, ch->id);
	ab_msg_set (&m, recursive, AB_TAG_RECURSIVE, recursive);
	if (ab_ac_call (c, &m, &reply, err) < 0) {
		ab_ac_chan_drop (c, ch);
		return -1;
	}
	ab_msg_free (&reply);
	*watch = ch->id;
	return 0;
}

static const ab_agent_watch_op ops[] = {
	[AB_WIRE_WATCH_CREATE] = AB_AGENT_WATCH_CREATE,
	[AB_WIRE_WATCH_WRITE] = AB_AGENT_WATCH_WRITE,
	[AB_WIRE_WATCH_REMOVE] = AB_AGENT_WATCH_REMOVE,
	[AB_WIRE_WATCH_RENAME] = AB_AGENT_WATCH_RENAME,
	[AB_WIRE_WATCH_CHMOD] = AB_AGENT_WATCH_CHMOD,
};

/* 1 = an event, 0 = nothing in this frame, -1 = the watch ended. */
static int
take (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, struct ab_ac_frame_s *f, void *evp,
      ab_error_t *err)
{
	struct ab_agent_watch_event_s *ev = evp;
	struct ab_msg_s m;
	int r = 0;

	if (f->type == AB_MSG_WATCH_EVENT) {
		r = ab_msg_decode (f->type, f->payload, f->len, &m, err);
		if (r == 0 && m.event > 0 && m.event < sizeof ops / sizeof *ops) {
			ev->op = ops[m.event];
			ev->is_dir = m.ftype == AB_WIRE_FT_DIR;
			ev->name = m.name;
			c->event = (uint8_t *)m.name; /* ours until the next call */
			m.name = NULL;
			r = 1;
		} else if (r == 0)
			r = ab_error (err, 0, AB_E_INTERNAL, "the agent sent watch event %u",
			              m.event);
		ab_msg_free (&m);
		if (ab_ac_consumed (c, ch, f->len, false, err) < 0)
			r = -1;
	} else if (f->type == AB_MSG_RESET) {
		if (ab_msg_decode (f->type, f->payload, f->len, &m, err) == 0)
			ab_ac_error_from (&m, err);
		ab_msg_free (&m);
		ab_ac_chan_drop (c, ch);
		r = -1;
	}
	ab_ac_frame_free (f);
	return r;
}

int
ab_agent_watch_next (ab_agent_conn_t *c, uint32_t watch, struct ab_agent_watch_event_s *ev,
                     int timeout_ms, ab_error_t *err)
{
	struct ab_ac_chan_s *ch = watch ? ab_ac_chan_find (c, watch) : NULL;

	free (c->event);
	c->event = NULL;
	memset (ev, 0, sizeof *ev);
	if (!ch)
		return ab_error (err, 0, AB_E_INVALID, "no watch %u on this connection", watch);
	return ab_ac_chan_next (c, ch, take, ev, timeout_ms, err);
}

int
ab_agent_watch_stop (ab_agent_conn_t *c, uint32_t watch, ab_error_t *err)
{
	struct ab_ac_chan_s *ch = watch ? ab_ac_chan_find (c, watch) : NULL;
	int r = 0;

	if (ch) {
		r = ab_ac_send (c, AB_MSG_RESET, ch->id, NULL, 0, err);
		ab_ac_chan_drop (c, ch);
	}
	return r;
}
