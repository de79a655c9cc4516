#include "session/fd-relay.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/xalloc.h"

struct ab_fd_relay_s {
	struct event_base *base;
	struct event *wake;
	ab_fd_relay_serve_fn serve;
	void *ctx;
	int pipe[2]; /* fds to serve travel as ints; -1 means stop */
	pthread_t thread;
	bool started;
};

static void
on_wake (evutil_socket_t fd, short what, void *arg)
{
	ab_fd_relay_t *r = arg;
	int conn;

	(void)what;
	while (read (fd, &conn, sizeof conn) == (ssize_t)sizeof conn) {
		if (conn < 0) {
			event_base_loopbreak (r->base);
			return;
		}
		r->serve (r->ctx, conn);
	}
}

static void *
run_loop (void *arg)
{
	ab_fd_relay_t *r = arg;
	event_base_dispatch (r->base);
	return NULL;
}

ab_fd_relay_t *
ab_fd_relay_new (ab_error_t *err)
{
	ab_fd_relay_t *r = xcalloc (1, sizeof *r);

	r->pipe[0] = r->pipe[1] = -1;
	if (pipe2 (r->pipe, O_CLOEXEC) < 0 || ab_set_nonblock (r->pipe[0], 1) < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "pipe");
		ab_fd_relay_free (r);
		return NULL;
	}
	if (!(r->base = event_base_new ())) {
		ab_error (err, 0, AB_E_SYSTEM, "event_base_new");
		ab_fd_relay_free (r);
		return NULL;
	}
	return r;
}

struct event_base *
ab_fd_relay_base (ab_fd_relay_t *r)
{
	return r->base;
}

int
ab_fd_relay_start (ab_fd_relay_t *r, ab_fd_relay_serve_fn serve, void *ctx, ab_error_t *err)
{
	r->serve = serve;
	r->ctx = ctx;
	r->wake = event_new (r->base, r->pipe[0], EV_READ | EV_PERSIST, on_wake, r);
	if (!r->wake || event_add (r->wake, NULL) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "relay event");
	if ((errno = pthread_create (&r->thread, NULL, run_loop, r)) != 0)
		return ab_error (err, errno, AB_E_SYSTEM, "relay thread");
	r->started = true;
	return 0;
}

void
ab_fd_relay_submit (ab_fd_relay_t *r, int fd)
{
	/* A pipe write of <= PIPE_BUF bytes is atomic; the loop drains it. */
	if (ab_write_all (r->pipe[1], &fd, sizeof fd) < 0)
		close (fd);
}

void
ab_fd_relay_stop (ab_fd_relay_t *r)
{
	int stop = -1;

	if (!r || !r->started)
		return;
	ab_write_all (r->pipe[1], &stop, sizeof stop);
	pthread_join (r->thread, NULL);
	r->started = false;
}

void
ab_fd_relay_free (ab_fd_relay_t *r)
{
	if (!r)
		return;
	ab_fd_relay_stop (r);
	if (r->wake)
		event_free (r->wake);
	if (r->base)
		event_base_free (r->base);
	for (int i = 0; i < 2; i++)
		if (r->pipe[i] >= 0)
			close (r->pipe[i]);
	free (r);
}
