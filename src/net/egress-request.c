/* Request heads: find the target, ask the policy, resolve once, vet every
 * answer, dial a vetted literal, and write the head sent upstream; refuse
 * with a clear answer otherwise.  SECURITY.md, the network edge, is the
 * spec: the decision is on the address dialed, and the name is never
 * resolved again after the answers were vetted (DNS rebinding).  Reading
 * and parsing the head, the bodies and the response are the relay core's
 * (relay.h). */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/xalloc.h"
#include "net/egress-internal.h"
#include "net/http-relay.h"

/* Longest authority we hand to the policy parser: a 253-character name,
 * brackets, colon and port; anything longer is refused as such. */
#define AUTHORITY_MAX 300

void
ab_egress_format_hostport (const struct ab_hostport_s *hp, char *buf, size_t len)
{
	snprintf (buf, len, hp->kind == AB_HOST_IPV6 ? "[%s]:%u" : "%s:%u", hp->host,
	          (unsigned)hp->port);
}

/* "host:port" once the target parsed, else the raw target. */
static const char *
req_label (const struct ab_egress_conn_s *c, char *buf, size_t len)
{
	if (c->rq.have_hp) {
		ab_egress_format_hostport (&c->rq.hp, buf, len);
		return buf;
	}
	return c->rq.target[0] ? c->rq.target : "-";
}

/* "<METHOD> <host>:<port><sep><what>", sep " -> ", " denied: ", ... */
static void
log_decision (const struct ab_egress_conn_s *c, const char *sep, const char *what)
{
	char label[AB_HOST_MAX + 16];
	char line[AB_HOST_MAX + AB_EGRESS_REASON_MAX + 64];
	int n;

	if (ab_egress_conn_proxy (c)->cfg.log == NULL)
		return;
	n = snprintf (line, sizeof line, "%s %s%s%s\n", c->rq.method[0] ? c->rq.method : "-",
	              req_label (c, label, sizeof label), sep, what);
	if (n >= (int)sizeof line) {
		n = (int)sizeof line - 1;
		line[n - 1] = '\n';
	}
	if (n > 0)
		ab_egress_log (ab_egress_conn_proxy (c), line, (size_t)n);
}

void
ab_egress_audit_done (struct ab_egress_conn_s *c)
{
	const struct ab_egress_req_s *rq = &c->rq;
	struct ab_audit_record_s rec = {
		.time = rq->t_real,
		.sandbox = c->sandbox_id,
		.method = rq->method[0] ? rq->method : NULL,
		.host = rq->have_hp ? rq->hp.host : NULL,
		.port = rq->have_hp ? rq->hp.port : -1,
		.addr = rq->addr_text[0] ? rq->addr_text : NULL,
		.allowed = rq->verdict.allowed,
		.reason = rq->verdict.reason[0] ? rq->verdict.reason : NULL,
		.status = c->r.m.status,
		.error = c->r.m.error[0] ? c->r.m.error : NULL,
		.bytes_up = c->r.m.bytes_up,
		.bytes_down = c->r.m.bytes_down,
		.duration_us = ab_relay_now_us () - rq->t_start_us,
	};

	ab_audit_write (ab_egress_conn_proxy (c)->cfg.audit, &rec);
}

void
ab_egress_req_reset (struct ab_egress_conn_s *c)
{
	free (c->rq.cands);
	memset (&c->rq, 0, sizeof c->rq);
	clock_gettime (CLOCK_REALTIME, &c->rq.t_real);
	c->rq.t_start_us = ab_relay_now_us ();
}

int
ab_egress_refuse (struct ab_egress_conn_s *c, int status, bool denied, const char *reason)
{
	struct ab_egress_req_s *rq = &c->rq;
	char body[AB_EGRESS_REASON_MAX + 32];

	if (denied) {
		rq->verdict.allowed = false;
		if (reason != rq->verdict.reason)
			snprintf (rq->verdict.reason, sizeof rq->verdict.reason, "%s", reason);
		log_decision (c, status == 403 ? " denied: " : " rejected: ", reason);
	} else if (reason != c->r.m.error) {
		snprintf (c->r.m.error, sizeof c->r.m.error, "%s", reason);
	}
	if (c->r.m.resp_started) {
		/* The client already has part of a response: all it can get now
		 * is a connection that ends early. */
		ab_egress_audit_done (c);
		return AB_RELAY_CLOSE;
	}
	if (status == 403)
		snprintf (body, sizeof body, "egress denied: %s\n", reason);
	else
		snprintf (body, sizeof body, "%s\n", reason);
	c->r.m.status = status;
	ab_egress_audit_done (c);
	return ab_relay_answer (&c->r, status, body);
}

int
ab_egress_fail (struct ab_relay_conn_s *rc, ab_relay_fail_kind kind, int status, const char *reason)
{
	struct ab_egress_conn_s *c = ab_egress_conn (rc);

	/* A head that did not parse has no request of its own yet. */
	if (rc->state == AB_RELAY_ST_HEAD)
		ab_egress_req_reset (c);
	switch (kind) {
	case AB_RELAY_FAIL_CLIENT: return ab_egress_refuse (c, status, true, reason);
	case AB_RELAY_FAIL_UPSTREAM: return ab_egress_refuse (c, status, false, reason);
	case AB_RELAY_FAIL_LOST: break;
	}
	if (reason != rc->m.error)
		snprintf (rc->m.error, sizeof rc->m.error, "%s", reason);
	ab_egress_audit_done (c);
	return AB_RELAY_CLOSE;
}

/* Dial the next vetted candidate; every one of them passed the policy. */
static int
dial_next (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;

	while (rq->i_cand < rq->n_cands) {
		const struct ab_addr_s *a = &rq->cands[rq->i_cand++];
		struct sockaddr_storage ss;
		socklen_t sl = ab_addr_to_sockaddr (a, rq->hp.port, &ss);
		char text[AB_ADDR_STRLEN];
		int fd;

		snprintf (rq->addr_text, sizeof rq->addr_text,
		          a->family == AF_INET6 ? "[%s]:%u" : "%s:%u", ab_addr_format (a, text),
		          (unsigned)rq->hp.port);
		fd = socket (ss.ss_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
		if (fd >= 0
		    && (connect (fd, (struct sockaddr *)&ss, sl) == 0 || errno == EINPROGRESS)) {
			c->ustream.fd = fd;
			if (ab_egress_conn_watch_upstream (c) < 0)
				return ab_egress_refuse (c, 502, false,
				                         "cannot watch upstream socket");
			log_decision (c, " -> ", rq->addr_text);
			c->resolving = false;
			c->r.state = AB_RELAY_ST_CONNECT;
			c->r.t_phase = ab_relay_now_us ();
			return AB_RELAY_AGAIN;
		}
		snprintf (c->r.m.error, sizeof c->r.m.error, "connect to %s: %s", rq->addr_text,
		          strerror (errno));
		if (fd >= 0)
			close (fd);
	}
	return ab_egress_refuse (c, 502, false,
	                         c->r.m.error[0] ? c->r.m.error : "no address to dial");
}

int
ab_egress_connect_step (struct ab_relay_conn_s *rc)
{
	struct ab_egress_conn_s *c = ab_egress_conn (rc);
	int e = 0;
	socklen_t el = sizeof e;

	if (c->resolving || (!c->ustream.wr && !c->ustream.rd))
		return AB_RELAY_WAIT; /* the resolver's callback moves on */
	if (getsockopt (c->ustream.fd, SOL_SOCKET, SO_ERROR, &e, &el) < 0)
		e = errno;
	if (e == 0 && !c->ustream.wr)
		return AB_RELAY_WAIT; /* readable before writable: not connected yet */
	if (e != 0) {
		snprintf (c->r.m.error, sizeof c->r.m.error, "connect to %s: %s", c->rq.addr_text,
		          strerror (e));
		ab_egress_conn_close_upstream (c);
		return dial_next (c);
	}
	ab_relay_set_nodelay (c->ustream.fd);
	if (c->rq.is_connect)
		return ab_egress_tunnel_start (c);
	snprintf (c->up_host, sizeof c->up_host, "%s", c->rq.hp.host);
	c->up_port = c->rq.hp.port;
	snprintf (c->up_addr, sizeof c->up_addr, "%s", c->rq.addr_text);
	c->r.state = AB_RELAY_ST_FORWARD;
	return AB_RELAY_AGAIN;
}

static void
on_resolved (void *arg, const struct ab_resolve_result_s *res)
{
	struct ab_egress_conn_s *c = arg;
	struct ab_egress_req_s *rq = &c->rq;
	char why[AB_EGRESS_REASON_MAX];

	c->rjob = NULL;
	c->resolving = false;
	if (res->gai_error != 0) {
		snprintf (why, sizeof why, "cannot resolve %s: %s", rq->hp.host,
		          gai_strerror (res->gai_error));
		ab_relay_conn_continue (&c->r, ab_egress_refuse (c, 502, false, why));
		return;
	}
	/* Every answer is vetted: one bad answer denies the name, so an
	 * attacker's DNS cannot hide 169.254.169.254 behind a public address
	 * and win a race for which one gets dialed. */
	for (size_t i = 0; i < res->n; i++) {
		struct ab_egress_verdict_s v;
		if (!ab_egress_check_ab_addr (c->policy, &res->addrs[i], &v)) {
			rq->verdict = v;
			ab_relay_conn_continue (
			        &c->r, ab_egress_refuse (c, 403, true, rq->verdict.reason));
			return;
		}
		if (i == 0)
			rq->verdict = v;
	}
	rq->cands = xmalloc (res->n * sizeof *rq->cands);
	memcpy (rq->cands, res->addrs, res->n * sizeof *rq->cands);
	rq->n_cands = res->n;
	ab_relay_conn_continue (&c->r, dial_next (c));
}

static int
start_resolve (struct ab_egress_conn_s *c)
{
	ab_error_t err = AB_ERROR_INIT;

	c->rjob = ab_resolver_submit (ab_egress_conn_proxy (c)->resolver, c->rq.hp.host,
	                              on_resolved, c, &err);
	if (c->rjob == NULL)
		return ab_egress_refuse (c, 503, false, "resolver busy");
	c->resolving = true;
	c->r.state = AB_RELAY_ST_CONNECT;
	c->r.t_phase = ab_relay_now_us ();
	return AB_RELAY_WAIT;
}

static bool
can_reuse_upstream (const struct ab_egress_conn_s *c)
{
	return !c->rq.is_connect && c->r.us != NULL && c->r.up_idle && c->up_port == c->rq.hp.port
	       && strcmp (c->up_host, c->rq.hp.host) == 0;
}

/* The policy decision for rq.hp, then the way to an address. */
static int
decide (struct ab_egress_conn_s *c)
{
	struct ab_egress_req_s *rq = &c->rq;

	if (!ab_egress_check_host (c->policy, &rq->hp, &rq->verdict))
		return ab_egress_refuse (c, 403, true, rq->verdict.reason);
	if (can_reuse_upstream (c)) {
		/* Same host and port on a kept-alive upstream: the address it was
		 * dialed at was vetted for this very name. */
		snprintf (rq->addr_text, sizeof rq->addr_text, "%s", c->up_addr);
		log_decision (c, " -> ", rq->addr_text);
		c->r.up_idle = false;
		c->r.state = AB_RELAY_ST_FORWARD;
		ab_relay_forward_reused (&c->r);
		return AB_RELAY_AGAIN;
	}
	ab_egress_conn_close_upstream (c);
	if (rq->hp.kind != AB_HOST_NAME) {
		/* check_host vetted the literal itself. */
		rq->cands = xmalloc (sizeof *rq->cands);
		rq->cands[0] = rq->hp.addr;
		rq->n_cands = 1;
		return dial_next (c);
	}
	return start_resolve (c);
}

int
ab_egress_redial (struct ab_relay_conn_s *rc)
{
	/* The upstream is gone, so this decides and dials afresh. */
	return decide ((struct ab_egress_conn_s *)rc);
}

/* Parse an authority into rq.hp; a refusal is the policy's (403). */
static int
parse_authority (struct ab_egress_conn_s *c, const char *a, size_t len, uint16_t default_port)
{
	char buf[AUTHORITY_MAX + 1];
	ab_error_t err = AB_ERROR_INIT;

	if (len > AUTHORITY_MAX)
		return ab_egress_refuse (c, 403, true, "host too long");
	memcpy (buf, a, len);
	buf[len] = '\0';
	if (ab_hostport_parse (buf, default_port, &c->rq.hp, &err) < 0)
		return ab_egress_refuse (c, 403, true, err.msg);
	c->rq.have_hp = true;
	return 0;
}

static int
connect_request (struct ab_egress_conn_s *c, const struct ab_http_head_s *h)
{
	c->rq.is_connect = true;
	/* RFC 9110 9.3.6: CONNECT content has no defined meaning; bytes after
	 * the head are tunnel data, so a declared body is a confusion attempt. */
	if (h->has_content_length || h->has_transfer_encoding)
		return ab_egress_refuse (c, 400, true, "CONNECT with a body");
	if (parse_authority (c, h->target, h->target_len, 0) != 0)
		return AB_RELAY_AGAIN;
	if (!c->rq.hp.has_port)
		return ab_egress_refuse (c, 403, true, "invalid port");
	ab_iobuf_consume (&c->r.cin, h->head_len);
	return decide (c);
}

/* The head sent upstream: origin form, Host from the URL (RFC 9112 3.2.2:
 * a proxy replaces Host with the target URI's authority), hop-by-hop
 * fields removed, framing regenerated from what the parser understood. */
static void
forward_prepare (struct ab_egress_conn_s *c, const struct ab_http_head_s *h, const char *path,
                 size_t path_len)
{
	const struct ab_hostport_s *hp = &c->rq.hp;
	struct ab_iobuf_s *b = &c->r.uout;

	ab_iobuf_free (b);
	ab_iobuf_printf (b, "%s %s%.*s HTTP/1.%d\r\n", c->rq.method,
	                 path_len == 0 || path[0] == '?' ? "/" : "", (int)path_len, path,
	                 h->version_minor);
	ab_iobuf_printf (b, hp->kind == AB_HOST_IPV6 ? "Host: [%s]" : "Host: %s", hp->host);
	if (hp->port != 80)
		ab_iobuf_printf (b, ":%u", (unsigned)hp->port);
	ab_iobuf_append (b, "\r\n", 2);
	ab_http_append_fields (b, h, AB_HTTP_F_HOP | AB_HTTP_F_HOST | AB_HTTP_F_FRAMING);
	ab_http_append_framing (b, h->body, h->has_content_length, h->content_length);
	ab_iobuf_append (b, "\r\n", 2);
	ab_relay_forward_begin (&c->r, h);
}

static int
absolute_request (struct ab_egress_conn_s *c, const struct ab_http_head_s *h)
{
	struct ab_http_uri_s u;

	switch (ab_http_split_uri (h->target, h->target_len, &u)) {
	case AB_URI_HTTP: break;
	case AB_URI_NOT_ABSOLUTE:
		return ab_egress_refuse (c, 400, true, "absolute-URI request required");
	case AB_URI_HTTPS: return ab_egress_refuse (c, 400, true, "use CONNECT for https");
	case AB_URI_OTHER_SCHEME: return ab_egress_refuse (c, 400, true, "unsupported URI scheme");
	case AB_URI_INVALID: return ab_egress_refuse (c, 400, true, "invalid absolute URI");
	}
	if (parse_authority (c, u.authority, u.authority_len, 80) != 0)
		return AB_RELAY_AGAIN;
	forward_prepare (c, h, u.path, u.path_len);
	ab_iobuf_consume (&c->r.cin, h->head_len);
	return decide (c);
}

int
ab_egress_request (struct ab_relay_conn_s *rc, const struct ab_http_head_s *h, size_t head_len)
{
	struct ab_egress_conn_s *c = ab_egress_conn (rc);

	(void)head_len;
	ab_egress_req_reset (c);
	snprintf (c->rq.target, sizeof c->rq.target, "%.*s", (int)h->target_len, h->target);
	if (h->method_len >= AB_EG_METHOD_MAX)
		return ab_egress_refuse (c, 501, true, "method not supported");
	memcpy (c->rq.method, h->method, h->method_len);
	c->rq.method[h->method_len] = '\0';
	/* Methods are case-sensitive (RFC 9110 9.1). */
	c->r.m.is_head = strcmp (c->rq.method, "HEAD") == 0;
	if (strcmp (c->rq.method, "CONNECT") == 0)
		return connect_request (c, h);
	return absolute_request (c, h);
}

int
ab_egress_timeout (struct ab_relay_conn_s *rc)
{
	struct ab_egress_conn_s *c = ab_egress_conn (rc);

	switch (rc->state) {
	case AB_RELAY_ST_HEAD:
		if (rc->t_head_start == 0)
			return AB_RELAY_CLOSE;    /* idle keep-alive client */
		memset (&rc->m, 0, sizeof rc->m); /* nothing of the last exchange */
		ab_egress_req_reset (c);
		return ab_egress_refuse (c, 408, true, "request head timeout");
	case AB_RELAY_ST_CONNECT:
		if (c->resolving) {
			ab_resolve_cancel (ab_egress_conn_proxy (c)->resolver, c->rjob);
			c->rjob = NULL;
			c->resolving = false;
			return ab_egress_refuse (c, 502, false, "name resolution timed out");
		}
		snprintf (rc->m.error, sizeof rc->m.error, "connect to %s: timed out",
		          c->rq.addr_text);
		return ab_egress_refuse (c, 502, false, rc->m.error);
	case AB_RELAY_ST_FORWARD: return ab_egress_refuse (c, 504, false, "upstream idle timeout");
	case AB_RELAY_ST_TUNNEL:
		snprintf (rc->m.error, sizeof rc->m.error, "idle timeout");
		ab_egress_audit_done (c);
		return AB_RELAY_CLOSE;
	case AB_RELAY_ST_CLOSING: break;
	}
	return AB_RELAY_CLOSE;
}
