#include "backend/service-socket.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "base/cleanup.h"
#include "base/unix-socket.h"

int
ab_service_socket_listen (const char *path, int sock_flags, ab_error_t *err)
{
	cleanup_close int fd = -1;
	struct sockaddr_un sun;
	socklen_t len;
	struct stat st;

	/* Not ab_unix_listen: the mode is set between bind and listen, so no
	 * client can connect before the socket is 0600. */
	if (ab_unix_addr (path, &sun, &len, err) < 0)
		return -1;
	if (lstat (path, &st) == 0 && (!S_ISSOCK (st.st_mode) || unlink (path) < 0))
		return ab_error (err, EEXIST, AB_E_CONFLICT, "%s", path);
	fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | sock_flags, 0);
	if (fd < 0 || bind (fd, (struct sockaddr *)&sun, len) < 0 || chmod (path, 0600) < 0
	    || listen (fd, 128) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "agent socket %s", path);
	return steal_fd (&fd);
}
