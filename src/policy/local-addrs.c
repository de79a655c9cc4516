/* The host's own interface addresses: the one system call of the policy
 * layer, kept apart so everything else stays pure.  A connection to any of
 * them reaches the host's own services, so the policy treats them like
 * loopback (SECURITY.md: "every address of the host's own interfaces"). */
#include "policy/netaddr.h"

#include <errno.h>
#include <ifaddrs.h>

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
