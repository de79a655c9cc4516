/* In the microVM guest: the agent's end of the host's multiplexer, run in
 * the agent's own event loop (no helper process: a helper would be a
 * uid-0 process that commands, also uid 0, could signal; PID 1 cannot be
 * signalled from inside).
 *
 * The agent listens on an abstract unix socket; each connection the host
 * OPENs becomes a connect() to it from this very process, relayed to the
 * port with per-connection credit (proto/mux-relay.c).  Sessions are
 * accepted only from peer pid 1 (SO_PEERCRED, listen.c): a command that
 * connects to the same name is refused, since no command can be PID 1.
 * If the stream to the host breaks, nobody can reach the sandbox any
 * more: the guest powers off. */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/reboot.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/service.h"
#include "agent/vm.h"
#include "base/log.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"
#include "proto/mux-relay.h"

#define AGENT_NAME "agentbox-agent"

static ab_mux_relay_t *relay;
static struct ab_watch_s **watches; /* by fd; never moved once registered */
static size_t n_watches;
static struct sockaddr_un agent_addr;
static socklen_t agent_len;

static void
check_relay (void)
{
	const char *why = ab_mux_relay_failed (relay);

	if (!why)
		return;
	ab_log (AB_LOG_ERROR, "vm: the host's stream: %s; powering off", why);
	sync ();
	reboot (RB_POWER_OFF);
	_exit (125);
}

static void
on_fd (struct ab_watch_s *w, uint32_t events)
{
	int fd = (int)(intptr_t)w->ctx;
	unsigned ev = (events & EPOLLIN ? AB_MUX_EV_IN : 0U)
	              | (events & EPOLLOUT ? AB_MUX_EV_OUT : 0U)
	              | (events & (EPOLLHUP | EPOLLERR) ? AB_MUX_EV_HUP : 0U);

	ab_mux_relay_event (relay, fd, ev);
	check_relay ();
}

static void
watch_cb (void *ctx, int fd, unsigned events)
{
	uint32_t ep =
	        (events & AB_MUX_EV_IN ? EPOLLIN : 0U) | (events & AB_MUX_EV_OUT ? EPOLLOUT : 0U);
	struct ab_watch_s *w;

	if ((size_t)fd >= n_watches) {
		size_t n = (size_t)fd * 2 + 16;
		watches = xrealloc (watches, n * sizeof *watches);
		memset (watches + n_watches, 0, (n - n_watches) * sizeof *watches);
		n_watches = n;
	}
	if (!watches[fd]) {
		watches[fd] = xcalloc (1, sizeof **watches);
		watches[fd]->fd = -1;
	}
	w = watches[fd];
	if (events == 0)
		ab_loop_del (w); /* not even hangups until wanted again */
	else if (w->fd < 0)
		ab_loop_add (w, fd, ep, on_fd, (void *)(intptr_t)fd);
	else
		ab_loop_set (w, ep);
}

static void
forget_cb (void *ctx, int fd)
{
	if ((size_t)fd < n_watches && watches[fd])
		ab_loop_del (watches[fd]);
}

static int
open_cb (void *ctx, uint32_t id)
{
	int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	/* A listening unix socket with room in its backlog connects at once. */
	if (fd >= 0 && connect (fd, (struct sockaddr *)&agent_addr, agent_len) < 0) {
		close (fd);
		return -1;
	}
	return fd;
}

static const struct ab_mux_relay_ops_s ops = {
	.watch = watch_cb,
	.forget = forget_cb,
	.open = open_cb,
};

static int
listen_abstract (ab_error_t *err)
{
	int fd;

	if (ab_unix_abstract_addr (AGENT_NAME, &agent_addr, &agent_len, err) < 0)
		return -1;
	fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || bind (fd, (struct sockaddr *)&agent_addr, agent_len) < 0
	    || listen (fd, 128) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "listen for sessions");
	ab_session_allow_peer (1);
	return fd;
}

int
ab_vm_mux_start (int port_fd, ab_error_t *err)
{
	int fd = listen_abstract (err);

	if (fd < 0)
		return -1;
	relay = ab_mux_relay_new (port_fd, &ops, NULL);
	/* The host waits for this: the sandbox is ready. */
	ab_mux_relay_send_hello (relay);
	check_relay ();
	return fd;
}
