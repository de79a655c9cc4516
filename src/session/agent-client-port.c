/* Port streams: a channel on a connection of its own (PORT_OPEN, or
 * EGRESS_OPEN claiming an egress connection the agent announced), then a
 * small detached thread relays between the channel and one end of a
 * socketpair the caller holds.  Bytes from the agent are taken off the
 * channel (and credit granted) only as the socketpair accepts them; bytes
 * from the caller are read only while the agent's credit allows.  So each
 * stream holds at most one window per direction here and one in the
 * agent, and a slow reader stalls only its own stream.  Half-close is
 * forwarded both ways; the thread ends when both directions have ended,
 * the agent resets the stream, or the caller closed its end and what it
 * sent has been written inside (or nothing moved for LINGER_MS). */
#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "session/agent-client-internal.h"

/* How long a stream whose caller is gone waits for the agent to write out
 * the last bytes it was sent (a client inside that never reads). */
#define LINGER_MS 30000
/* Caller to agent: read only with at least this much credit, so odd-sized
 * grants do not turn into a stream of tiny frames (silly window
 * avoidance, RFC 1122 4.2.3.4; the agent grants as it writes inside). */
#define MIN_CREDIT (16U * 1024)
/* Connect, handshake and claim of an announced egress connection. */
#define CLAIM_TIMEOUT_MS 10000

struct relay_s {
	ab_agent_conn_t *c;
	struct ab_ac_chan_s *ch;
	int sp;
	struct ab_ac_frame_s *pending; /* agent bytes not yet written to sp */
	size_t pending_off;
	bool agent_eof, caller_eof, caller_gone;
	/* ab_agent_egress_claim: connect and claim on the thread first */
	char *claim_path;
	uint32_t claim_conn;
	void (*done) (void *ctx);
	void *done_ctx;
};

/* Agent -> caller: write what the socketpair takes; false when it is gone. */
static bool
to_caller (struct relay_s *r, ab_error_t *err)
{
	for (;;) {
		if (!r->pending) {
			r->pending = ab_ac_queue_pop (&r->ch->q);
			r->pending_off = 0;
			if (!r->pending)
				return true;
		}
		if (r->pending->type == AB_MSG_EOF) {
			r->agent_eof = true;
			shutdown (r->sp, SHUT_WR);
		} else if (r->pending->type == AB_MSG_RESET) {
			return false;
		} else if (r->pending->type == AB_MSG_DATA) {
			size_t left = r->pending->len - r->pending_off;
			ssize_t n = send (r->sp, r->pending->payload + r->pending_off, left,
			                  MSG_DONTWAIT | MSG_NOSIGNAL);
			if (n < 0 && errno == EAGAIN)
				return true;
			if (n < 0)
				return false;
			r->pending_off += (size_t)n;
			if (r->pending_off < r->pending->len)
				return true;
			if (ab_ac_consumed (r->c, r->ch, r->pending->len, false, err) < 0)
				return false;
		}
		ab_ac_frame_free (r->pending);
		r->pending = NULL;
	}
}

/* Caller -> agent, within credit. */
static bool
to_agent (struct relay_s *r, ab_error_t *err)
{
	uint8_t buf[AB_PROTO_DATA_CHUNK];
	size_t want = r->ch->credit < sizeof buf ? (size_t)r->ch->credit : sizeof buf;
	ssize_t n = recv (r->sp, buf, want, MSG_DONTWAIT);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return true;
	if (n <= 0) {
		r->caller_eof = true;
		return n == 0 && ab_ac_send (r->c, AB_MSG_EOF, r->ch->id, NULL, 0, err) == 0;
	}
	r->ch->credit -= (uint64_t)n;
	return ab_ac_send (r->c, AB_MSG_DATA, r->ch->id, buf, (size_t)n, err) == 0;
}

/* The socketpair's entry: once the caller closed its end (POLLHUP is then
 * reported whatever we ask for), it is polled only while there is still
 * something to read from it, so the loop never spins on the hangup. */
static void
caller_poll (const struct relay_s *r, struct pollfd *p)
{
	p->fd = r->sp;
	p->events = 0;
	if (!r->caller_eof && r->ch->credit >= MIN_CREDIT)
		p->events |= POLLIN;
	if (r->pending)
		p->events |= POLLOUT;
	if (r->caller_gone && !(p->events & POLLIN))
		p->fd = -1;
}

/* The caller is gone and its EOF was sent: done once the agent wrote
 * everything inside (all credit back) or ended its side. */
static bool
lingered (const struct relay_s *r)
{
	return r->caller_gone && r->caller_eof && r->ch->credit >= AB_PROTO_WINDOW;
}

static void
relay_run (struct relay_s *r)
{
	ab_error_t err = AB_ERROR_INIT;

	/* Frames that came with the answer to the request are queued already:
	 * deliver them before waiting for more. */
	while (to_caller (r, &err) && !(r->agent_eof && r->caller_eof) && !lingered (r)) {
		struct pollfd p[2] = { { .fd = r->c->fd, .events = POLLIN } };
		int n;
		caller_poll (r, &p[1]);
		n = poll (p, 2, r->caller_gone ? LINGER_MS : -1);
		if (n < 0 && errno != EINTR)
			break;
		if (n == 0)
			break; /* nothing moved for LINGER_MS after the caller left */
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && ab_ac_pump (r->c, 0, &err) < 0)
			break;
		if (!to_caller (r, &err))
			break;
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !r->caller_eof
		    && r->ch->credit >= MIN_CREDIT && !to_agent (r, &err))
			break;
		if (p[1].revents & POLLERR)
			break;
		/* What the caller wrote before it closed is still read out. */
		if (p[1].revents & POLLHUP)
			r->caller_gone = true;
	}
}

static void
relay_free (struct relay_s *r)
{
	ab_ac_frame_free (r->pending);
	if (r->sp >= 0)
		close (r->sp);
	ab_agent_close (r->c); /* the agent drops the channel with the session */
	free (r->claim_path);
	free (r);
}

/* Send EGRESS_OPEN for conn on c: the channel, or NULL with err. */
static struct ab_ac_chan_s *
claim (ab_agent_conn_t *c, uint32_t conn, ab_error_t *err)
{
	struct ab_ac_chan_s *ch = ab_ac_chan_new (c);
	struct ab_msg_s m, reply;

	ab_msg_init (&m, AB_MSG_EGRESS_OPEN);
	ab_msg_set (&m, conn, AB_TAG_CONN, conn);
	ab_msg_set (&m, channel, AB_TAG_CHANNEL, ch->id);
	if (ab_ac_call (c, &m, &reply, err) < 0) {
		ab_ac_chan_drop (c, ch);
		return NULL;
	}
	ab_msg_free (&reply);
	return ch;
}

/* ab_agent_egress_claim's thread: connect and claim, then relay.  A claim
 * that fails closes the socketpair: the caller reads EOF. */
static bool
claim_on_thread (struct relay_s *r)
{
	ab_error_t err = AB_ERROR_INIT;

	if (!(r->c = ab_agent_connect (r->claim_path, &err)))
		return false;
	ab_agent_set_timeout (r->c, CLAIM_TIMEOUT_MS);
	if (!(r->ch = claim (r->c, r->claim_conn, &err)))
		return false;
	ab_agent_set_timeout (r->c, 0);
	return true;
}

static void *
relay_main (void *arg)
{
	struct relay_s *r = arg;

	if (!r->claim_path || claim_on_thread (r))
		relay_run (r);
	if (r->done)
		r->done (r->done_ctx);
	relay_free (r);
	return NULL;
}

static int
spawn (struct relay_s *r, ab_error_t *err)
{
	pthread_attr_t attr;
	pthread_t th;
	int e;

	pthread_attr_init (&attr);
	pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize (&attr, 256 * 1024);
	e = pthread_create (&th, &attr, relay_main, r);
	pthread_attr_destroy (&attr);
	if (e != 0)
		return ab_error (err, e, AB_E_SYSTEM, "start the port relay thread");
	return 0;
}

/* A relay for channel ch of *cp: the caller's end of the socketpair, and
 * *cp consumed; on failure *cp stays the caller's and ch is dropped. */
static int
relay_channel (ab_agent_conn_t **cp, struct ab_ac_chan_s *ch, ab_error_t *err)
{
	struct relay_s *r;
	int sp[2];

	if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		ab_ac_chan_drop (*cp, ch);
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	}
	r = xcalloc (1, sizeof *r);
	r->c = *cp;
	r->ch = ch;
	r->sp = sp[1];
	if (spawn (r, err) < 0) {
		close (sp[0]);
		close (sp[1]);
		free (r);
		ab_ac_chan_drop (*cp, ch);
		return -1;
	}
	*cp = NULL; /* the relay owns the connection now */
	return sp[0];
}

int
ab_agent_port_open (ab_agent_conn_t **cp, uint16_t port, ab_error_t *err)
{
	ab_agent_conn_t *c = *cp;
	struct ab_ac_chan_s *ch;
	struct ab_msg_s m, reply;

	if (port == 0)
		return ab_error (err, 0, AB_E_INVALID, "port 0");
	ch = ab_ac_chan_new (c);
	ab_msg_init (&m, AB_MSG_PORT_OPEN);
	ab_msg_set (&m, port, AB_TAG_PORT, port);
	ab_msg_set (&m, channel, AB_TAG_CHANNEL, ch->id);
	if (ab_ac_call (c, &m, &reply, err) < 0) {
		ab_ac_chan_drop (c, ch);
		return -1;
	}
	ab_msg_free (&reply);
	return relay_channel (cp, ch, err);
}

int
ab_agent_egress_open (ab_agent_conn_t **cp, uint32_t conn, ab_error_t *err)
{
	struct ab_ac_chan_s *ch;

	if (conn == 0)
		return ab_error (err, 0, AB_E_INVALID, "egress connection 0");
	if (!(ch = claim (*cp, conn, err)))
		return -1;
	return relay_channel (cp, ch, err);
}

int
ab_agent_egress_claim (const char *socket_path, uint32_t conn, void (*done) (void *ctx), void *ctx,
                       ab_error_t *err)
{
	struct relay_s *r;
	int sp[2];

	if (conn == 0)
		return ab_error (err, 0, AB_E_INVALID, "egress connection 0");
	if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	r = xcalloc (1, sizeof *r);
	r->sp = sp[1];
	r->claim_path = xstrdup (socket_path);
	r->claim_conn = conn;
	r->done = done;
	r->done_ctx = ctx;
	if (spawn (r, err) < 0) {
		close (sp[0]);
		relay_free (r);
		return -1;
	}
	return sp[0];
}
