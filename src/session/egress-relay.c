#include "session/egress-relay.h"

#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/xalloc.h"
#include "net/audit.h"
#include "net/egress-proxy.h"
#include "policy/egress-policy.h"

struct ab_egress_relay_s {
	struct event_base *base;
	struct event *wake;
	ab_egress_proxy_t *proxy;
	struct ab_egress_policy_s *policy;
	struct ab_audit_s *audit;
	char *sandbox_id;
	int pipe[2]; /* fds to serve travel as ints; -1 means stop */
	pthread_t thread;
};

struct ab_egress_policy_s *
ab_egress_policy_from_spec (const struct ab_egress_spec_s *egress, ab_error_t *err)
{
	struct ab_egress_policy_s *p = ab_egress_policy_new_sandbox ();
	int r = 0;

	if (egress->policy_file)
		r = ab_egress_policy_load_file (p, egress->policy_file, err);
	for (char **h = egress->allow_hosts; r == 0 && h && *h; h++)
		r = ab_egress_policy_add_allow_host (p, *h, err);
	for (char **h = egress->deny_hosts; r == 0 && h && *h; h++)
		r = ab_egress_policy_add_deny_host (p, *h, err);
	for (char **c = egress->allow_cidrs; r == 0 && c && *c; c++)
		r = ab_egress_policy_add_allow_cidr (p, *c, err);
	if (r == 0)
		r = ab_egress_policy_load_local_addrs (p, err);
	if (r < 0) {
		ab_egress_policy_free (p);
		return NULL;
	}
	return p;
}

static void
on_wake (evutil_socket_t fd, short what, void *arg)
{
	ab_egress_relay_t *r = arg;
	int conn;
	ab_error_t err = AB_ERROR_INIT;

	while (read (fd, &conn, sizeof conn) == (ssize_t) sizeof conn) {
		if (conn < 0) {
			event_base_loopbreak (r->base);
			return;
		}
		ab_egress_proxy_serve_fd (r->proxy, conn, r->sandbox_id, NULL, &err);
	}
}

static void *
run_loop (void *arg)
{
	ab_egress_relay_t *r = arg;
	event_base_dispatch (r->base);
	return NULL;
}

static void
relay_free (ab_egress_relay_t *r)
{
	if (r->proxy)
		ab_egress_proxy_free (r->proxy);
	if (r->wake)
		event_free (r->wake);
	if (r->base)
		event_base_free (r->base);
	if (r->audit)
		ab_audit_close (r->audit);
	if (r->policy)
		ab_egress_policy_free (r->policy);
	for (int i = 0; i < 2; i++)
		if (r->pipe[i] >= 0)
			close (r->pipe[i]);
	free (r->sandbox_id);
	free (r);
}

static int
relay_init (ab_egress_relay_t *r, const struct ab_egress_spec_s *egress, ab_error_t *err)
{
	struct ab_egress_proxy_config_s cfg = {0};

	if (!(r->policy = ab_egress_policy_from_spec (egress, err)))
		return -1;
	if (egress->audit_log && !(r->audit = ab_audit_open (egress->audit_log, err)))
		return -1;
	if (pipe2 (r->pipe, O_CLOEXEC) < 0 || ab_set_nonblock (r->pipe[0], 1) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	if (!(r->base = event_base_new ()))
		return ab_error (err, 0, AB_E_SYSTEM, "event_base_new");
	cfg.policy = r->policy;
	cfg.audit = r->audit;
	ab_egress_limits_default (&cfg.limits);
	if (!(r->proxy = ab_egress_proxy_new (r->base, &cfg, err)))
		return -1;
	r->wake = event_new (r->base, r->pipe[0], EV_READ | EV_PERSIST, on_wake, r);
	if (!r->wake || event_add (r->wake, NULL) < 0)
		return ab_error (err, 0, AB_E_SYSTEM, "egress relay event");
	if ((errno = pthread_create (&r->thread, NULL, run_loop, r)) != 0)
		return ab_error (err, errno, AB_E_SYSTEM, "egress relay thread");
	return 0;
}

ab_egress_relay_t *
ab_egress_relay_start (const struct ab_egress_spec_s *egress, const char *sandbox_id,
                       ab_error_t *err)
{
	ab_egress_relay_t *r = xcalloc (1, sizeof *r);

	r->pipe[0] = r->pipe[1] = -1;
	r->sandbox_id = xstrdup (sandbox_id);
	if (relay_init (r, egress, err) < 0) {
		relay_free (r);
		return NULL;
	}
	return r;
}

void
ab_egress_relay_submit (ab_egress_relay_t *r, int fd)
{
	/* A pipe write of <= PIPE_BUF bytes is atomic; the loop drains it. */
	if (ab_write_all (r->pipe[1], &fd, sizeof fd) < 0)
		close (fd);
}

void
ab_egress_relay_stop (ab_egress_relay_t *r)
{
	int stop = -1;

	if (!r)
		return;
	ab_write_all (r->pipe[1], &stop, sizeof stop);
	pthread_join (r->thread, NULL);
	relay_free (r);
}
