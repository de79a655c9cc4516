/* Stopping a proxy's event loop: from another thread or a signal handler
 * (ab_loop_stop_request writes an eventfd, which is async-signal-safe).
 * No signal is handled here: a program that wants SIGINT/SIGTERM to stop
 * the loop installs that at its edge (cli: ab_cli_stop_on_signals). */
#ifndef AB_NET_LOOP_STOP_H
#define AB_NET_LOOP_STOP_H

#include <event2/event.h>

#include "base/error.h"

struct ab_loop_stop_s {
	struct event_base *base;
	int fd; /* the eventfd, -1 until ab_loop_stop_open */
	struct event *ev;
};

/* Not open yet: safe to ab_loop_stop_close. */
void ab_loop_stop_init (struct ab_loop_stop_s *s);
/* -1 with errno (or errno 0) when the eventfd or its event cannot be made. */
int ab_loop_stop_open (struct ab_loop_stop_s *s, struct event_base *base);
/* Dispatch until ab_loop_stop_request. */
int ab_loop_stop_run (struct ab_loop_stop_s *s, ab_error_t *err);
/* Async-signal-safe; keeps errno. */
void ab_loop_stop_request (struct ab_loop_stop_s *s);
void ab_loop_stop_close (struct ab_loop_stop_s *s);

#endif
