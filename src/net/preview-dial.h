/* Blocking-style socket I/O with a deadline, for the preview bridge's
 * one-shot clients (`request`, `signal`, the WebSocket handshake): every
 * wait is a poll(2) bounded by the caller's monotonic deadline, so no
 * silent peer can hold the process past its timeoutMs.
 *
 * Errors: a missed deadline is an AB_E_LIMIT error with errnum ETIMEDOUT;
 * anything else is AB_E_SYSTEM (connect, send) with the errno. */
#ifndef AB_NET_PREVIEW_DIAL_H
#define AB_NET_PREVIEW_DIAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "base/sys.h"
#include "net/iobuf.h"

/* Milliseconds left until deadline, clamped to [0, INT_MAX] for poll. */
int ab_preview_ms_left (uint64_t deadline_ms);

/* Resolve host (a name or an IP literal) and connect to the first address
 * that answers, before deadline.  Returns a non-blocking, close-on-exec
 * TCP socket with TCP_NODELAY. */
int ab_preview_dial (const char *host, uint16_t port, uint64_t deadline_ms, ab_error_t *err);

/* Send all of p[0..n) before deadline (MSG_NOSIGNAL: a closed peer is
 * EPIPE, not a signal). */
int ab_preview_send_all (int fd, const void *p, size_t n, uint64_t deadline_ms, ab_error_t *err);

/* Wait for bytes and append them to b (holding at most max_cap bytes).
 * Returns the count, 0 at EOF, or -1 (ETIMEDOUT, a reset, ENOBUFS when b
 * is full). */
ssize_t ab_preview_recv (int fd, struct ab_iobuf_s *b, size_t max_cap, uint64_t deadline_ms,
                         ab_error_t *err);

/* True when err says the deadline passed. */
bool ab_preview_timed_out (const ab_error_t *err);

#endif
