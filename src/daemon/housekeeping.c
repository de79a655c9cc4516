/* One thread that watches every sandbox's monitor through its pidfd (it
 * becomes readable when the process ends, child or not) and expires TTLs.
 * A monitor that ends while its sandbox is in use means the sandbox died
 * (its agent, PID 1, exited or was killed): it is cleaned up and reported
 * as dead until someone deletes it. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <stdio.h>
#include <sys/epoll.h>

#include "base/log.h"

#define TICK_MS 500

void
ab_housekeeping_watch (struct ab_daemon_s *d, struct ab_box_s *b)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = b };

	if (b->pidfd < 0)
		return;
	ab_box_ref (d, b); /* dropped when the monitor has ended */
	if (epoll_ctl (d->epfd, EPOLL_CTL_ADD, b->pidfd, &ev) < 0)
		ab_box_unref (d, b);
}

static void
monitor_ended (struct ab_daemon_s *d, struct ab_box_s *b)
{
	epoll_ctl (d->epfd, EPOLL_CTL_DEL, b->pidfd, NULL);
	if (ab_box_get_state (d, b) == AB_BOX_RUNNING)
		ab_box_mark_dead (d, b,
		                  "its monitor ended (the agent exited or the sandbox was killed)");
	ab_box_unref (d, b);
}

static void
expire (struct ab_daemon_s *d)
{
	int64_t now = (int64_t)ab_unix_ms ();
	size_t n;
	struct ab_box_s **v = ab_registry_all (d, &n);

	for (size_t i = 0; i < n; i++) {
		ab_box_state s = ab_box_get_state (d, v[i]);
		ab_error_t err = AB_ERROR_INIT;
		if (!v[i]->expires_ms || now < v[i]->expires_ms
		    || (s != AB_BOX_RUNNING && s != AB_BOX_DEAD))
			continue;
		if (ab_box_destroy (d, v[i], true, &err) < 0)
			ab_log_error (AB_LOG_WARN, &err, "expire %s", v[i]->id);
		else
			ab_metrics_inc ("sandboxes_expired");
	}
	ab_registry_release (d, v, n);
}

static void *
housekeeping (void *arg)
{
	struct ab_daemon_s *d = arg;
	struct epoll_event ev[32];

	for (;;) {
		int n = epoll_wait (d->epfd, ev, 32, TICK_MS);
		for (int i = 0; i < n; i++)
			monitor_ended (d, ev[i].data.ptr);
		expire (d);
	}
	return NULL;
}

int
ab_housekeeping_start (struct ab_daemon_s *d, ab_error_t *err)
{
	pthread_t t;
	int r = pthread_create (&t, NULL, housekeeping, d);

	if (r != 0)
		return ab_error (err, r, AB_E_SYSTEM, "start housekeeping thread");
	pthread_detach (t);
	return 0;
}
