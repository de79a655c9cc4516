/* The agent client's file calls.  Reads and writes stream on a channel:
 * a read hands each chunk to the sink and grants it back; a write sends
 * only as much as the agent's credit allows, so neither side ever holds
 * more than a window of the file. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "session/agent-client-internal.h"

static void
stat_from (const struct ab_msg_s *m, struct ab_agent_stat_s *st)
{
	memset (st, 0, sizeof *st);
	st->type = (ab_agent_file_type)m->ftype;
	st->size = m->size;
	st->mode = m->mode;
	st->mtime_ms = m->mtime_ms;
	st->has_ids = ab_msg_has (m, AB_TAG_UID) && ab_msg_has (m, AB_TAG_GID);
	st->uid = m->uid;
	st->gid = m->gid;
}

static void
path_msg (struct ab_msg_s *m, uint16_t type, const char *path)
{
	ab_msg_init (m, type);
	m->path = (char *)path;
}

static int
call_simple (ab_agent_conn_t *c, struct ab_msg_s *m, ab_error_t *err)
{
	struct ab_msg_s reply;
	if (ab_ac_call (c, m, &reply, err) < 0)
		return -1;
	ab_msg_free (&reply);
	return 0;
}

/* ---- read ----------------------------------------------------------------------- */

static int
read_frames (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, const struct ab_agent_file_sink_s *sink,
             ab_error_t *err)
{
	for (;;) {
		struct ab_ac_frame_s *f = ab_ac_queue_pop (&ch->q);
		struct ab_msg_s m;
		int r = 0;

		if (!f) {
			if (ab_ac_consumed (c, ch, 0, true, err) < 0 || ab_ac_pump (c, -1, err) < 0)
				return -1;
			continue;
		}
		if (f->type == AB_MSG_DATA) {
			r = sink->data (sink->ctx, f->payload, f->len, err);
			if (r >= 0)
				r = ab_ac_consumed (c, ch, f->len, false, err);
			else
				ab_ac_send (c, AB_MSG_RESET, ch->id, NULL, 0,
				            &(ab_error_t)AB_ERROR_INIT);
		} else if (f->type == AB_MSG_EOF) {
			r = 1;
		} else if (f->type == AB_MSG_RESET) {
			if (ab_msg_decode (f->type, f->payload, f->len, &m, err) == 0)
				ab_ac_error_from (&m, err);
			ab_msg_free (&m);
			r = -1;
		}
		ab_ac_frame_free (f);
		if (r != 0)
			return r < 0 ? -1 : 0;
	}
}

int
ab_agent_file_read (ab_agent_conn_t *c, const char *path, const struct ab_agent_file_sink_s *sink,
                    ab_error_t *err)
{
	struct ab_ac_chan_s *ch = ab_ac_chan_new (c);
	struct ab_agent_stat_s st;
	struct ab_msg_s m, reply;
	int r;

	path_msg (&m, AB_MSG_FILE_READ, path);
	ab_msg_set (&m, channel, AB_TAG_CHANNEL, ch->id);
	if (ab_ac_call (c, &m, &reply, err) < 0) {
		ab_ac_chan_drop (c, ch);
		return -1;
	}
	stat_from (&reply, &st);
	ab_msg_free (&reply);
	r = sink->begin ? sink->begin (sink->ctx, &st, err) : 0;
	if (r < 0)
		ab_ac_send (c, AB_MSG_RESET, ch->id, NULL, 0, &(ab_error_t)AB_ERROR_INIT);
	else
		r = read_frames (c, ch, sink, err);
	ab_ac_chan_drop (c, ch);
	return r;
}

/* ---- write ---------------------------------------------------------------------- */

/* Wait until there is credit or an answer (which, before EOF, is a FAIL). */
static int
await_credit (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, uint32_t req_id, ab_error_t *err)
{
	struct ab_msg_s reply;
	int rc;

	for (;;) {
		if (ab_ac_poll_reply (c, req_id, &reply, &rc, err)) {
			if (rc == 0) {
				ab_msg_free (&reply);
				return ab_error (err, 0, AB_E_INTERNAL,
				                 "the agent answered a write before its end");
			}
			return -1;
		}
		if (ch->credit > 0)
			return 0;
		if (ab_ac_pump (c, -1, err) < 0)
			return -1;
	}
}

static int
send_body (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, uint32_t req_id, ab_agent_source_fn source,
           void *ctx, ab_error_t *err)
{
	uint8_t *buf = xmalloc (AB_PROTO_DATA_CHUNK);
	int r = 0;

	for (;;) {
		ssize_t n;
		size_t want;
		if ((r = await_credit (c, ch, req_id, err)) < 0)
			break;
		want = ch->credit < AB_PROTO_DATA_CHUNK ? (size_t)ch->credit : AB_PROTO_DATA_CHUNK;
		n = source (ctx, buf, want, err);
		if (n < 0) {
			/* Cancel: the agent drops the temporary file and answers FAIL. */
			ab_error_t ignored = AB_ERROR_INIT;
			struct ab_msg_s reply;
			ab_ac_send (c, AB_MSG_RESET, ch->id, NULL, 0, &ignored);
			if (ab_ac_wait_reply (c, req_id, &reply, &ignored) == 0)
				ab_msg_free (&reply);
			r = -1;
			break;
		}
		if (n == 0) {
			r = ab_ac_send (c, AB_MSG_EOF, ch->id, NULL, 0, err);
			break;
		}
		if ((size_t)n > want) {
			r = ab_error (err, 0, AB_E_INTERNAL,
			              "write source returned more than asked");
			break;
		}
		ch->credit -= (uint64_t)n;
		if ((r = ab_ac_send (c, AB_MSG_DATA, ch->id, buf, (size_t)n, err)) < 0)
			break;
	}
	free (buf);
	return r;
}

int
ab_agent_file_write (ab_agent_conn_t *c, const char *path, uint32_t mode, ab_agent_source_fn source,
                     void *ctx, uint64_t *written, ab_error_t *err)
{
	return ab_agent_file_write_meta (c, path, mode, NULL, source, ctx, written, err);
}

int
ab_agent_file_write_meta (ab_agent_conn_t *c, const char *path, uint32_t mode, char *const *xattrs,
                          ab_agent_source_fn source, void *ctx, uint64_t *written, ab_error_t *err)
{
	struct ab_ac_chan_s *ch = ab_ac_chan_new (c);
	struct ab_msg_s m, reply;
	int r;

	if (written)
		*written = 0;
	path_msg (&m, AB_MSG_FILE_WRITE, path);
	ab_msg_set (&m, channel, AB_TAG_CHANNEL, ch->id);
	if (mode)
		ab_msg_set (&m, mode, AB_TAG_MODE, mode & 07777);
	m.xattrs = (char **)xattrs;
	ab_msg_set (&m, req_id, AB_TAG_REQ_ID, ab_ac_next_req (c));
	/* No wait for a go-ahead: the data follows the request at once, within
	 * the initial window; a refusal arrives as FAIL and stops it. */
	r = ab_ac_send_msg (c, 0, &m, err);
	if (r == 0)
		r = send_body (c, ch, m.req_id, source, ctx, err);
	if (r == 0 && (r = ab_ac_wait_reply (c, m.req_id, &reply, err)) == 0) {
		if (written)
			*written = reply.size;
		ab_msg_free (&reply);
	}
	ab_ac_chan_drop (c, ch);
	return r;
}

/* ---- one-shot calls --------------------------------------------------------------- */

int
ab_agent_file_stat_target (ab_agent_conn_t *c, const char *path, struct ab_agent_stat_s *out,
                           char **target, char ***xattrs, ab_error_t *err)
{
	struct ab_msg_s m, reply;

	if (target)
		*target = NULL;
	if (xattrs)
		*xattrs = NULL;
	path_msg (&m, AB_MSG_FILE_STAT, path);
	if (ab_ac_call (c, &m, &reply, err) < 0)
		return -1;
	stat_from (&reply, out);
	if (target) {
		*target = reply.to;
		reply.to = NULL;
	}
	if (xattrs) {
		*xattrs = reply.xattrs;
		reply.xattrs = NULL;
		reply.n_xattrs = 0;
	}
	ab_msg_free (&reply);
	return 0;
}

int
ab_agent_file_stat (ab_agent_conn_t *c, const char *path, struct ab_agent_stat_s *out,
                    ab_error_t *err)
{
	return ab_agent_file_stat_target (c, path, out, NULL, NULL, err);
}

struct dirents_s {
	struct ab_agent_dirent_s *v;
	size_t n;
};

/* Takes the names out of reply. */
static void
add_entries (void *ctx, struct ab_msg_s *reply)
{
	struct dirents_s *l = ctx;
	struct ab_agent_dirent_s **v = &l->v;
	size_t *n = &l->n;

	*v = xrealloc (*v, (*n + reply->n_entries + 1) * sizeof **v);
	for (size_t i = 0; i < reply->n_entries; i++) {
		struct ab_agent_dirent_s *d = &(*v)[(*n)++];
		stat_from (&reply->entries[i], &d->st);
		d->name = reply->entries[i].name;
		d->target = reply->entries[i].to;
		d->xattrs = reply->entries[i].xattrs;
		reply->entries[i].name = reply->entries[i].to = NULL;
		reply->entries[i].xattrs = NULL;
		reply->entries[i].n_xattrs = 0;
	}
}

int
ab_agent_file_list (ab_agent_conn_t *c, const char *path, struct ab_agent_dirent_s **out, size_t *n,
                    ab_error_t *err)
{
	struct ab_msg_s m;
	struct dirents_s l = { 0 };

	path_msg (&m, AB_MSG_FILE_LIST, path);
	if (ab_ac_call_all (c, &m, add_entries, &l, err) < 0) {
		ab_agent_dirents_free (l.v, l.n);
		*out = NULL;
		*n = 0;
		return -1;
	}
	*out = l.v;
	*n = l.n;
	return 0;
}

void
ab_agent_dirents_free (struct ab_agent_dirent_s *v, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		free (v[i].name);
		free (v[i].target);
		for (char **x = v[i].xattrs; x && *x; x++)
			free (*x);
		free (v[i].xattrs);
	}
	free (v);
}

int
ab_agent_file_mkdir (ab_agent_conn_t *c, const char *path, uint32_t mode, ab_error_t *err)
{
	struct ab_msg_s m;

	path_msg (&m, AB_MSG_FILE_MKDIR, path);
	if (mode)
		ab_msg_set (&m, mode, AB_TAG_MODE, mode & 07777);
	return call_simple (c, &m, err);
}

int
ab_agent_file_remove (ab_agent_conn_t *c, const char *path, bool recursive, ab_error_t *err)
{
	struct ab_msg_s m;

	path_msg (&m, AB_MSG_FILE_REMOVE, path);
	ab_msg_set (&m, recursive, AB_TAG_RECURSIVE, recursive);
	return call_simple (c, &m, err);
}

int
ab_agent_file_rename (ab_agent_conn_t *c, const char *from, const char *to, ab_error_t *err)
{
	struct ab_msg_s m;

	path_msg (&m, AB_MSG_FILE_RENAME, from);
	m.to = (char *)to;
	return call_simple (c, &m, err);
}
