#include "session/egress-relay.h"

#include <stdlib.h>

#include "base/log.h"
#include "base/xalloc.h"
#include "net/audit.h"
#include "net/egress-proxy.h"
#include "policy/egress-policy.h"
#include "session/fd-relay.h"

struct ab_egress_relay_s {
	ab_fd_relay_t *thread; /* its own loop and thread (fd-relay.h) */
	ab_egress_proxy_t *proxy;
	struct ab_egress_policy_s *policy;
	struct ab_audit_s *audit;
	char *sandbox_id;
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
serve_conn (void *arg, int fd)
{
	ab_egress_relay_t *r = arg;
	ab_error_t err = AB_ERROR_INIT;

	/* A connection refused (the proxy at its limit): the sandbox sees it
	 * closed; no caller waits for the error, so the log hears of it. */
	if (ab_egress_proxy_serve_fd (r->proxy, fd, r->sandbox_id, NULL, &err) < 0)
		ab_log_error (AB_LOG_WARN, &err, "sandbox %s: egress connection refused",
		              r->sandbox_id);
}

static void
relay_free (ab_egress_relay_t *r)
{
	ab_fd_relay_stop (r->thread);
	if (r->proxy)
		ab_egress_proxy_free (r->proxy);
	ab_fd_relay_free (r->thread);
	if (r->audit)
		ab_audit_close (r->audit);
	if (r->policy)
		ab_egress_policy_free (r->policy);
	free (r->sandbox_id);
	free (r);
}

static int
relay_init (ab_egress_relay_t *r, const struct ab_egress_spec_s *egress, ab_error_t *err)
{
	struct ab_egress_proxy_config_s cfg = { 0 };

	if (!(r->policy = ab_egress_policy_from_spec (egress, err)))
		return -1;
	if (egress->audit_log && !(r->audit = ab_audit_open (egress->audit_log, err)))
		return -1;
	if (!(r->thread = ab_fd_relay_new (err)))
		return -1;
	cfg.policy = r->policy;
	cfg.audit = r->audit;
	ab_egress_limits_default (&cfg.limits);
	if (!(r->proxy = ab_egress_proxy_new (ab_fd_relay_base (r->thread), &cfg, err)))
		return -1;
	return ab_fd_relay_start (r->thread, serve_conn, r, err);
}

ab_egress_relay_t *
ab_egress_relay_start (const struct ab_egress_spec_s *egress, const char *sandbox_id,
                       ab_error_t *err)
{
	ab_egress_relay_t *r = xcalloc (1, sizeof *r);

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
	ab_fd_relay_submit (r->thread, fd);
}

void
ab_egress_relay_stop (ab_egress_relay_t *r)
{
	if (r)
		relay_free (r);
}
