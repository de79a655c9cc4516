/* The blocking agent client: the connection, the handshake, frames in and
 * out, request/answer matching, and the simple requests.  Frames that
 * arrive while a call waits for its answer are queued by channel (bounded:
 * the agent sends at most the window we granted per channel). */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"
#include "session/agent-client-internal.h"

#define RECV_CHUNK  (256U * 1024)
#define IN_MAX      (AB_PROTO_HEADER_SIZE + AB_PROTO_MAX_PAYLOAD + RECV_CHUNK)
#define GRANT_BATCH (64U * 1024)

int
ab_ac_remaining (uint64_t deadline, int timeout_ms)
{
	uint64_t now;

	if (timeout_ms < 0)
		return -1;
	now = ab_mono_ms ();
	return now >= deadline ? 0 : (int)(deadline - now);
}

int
ab_ac_chan_next (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, ab_ac_take_fn take, void *ev,
                 int timeout_ms, ab_error_t *err)
{
	uint64_t deadline = ab_mono_ms () + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);

	for (;;) {
		struct ab_ac_frame_s *f = ab_ac_queue_pop (&ch->q);
		int k;
		if (f) {
			if ((k = take (c, ch, f, ev, err)) != 0)
				return k;
			continue;
		}
		/* About to wait: every consumed byte goes back as credit first. */
		if (ab_ac_consumed (c, ch, 0, true, err) < 0)
			return -1;
		k = ab_ac_pump (c, ab_ac_remaining (deadline, timeout_ms), err);
		if (k <= 0)
			return k;
	}
}

int
ab_ac_broken (ab_agent_conn_t *c, ab_error_t *err)
{
	if (!c->broken && err->kind != AB_E_NONE)
		c->why_broken = *err;
	c->broken = true;
	if (err->kind == AB_E_NONE)
		*err = c->why_broken;
	if (err->kind == AB_E_NONE)
		ab_error (err, 0, AB_E_SYSTEM, "the agent connection is broken");
	return -1;
}

/* ---- queues and channels ----------------------------------------------------- */

static void
queue_push (struct ab_ac_queue_s *q, struct ab_ac_frame_s *f)
{
	if (!q->tail)
		q->tail = &q->head;
	*q->tail = f;
	q->tail = &f->next;
}

struct ab_ac_frame_s *
ab_ac_queue_pop (struct ab_ac_queue_s *q)
{
	struct ab_ac_frame_s *f = q->head;

	if (!f)
		return NULL;
	q->head = f->next;
	if (!q->head)
		q->tail = &q->head;
	f->next = NULL;
	return f;
}

void
ab_ac_frame_free (struct ab_ac_frame_s *f)
{
	if (!f)
		return;
	free (f->payload);
	free (f);
}

static void
queue_clear (struct ab_ac_queue_s *q)
{
	struct ab_ac_frame_s *f;
	while ((f = ab_ac_queue_pop (q)))
		ab_ac_frame_free (f);
}

struct ab_ac_chan_s *
ab_ac_chan_new (ab_agent_conn_t *c)
{
	struct ab_ac_chan_s *ch = xcalloc (1, sizeof *ch);

	/* Never reuse an id on one connection: late frames of an old channel
	 * must not land in a new one. */
	if (++c->next_chan == 0)
		c->next_chan = 1;
	ch->id = c->next_chan;
	ch->q.tail = &ch->q.head;
	ch->credit = AB_PROTO_WINDOW;
	ch->next = c->chans;
	c->chans = ch;
	return ch;
}

struct ab_ac_chan_s *
ab_ac_chan_find (ab_agent_conn_t *c, uint32_t id)
{
	for (struct ab_ac_chan_s *ch = c->chans; ch; ch = ch->next)
		if (ch->id == id)
			return ch;
	return NULL;
}

void
ab_ac_chan_drop (ab_agent_conn_t *c, struct ab_ac_chan_s *ch)
{
	for (struct ab_ac_chan_s **pp = &c->chans; *pp; pp = &(*pp)->next)
		if (*pp == ch) {
			*pp = ch->next;
			break;
		}
	queue_clear (&ch->q);
	free (ch);
}

/* ---- receiving -------------------------------------------------------------- */

static void
take_fds (ab_agent_conn_t *c, const int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (c->n_fds < AB_AC_MAX_FDS)
			c->fds[c->n_fds++] = fds[i];
		else
			close (fds[i]);
	}
}

/* One recvmsg into the buffer; 0 on EAGAIN, -1 on EOF or error. */
static int
recv_some (ab_agent_conn_t *c, ab_error_t *err)
{
	int fds[4];
	size_t n_fds = 0;
	ssize_t n;

	if (c->in_len + RECV_CHUNK > c->in_cap) {
		c->in_cap = c->in_len + RECV_CHUNK;
		c->in = xrealloc (c->in, c->in_cap);
	}
	n = ab_recv_with_fds (c->fd, c->in + c->in_len, RECV_CHUNK, fds, 4, &n_fds);
	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return 0;
	take_fds (c, fds, n_fds);
	if (n < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "receive from the agent");
		return ab_ac_broken (c, err);
	}
	if (n == 0) {
		ab_error (err, 0, AB_E_SYSTEM, "the agent closed the connection");
		return ab_ac_broken (c, err);
	}
	c->in_len += (size_t)n;
	return 1;
}

static void
on_window (struct ab_ac_chan_s *ch, const struct ab_ac_frame_s *f)
{
	ab_error_t ignored = AB_ERROR_INIT;
	struct ab_msg_s m;

	if (ab_msg_decode (f->type, f->payload, f->len, &m, &ignored) == 0)
		ch->credit += m.bytes;
	ab_msg_free (&m);
}

/* The listener an EGRESS_CONN came in on: its TAG_PORT, 0 from an agent
 * that sends none (one listener). */
static uint16_t
conn_port (const struct ab_ac_frame_s *f)
{
	ab_error_t ignored = AB_ERROR_INIT;
	struct ab_tlv_reader_s rd;
	struct ab_tlv_s t;
	uint32_t v;

	ab_tlv_reader_init (&rd, f->payload, f->len);
	while (ab_tlv_next (&rd, &t, &ignored) > 0)
		if (t.tag == AB_TAG_PORT && ab_tlv_u32 (&t, &v, &ignored) == 0 && v <= 65535)
			return (uint16_t)v;
	return 0;
}

static void
route (ab_agent_conn_t *c, struct ab_ac_frame_s *f)
{
	struct ab_ac_chan_s *ch;

	if (f->channel != 0) {
		ch = ab_ac_chan_find (c, f->channel);
		if (ch && f->type == AB_MSG_WINDOW)
			on_window (ch, f);
		else if (ch) {
			queue_push (&ch->q, f);
			return;
		}
	} else if (f->type == AB_MSG_OK || f->type == AB_MSG_FAIL || f->type == AB_MSG_HELLO) {
		queue_push (&c->replies, f);
		return;
	} else if (f->type == AB_MSG_EGRESS_READY && c->n_ready < AB_AC_MAX_READY) {
		queue_push (&c->ready, f);
		c->n_ready++;
		return;
	} else if (f->type == AB_MSG_EGRESS_CONN && c->n_fds > 0) {
		int fd = c->fds[0];
		memmove (c->fds, c->fds + 1, (--c->n_fds) * sizeof *c->fds);
		if (c->n_egress < AB_AC_MAX_FDS) {
			c->egress_port[c->n_egress] = conn_port (f);
			c->egress[c->n_egress++] = fd;
		} else
			close (fd);
	}
	ab_ac_frame_free (f);
}

/* Route every whole frame in the buffer; -1 on a malformed header. */
static int
route_buffered (ab_agent_conn_t *c, bool *routed, ab_error_t *err)
{
	size_t off = 0;

	for (;;) {
		struct ab_frame_s fr;
		struct ab_ac_frame_s *f;
		size_t flen;
		int k = ab_frame_parse (c->in + off, c->in_len - off, &fr, &flen, err);
		if (k < 0)
			return ab_ac_broken (c, err);
		if (k == 0)
			break;
		f = xcalloc (1, sizeof *f);
		f->type = fr.type;
		f->channel = fr.channel;
		f->len = fr.length;
		f->payload = xmalloc (fr.length ? fr.length : 1);
		memcpy (f->payload, fr.payload, fr.length);
		off += flen;
		route (c, f);
		*routed = true;
	}
	memmove (c->in, c->in + off, c->in_len - off);
	c->in_len -= off;
	return 0;
}

int
ab_ac_pump (ab_agent_conn_t *c, int timeout_ms, ab_error_t *err)
{
	uint64_t deadline = ab_mono_ms () + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);
	ab_error_t e = AB_ERROR_INIT;
	bool routed = false;

	if (c->broken)
		return ab_ac_broken (c, err);
	for (;;) {
		struct pollfd p = { .fd = c->fd, .events = POLLIN };
		int wait = routed ? 0 : ab_ac_remaining (deadline, timeout_ms);
		int n = poll (&p, 1, wait);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ab_error (err, errno, AB_E_SYSTEM, "poll");
			return ab_ac_broken (c, err);
		}
		if (n == 0)
			return routed ? 1 : 0;
		/* Frames already routed are delivered first; the broken
		 * connection shows on the next call. */
		if (recv_some (c, &e) < 0 || route_buffered (c, &routed, &e) < 0) {
			if (routed)
				return 1;
			*err = e;
			return -1;
		}
	}
}

/* ---- sending ----------------------------------------------------------------- */

int
ab_ac_send (ab_agent_conn_t *c, uint16_t type, uint32_t channel, const void *p, size_t len,
            ab_error_t *err)
{
	uint8_t hdr[AB_PROTO_HEADER_SIZE];
	struct iovec iov[2] = { { hdr, sizeof hdr }, { (void *)p, len } };
	size_t total = sizeof hdr + len, done = 0;

	if (c->broken)
		return ab_ac_broken (c, err);
	if (len > AB_PROTO_MAX_PAYLOAD)
		return ab_error (err, 0, AB_E_LIMIT, "message of %zu bytes exceeds the frame limit",
		                 len);
	ab_proto_encode_header (hdr, type, channel, (uint32_t)len);
	while (done < total) {
		struct pollfd pf = { .fd = c->fd, .events = POLLOUT | POLLIN };
		struct msghdr mh = { .msg_iov = iov, .msg_iovlen = 2 };
		ssize_t n = sendmsg (c->fd, &mh, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n >= 0) {
			done += (size_t)n;
			for (int i = 0; i < 2 && n > 0; i++) {
				size_t k = (size_t)n < iov[i].iov_len ? (size_t)n : iov[i].iov_len;
				iov[i].iov_base = (uint8_t *)iov[i].iov_base + k;
				iov[i].iov_len -= k;
				n -= (ssize_t)k;
			}
			continue;
		}
		if (errno == EINTR)
			continue;
		if (errno != EAGAIN) {
			ab_error (err, errno, AB_E_SYSTEM, "send to the agent");
			return ab_ac_broken (c, err);
		}
		/* The agent may be waiting for us to read before it reads again. */
		if (poll (&pf, 1, -1) > 0 && (pf.revents & POLLIN) && ab_ac_pump (c, 0, err) < 0)
			return -1;
	}
	return 0;
}

int
ab_ac_send_msg (ab_agent_conn_t *c, uint32_t channel, const struct ab_msg_s *m, ab_error_t *err)
{
	struct ab_tlv_writer_s w = { 0 };
	int r;

	ab_msg_encode (&w, m);
	r = ab_ac_send (c, m->type, channel, w.buf, w.len, err);
	ab_tlv_writer_free (&w);
	return r;
}

/* ---- requests and answers ----------------------------------------------------- */

uint32_t
ab_ac_next_req (ab_agent_conn_t *c)
{
	if (++c->next_req == 0)
		c->next_req = 1;
	return c->next_req;
}

int
ab_ac_error_from (const struct ab_msg_s *m, ab_error_t *err)
{
	ab_error (err, 0, ab_wire_code_to_kind (m->code), "%s",
	          m->message ? m->message : "the agent refused without a reason");
	err->errnum = (int)m->errnum;
	return -1;
}

static uint32_t
peek_req_id (const struct ab_ac_frame_s *f)
{
	struct ab_tlv_reader_s r;
	struct ab_tlv_s t;
	ab_error_t e = AB_ERROR_INIT;
	uint32_t id = 0;

	ab_tlv_reader_init (&r, f->payload, f->len);
	while (ab_tlv_next (&r, &t, &e) > 0)
		if (t.tag == AB_TAG_REQ_ID && ab_tlv_u32 (&t, &id, &e) == 0)
			break;
	return id;
}

int
ab_ac_poll_reply (ab_agent_conn_t *c, uint32_t req_id, struct ab_msg_s *reply, int *rc,
                  ab_error_t *err)
{
	for (struct ab_ac_frame_s **pp = &c->replies.head; *pp; pp = &(*pp)->next) {
		struct ab_ac_frame_s *f = *pp;
		if (peek_req_id (f) != req_id)
			continue;
		*pp = f->next;
		if (!*pp)
			c->replies.tail = pp;
		*rc = ab_msg_decode (f->type, f->payload, f->len, reply, err);
		if (*rc < 0)
			ab_ac_broken (c, err);
		else if (f->type == AB_MSG_FAIL)
			*rc = ab_ac_error_from (reply, err);
		if (*rc < 0)
			ab_msg_free (reply);
		ab_ac_frame_free (f);
		return 1;
	}
	return 0;
}

int
ab_ac_call_all (ab_agent_conn_t *c, struct ab_msg_s *m,
                void (*each) (void *ctx, struct ab_msg_s *reply), void *ctx, ab_error_t *err)
{
	struct ab_msg_s reply;
	bool more;

	if (ab_ac_call (c, m, &reply, err) < 0)
		return -1;
	for (;;) {
		each (ctx, &reply);
		more = reply.more;
		ab_msg_free (&reply);
		if (!more)
			return 0;
		if (ab_ac_wait_reply (c, m->req_id, &reply, err) < 0)
			return -1;
	}
}

int
ab_ac_wait_reply (ab_agent_conn_t *c, uint32_t req_id, struct ab_msg_s *reply, ab_error_t *err)
{
	uint64_t deadline = ab_mono_ms () + (uint64_t)c->timeout_ms;
	int rc = 0;

	for (;;) {
		int k;
		if (ab_ac_poll_reply (c, req_id, reply, &rc, err))
			return rc;
		k = ab_ac_pump (c, c->timeout_ms ? ab_ac_remaining (deadline, c->timeout_ms) : -1,
		                err);
		if (k < 0)
			return -1;
		if (k == 0) {
			ab_error (err, ETIMEDOUT, AB_E_SYSTEM, "no answer from the agent");
			return ab_ac_broken (c, err);
		}
	}
}

int
ab_ac_call (ab_agent_conn_t *c, struct ab_msg_s *m, struct ab_msg_s *reply, ab_error_t *err)
{
	ab_msg_set (m, req_id, AB_TAG_REQ_ID, ab_ac_next_req (c));
	if (ab_ac_send_msg (c, 0, m, err) < 0)
		return -1;
	return ab_ac_wait_reply (c, m->req_id, reply, err);
}

/* A request whose OK carries nothing we need. */
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
ab_ac_consumed (ab_agent_conn_t *c, struct ab_ac_chan_s *ch, size_t n, bool flush, ab_error_t *err)
{
	struct ab_msg_s m;

	ch->to_grant += n;
	if (ch->to_grant == 0 || (!flush && ch->to_grant < GRANT_BATCH))
		return 0;
	ab_msg_init (&m, AB_MSG_WINDOW);
	ab_msg_set (&m, bytes, AB_TAG_BYTES, (uint32_t)ch->to_grant);
	ch->to_grant = 0;
	return ab_ac_send_msg (c, ch->id, &m, err);
}

/* ---- connection --------------------------------------------------------------- */

static int
check_hello (ab_agent_conn_t *c, const struct ab_ac_frame_s *f, ab_error_t *err)
{
	struct ab_msg_s m;
	int r;

	if (f->type != AB_MSG_HELLO && f->type != AB_MSG_FAIL)
		return ab_error (err, 0, AB_E_SYSTEM, "the agent sent message type %u before HELLO",
		                 f->type);
	if (ab_msg_decode (f->type, f->payload, f->len, &m, err) < 0)
		r = -1;
	else if (f->type == AB_MSG_FAIL)
		r = ab_ac_error_from (&m, err);
	else if (m.version != AB_PROTO_VERSION_2)
		r = ab_error (err, 0, AB_E_SYSTEM, "the agent speaks protocol %u, we speak %u",
		              m.version, AB_PROTO_VERSION_2);
	else {
		c->info.version = m.version;
		c->info.features = m.features;
		c->info.landlock_abi = (int)m.landlock_abi;
		c->info.configured = m.configured;
		r = 0;
	}
	ab_msg_free (&m);
	return r;
}

/* HELLO both ways; ours goes out without waiting for the agent's, so the
 * handshake costs one round trip. */
static int
handshake (ab_agent_conn_t *c, ab_error_t *err)
{
	int timeout = c->timeout_ms ? c->timeout_ms : 10000;
	uint64_t deadline = ab_mono_ms () + (uint64_t)timeout;
	struct ab_ac_frame_s *f;
	struct ab_msg_s m;
	int r;

	ab_msg_init (&m, AB_MSG_HELLO);
	ab_msg_set (&m, version, AB_TAG_VERSION, AB_PROTO_VERSION_2);
	if (ab_ac_send_msg (c, 0, &m, err) < 0)
		return -1;
	while (!c->replies.head) {
		int k = ab_ac_pump (c, ab_ac_remaining (deadline, timeout), err);
		if (k < 0)
			return -1;
		if (k == 0)
			return ab_error (err, ETIMEDOUT, AB_E_SYSTEM, "no HELLO from the agent");
	}
	f = ab_ac_queue_pop (&c->replies);
	r = check_hello (c, f, err);
	ab_ac_frame_free (f);
	return r < 0 ? ab_ac_broken (c, err) : 0;
}

ab_agent_conn_t *
ab_agent_connect_fd (int fd, ab_error_t *err)
{
	ab_agent_conn_t *c = xcalloc (1, sizeof *c);

	c->fd = fd;
	c->replies.tail = &c->replies.head;
	ab_set_cloexec (fd, 1);
	ab_set_nonblock (fd, 1);
	if (handshake (c, err) < 0) {
		ab_agent_close (c);
		return NULL;
	}
	return c;
}

ab_agent_conn_t *
ab_agent_connect (const char *socket_path, ab_error_t *err)
{
	int fd = ab_unix_connect (socket_path, err);

	if (fd < 0) {
		if (err->kind != AB_E_INVALID)
			ab_error_wrap (err, "the agent");
		return NULL;
	}
	return ab_agent_connect_fd (fd, err);
}

void
ab_agent_close (ab_agent_conn_t *c)
{
	if (!c)
		return;
	while (c->chans)
		ab_ac_chan_drop (c, c->chans);
	queue_clear (&c->replies);
	queue_clear (&c->ready);
	for (size_t i = 0; i < c->n_fds; i++)
		close (c->fds[i]);
	for (size_t i = 0; i < c->n_egress; i++)
		close (c->egress[i]);
	if (c->fd >= 0)
		close (c->fd);
	free (c->in);
	free (c->event);
	free (c);
}

bool
ab_agent_idle (const ab_agent_conn_t *c)
{
	struct pollfd p = { .fd = c->fd, .events = POLLIN };

	if (c->broken || c->chans || c->replies.head || c->ready.head || c->n_fds || c->n_egress
	    || c->in_len)
		return false;
	return poll (&p, 1, 0) == 0;
}

const struct ab_agent_info_s *
ab_agent_info (const ab_agent_conn_t *c)
{
	return &c->info;
}

void
ab_agent_set_timeout (ab_agent_conn_t *c, int timeout_ms)
{
	c->timeout_ms = timeout_ms > 0 ? timeout_ms : 0;
}

/* ---- simple requests ------------------------------------------------------------ */

int
ab_agent_configure (ab_agent_conn_t *c, const struct ab_agent_config_s *cfg, ab_error_t *err)
{
	struct ab_msg_s m;

	ab_msg_init (&m, AB_MSG_CONFIG);
	m.roots = (char **)cfg->file_roots;
	m.rw_paths = (char **)cfg->rw_paths;
	ab_msg_set (&m, nofile, AB_TAG_NOFILE, cfg->nofile);
	ab_msg_set (&m, uid, AB_TAG_UID, cfg->file_uid);
	ab_msg_set (&m, gid, AB_TAG_GID, cfg->file_gid);
	if (call_simple (c, &m, err) < 0)
		return -1;
	c->info.configured = true;
	return 0;
}

int
ab_agent_ping (ab_agent_conn_t *c, ab_error_t *err)
{
	struct ab_msg_s m;
	ab_msg_init (&m, AB_MSG_PING);
	return call_simple (c, &m, err);
}

int
ab_agent_shutdown (ab_agent_conn_t *c, uint64_t grace_ms, ab_error_t *err)
{
	struct ab_msg_s m;
	ab_msg_init (&m, AB_MSG_SHUTDOWN);
	if (grace_ms)
		ab_msg_set (&m, grace_ms, AB_TAG_GRACE_MS, grace_ms);
	return call_simple (c, &m, err);
}

int
ab_agent_egress_listen (ab_agent_conn_t *c, uint16_t port, ab_error_t *err)
{
	struct ab_msg_s m;
	ab_msg_init (&m, AB_MSG_EGRESS_LISTEN);
	ab_msg_set (&m, port, AB_TAG_PORT, port);
	return call_simple (c, &m, err);
}

int
ab_agent_egress_next (ab_agent_conn_t *c, int *fd, int timeout_ms, ab_error_t *err)
{
	uint16_t port;
	return ab_agent_egress_next_port (c, fd, &port, timeout_ms, err);
}

int
ab_agent_egress_next_port (ab_agent_conn_t *c, int *fd, uint16_t *port, int timeout_ms,
                           ab_error_t *err)
{
	uint64_t deadline = ab_mono_ms () + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0);

	for (;;) {
		int k;
		if (c->n_egress) {
			*fd = c->egress[0];
			*port = c->egress_port[0];
			c->n_egress--;
			memmove (c->egress, c->egress + 1, c->n_egress * sizeof *c->egress);
			memmove (c->egress_port, c->egress_port + 1,
			         c->n_egress * sizeof *c->egress_port);
			return 1;
		}
		k = ab_ac_pump (c, ab_ac_remaining (deadline, timeout_ms), err);
		if (k <= 0)
			return k;
	}
}
