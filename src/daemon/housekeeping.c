/* One thread that watches every sandbox's monitor through its pidfd (it
 * becomes readable when the process ends, child or not) and expires TTLs.
 * A monitor that ends while its sandbox is in use means the sandbox died
 * (its agent, PID 1, exited or was killed): it is cleaned up and reported
 * as dead until someone deletes it.
 *
 * A second thread removes Docker containers whose monitor is gone (a
 * SIGKILLed monitor leaves its container to containerd): at the daemon's
 * start and then every AGENTBOX_DOCKER_SWEEP_INTERVAL (a duration, default
 * 60 s), only when a Docker engine answers, only containers labelled as
 * ours whose monitor label names a dead monitor (backend/docker-sweep.c).
 * Its own thread: the `docker` calls may take seconds, and deaths and
 * TTLs must not wait for them. */
#include "daemon/daemon-internal.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <time.h>

#include "backend/docker.h"
#include "base/log.h"
#include "base/parse.h"

#define TICK_MS                 500
#define DOCKER_SWEEP_DEFAULT_MS (60 * 1000)
#define DOCKER_SWEEP_ENV        "AGENTBOX_DOCKER_SWEEP_INTERVAL"

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
	/* The note a Docker monitor leaves is taken whatever the state. */
	bool oom = ab_docker_ended_oom (b->agent_sock);

	if (ab_box_get_state (d, b) == AB_BOX_RUNNING)
		ab_box_mark_dead (d, b,
		                  oom ? "out of memory: the kernel's OOM killer ended the sandbox "
		                        "(its memory limit)"
		                      : "its monitor ended (the agent exited or the sandbox was "
		                        "killed)");
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
		if (!v[i]->expires_ms || now < v[i]->expires_ms || ab_box_is_paused (d, v[i])
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

static uint64_t
docker_sweep_interval_ms (void)
{
	const char *v = getenv (DOCKER_SWEEP_ENV);
	ab_error_t err = AB_ERROR_INIT;
	uint64_t ms;

	if (!v)
		return DOCKER_SWEEP_DEFAULT_MS;
	if (ab_parse_duration (v, &ms, &err) < 0 || ms < 100) {
		ab_log (AB_LOG_WARN, "%s=%s: not a duration of 100ms or more; using 60s",
		        DOCKER_SWEEP_ENV, v);
		return DOCKER_SWEEP_DEFAULT_MS;
	}
	return ms;
}

static void *
docker_sweeper (void *arg)
{
	uint64_t every = docker_sweep_interval_ms ();
	struct timespec ts = { .tv_sec = (time_t)(every / 1000),
		               .tv_nsec = (long)(every % 1000) * 1000000 };

	(void)arg;
	for (;;) {
		ab_docker_sweep ();
		while (nanosleep (&ts, &ts) < 0 && errno == EINTR)
			;
		ts.tv_sec = (time_t)(every / 1000);
		ts.tv_nsec = (long)(every % 1000) * 1000000;
	}
	return NULL;
}

static int
start_thread (void *(*fn) (void *), void *arg, const char *what, ab_error_t *err)
{
	pthread_t t;
	int r = pthread_create (&t, NULL, fn, arg);

	if (r != 0)
		return ab_error (err, r, AB_E_SYSTEM, "start %s thread", what);
	pthread_detach (t);
	return 0;
}

int
ab_housekeeping_start (struct ab_daemon_s *d, ab_error_t *err)
{
	if (start_thread (housekeeping, d, "housekeeping", err) < 0)
		return -1;
	return start_thread (docker_sweeper, NULL, "docker sweep", err);
}
