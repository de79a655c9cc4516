/* Port streams: PORT_OPEN on a connection of its own, then a small
 * detached thread relays between the channel and one end of a socketpair
 * the caller holds.  Bytes from the agent are taken off the channel (and
 * credit granted) only as the socketpair accepts them; bytes from the
 * caller are read only while the agent's credit allows.  Half-close is
 * forwarded both ways; the thread ends when both directions have ended,
 * the caller closes its end, or the agent resets the stream. */
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

struct relay_s {
	ab_agent_conn_t *c;
	struct ab_ac_chan_s *ch;
	int sp;
	struct ab_ac_frame_s *pending; /* agent bytes not yet written to sp */
	size_t pending_off;
	bool agent_eof, caller_eof, sp_shut;
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
			if (ab_ac_consumed (r->c, r->ch, r->pending->len, true, err) < 0)
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

static void *
relay_main (void *arg)
{
	struct relay_s *r = arg;
	ab_error_t err = AB_ERROR_INIT;

	while (!(r->agent_eof && r->caller_eof)) {
		struct pollfd p[2] = { { .fd = r->c->fd, .events = POLLIN },
			               { .fd = r->sp, .events = 0 } };
		if (!r->caller_eof && r->ch->credit > 0)
			p[1].events |= POLLIN;
		if (r->pending)
			p[1].events |= POLLOUT;
		if (poll (p, 2, -1) < 0 && errno != EINTR)
			break;
		if ((p[0].revents & (POLLIN | POLLHUP | POLLERR)) && ab_ac_pump (r->c, 0, &err) < 0)
			break;
		if (!to_caller (r, &err))
			break;
		if ((p[1].revents & (POLLIN | POLLHUP | POLLERR)) && !r->caller_eof
		    && r->ch->credit > 0 && !to_agent (r, &err))
			break;
		if ((p[1].revents & POLLERR) || ((p[1].revents & POLLHUP) && r->agent_eof))
			break;
	}
	ab_ac_frame_free (r->pending);
	close (r->sp);
	ab_agent_close (r->c); /* the agent drops the channel with the session */
	free (r);
	return NULL;
}

int
ab_agent_port_open (ab_agent_conn_t **cp, uint16_t port, ab_error_t *err)
{
	ab_agent_conn_t *c = *cp;
	struct ab_ac_chan_s *ch;
	struct ab_msg_s m, reply;
	struct relay_s *r;
	pthread_attr_t attr;
	pthread_t th;
	int sp[2], e;

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
	if (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		ab_ac_chan_drop (c, ch);
		return ab_error (err, errno, AB_E_SYSTEM, "socketpair");
	}
	r = xcalloc (1, sizeof *r);
	r->c = c;
	r->ch = ch;
	r->sp = sp[1];
	pthread_attr_init (&attr);
	pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
	pthread_attr_setstacksize (&attr, 256 * 1024);
	e = pthread_create (&th, &attr, relay_main, r);
	pthread_attr_destroy (&attr);
	if (e != 0) {
		close (sp[0]);
		close (sp[1]);
		free (r);
		ab_ac_chan_drop (c, ch);
		return ab_error (err, e, AB_E_SYSTEM, "start the port relay thread");
	}
	*cp = NULL; /* the relay owns the connection now */
	return sp[0];
}
