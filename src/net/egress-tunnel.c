/* CONNECT tunnels: after "200 Connection Established", bytes move both
 * ways through the relay core's byte relays (relay.h): src -> pipe -> dst
 * with splice(2), so payload pages are handed from one socket to the
 * other without being copied through user space, or read/write through a
 * buffer when splice does not work for the file descriptors.
 *
 * Each direction ends on its own: EOF from src shuts dst's write side once
 * the pipe is empty (a client that half-closes still gets the whole
 * answer), and the tunnel ends when both directions did. */
#include <sys/socket.h>

#include "net/egress-internal.h"

static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";

int
ab_egress_tunnel_start (struct ab_egress_conn_s *c)
{
	ab_iobuf_free (&c->r.cout);
	ab_iobuf_append (&c->r.cout, established, sizeof established - 1);
	c->r.m.status = 200;
	c->r.m.resp_started = true;
	ab_relay_dir_open (&c->r.d_cu);
	ab_relay_dir_open (&c->r.d_uc);
	c->r.state = AB_RELAY_ST_TUNNEL;
	return AB_RELAY_AGAIN;
}

/* One tunnel direction: relay, then pass EOF on as a half-close. */
static int
tunnel_dir (struct ab_relay_conn_s *c, struct ab_relay_dir_s *d, const struct ab_relay_io_s *io)
{
	int r = ab_relay_io_step (c, d, io);

	if (r == AB_RELAY_WAIT && d->eof && d->in_pipe == 0 && !d->shut
	    && ab_iobuf_len (io->buf) == 0 && (!io->pre || ab_iobuf_len (io->pre) == 0)) {
		shutdown (io->dst->fd, SHUT_WR);
		d->shut = true;
	}
	return r;
}

int
ab_egress_tunnel_step (struct ab_relay_conn_s *rc)
{
	struct ab_egress_conn_s *c = ab_egress_conn (rc);
	const struct ab_relay_io_s up = {
		"client->upstream", &rc->cs, rc->us, NULL, &rc->cin, &rc->m.bytes_up, NULL,
	};
	const struct ab_relay_io_s down = {
		"upstream->client", rc->us, &rc->cs, &rc->cout, &rc->uin, &rc->m.bytes_down, NULL,
	};

	if (tunnel_dir (rc, &rc->d_cu, &up) == AB_RELAY_CLOSE
	    || tunnel_dir (rc, &rc->d_uc, &down) == AB_RELAY_CLOSE) {
		ab_egress_audit_done (c);
		return AB_RELAY_CLOSE;
	}
	if (rc->d_cu.shut && rc->d_uc.shut) {
		ab_egress_audit_done (c);
		return AB_RELAY_CLOSE;
	}
	return AB_RELAY_WAIT;
}
