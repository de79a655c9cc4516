/* A thread with its own libevent loop that serves connections handed to
 * it from another thread: the plumbing shared by the host-side proxies of
 * `agentbox run` (egress-relay.h, cred-relay.h), so the session's relay
 * loop never waits on them.  Fds travel through a pipe as ints. */
#ifndef AB_SESSION_FD_RELAY_H
#define AB_SESSION_FD_RELAY_H

#include "base/error.h"

struct event_base;

typedef struct ab_fd_relay_s ab_fd_relay_t;
/* Called on the relay's thread; owns fd. */
typedef void (*ab_fd_relay_serve_fn) (void *ctx, int fd);

/* The loop and the pipe, no thread yet: build what serves on
 * ab_fd_relay_base first, then ab_fd_relay_start. */
ab_fd_relay_t *ab_fd_relay_new (ab_error_t *err);
struct event_base *ab_fd_relay_base (ab_fd_relay_t *r);
/* Start the thread.  Call only after the sandbox's processes were forked:
 * the caller becomes multi-threaded (SECURITY.md 12). */
int ab_fd_relay_start (ab_fd_relay_t *r, ab_fd_relay_serve_fn serve, void *ctx, ab_error_t *err);
/* Thread-safe: hand one connection (ownership passes). */
void ab_fd_relay_submit (ab_fd_relay_t *r, int fd);
/* Stop and join the thread (if started); the loop stays until
 * ab_fd_relay_free, so what was built on it can be freed first.  Safe on
 * NULL. */
void ab_fd_relay_stop (ab_fd_relay_t *r);
void ab_fd_relay_free (ab_fd_relay_t *r);

#endif
