#include "session/cred-relay.h"

#include <stdio.h>
#include <stdlib.h>

#include "base/log.h"
#include "base/xalloc.h"
#include "net/credential-proxy.h"
#include "session/fd-relay.h"

struct ab_cred_relay_s {
	ab_fd_relay_t *thread;
	ab_cred_proxy_t *proxy;
};

static void
serve_conn (void *arg, int fd)
{
	ab_cred_relay_t *r = arg;
	ab_error_t err = AB_ERROR_INIT;

	/* As in egress-relay.c: nobody waits for this error but the log. */
	if (ab_cred_proxy_serve_fd (r->proxy, fd, &err) < 0)
		ab_log_error (AB_LOG_WARN, &err, "credential connection refused");
}

void
ab_cred_relay_stop (ab_cred_relay_t *r)
{
	if (!r)
		return;
	ab_fd_relay_stop (r->thread);
	if (r->proxy)
		ab_cred_proxy_free (r->proxy);
	ab_fd_relay_free (r->thread);
	free (r);
}

ab_cred_relay_t *
ab_cred_relay_start (struct ab_cred_config_s *config, ab_error_t *err)
{
	ab_cred_relay_t *r = xcalloc (1, sizeof *r);
	/* Upstream failures go to our stderr ("upstream NAME request
	 * failed"); the proxy never logs a token or a secret. */
	struct ab_cred_proxy_config_s cfg = { .config_path = NULL, .log = stderr };

	ab_cred_limits_default (&cfg.limits);
	if (!(r->thread = ab_fd_relay_new (err))
	    || !(r->proxy = ab_cred_proxy_new (ab_fd_relay_base (r->thread), &cfg, err))) {
		ab_cred_config_unref (config);
		ab_cred_relay_stop (r);
		return NULL;
	}
	ab_cred_proxy_set_config (r->proxy, config);
	if (ab_fd_relay_start (r->thread, serve_conn, r, err) < 0) {
		ab_cred_relay_stop (r);
		return NULL;
	}
	return r;
}

void
ab_cred_relay_submit (ab_cred_relay_t *r, int fd)
{
	ab_fd_relay_submit (r->thread, fd);
}
