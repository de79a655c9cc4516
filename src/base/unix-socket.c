/* Unix stream sockets: see unix-socket.h. */
#include "base/unix-socket.h"

#include <errno.h>
#include <fcntl.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

static int
fill (const char *name, size_t off, struct sockaddr_un *sun, ab_error_t *err)
{
	size_t n = strlen (name);

	memset (sun, 0, sizeof *sun);
	sun->sun_family = AF_UNIX;
	if (off + n >= sizeof sun->sun_path)
		return ab_error (err, 0, AB_E_INVALID,
		                 "socket path %s is too long (a unix socket name holds at most "
		                 "%zu bytes)",
		                 name, sizeof sun->sun_path - 1 - off);
	memcpy (sun->sun_path + off, name, n);
	return 0;
}

int
ab_unix_addr (const char *path, struct sockaddr_un *sun, socklen_t *len, ab_error_t *err)
{
	if (fill (path, 0, sun, err) < 0)
		return -1;
	*len = sizeof *sun;
	return 0;
}

int
ab_unix_abstract_addr (const char *name, struct sockaddr_un *sun, socklen_t *len, ab_error_t *err)
{
	if (fill (name, 1, sun, err) < 0)
		return -1;
	*len = (socklen_t)(offsetof (struct sockaddr_un, sun_path) + 1 + strlen (name));
	return 0;
}

/* The address of a path too long for sun_path: its directory opened
 * (O_PATH, *dir_fd, closed by the caller once the socket is connected or
 * bound) and named through /proc/self/fd, which the kernel resolves like
 * any path.  Deep temporary directories (a test's, an engine's state
 * root) make such paths; only the last component has to fit. */
static int
long_addr (const char *path, struct sockaddr_un *sun, socklen_t *len, int *dir_fd, ab_error_t *err)
{
	const char *slash = strrchr (path, '/');
	char short_path[sizeof sun->sun_path + 32];

	if (!slash || slash == path)
		return ab_unix_addr (path, sun, len, err);
	cleanup_free char *dir = xstrndup (path, (size_t)(slash - path));
	*dir_fd = open (dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (*dir_fd < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "directory of %s", path);
	snprintf (short_path, sizeof short_path, "/proc/self/fd/%d%s", *dir_fd, slash);
	if (fill (short_path, 0, sun, err) < 0)
		return ab_error (err, 0, AB_E_INVALID,
		                 "socket path %s: its last component is too long for a "
		                 "unix socket name",
		                 path);
	*len = sizeof *sun;
	return 0;
}

/* A fresh SOCK_STREAM | SOCK_CLOEXEC socket and the address for path. */
static int
unix_socket (const char *path, struct sockaddr_un *sun, socklen_t *len, int *dir_fd,
             ab_error_t *err)
{
	int fd;

	*dir_fd = -1;
	if (strlen (path) < sizeof sun->sun_path) {
		if (ab_unix_addr (path, sun, len, err) < 0)
			return -1;
	} else if (long_addr (path, sun, len, dir_fd, err) < 0)
		return -1;
	fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "socket");
	return fd;
}

int
ab_unix_connect (const char *path, ab_error_t *err)
{
	struct sockaddr_un sun;
	socklen_t len;
	cleanup_close int dir_fd = -1;
	cleanup_close int fd = unix_socket (path, &sun, &len, &dir_fd, err);

	if (fd < 0)
		return -1;
	if (connect (fd, (struct sockaddr *)&sun, len) < 0)
		return ab_error (err, errno,
		                 errno == ENOENT || errno == ECONNREFUSED ? AB_E_NOT_FOUND
		                                                          : AB_E_SYSTEM,
		                 "connect to %s", path);
	return steal_fd (&fd);
}

int
ab_unix_listen (const char *path, int backlog, ab_error_t *err)
{
	struct sockaddr_un sun;
	socklen_t len;
	cleanup_close int dir_fd = -1;
	cleanup_close int fd = unix_socket (path, &sun, &len, &dir_fd, err);

	if (fd < 0)
		return -1;
	if (bind (fd, (struct sockaddr *)&sun, len) < 0 || listen (fd, backlog) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "listen on %s", path);
	return steal_fd (&fd);
}
