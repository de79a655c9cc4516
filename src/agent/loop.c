/* The agent's event loop: one epoll set, a short list of timers (one per
 * process with a timeout at most), and frees deferred to the end of a batch
 * so that a callback may end an object another event of the same batch
 * still points at. */
#include <errno.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>
#include <unistd.h>

#include "agent/service.h"
#include "base/xalloc.h"

#define MAX_EVENTS 64
#define MAX_AFTER  4

static int epfd = -1;
static struct ab_timer_s *timers;
static void **graveyard;
static size_t n_graveyard, cap_graveyard;
static void (*after_batch[MAX_AFTER]) (void);
static size_t n_after;

/* Idempotent: the microVM's multiplexer registers its fds before
 * ab_service_run initialises the loop again. */
int
ab_loop_init (ab_error_t *err)
{
	if (epfd >= 0)
		return 0;
	epfd = epoll_create1 (EPOLL_CLOEXEC);
	if (epfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "epoll_create1");
	return 0;
}

int
ab_loop_add (struct ab_watch_s *w, int fd, uint32_t events, ab_watch_fn cb, void *ctx)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	w->fd = fd;
	w->events = events;
	w->cb = cb;
	w->ctx = ctx;
	if (epoll_ctl (epfd, EPOLL_CTL_ADD, fd, &ev) < 0) {
		w->fd = -1;
		return -1;
	}
	return 0;
}

void
ab_loop_set (struct ab_watch_s *w, uint32_t events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (w->fd < 0 || w->events == events)
		return;
	w->events = events;
	epoll_ctl (epfd, EPOLL_CTL_MOD, w->fd, &ev);
}

void
ab_loop_del (struct ab_watch_s *w)
{
	if (w->fd < 0)
		return;
	epoll_ctl (epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->fd = -1;
}

void
ab_timer_cancel (struct ab_timer_s *t)
{
	struct ab_timer_s **pp;

	if (!t->armed)
		return;
	for (pp = &timers; *pp; pp = &(*pp)->next)
		if (*pp == t) {
			*pp = t->next;
			break;
		}
	t->armed = false;
}

void
ab_timer_arm (struct ab_timer_s *t, uint64_t in_ms, ab_timer_fn cb, void *ctx)
{
	ab_timer_cancel (t);
	t->deadline_ms = ab_mono_ms () + in_ms;
	t->cb = cb;
	t->ctx = ctx;
	t->armed = true;
	t->next = timers;
	timers = t;
}

void
ab_loop_defer_free (void *p)
{
	if (n_graveyard == cap_graveyard) {
		cap_graveyard = cap_graveyard ? cap_graveyard * 2 : 16;
		graveyard = xrealloc (graveyard, cap_graveyard * sizeof *graveyard);
	}
	graveyard[n_graveyard++] = p;
}

void
ab_loop_after_batch (void (*fn) (void))
{
	if (n_after < MAX_AFTER)
		after_batch[n_after++] = fn;
}

static int
next_timeout (void)
{
	uint64_t now = ab_mono_ms (), min = UINT64_MAX;

	for (struct ab_timer_s *t = timers; t; t = t->next)
		if (t->deadline_ms < min)
			min = t->deadline_ms;
	if (min == UINT64_MAX)
		return -1;
	return min <= now ? 0 : (min - now > 60000 ? 60000 : (int)(min - now));
}

/* Fire one expired timer at a time: a callback may arm or cancel others. */
static void
run_timers (void)
{
	for (;;) {
		uint64_t now = ab_mono_ms ();
		struct ab_timer_s *t;
		for (t = timers; t; t = t->next)
			if (t->deadline_ms <= now)
				break;
		if (!t)
			return;
		ab_timer_cancel (t);
		t->cb (t);
	}
}

static void
end_batch (void)
{
	for (size_t i = 0; i < n_after; i++)
		after_batch[i]();
	for (size_t i = 0; i < n_graveyard; i++)
		free (graveyard[i]);
	n_graveyard = 0;
}

void
ab_loop_run (void)
{
	struct epoll_event evs[MAX_EVENTS];

	for (;;) {
		int n = epoll_wait (epfd, evs, MAX_EVENTS, next_timeout ());
		if (n < 0 && errno != EINTR)
			_exit (1);
		for (int i = 0; i < n; i++) {
			struct ab_watch_s *w = evs[i].data.ptr;
			/* Unregistered by an earlier callback of this batch. */
			if (w->fd >= 0)
				w->cb (w, evs[i].events);
		}
		run_timers ();
		end_batch ();
	}
}
