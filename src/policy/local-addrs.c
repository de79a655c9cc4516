/* The host's own interface addresses: the one system call of the policy
 * layer, kept apart so everything else stays pure.  A connection to any of
 * them reaches the host's own services, so the policy treats them like
 * loopback (SECURITY.md: "every address of the host's own interfaces"). */
#include "policy/netaddr.h"

#include <errno.h>
#include <ifaddrs.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <pthread.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/xalloc.h"

int
ab_addr_list_local (struct ab_addr_s **out, size_t *n_out, ab_error_t *err)
{
	struct ifaddrs *ifa = NULL;
	struct ab_addr_s *list;
	size_t n = 0, cap = 0;

	if (getifaddrs (&ifa) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "getifaddrs");
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next)
		cap++;
	list = xcalloc (cap ? cap : 1, sizeof *list);
	for (struct ifaddrs *i = ifa; i; i = i->ifa_next) {
		if (i->ifa_addr && ab_addr_from_sockaddr (i->ifa_addr, &list[n]) == 0)
			n++;
	}
	freeifaddrs (ifa);
	*out = list;
	*n_out = n;
	return 0;
}

/* The live list: reloaded when the address-change socket has news. */
static struct {
	pthread_mutex_t lock;
	int nl;     /* NETLINK_ROUTE, IPv4 and IPv6 address groups; -1 = not open */
	bool valid; /* list holds a successful read */
	struct ab_addr_s *list;
	size_t n;
} host = { PTHREAD_MUTEX_INITIALIZER, -1, false, NULL, 0 };

static int
open_watch (ab_error_t *err)
{
	struct sockaddr_nl sa = { .nl_family = AF_NETLINK,
		                  .nl_groups = RTMGRP_IPV4_IFADDR | RTMGRP_IPV6_IFADDR };
	int fd = socket (AF_NETLINK, SOCK_RAW | SOCK_NONBLOCK | SOCK_CLOEXEC, NETLINK_ROUTE);

	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "netlink socket");
	if (bind (fd, (struct sockaddr *)&sa, sizeof sa) < 0) {
		int e = errno;
		close (fd);
		return ab_error (err, e, AB_E_SYSTEM, "netlink bind");
	}
	return fd;
}

/* Drain the socket; true when anything arrived (an overflow too: then
 * changes were lost, so the list must be read again). */
static bool
changed (int fd)
{
	char buf[8192];
	bool any = false;

	for (;;) {
		ssize_t n = recv (fd, buf, sizeof buf, MSG_DONTWAIT);
		if (n > 0 || (n < 0 && errno == ENOBUFS)) {
			any = true;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		return any;
	}
}

static int
refresh_locked (ab_error_t *err)
{
	struct ab_addr_s *list = NULL;
	size_t n = 0;

	/* Open the watch before reading, so no change falls between. */
	if (host.nl < 0 && (host.nl = open_watch (err)) < 0)
		return -1;
	if (host.valid && !changed (host.nl))
		return 0;
	if (ab_addr_list_local (&list, &n, err) < 0) {
		host.valid = false;
		return -1;
	}
	free (host.list);
	host.list = list;
	host.n = n;
	host.valid = true;
	return 0;
}

bool
ab_addr_is_host_local (const struct ab_addr_s *a, ab_error_t *err)
{
	bool found = false;

	pthread_mutex_lock (&host.lock);
	if (refresh_locked (err) == 0)
		for (size_t i = 0; i < host.n && !found; i++)
			found = ab_addr_equal (&host.list[i], a);
	pthread_mutex_unlock (&host.lock);
	return found;
}
