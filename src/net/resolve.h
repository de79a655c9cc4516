/* Name resolution off the event loop, in bounded time.
 *
 * getaddrinfo(3) blocks (NSS, /etc/hosts, DNS with resolv.conf's timeouts),
 * so a small pool of worker threads runs it; results come back to the
 * event loop through an eventfd.  The caller bounds the time it waits with
 * its own timer and cancels a job it no longer wants; a worker stuck on a
 * silent DNS server is bounded by resolv.conf's timeout, and the queue of
 * jobs waiting for a worker is bounded too (a full queue is refused, never
 * grown).
 *
 * The resolver is a name -> addresses function and nothing else: it never
 * dials, and it is only ever handed names that the policy already parsed
 * as names (ab_hostport_parse), never numeric-looking strings that
 * getaddrinfo would read as inet_aton forms. */
#ifndef AB_NET_RESOLVE_H
#define AB_NET_RESOLVE_H

#include <stddef.h>

#include "base/error.h"
#include "policy/netaddr.h"

struct event_base;
struct ab_resolver_s;
struct ab_resolve_job_s;

/* The answers, in getaddrinfo's order, duplicates removed.  gai_error is 0
 * or an EAI_* code (then n == 0). */
struct ab_resolve_result_s {
	int gai_error;
	size_t n;
	struct ab_addr_s *addrs;
};

/* Called on the event loop's thread; result is freed after the call. */
typedef void (*ab_resolve_cb) (void *arg, const struct ab_resolve_result_s *result);

struct ab_resolver_s *ab_resolver_new (struct event_base *base, unsigned threads,
                                       unsigned max_queued, ab_error_t *err);
/* Waits for the workers (at most one getaddrinfo each). */
void ab_resolver_free (struct ab_resolver_s *r);

/* Queue a lookup; returns the job (to cancel it) or NULL with an AB_E_LIMIT
 * error when max_queued jobs are already waiting. */
struct ab_resolve_job_s *ab_resolver_submit (struct ab_resolver_s *r, const char *name,
                                             ab_resolve_cb cb, void *arg, ab_error_t *err);
/* The callback will not be called; the job is freed by the resolver. */
void ab_resolve_cancel (struct ab_resolver_s *r, struct ab_resolve_job_s *job);

/* One lookup for a caller that may block (a request's thread), given up
 * after timeout_ms (AB_E_LIMIT; the lookup's thread then finishes on its
 * own).  *out is the caller's to free (out->addrs); a failed lookup is 0
 * with out->gai_error set. */
int ab_resolve_sync (const char *name, unsigned timeout_ms, struct ab_resolve_result_s *out,
                     ab_error_t *err);

#endif
