/* Byte relays: CONNECT tunnels, and Content-Length bodies of forwarded
 * requests and responses.  A relay moves src -> pipe -> dst with splice(2),
 * so payload pages are handed from one socket to the other without being
 * copied through user space; a tunnel falls back to read/write through a
 * buffer when splice does not work for its file descriptors.
 *
 * In a tunnel each direction ends on its own: EOF from src shuts dst's
 * write side once the pipe is empty (a client that half-closes still gets
 * the whole answer), and the tunnel ends when both directions did. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "net/egress-internal.h"

static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";

bool
ab_egress_dir_open (struct ab_egress_dir_s *d)
{
	if (d->pipe[0] >= 0)
		return true;
	d->splice = pipe2 (d->pipe, O_NONBLOCK | O_CLOEXEC) == 0;
	if (!d->splice)
		d->pipe[0] = d->pipe[1] = -1;
	return d->splice;
}

void
ab_egress_dir_close (struct ab_egress_dir_s *d)
{
	for (int i = 0; i < 2; i++) {
		if (d->pipe[i] >= 0)
			close (d->pipe[i]);
		d->pipe[i] = -1;
	}
	d->in_pipe = 0;
	d->eof = d->shut = false;
}

void
ab_egress_tunnel_release (struct ab_egress_conn_s *c)
{
	ab_egress_dir_close (&c->t_cu);
	ab_egress_dir_close (&c->t_uc);
}

int
ab_egress_tunnel_start (struct ab_egress_conn_s *c)
{
	ab_iobuf_free (&c->cout);
	ab_iobuf_append (&c->cout, established, sizeof established - 1);
	c->rq.status = 200;
	c->rq.resp_started = true;
	ab_egress_dir_open (&c->t_cu);
	ab_egress_dir_open (&c->t_uc);
	c->state = AB_EG_ST_TUNNEL;
	return AB_EG_AGAIN;
}

static int
relay_fail (struct ab_egress_conn_s *c, const struct ab_egress_relay_s *io, const char *what)
{
	snprintf (c->rq.error, sizeof c->rq.error, "%s %s: %s", io->name, what, strerror (errno));
	return AB_EG_CLOSE;
}

/* Write what is buffered (our prefix, then payload). */
static int
relay_flush (struct ab_egress_conn_s *c, const struct ab_egress_relay_s *io)
{
	size_t pre = io->pre ? ab_iobuf_len (io->pre) : 0;
	ssize_t n = ab_egress_writev2 (io->dst, io->pre, ab_iobuf_peek (io->buf),
	                               ab_iobuf_len (io->buf));

	if (n < 0 && errno == EAGAIN) {
		*io->dst_wr = false;
		return AB_EG_WAIT;
	}
	if (n < 0)
		return relay_fail (c, io, "write");
	if (pre > 0) {
		size_t k = (size_t)n < pre ? (size_t)n : pre;
		ab_iobuf_consume (io->pre, k);
		n -= (ssize_t)k;
	}
	ab_iobuf_consume (io->buf, (size_t)n);
	*io->count += (uint64_t)n;
	return AB_EG_AGAIN;
}

/* Pipe -> dst. */
static int
relay_drain_pipe (struct ab_egress_conn_s *c, struct ab_egress_dir_s *d,
                  const struct ab_egress_relay_s *io)
{
	ssize_t n = splice (d->pipe[0], NULL, io->dst, NULL, d->in_pipe,
	                    SPLICE_F_MOVE | SPLICE_F_NONBLOCK);

	if (n < 0 && errno == EAGAIN) {
		*io->dst_wr = false;
		return AB_EG_WAIT;
	}
	if (n <= 0)
		return relay_fail (c, io, "splice out");
	d->in_pipe -= (size_t)n;
	*io->count += (uint64_t)n;
	return AB_EG_AGAIN;
}

/* src -> pipe (or buffer).  Called with the pipe empty, so EAGAIN can only
 * mean src has nothing: a partly full pipe could also say EAGAIN and hide
 * a readable socket from us, and with edge-triggered events that socket
 * would never be looked at again. */
static int
relay_fill (struct ab_egress_conn_s *c, struct ab_egress_dir_s *d,
            const struct ab_egress_relay_s *io)
{
	size_t want = AB_EG_IO_CHUNK;
	ssize_t n;

	if (io->left && *io->left < want)
		want = (size_t)*io->left;
	if (d->splice) {
		n = splice (io->src, NULL, d->pipe[1], NULL, want,
		            SPLICE_F_MOVE | SPLICE_F_NONBLOCK);
		if (n < 0 && (errno == EINVAL || errno == ENOSYS)) {
			/* Not spliceable: copy instead, if this relay can. */
			d->splice = false;
			return io->buf ? AB_EG_AGAIN : AB_EG_NOSPLICE;
		}
		if (n > 0)
			d->in_pipe += (size_t)n;
	} else {
		n = ab_iobuf_read (io->buf, io->src, want, AB_EG_IO_CHUNK);
	}
	if (n < 0 && errno == EAGAIN) {
		*io->src_rd = false;
		return AB_EG_WAIT;
	}
	if (n < 0)
		return relay_fail (c, io, "read");
	if (n == 0)
		d->eof = true;
	else if (io->left)
		*io->left -= (uint64_t)n;
	return AB_EG_AGAIN;
}

int
ab_egress_relay_step (struct ab_egress_conn_s *c, struct ab_egress_dir_s *d,
                      const struct ab_egress_relay_s *io)
{
	for (int budget = AB_EG_BUDGET;; budget--) {
		bool buffered = (io->pre && ab_iobuf_len (io->pre) > 0)
		                || (io->buf && ab_iobuf_len (io->buf) > 0);
		int r;

		if (budget == 0) {
			ab_egress_conn_yield (c);
			return AB_EG_WAIT;
		}
		if (buffered || d->in_pipe > 0) {
			if (!*io->dst_wr)
				return AB_EG_WAIT;
			r = buffered ? relay_flush (c, io) : relay_drain_pipe (c, d, io);
		} else if (d->eof || (io->left && *io->left == 0)) {
			return AB_EG_WAIT; /* all moved; the caller decides what is next */
		} else if (!*io->src_rd) {
			return AB_EG_WAIT;
		} else {
			r = relay_fill (c, d, io);
		}
		if (r != AB_EG_AGAIN)
			return r;
		c->t_last = ab_egress_now_us ();
	}
}

/* One tunnel direction: relay, then pass EOF on as a half-close. */
static int
tunnel_dir (struct ab_egress_conn_s *c, struct ab_egress_dir_s *d,
            const struct ab_egress_relay_s *io)
{
	int r = ab_egress_relay_step (c, d, io);

	if (r == AB_EG_WAIT && d->eof && d->in_pipe == 0 && !d->shut && ab_iobuf_len (io->buf) == 0
	    && (!io->pre || ab_iobuf_len (io->pre) == 0)) {
		shutdown (io->dst, SHUT_WR);
		d->shut = true;
	}
	return r;
}

int
ab_egress_tunnel_step (struct ab_egress_conn_s *c)
{
	const struct ab_egress_relay_s up = {
		"client->upstream", c->cfd, c->ufd, &c->c_rd, &c->u_wr, NULL, &c->cin,
		&c->rq.bytes_up,    NULL
	};
	const struct ab_egress_relay_s down = {
		"upstream->client", c->ufd, c->cfd, &c->u_rd, &c->c_wr, &c->cout, &c->uin,
		&c->rq.bytes_down,  NULL
	};

	if (tunnel_dir (c, &c->t_cu, &up) == AB_EG_CLOSE
	    || tunnel_dir (c, &c->t_uc, &down) == AB_EG_CLOSE) {
		ab_egress_audit_done (c);
		return AB_EG_CLOSE;
	}
	if (c->t_cu.shut && c->t_uc.shut) {
		ab_egress_audit_done (c);
		return AB_EG_CLOSE;
	}
	return AB_EG_WAIT;
}
