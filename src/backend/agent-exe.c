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
#include <sys/stat.h>
#include <unistd.h>

#include "backend/agent-exe.h"
#include "base/cleanup.h"
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

/* The file is opened once, by path, and everything after goes through
 * that fd: the bind is cloned from it (open_tree AT_EMPTY_PATH), so no
 * later mount (a staging tmpfs over /tmp, a pivot) can make the path
 * resolve elsewhere or nowhere. */
int
ab_agent_exe_mount (const char *path, ab_error_t *err)
{
	cleanup_close int file = open (path, O_PATH | O_CLOEXEC), fd = -1;
	struct stat st;
	int high;

	if (file < 0)
		return ab_error (err, errno, errno == ENOENT ? AB_E_NOT_FOUND : AB_E_SYSTEM,
		                 "agentbox-agent: open %s", path);
	if (fstat (file, &st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "agentbox-agent: stat %s", path);
	if (!S_ISREG (st.st_mode))
		return ab_error (err, 0, AB_E_INVALID, "agentbox-agent: %s is not a regular file",
		                 path);
	if (!(st.st_mode & (S_IXUSR | S_IXGRP | S_IXOTH)))
		return ab_error (err, 0, AB_E_INVALID, "agentbox-agent: %s is not executable",
		                 path);
	fd = ab_mountfd_clone (file, "", MOUNT_ATTR_RDONLY | MOUNT_ATTR_NOSUID | MOUNT_ATTR_NODEV,
	                       err);
	if (fd < 0)
		return ab_error_wrap (err, "agentbox-agent %s", path);
	/* Clear of fds 0..3, which init fills with stdio and the door. */
	high = fcntl (fd, F_DUPFD_CLOEXEC, 10);
	if (high < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "dup agentbox-agent mount");
	return high;
}
