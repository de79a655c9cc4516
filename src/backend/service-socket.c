#include "backend/service-socket.h"

#include <errno.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include "base/cleanup.h"

int
ab_service_socket_listen (const char *path, int sock_flags, ab_error_t *err)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	cleanup_close int fd = -1;
	struct stat st;

	if (strlen (path) >= sizeof sun.sun_path)
		return ab_error (err, 0, AB_E_INVALID, "socket path %s is too long", path);
	strcpy (sun.sun_path, path);
	if (lstat (path, &st) == 0 && (!S_ISSOCK (st.st_mode) || unlink (path) < 0))
		return ab_error (err, EEXIST, AB_E_CONFLICT, "%s", path);
	fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | sock_flags, 0);
	if (fd < 0 || bind (fd, (struct sockaddr *)&sun, sizeof sun) < 0 || chmod (path, 0600) < 0
	    || listen (fd, 128) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "agent socket %s", path);
	return steal_fd (&fd);
}
