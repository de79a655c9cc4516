/* Stopping a proxy's event loop: see loop-stop.h. */
#include <errno.h>
#include <stdint.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "net/loop-stop.h"

void
ab_loop_stop_init (struct ab_loop_stop_s *s)
{
	*s = (struct ab_loop_stop_s){ .fd = -1 };
}

static void
on_stop (evutil_socket_t fd, short what, void *arg)
{
	struct ab_loop_stop_s *s = arg;
	uint64_t v;

	if (fd == s->fd && read (s->fd, &v, sizeof v) < 0)
		return;
	event_base_loopbreak (s->base);
}

int
ab_loop_stop_open (struct ab_loop_stop_s *s, struct event_base *base)
{
	s->base = base;
	s->fd = eventfd (0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (s->fd >= 0)
		s->ev = event_new (base, s->fd, EV_READ | EV_PERSIST, on_stop, s);
	if (s->ev == NULL || event_add (s->ev, NULL) < 0)
		return -1;
	return 0;
}

int
ab_loop_stop_run (struct ab_loop_stop_s *s, ab_error_t *err)
{
	if (event_base_dispatch (s->base) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "event loop failed");
	return 0;
}

void
ab_loop_stop_request (struct ab_loop_stop_s *s)
{
	const uint64_t one = 1;
	int saved = errno;

	if (write (s->fd, &one, sizeof one) < 0) {
		/* Nothing to do from a signal handler; the counter is full anyway. */
	}
	errno = saved;
}

void
ab_loop_stop_close (struct ab_loop_stop_s *s)
{
	if (s->ev != NULL)
		event_free (s->ev);
	s->ev = NULL;
	if (s->fd >= 0)
		close (s->fd);
	s->fd = -1;
}
