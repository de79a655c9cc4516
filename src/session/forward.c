#include "session/forward.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/xalloc.h"
#include "session/agent-client-internal.h"
#include "spec/spec.h"

#define POLL_MS 500

/* Stream relays running for one forwarder.  They are detached and may
 * outlive it, so this lives until the last of them and the forwarder let
 * go (refs). */
struct streams_s {
	pthread_mutex_t lock;
	pthread_cond_t room;
	unsigned active, refs;
};

struct ab_forward_s {
	char *socket_path;
	ab_egress_relay_t *egress;
	ab_cred_relay_t *cred;
	bool fd_passing;
	ab_agent_conn_t *conn; /* the subscriber */
	pthread_t thread;
	_Atomic bool stop;
	struct streams_s *streams;
};

bool
ab_forward_use_fd_passing (bool backend_can)
{
	const char *force = getenv ("AGENTBOX_EGRESS_STREAM");

	return backend_can && !(force && strcmp (force, "1") == 0);
}

/* ---- the stream budget -------------------------------------------------------- */

static void
streams_unref (struct streams_s *s)
{
	bool last;

	pthread_mutex_lock (&s->lock);
	last = --s->refs == 0;
	pthread_mutex_unlock (&s->lock);
	if (!last)
		return;
	pthread_mutex_destroy (&s->lock);
	pthread_cond_destroy (&s->room);
	free (s);
}

/* A relay thread ended (ab_agent_egress_claim's done). */
static void
stream_done (void *ctx)
{
	struct streams_s *s = ctx;

	pthread_mutex_lock (&s->lock);
	s->active--;
	pthread_cond_signal (&s->room);
	pthread_mutex_unlock (&s->lock);
	streams_unref (s);
}

/* Wait (bounded, so stop is seen) for room for one more stream and take
 * it; false when there was none in POLL_MS. */
static bool
stream_slot (struct ab_forward_s *f)
{
	struct streams_s *s = f->streams;
	struct timespec until;
	bool ok;

	/* pthread_cond_timedwait's deadline is on the wall clock. */
	uint64_t until_ms = ab_unix_ms () + POLL_MS;
	until.tv_sec = (time_t)(until_ms / 1000);
	until.tv_nsec = (long)(until_ms % 1000) * 1000000L;
	pthread_mutex_lock (&s->lock);
	while (s->active >= AB_FORWARD_MAX_STREAMS && !f->stop)
		if (pthread_cond_timedwait (&s->room, &s->lock, &until) == ETIMEDOUT)
			break;
	ok = s->active < AB_FORWARD_MAX_STREAMS && !f->stop;
	if (ok) {
		s->active++;
		s->refs++;
	}
	pthread_mutex_unlock (&s->lock);
	return ok;
}

/* ---- routing -------------------------------------------------------------------- */

/* An agent that says no port has only the egress listener. */
static bool
serves (const struct ab_forward_s *f, uint16_t port)
{
	return (port == AB_CRED_PORT && f->cred)
	       || ((port == AB_EGRESS_PORT || port == 0) && f->egress);
}

static void
route (struct ab_forward_s *f, uint16_t port, int fd)
{
	if (port == AB_CRED_PORT && f->cred)
		ab_cred_relay_submit (f->cred, fd);
	else if ((port == AB_EGRESS_PORT || port == 0) && f->egress)
		ab_egress_relay_submit (f->egress, fd);
	else
		close (fd);
}

/* One announced connection: claimed on a thread of its own, its fd routed
 * at once (no connection waits for another's claim). */
static void
claim_one (struct ab_forward_s *f, uint32_t conn, uint16_t port)
{
	ab_error_t err = AB_ERROR_INIT;
	int fd;

	if (!serves (f, port))
		return; /* nobody here serves it: it expires in the agent */
	if (!stream_slot (f))
		return; /* full for POLL_MS (or stopping): it expires in the agent */
	fd = ab_agent_egress_claim (f->socket_path, conn, stream_done, f->streams, &err);
	if (fd < 0) {
		stream_done (f->streams);
		return;
	}
	route (f, port, fd);
}

static void *
forward_main (void *arg)
{
	struct ab_forward_s *f = arg;
	ab_error_t err = AB_ERROR_INIT;

	while (!f->stop) {
		int fd = -1, r;
		uint16_t port = 0;
		uint32_t conn = 0;
		if (f->fd_passing)
			r = ab_agent_egress_next_port (f->conn, &fd, &port, POLL_MS, &err);
		else
			r = ab_agent_egress_next_ready (f->conn, &conn, &port, POLL_MS, &err);
		if (r < 0)
			break; /* the agent is gone (or stop shut the connection down) */
		if (r > 0 && f->fd_passing)
			route (f, port, fd);
		else if (r > 0)
			claim_one (f, conn, port);
	}
	return NULL;
}

/* ---- start and stop -------------------------------------------------------------- */

static int
subscribe (struct ab_forward_s *f, uint16_t port, ab_error_t *err)
{
	if (f->fd_passing)
		return ab_agent_egress_listen (f->conn, port, err);
	if (!(ab_agent_info (f->conn)->features & AB_AGENT_FEATURE_EGRESS_STREAM))
		return ab_error (err, 0, AB_E_CONFLICT,
		                 "the sandbox's agent cannot forward ports without fd passing "
		                 "(an older agentbox-agent)");
	return ab_agent_egress_listen_stream (f->conn, port, AB_FORWARD_CLAIM_MS, err);
}

static void
forward_free (struct ab_forward_s *f)
{
	ab_agent_close (f->conn);
	streams_unref (f->streams);
	free (f->socket_path);
	free (f);
}

ab_forward_t *
ab_forward_start (const char *socket_path, ab_egress_relay_t *egress, ab_cred_relay_t *cred,
                  bool fd_passing, ab_error_t *err)
{
	struct ab_forward_s *f;

	if (!egress && !cred) {
		ab_error (err, 0, AB_E_INVALID, "no forwarded port to serve");
		return NULL;
	}
	f = xcalloc (1, sizeof *f);
	f->socket_path = xstrdup (socket_path);
	f->egress = egress;
	f->cred = cred;
	f->fd_passing = fd_passing;
	f->streams = xcalloc (1, sizeof *f->streams);
	pthread_mutex_init (&f->streams->lock, NULL);
	pthread_cond_init (&f->streams->room, NULL);
	f->streams->refs = 1;
	if (!(f->conn = ab_agent_connect (socket_path, err))
	    || (egress && subscribe (f, AB_EGRESS_PORT, err) < 0)
	    || (cred && subscribe (f, AB_CRED_PORT, err) < 0)) {
		forward_free (f);
		return NULL;
	}
	if ((errno = pthread_create (&f->thread, NULL, forward_main, f)) != 0) {
		ab_error (err, errno, AB_E_SYSTEM, "forwarded ports thread");
		forward_free (f);
		return NULL;
	}
	return f;
}

void
ab_forward_stop (ab_forward_t *f)
{
	if (!f)
		return;
	f->stop = true;
	/* Wake its wait on the agent now rather than after POLL_MS. */
	shutdown (f->conn->fd, SHUT_RDWR);
	pthread_mutex_lock (&f->streams->lock);
	pthread_cond_broadcast (&f->streams->room);
	pthread_mutex_unlock (&f->streams->lock);
	pthread_join (f->thread, NULL);
	forward_free (f);
}
