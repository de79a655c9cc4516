/* A listening TCP socket on the event loop, shared by the egress and the
 * credential proxies: bind, accept in bounded batches, and stop accepting
 * while the owner is full.
 *
 * The owner says when it is full (full) and takes each accepted fd (take);
 * the listener never knows what a connection is.  While paused, new
 * clients wait in the kernel's backlog, not in our memory. */
#ifndef AB_NET_LISTENER_H
#define AB_NET_LISTENER_H

#include <event2/event.h>
#include <stdbool.h>
#include <stddef.h>

#include "base/error.h"

struct ab_listener_s {
	int fd; /* -1 until ab_listener_open */
	struct event *ev;
	struct event *retry_ev;
	bool paused;
	/* After the process runs out of fds (EMFILE, ENFILE, ENOBUFS, ENOMEM),
	 * pause for this long instead of spinning on a listener that stays
	 * readable; 0 keeps the listener armed. */
	unsigned retry_ms;
	bool (*full) (void *owner);
	void (*take) (void *owner, int fd);
	void *owner;
};

/* The bind behind ab_listener_open, for servers off the event loop
 * (net/http-server.h): a non-blocking, close-on-exec TCP socket listening
 * on host:port (SO_REUSEADDR), or -1. */
int ab_tcp_listen (const char *host, const char *port, char *bound, size_t bound_len,
                   ab_error_t *err);

/* Not listening yet: safe to ab_listener_close. */
void ab_listener_init (struct ab_listener_s *l, bool (*full) (void *owner),
                       void (*take) (void *owner, int fd), void *owner, unsigned retry_ms);
/* Bind host:port (host NULL or "": every address; port "0": any free port),
 * listen and start accepting; bound (if not NULL) gets the address as
 * "host:port" or "[v6]:port". */
int ab_listener_open (struct ab_listener_s *l, struct event_base *base, const char *host,
                      const char *port, char *bound, size_t bound_len, ab_error_t *err);
/* A connection ended: accept again if paused and the owner has room. */
void ab_listener_resume (struct ab_listener_s *l);
void ab_listener_close (struct ab_listener_s *l);

struct sockaddr;
/* An AF_INET or AF_INET6 address as "host:port" or "[v6]:port" (numeric),
 * "?" when it cannot be formatted. */
void ab_sockaddr_format (const struct sockaddr *sa, char *buf, size_t len);

#endif
