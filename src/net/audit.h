/* The egress audit log: one JSON object per line, one line per decision
 * (a tunnel, a forwarded request, or a refusal), written when the decision's
 * outcome is known so the line carries the bytes and the duration.
 *
 * Never a secret: no request path or query, no header, no body; only the
 * host, port and address the policy decided on and why. */
#ifndef AB_NET_AUDIT_H
#define AB_NET_AUDIT_H

#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include "base/error.h"

struct ab_audit_s;

struct ab_audit_record_s {
	struct timespec time; /* CLOCK_REALTIME when the request arrived */
	const char *sandbox;  /* NULL when the proxy serves no sandbox */
	const char *method;   /* "CONNECT", "GET", ... */
	const char *host;     /* normalised host, NULL if unparseable */
	int port;             /* -1 when unknown */
	const char *addr;     /* the address dialed ("127.0.0.1:8080"), or NULL */
	bool allowed;         /* the policy's decision */
	const char *reason;   /* the policy's reason, or why the request was refused */
	int status;           /* HTTP status the client got (200 for a tunnel), 0 if none */
	const char *error;    /* what went wrong after the decision, or NULL */
	uint64_t bytes_up;    /* client -> upstream, body or tunnel bytes */
	uint64_t bytes_down;  /* upstream -> client */
	uint64_t duration_us;
};

/* path "-" is stdout; a file is opened O_APPEND (created 0600). */
struct ab_audit_s *ab_audit_open (const char *path, ab_error_t *err);
/* Adopt an open fd (e.g. a pipe to a collector); the audit owns it. */
struct ab_audit_s *ab_audit_from_fd (int fd);
void ab_audit_close (struct ab_audit_s *a);

/* The line, without newline, in a malloc'ed string (exposed for tests). */
char *ab_audit_format (const struct ab_audit_record_s *r);
/* Write one line with a single write(2) (O_APPEND keeps concurrent writers'
 * lines whole).  Failures are counted, not fatal: an audit sink that
 * stalls must not stop the proxy (see docs/egress-proxy.md). */
void ab_audit_write (struct ab_audit_s *a, const struct ab_audit_record_s *r);
uint64_t ab_audit_failures (const struct ab_audit_s *a);

#endif
