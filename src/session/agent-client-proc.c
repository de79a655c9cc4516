/* The agent client's process calls: start, follow (events), attach,
 * release, stdin, signal, resize, list. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "session/agent-client-internal.h"

static int
call_simple (ab_agent_conn_t *c, struct ab_msg_s *m, ab_error_t *err)
{
	struct ab_msg_s reply;
	if (ab_ac_call (c, m, &reply, err) < 0)
		return -1;
	ab_msg_free (&reply);
	return 0;
}

int
ab_agent_proc_start (ab_agent_conn_t *c, const struct ab_agent_proc_spec_s *spec,
                     struct ab_agent_proc_s *out, ab_error_t *err)
{
	struct ab_ac_chan_s *ch = NULL;
	struct ab_msg_s m, reply;

	memset (out, 0, sizeof *out);
	if (!spec->argv || !spec->argv[0])
		return ab_error (err, 0, AB_E_INVALID, "no command");
	ab_msg_init (&m, AB_MSG_PROC_START);
	m.argv = (char **)spec->argv;
	m.env = (char **)spec->env;
	m.cwd = (char *)spec->cwd;
	ab_msg_set (&m, uid, AB_TAG_UID, spec->uid);
	ab_msg_set (&m, gid, AB_TAG_GID, spec->gid);
	ab_msg_set (&m, tty, AB_TAG_TTY, spec->tty);
	if (spec->tty && spec->rows && spec->cols) {
		ab_msg_set (&m, rows, AB_TAG_ROWS, spec->rows);
		ab_msg_set (&m, cols, AB_TAG_COLS, spec->cols);
	}
	ab_msg_set (&m, stdin_open, AB_TAG_STDIN, spec->stdin_open);
	if (spec->timeout_ms)
		ab_msg_set (&m, timeout_ms, AB_TAG_TIMEOUT_MS, spec->timeout_ms);
	if (spec->grace_ms)
		ab_msg_set (&m, grace_ms, AB_TAG_GRACE_MS, spec->grace_ms);
	if (!spec->detach) {
		ch = ab_ac_chan_new (c);
		ab_msg_set (&m, channel, AB_TAG_CHANNEL, ch->id);
	}
	if (ab_ac_call (c, &m, &reply, err) < 0) {
		if (ch)
			ab_ac_chan_drop (c, ch);
		return -1;
	}
	out->pid = reply.pid;
	out->channel = ch ? ch->id : 0;
	ab_msg_free (&reply);
	return 0;
}

static int
exit_event (const struct ab_ac_frame_s *f, struct ab_agent_event_s *ev, ab_error_t *err)
{
	struct ab_msg_s m;
	int r = ab_msg_decode (f->type, f->payload, f->len, &m, err);

	if (r == 0) {
		ev->kind = AB_AGENT_EV_EXIT;
		ev->exit.wait_status = (int)m.wait_status;
		ev->exit.timed_out = m.timed_out;
		ev->exit.exec_errno = (int)m.exec_errno;
	}
	ab_msg_free (&m);
	return r;
}

static int
reset_error (const struct ab_ac_frame_s *f, ab_error_t *err)
{
	struct ab_msg_s m;

	if (ab_msg_decode (f->type, f->payload, f->len, &m, err) == 0)
		ab_ac_error_from (&m, err);
	ab_msg_free (&m);
	return -1;
}

/* 1 = an event, 0 = nothing for this frame (keep going), -1 = error. */
static int
take (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, struct ab_ac_frame_s *f, void *evp,
      ab_error_t *err)
{
	struct ab_agent_event_s *ev = evp;
	int r = 0;

	switch (f->type) {
	case AB_MSG_STDOUT:
	case AB_MSG_STDERR:
		ev->kind = f->type == AB_MSG_STDOUT ? AB_AGENT_EV_STDOUT : AB_AGENT_EV_STDERR;
		ev->data = f->payload;
		ev->len = f->len;
		c->event = f->payload; /* ours until the next call */
		f->payload = NULL;
		r = ab_ac_consumed (c, ch, ev->len, false, err) < 0 ? -1 : 1;
		break;
	case AB_MSG_PROC_EXIT:
		r = exit_event (f, ev, err) < 0 ? -1 : 1;
		ab_ac_chan_drop (c, ch);
		break;
	case AB_MSG_RESET:
		r = reset_error (f, err);
		ab_ac_chan_drop (c, ch);
		break;
	default: break; /* EOF and anything else: nothing to report */
	}
	ab_ac_frame_free (f);
	return r;
}

int
ab_agent_proc_next_event (ab_agent_conn_t *c, const struct ab_agent_proc_s *p,
                          struct ab_agent_event_s *ev, int timeout_ms, ab_error_t *err)
{
	struct ab_ac_chan_s *ch = p->channel ? ab_ac_chan_find (c, p->channel) : NULL;

	free (c->event);
	c->event = NULL;
	memset (ev, 0, sizeof *ev);
	if (!ch)
		return ab_error (err, 0, AB_E_INVALID,
		                 "process %u is not followed on this connection", p->pid);
	return ab_ac_chan_next (c, ch, take, ev, timeout_ms, err);
}

int
ab_agent_proc_release (ab_agent_conn_t *c, struct ab_agent_proc_s *p, ab_error_t *err)
{
	struct ab_ac_chan_s *ch = p->channel ? ab_ac_chan_find (c, p->channel) : NULL;
	int r = 0;

	if (ch) {
		r = ab_ac_send (c, AB_MSG_RESET, ch->id, NULL, 0, err);
		ab_ac_chan_drop (c, ch);
	}
	p->channel = 0;
	return r;
}

int
ab_agent_proc_attach (ab_agent_conn_t *c, uint32_t pid, struct ab_agent_proc_s *out,
                      ab_error_t *err)
{
	struct ab_ac_chan_s *ch = ab_ac_chan_new (c);
	struct ab_msg_s m, reply;

	memset (out, 0, sizeof *out);
	ab_msg_init (&m, AB_MSG_PROC_ATTACH);
	ab_msg_set (&m, pid, AB_TAG_PID, pid);
	ab_msg_set (&m, channel, AB_TAG_CHANNEL, ch->id);
	if (ab_ac_call (c, &m, &reply, err) < 0) {
		ab_ac_chan_drop (c, ch);
		return -1;
	}
	ab_msg_free (&reply);
	out->pid = pid;
	out->channel = ch->id;
	return 0;
}

int
ab_agent_proc_write_stdin (ab_agent_conn_t *c, uint32_t pid, const void *buf, size_t len,
                           ab_error_t *err)
{
	const uint8_t *p = buf;

	do {
		size_t n = len < AB_AGENT_STDIN_MAX ? len : AB_AGENT_STDIN_MAX;
		struct ab_msg_s m;
		ab_msg_init (&m, AB_MSG_PROC_STDIN);
		ab_msg_set (&m, pid, AB_TAG_PID, pid);
		m.data = p ? p : (const uint8_t *)"";
		m.data_len = n;
		if (call_simple (c, &m, err) < 0)
			return -1;
		p += n;
		len -= n;
	} while (len > 0);
	return 0;
}

int
ab_agent_proc_close_stdin (ab_agent_conn_t *c, uint32_t pid, ab_error_t *err)
{
	struct ab_msg_s m;
	ab_msg_init (&m, AB_MSG_PROC_CLOSE_STDIN);
	ab_msg_set (&m, pid, AB_TAG_PID, pid);
	return call_simple (c, &m, err);
}

int
ab_agent_proc_signal (ab_agent_conn_t *c, uint32_t pid, int sig, ab_error_t *err)
{
	struct ab_msg_s m;

	if (sig <= 0 || sig > 64)
		return ab_error (err, 0, AB_E_INVALID, "signal %d out of range", sig);
	ab_msg_init (&m, AB_MSG_PROC_SIGNAL);
	ab_msg_set (&m, pid, AB_TAG_PID, pid);
	ab_msg_set (&m, signal, AB_TAG_SIGNAL, (uint32_t)sig);
	return call_simple (c, &m, err);
}

int
ab_agent_proc_resize (ab_agent_conn_t *c, uint32_t pid, uint16_t rows, uint16_t cols,
                      ab_error_t *err)
{
	struct ab_msg_s m;
	ab_msg_init (&m, AB_MSG_PROC_RESIZE);
	ab_msg_set (&m, pid, AB_TAG_PID, pid);
	ab_msg_set (&m, rows, AB_TAG_ROWS, rows);
	ab_msg_set (&m, cols, AB_TAG_COLS, cols);
	return call_simple (c, &m, err);
}

static char **
strv_dup (char **v)
{
	size_t n = 0;
	char **out;

	while (v && v[n])
		n++;
	out = xcalloc (n + 1, sizeof *out);
	for (size_t i = 0; i < n; i++)
		out[i] = xstrdup (v[i]);
	return out;
}

struct procs_s {
	struct ab_agent_proc_info_s *v;
	size_t n;
};

static void
add_procs (void *ctx, struct ab_msg_s *reply)
{
	struct procs_s *l = ctx;
	struct ab_agent_proc_info_s **v = &l->v;
	size_t *n = &l->n;

	*v = xrealloc (*v, (*n + reply->n_procs + 1) * sizeof **v);
	for (size_t i = 0; i < reply->n_procs; i++) {
		const struct ab_msg_s *r = &reply->procs[i];
		struct ab_agent_proc_info_s *o = &(*v)[(*n)++];
		memset (o, 0, sizeof *o);
		o->pid = r->pid;
		o->argv = strv_dup (r->argv);
		o->running = r->running;
		o->tty = r->tty;
		o->exit.wait_status = (int)r->wait_status;
		o->exit.timed_out = r->timed_out;
		o->exit.exec_errno = (int)r->exec_errno;
		o->started_unix_ms = r->started_ms;
	}
}

int
ab_agent_proc_list (ab_agent_conn_t *c, struct ab_agent_proc_info_s **out, size_t *n,
                    ab_error_t *err)
{
	struct ab_msg_s m;
	struct procs_s l = { 0 };

	ab_msg_init (&m, AB_MSG_PROC_LIST);
	if (ab_ac_call_all (c, &m, add_procs, &l, err) < 0) {
		ab_agent_proc_info_free (l.v, l.n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

void
ab_agent_proc_info_free (struct ab_agent_proc_info_s *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		for (char **a = v[i].argv; a && *a; a++)
			free (*a);
		free (v[i].argv);
	}
	free (v);
}
