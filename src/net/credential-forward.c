/* Forwarding one request: set up (or reuse) the upstream connection
 * (ab_http_client: resolve, dial, proxy CONNECT, verified TLS) and hand
 * the exchange to the relay core's pump (relay.h), which streams both
 * bodies as they arrive.  Every failure is explained on the log ("upstream
 * <name>: <why>"); one before the response head is also answered 502
 * "upstream request failed" after the contract's line "upstream <name>
 * request failed" (credential-proxy.h); after the head all the client can
 * learn is an early end of the connection. */
#include <errno.h>
#include <string.h>

#include "net/credential-internal.h"

static void
log_why (struct ab_cp_conn_s *c, const char *reason)
{
	if (c->ups != NULL)
		ab_cp_log (ab_cp_conn_proxy (c), "upstream %s: %s\n", c->ups->name, reason);
}

static int
upstream_failed (struct ab_cp_conn_s *c, const char *reason)
{
	if (c->ups != NULL)
		ab_cp_log (ab_cp_conn_proxy (c), "upstream %s request failed\n", c->ups->name);
	log_why (c, reason);
	if (c->r.m.resp_started)
		return AB_RELAY_CLOSE; /* all the client can learn now is an early end */
	return ab_cp_answer (c, 502, "upstream request failed\n");
}

int
ab_cp_fail (struct ab_relay_conn_s *rc, ab_relay_fail_kind kind, int status, const char *reason)
{
	struct ab_cp_conn_s *c = ab_cp_conn (rc);
	char body[AB_RELAY_ERROR_MAX + 2];

	switch (kind) {
	case AB_RELAY_FAIL_CLIENT:
		if (rc->m.resp_started)
			return AB_RELAY_CLOSE;
		snprintf (body, sizeof body, "%s\n", reason);
		return ab_cp_answer (c, status, body);
	case AB_RELAY_FAIL_UPSTREAM: return upstream_failed (c, reason);
	case AB_RELAY_FAIL_LOST: break;
	}
	log_why (c, reason);
	return AB_RELAY_CLOSE;
}

void
ab_cp_close_upstream (struct ab_relay_conn_s *rc)
{
	struct ab_cp_conn_s *c = ab_cp_conn (rc);

	/* A TLS close_notify may go to a peer that is gone. */
	if (c->up != NULL) {
		ab_relay_sigpipe_guard (rc->relay);
		rc->relay->epipe = true;
	}
	ab_http_client_free (c->up);
	c->up = NULL;
	rc->us = NULL;
	rc->up_idle = false;
	c->up_ups = NULL;
	ab_cred_config_unref (c->up_cfg);
	c->up_cfg = NULL;
	ab_iobuf_free (&rc->uin);
}

static void
upstream_notify (void *arg)
{
	ab_relay_conn_run (arg);
}

static bool
can_reuse (const struct ab_cp_conn_s *c)
{
	return c->up != NULL && c->r.up_idle && c->up_cfg == c->cfg && c->up_ups == c->ups;
}

/* A new upstream connection for the current upstream of c. */
static int
open_upstream (struct ab_cp_conn_s *c)
{
	ab_error_t err = AB_ERROR_INIT;

	ab_cp_close_upstream (&c->r);
	c->up = ab_http_client_new (&ab_cp_conn_proxy (c)->client_cfg, &c->ups->url,
	                            upstream_notify, &c->r, &err);
	if (c->up == NULL)
		return upstream_failed (c, err.msg);
	c->up_cfg = ab_cred_config_ref (c->cfg);
	c->up_ups = c->ups;
	return 0;
}

int
ab_cp_redial (struct ab_relay_conn_s *rc)
{
	struct ab_cp_conn_s *c = ab_cp_conn (rc);
	int r = open_upstream (c);

	if (r != 0)
		return r;
	rc->state = AB_RELAY_ST_CONNECT;
	rc->t_phase = rc->t_last = ab_relay_now_us ();
	return AB_RELAY_AGAIN;
}

int
ab_cp_forward_start (struct ab_cp_conn_s *c, const struct ab_http_head_s *h,
                     const struct ab_cp_target_s *t)
{
	const char *proxy_auth = NULL;
	bool absolute;
	bool reuse = can_reuse (c);
	int r;

	if (!reuse && (r = open_upstream (c)) != 0)
		return r;
	c->r.up_idle = false;
	absolute = ab_http_client_absolute_form (c->up, &proxy_auth);
	ab_iobuf_free (&c->r.uout);
	ab_cp_build_request (&c->r.uout, h, c->cfg, c->ups, t, absolute, proxy_auth);
	ab_relay_forward_begin (&c->r, h);
	if (reuse)
		ab_relay_forward_reused (&c->r);
	c->r.state = reuse ? AB_RELAY_ST_FORWARD : AB_RELAY_ST_CONNECT;
	c->r.t_phase = c->r.t_last = ab_relay_now_us ();
	return AB_RELAY_AGAIN;
}

int
ab_cp_connect_step (struct ab_relay_conn_s *rc)
{
	struct ab_cp_conn_s *c = ab_cp_conn (rc);
	ab_error_t err = AB_ERROR_INIT;
	int r;

	/* The TLS handshake writes. */
	ab_relay_sigpipe_guard (rc->relay);
	r = ab_http_client_connect_step (c->up, &err);

	if (r < 0) {
		rc->relay->epipe = true; /* a handshake may have written to a gone peer */
		return upstream_failed (c, err.msg);
	}
	if (r == 0)
		return AB_RELAY_WAIT;
	rc->us = ab_http_client_stream (c->up);
	rc->state = AB_RELAY_ST_FORWARD;
	rc->t_last = ab_relay_now_us ();
	return AB_RELAY_AGAIN;
}

int
ab_cp_timeout (struct ab_relay_conn_s *rc)
{
	struct ab_cp_conn_s *c = ab_cp_conn (rc);

	switch (rc->state) {
	case AB_RELAY_ST_HEAD:
		if (rc->t_head_start == 0)
			return AB_RELAY_CLOSE; /* an idle keep-alive client */
		return ab_cp_answer (c, 408, "request head timeout\n");
	case AB_RELAY_ST_CONNECT: return upstream_failed (c, "connect timed out");
	case AB_RELAY_ST_FORWARD:
		if (!rc->m.req_done)
			return ab_relay_fail (rc, AB_RELAY_FAIL_LOST, 0,
			                      "client idle in its request body");
		return upstream_failed (c, "upstream idle timeout");
	case AB_RELAY_ST_TUNNEL:
	case AB_RELAY_ST_CLOSING: break;
	}
	return AB_RELAY_CLOSE;
}
