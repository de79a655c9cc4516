/* Listening on a path (gVisor, Docker): those backends cannot hand the
 * agent a listening fd, so it binds the socket itself in a directory the
 * backend shares with the host (runsc --host-uds=create; a Docker bind
 * mount).  The same path is reachable from inside the sandbox, so a
 * session is accepted only from a peer outside the sandbox: SO_PEERCRED
 * reports pid 0 for a peer in an ancestor pid namespace (the host, under
 * runc), and gVisor reports a host peer as pid 1 (our own pid: no process
 * of the sandbox can have it).  Any other pid is a command of the sandbox
 * trying to take over its own agent. */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/service.h"
#include "base/unix-socket.h"

#define MAX_ALLOWED_PEERS 4

static pid_t allowed[MAX_ALLOWED_PEERS];
static size_t n_allowed;
static bool checking;

void
ab_session_allow_peer (pid_t pid)
{
	checking = true;
	if (n_allowed < MAX_ALLOWED_PEERS)
		allowed[n_allowed++] = pid;
}

bool
ab_session_peer_allowed (int fd)
{
	struct ucred cred;
	socklen_t len = sizeof cred;

	if (!checking)
		return true; /* fd 4 from the native monitor: nothing inside can reach it */
	if (getsockopt (fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0)
		return false;
	for (size_t i = 0; i < n_allowed; i++)
		if (cred.pid == allowed[i])
			return true;
	return false;
}

int
ab_agent_listen_path (const char *path, ab_error_t *err)
{
	struct sockaddr_un sun;
	socklen_t len;
	mode_t umask_was;
	int fd;

	/* Checked before the unlink: a name that does not fit is not ours to remove. */
	if (path[0] != '/' || ab_unix_addr (path, &sun, &len, err) < 0)
		return ab_error (err, 0, AB_E_INVALID, "bad socket path %s", path);
	unlink (path);
	/* 0600 from the start through the umask (no window where it is wider);
	 * a chmod after bind fails with EPERM on gVisor's host-backed sockets. */
	umask_was = umask (0177);
	fd = ab_unix_listen (path, 128, err);
	umask (umask_was);
	if (fd < 0)
		return -1;
	ab_session_allow_peer (0);
	ab_session_allow_peer (1);
	return fd;
}
