/* How the sandbox gets its PID 1 binary without ever being able to write
 * to it (runc CVE-2019-5736): init executes agentbox-agent through a
 * private, detached, read-only bind mount of the file.  /proc/1/exe then
 * resolves into a read-only mount (EROFS for any writer), the mount is not
 * reachable from the sandbox's tree, and nothing is copied (a sealed memfd
 * copy of the 1 MiB static binary cost as much as creating the network
 * namespace). */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "backend/agent-exe.h"
#include "base/compat.h"
#include "base/xalloc.h"
#include "isolate/mountfd.h"

char *
ab_agent_exe_path (ab_error_t *err)
{
	char self[PATH_MAX];
	ssize_t n = readlink ("/proc/self/exe", self, sizeof self - 1);
	char *path;

	if (n < 0) {
		ab_error (err, errno, AB_E_SYSTEM, "readlink /proc/self/exe");
		return NULL;
	}
	self[n] = '\0';
	/* agentbox-agent lives next to the agentbox binary (build/ or $PREFIX/bin). */
	path = xasprintf ("%s/agentbox-agent", dirname (self));
	if (access (path, X_OK) < 0) {
		ab_error (err, errno, AB_E_NOT_FOUND, "%s", path);
		free (path);
		return NULL;
	}
	return path;
}

int
ab_agent_exe_mount (const char *path, ab_error_t *err)
{
	int fd = ab_mountfd_clone (AT_FDCWD, path,
	                           MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV, err);
	int high;

	if (fd < 0)
		return ab_error_wrap (err, "agentbox-agent");
	/* Clear of fds 0..3, which init fills with stdio and the door. */
	high = fcntl (fd, F_DUPFD_CLOEXEC, 10);
	close (fd);
	if (high < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "dup agentbox-agent mount");
	return high;
}
