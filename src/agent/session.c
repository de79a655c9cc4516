/* Sessions: one per connection accepted on the listening fd.  Frames come
 * in through a buffer that never holds more than one maximal frame; output
 * goes out through a queue that the session stops adding to (it stops
 * reading requests, channels stop sending) once AB_SESSION_OUT_HIGH bytes
 * wait, so a client that does not read costs a bounded amount of memory.
 * A malformed frame header ends the session (the stream cannot be
 * re-synchronised); a malformed request is answered with FAIL. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/service.h"
#include "base/fd.h"
#include "base/xalloc.h"

#define IN_MAX       (AB_PROTO_HEADER_SIZE + AB_PROTO_MAX_PAYLOAD)
#define READ_CHUNK   (64U * 1024)
#define MAX_SESSIONS 512

struct ab_session_s {
	struct ab_watch_s w;
	int fd;
	uint8_t *in;
	size_t in_len, in_cap;
	uint8_t *out;
	size_t out_off, out_len, out_cap; /* bytes [out_off, out_off + out_len) wait */
	bool hello, dead, dirty;
	struct ab_channel_s *channels;
	struct ab_session_s *next;
};

static struct ab_session_s *sessions;
static size_t n_sessions;

static const ab_request_fn handlers[] = {
	[AB_MSG_CONFIG] = ab_req_config,
	[AB_MSG_EGRESS_LISTEN] = ab_req_egress_listen,
	[AB_MSG_PROC_START] = ab_req_proc_start,
	[AB_MSG_PROC_SIGNAL] = ab_req_proc_signal,
	[AB_MSG_PROC_RESIZE] = ab_req_proc_resize,
	[AB_MSG_PROC_LIST] = ab_req_proc_list,
	[AB_MSG_PROC_ATTACH] = ab_req_proc_attach,
	[AB_MSG_PROC_STDIN] = ab_req_proc_stdin,
	[AB_MSG_PROC_CLOSE_STDIN] = ab_req_proc_close_stdin,
	[AB_MSG_FILE_READ] = ab_req_file_read,
	[AB_MSG_FILE_WRITE] = ab_req_file_write,
	[AB_MSG_FILE_LIST] = ab_req_file_list,
	[AB_MSG_FILE_STAT] = ab_req_file_stat,
	[AB_MSG_FILE_MKDIR] = ab_req_file_mkdir,
	[AB_MSG_FILE_REMOVE] = ab_req_file_remove,
	[AB_MSG_FILE_RENAME] = ab_req_file_rename,
	[AB_MSG_FILE_WATCH] = ab_req_file_watch,
	[AB_MSG_PORT_OPEN] = ab_req_port_open,
	[AB_MSG_EGRESS_OPEN] = ab_req_egress_open,
	[AB_MSG_SHUTDOWN] = ab_req_shutdown,
	[AB_MSG_PING] = ab_req_ping,
};

static bool consume (struct ab_session_s *s);
static void on_session (struct ab_watch_s *w, uint32_t events);

/* ---- output -------------------------------------------------------------- */

static void
out_reserve (struct ab_session_s *s, size_t n)
{
	if (s->out_off + s->out_len + n <= s->out_cap)
		return;
	if (s->out_off) {
		memmove (s->out, s->out + s->out_off, s->out_len);
		s->out_off = 0;
	}
	if (s->out_len + n > s->out_cap) {
		s->out_cap = (s->out_len + n) * 2;
		s->out = xrealloc (s->out, s->out_cap);
	}
}

static void
mark_dirty (struct ab_session_s *s)
{
	s->dirty = true;
}

void
ab_session_send (struct ab_session_s *s, uint16_t type, uint32_t channel, const void *p, size_t len)
{
	if (s->dead)
		return;
	out_reserve (s, AB_PROTO_HEADER_SIZE + len);
	ab_proto_encode_header (s->out + s->out_off + s->out_len, type, channel, (uint32_t)len);
	if (len)
		memcpy (s->out + s->out_off + s->out_len + AB_PROTO_HEADER_SIZE, p, len);
	s->out_len += AB_PROTO_HEADER_SIZE + len;
	mark_dirty (s);
}

void
ab_session_send_msg (struct ab_session_s *s, uint32_t channel, const struct ab_msg_s *m)
{
	struct ab_tlv_writer_s w = { 0 };

	ab_msg_encode (&w, m);
	ab_session_send (s, m->type, channel, w.buf, w.len);
	ab_tlv_writer_free (&w);
}

void
ab_session_ok (struct ab_session_s *s, uint32_t req_id, struct ab_msg_s *results)
{
	struct ab_msg_s m;

	if (!results) {
		ab_msg_init (&m, AB_MSG_OK);
		results = &m;
	}
	results->type = AB_MSG_OK;
	ab_msg_set (results, req_id, AB_TAG_REQ_ID, req_id);
	ab_session_send_msg (s, 0, results);
}

void
ab_session_fail (struct ab_session_s *s, uint32_t req_id, const ab_error_t *e)
{
	struct ab_msg_s m;

	ab_msg_init (&m, AB_MSG_FAIL);
	ab_msg_set (&m, req_id, AB_TAG_REQ_ID, req_id);
	ab_msg_set (&m, code, AB_TAG_CODE, ab_wire_code_from_kind (e->kind));
	if (e->errnum > 0)
		ab_msg_set (&m, errnum, AB_TAG_ERRNO, (uint32_t)e->errnum);
	m.message = (char *)e->msg;
	ab_session_send_msg (s, 0, &m);
}

bool
ab_session_can_send (const struct ab_session_s *s)
{
	return !s->dead && s->out_len < AB_SESSION_OUT_HIGH;
}

bool
ab_session_out_empty (const struct ab_session_s *s)
{
	return s->out_len == 0;
}

int
ab_session_send_fd (struct ab_session_s *s, uint16_t type, const void *p, size_t len, int fd)
{
	uint8_t buf[AB_PROTO_HEADER_SIZE + AB_SESSION_FD_PAYLOAD_MAX];

	if (s->dead || s->out_len)
		return 0;
	if (len > AB_SESSION_FD_PAYLOAD_MAX)
		return -1;
	ab_proto_encode_header (buf, type, 0, (uint32_t)len);
	if (len)
		memcpy (buf + AB_PROTO_HEADER_SIZE, p, len);
	/* A few dozen bytes: a unix stream socket with room takes them whole. */
	if (ab_send_with_fds (s->fd, buf, AB_PROTO_HEADER_SIZE + len, &fd, 1) < 0)
		return errno == EAGAIN ? 0 : -1;
	return 1;
}

/* Write what is queued; false when the peer is gone. */
static bool
write_out (struct ab_session_s *s)
{
	while (s->out_len) {
		ssize_t n =
		        send (s->fd, s->out + s->out_off, s->out_len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		s->out_off += (size_t)n;
		s->out_len -= (size_t)n;
	}
	s->out_off = 0;
	if (s->out_cap > 4 * READ_CHUNK) {
		free (s->out);
		s->out = NULL;
		s->out_cap = 0;
	}
	return true;
}

static void
update_interest (struct ab_session_s *s)
{
	uint32_t ev = 0;
	if (s->out_len < AB_SESSION_OUT_HIGH)
		ev |= EPOLLIN;
	if (s->out_len)
		ev |= EPOLLOUT;
	ab_loop_set (&s->w, ev);
}

static void
flush_one (struct ab_session_s *s)
{
	s->dirty = false;
	if (!write_out (s)) {
		ab_session_close (s);
		return;
	}
	/* Room again: requests left buffered by a pause, then the channels
	 * send what credit allows, once per batch. */
	if (s->out_len < AB_SESSION_OUT_HIGH / 2) {
		if (s->in_len && !consume (s)) {
			ab_session_close (s);
			return;
		}
		ab_channel_pump_all (s);
		if (!s->dead && !write_out (s)) {
			ab_session_close (s);
			return;
		}
	}
	if (!s->dead)
		update_interest (s);
}

/* After every batch of events: write what the batch queued.  Egress goes
 * first (stream-mode announcements are queued frames) and last (an fd is
 * passed only on an empty output queue). */
void
ab_session_flush_dirty (void)
{
	ab_egress_kick ();
	for (int pass = 0; pass < 2; pass++)
		for (struct ab_session_s *s = sessions, *next; s; s = next) {
			next = s->next;
			if (s->dirty && !s->dead)
				flush_one (s);
		}
	ab_egress_kick ();
}

void
ab_session_flush_all_blocking (void)
{
	for (struct ab_session_s *s = sessions; s; s = s->next) {
		struct timeval tv = { .tv_sec = 1 };
		if (s->dead || !s->out_len)
			continue;
		/* A client that does not read cannot hold the shutdown up. */
		setsockopt (s->fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof tv);
		ab_set_nonblock (s->fd, 0);
		ab_write_all (s->fd, s->out + s->out_off, s->out_len);
		s->out_len = 0;
	}
}

/* ---- lifecycle ------------------------------------------------------------ */

struct ab_session_s *
ab_session_first (void)
{
	return sessions;
}

struct ab_channel_s **
ab_session_channel_list (struct ab_session_s *s)
{
	return &s->channels;
}

struct ab_channel_s *
ab_session_channel (struct ab_session_s *s, uint32_t id)
{
	for (struct ab_channel_s *c = s->channels; c; c = c->next)
		if (c->id == id && !c->closed)
			return c;
	return NULL;
}

void
ab_session_close (struct ab_session_s *s)
{
	struct ab_session_s **pp;

	if (s->dead)
		return;
	s->dead = true;
	ab_loop_del (&s->w);
	ab_channel_destroy_all (s);
	ab_proc_forget_session (s);
	ab_egress_forget_session (s);
	ab_service_forget_session (s);
	close (s->fd);
	for (pp = &sessions; *pp; pp = &(*pp)->next)
		if (*pp == s) {
			*pp = s->next;
			break;
		}
	n_sessions--;
	free (s->in);
	free (s->out);
	s->in = s->out = NULL;
	ab_loop_defer_free (s);
}

static void
send_hello (struct ab_session_s *s)
{
	struct ab_msg_s m;

	ab_msg_init (&m, AB_MSG_HELLO);
	ab_msg_set (&m, version, AB_TAG_VERSION, AB_PROTO_VERSION_2);
	ab_msg_set (&m, features, AB_TAG_FEATURES, 0x3fU); /* bit 5: FILE_WATCH */
	ab_msg_set (&m, landlock_abi, AB_TAG_LANDLOCK_ABI, (uint32_t)ab_landlock_abi ());
	ab_msg_set (&m, configured, AB_TAG_CONFIGURED, ab_config.configured);
	ab_session_send_msg (s, 0, &m);
}

void
ab_session_accept (int listen_fd)
{
	for (;;) {
		int fd = accept4 (listen_fd, NULL, NULL, SOCK_CLOEXEC | SOCK_NONBLOCK);
		struct ab_session_s *s;

		if (fd < 0)
			return; /* EAGAIN, or out of fds: the backlog keeps them */
		if (n_sessions >= MAX_SESSIONS || !ab_session_peer_allowed (fd)) {
			close (fd);
			continue;
		}
		s = xcalloc (1, sizeof *s);
		s->fd = fd;
		s->w.fd = -1;
		if (ab_loop_add (&s->w, fd, EPOLLIN, on_session, s) < 0) {
			close (fd);
			free (s);
			continue;
		}
		s->next = sessions;
		sessions = s;
		n_sessions++;
		send_hello (s);
	}
}

/* ---- input --------------------------------------------------------------- */

static bool
on_hello (struct ab_session_s *s, const struct ab_frame_s *f)
{
	ab_error_t err = AB_ERROR_INIT;
	struct ab_msg_s m;
	int r;

	if (f->type != AB_MSG_HELLO || f->channel != 0) {
		ab_error (&err, 0, AB_E_INVALID, "expected HELLO, got message type %u", f->type);
		ab_session_fail (s, 0, &err);
		return false;
	}
	r = ab_msg_decode (f->type, f->payload, f->length, &m, &err);
	if (r == 0 && m.version != AB_PROTO_VERSION_2)
		r = ab_error (&err, 0, AB_E_INVALID, "host speaks protocol %u, the agent %u",
		              m.version, AB_PROTO_VERSION_2);
	ab_msg_free (&m);
	if (r < 0) {
		ab_session_fail (s, 0, &err);
		return false;
	}
	s->hello = true;
	return true;
}

/* The REQ_ID of a request that did not decode, when it can be found. */
static uint32_t
salvage_req_id (const struct ab_frame_s *f)
{
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	ab_error_t err = AB_ERROR_INIT;
	uint32_t id = 0;

	ab_tlv_reader_init (&r, f->payload, f->length);
	while (ab_tlv_next (&r, &t, &err) > 0)
		if (t.tag == AB_TAG_REQ_ID && ab_tlv_u32 (&t, &id, &err) == 0)
			break;
	return id;
}

static void
on_request (struct ab_session_s *s, const struct ab_frame_s *f)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_request_fn fn = f->type < sizeof handlers / sizeof *handlers ? handlers[f->type] : NULL;
	struct ab_msg_s m;

	if (!fn) {
		ab_error (&err, 0, AB_E_INVALID, "unknown request type %u", f->type);
		ab_session_fail (s, salvage_req_id (f), &err);
		return;
	}
	if (ab_msg_decode (f->type, f->payload, f->length, &m, &err) < 0) {
		ab_session_fail (s, salvage_req_id (f), &err);
		ab_msg_free (&m);
		return;
	}
	fn (s, &m);
	ab_msg_free (&m);
}

static bool
dispatch (struct ab_session_s *s, const struct ab_frame_s *f)
{
	if (!s->hello)
		return on_hello (s, f);
	if (f->channel != 0)
		return ab_channel_frame (s, f);
	on_request (s, f);
	return true;
}

/* Handle every whole frame in the buffer; false = end the session. */
static bool
consume (struct ab_session_s *s)
{
	size_t off = 0;
	bool ok = true;

	while (ok && !s->dead) {
		ab_error_t err = AB_ERROR_INIT;
		struct ab_frame_s f;
		size_t flen;
		int k = ab_frame_parse (s->in + off, s->in_len - off, &f, &flen, &err);
		if (k < 0) {
			ab_session_fail (s, 0, &err);
			ok = false;
		}
		if (k <= 0)
			break;
		ok = dispatch (s, &f);
		off += flen;
		/* Stop taking requests while the answers pile up (the rest stays
		 * buffered, bounded by IN_MAX). */
		if (s->out_len >= AB_SESSION_OUT_HIGH)
			break;
	}
	if (s->dead)
		return false;
	memmove (s->in, s->in + off, s->in_len - off);
	s->in_len -= off;
	/* An idle session keeps no large buffer (one big frame grew it). */
	if (s->in_len == 0 && s->in_cap > 2 * READ_CHUNK) {
		free (s->in);
		s->in = NULL;
		s->in_cap = 0;
	}
	return ok;
}

static bool
read_in (struct ab_session_s *s)
{
	for (;;) {
		size_t want = IN_MAX - s->in_len;
		ssize_t n;
		if (want == 0)
			return true;
		if (want > READ_CHUNK)
			want = READ_CHUNK;
		if (s->in_cap < s->in_len + want) {
			s->in_cap = s->in_len + want;
			s->in = xrealloc (s->in, s->in_cap);
		}
		n = read (s->fd, s->in + s->in_len, want);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno == EAGAIN)
			return true;
		if (n <= 0)
			return false;
		s->in_len += (size_t)n;
		if (!consume (s))
			return false;
		if (s->out_len >= AB_SESSION_OUT_HIGH)
			return true;
	}
}

static void
on_session (struct ab_watch_s *w, uint32_t events)
{
	struct ab_session_s *s = w->ctx;

	if (events & EPOLLOUT)
		mark_dirty (s);
	if ((events & (EPOLLIN | EPOLLHUP | EPOLLERR)) && s->out_len < AB_SESSION_OUT_HIGH) {
		/* Frames left from a pause first. */
		if (!consume (s) || !read_in (s)) {
			if (!s->dead)
				write_out (s); /* the last answer (a FAIL) is worth a try */
			ab_session_close (s);
			return;
		}
	}
	if (s->dirty)
		return;
	update_interest (s);
}
