/* Unix stream sockets: the address of a path or an abstract name, and
 * the connect and listen every host program and the agent share. */
#ifndef AB_BASE_UNIX_SOCKET_H
#define AB_BASE_UNIX_SOCKET_H

#include <sys/socket.h>
#include <sys/un.h>

#include "base/error.h"

/* The address of `path` (used as given, relative or absolute).  A path
 * that does not fit sun_path with its NUL is refused (AB_E_INVALID), never
 * truncated: a truncated name is another socket, maybe someone else's. */
int ab_unix_addr (const char *path, struct sockaddr_un *sun, socklen_t *len, ab_error_t *err);

/* The address of the abstract name `name` (Linux: no file, gone with its
 * last socket; its length, not a NUL, ends it).  Same limit. */
int ab_unix_abstract_addr (const char *name, struct sockaddr_un *sun, socklen_t *len,
                           ab_error_t *err);

/* A blocking SOCK_STREAM | SOCK_CLOEXEC socket connected to `path`.
 * Nobody listening (ENOENT, ECONNREFUSED) is AB_E_NOT_FOUND.  Here and in
 * ab_unix_listen a path too long for sun_path is reached through its
 * directory, opened and named as /proc/self/fd/N/LAST (only LAST must
 * fit). */
int ab_unix_connect (const char *path, ab_error_t *err);

/* A SOCK_STREAM | SOCK_CLOEXEC socket bound to `path` and listening.  It
 * neither unlinks a stale socket nor sets a mode: callers that need a
 * mode set the umask around this call, so the socket is never wider than
 * that, not even between bind and a chmod. */
int ab_unix_listen (const char *path, int backlog, ab_error_t *err);

#endif
