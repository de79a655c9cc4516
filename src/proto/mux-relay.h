/* One side of the microVM multiplexer (mux.h): relays many local stream
 * sockets over one byte stream, with per-connection credit.  The same code
 * runs in the guest (inside the agent's event loop; the host opens
 * connections, the guest connects each to the agent) and on the host (in
 * the sandbox's monitor; each client of the agent's socket is a
 * connection).  It does the I/O on the fds it is given but owns no event
 * loop: the caller watches the fds it is told to and hands events back.
 * Libc only. */
#ifndef AB_PROTO_MUX_RELAY_H
#define AB_PROTO_MUX_RELAY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base/error.h"

#define AB_MUX_EV_IN  1U
#define AB_MUX_EV_OUT 2U
#define AB_MUX_EV_HUP 4U /* hangup or error: reported even without interest */

/* At most this many connections at once; an OPEN beyond is answered CLOSE. */
#define AB_MUX_MAX_CONNS 1024

struct ab_mux_relay_ops_s {
	/* Interest in fd changed (AB_MUX_EV_IN | AB_MUX_EV_OUT).  0 means
	 * "report nothing, not even a hangup": unregister it until it is
	 * wanted again (epoll reports hangups of a registered fd always). */
	void (*watch) (void *ctx, int fd, unsigned events);
	/* fd is about to be closed by the relay. */
	void (*forget) (void *ctx, int fd);
	/* The peer opened connection id: a connected non-blocking fd for it,
	 * or -1 (answered with CLOSE).  NULL: the peer may not open any. */
	int (*open) (void *ctx, uint32_t id);
	/* The peer said HELLO (it is ready).  May be NULL. */
	void (*hello) (void *ctx);
};

typedef struct ab_mux_relay_s ab_mux_relay_t;

/* stream_fd: non-blocking, stays the caller's (not closed by the relay). */
ab_mux_relay_t *ab_mux_relay_new (int stream_fd, const struct ab_mux_relay_ops_s *ops, void *ctx);
/* Close every connection (no frames sent) and free. */
void ab_mux_relay_free (ab_mux_relay_t *r);
void ab_mux_relay_send_hello (ab_mux_relay_t *r);
/* A local connection (fd non-blocking, now the relay's): OPEN it at the
 * peer.  Fails when AB_MUX_MAX_CONNS are open (fd is then closed). */
int ab_mux_relay_add (ab_mux_relay_t *r, int fd, ab_error_t *err);
/* Readiness of fd (the stream or a connection), AB_MUX_EV_* bits. */
void ab_mux_relay_event (ab_mux_relay_t *r, int fd, unsigned events);
/* Write what is queued for the stream, blocking up to timeout_ms. */
void ab_mux_relay_flush (ab_mux_relay_t *r, int timeout_ms);
/* NULL while healthy; else why the stream is unusable (it broke, or the
 * peer broke the protocol).  Then the caller tears everything down. */
const char *ab_mux_relay_failed (const ab_mux_relay_t *r);
size_t ab_mux_relay_conns (const ab_mux_relay_t *r);

#endif
