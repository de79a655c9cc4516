#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/sendfile.h>
#include <sys/stat.h>
#include <unistd.h>

#include "backend/native-internal.h"
#include "base/cleanup.h"

/* agentbox-agent lives next to the agentbox binary (build/ or $PREFIX/bin). */
static int
open_agent_binary (ab_error_t *err)
{
	char self[PATH_MAX], path[PATH_MAX];
	ssize_t n = readlink ("/proc/self/exe", self, sizeof self - 1);
	int fd;

	if (n < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "readlink /proc/self/exe");
	self[n] = '\0';
	snprintf (path, sizeof path, "%s/agentbox-agent", dirname (self));
	fd = open (path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return ab_error (err, errno, AB_E_NOT_FOUND, "open %s", path);
	return fd;
}

int
ab_native_agent_memfd (ab_error_t *err)
{
	cleanup_close int src = open_agent_binary (err);
	cleanup_close int mfd = -1;
	struct stat st;
	off_t off = 0;

	if (src < 0)
		return -1;
	if (fstat (src, &st) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "stat agentbox-agent");
	mfd = memfd_create ("agentbox-agent", MFD_CLOEXEC | MFD_ALLOW_SEALING);
	if (mfd < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "memfd_create");
	while (off < st.st_size) {
		ssize_t n = sendfile (mfd, src, &off, (size_t) (st.st_size - off));
		if (n <= 0)
			return ab_error (err, n < 0 ? errno : EIO, AB_E_SYSTEM, "copy agentbox-agent");
	}
	if (fchmod (mfd, 0555) < 0
	    || fcntl (mfd, F_ADD_SEALS, F_SEAL_SEAL | F_SEAL_SHRINK | F_SEAL_GROW | F_SEAL_WRITE) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "seal agentbox-agent copy");
	return steal_fd (&mfd);
}
