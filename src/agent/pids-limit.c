/* `--pids-max N` (gVisor): the sandbox's process limit, applied by the
 * agent inside.  runsc (2022-12) writes linux.resources.pids only to the
 * host cgroup of its sentry, where the sentry's own threads and stub
 * processes count rather than the sandbox's processes, and going over it
 * crashes the whole sandbox.  gVisor's own cgroupfs has a pids controller
 * that counts the sandbox's tasks and makes fork fail with EAGAIN at the
 * limit, as Linux does: the agent mounts it, makes a group with pids.max
 * and enters it; every command it forks inherits the group.
 *
 * The mount must stay (gVisor drops the limit with the last unmount), so
 * it sits below a directory no command can traverse: mode 0000, owned by
 * nobody, while the control files are root's 0644.  A command running as
 * uid 0 has no capabilities, so only the owner bits apply to it, and it
 * owns neither.  The agent keeps CAP_SYS_ADMIN: it makes the commands'
 * pid namespace and its /proc (cmdns.c); no command gets it. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/agent.h"
#include "agent/subtree.h"

#define CG_GUARD       "/dev/.agentbox-pids"
#define CG_DIR         CG_GUARD "/cg"
#define CG_GROUP       CG_DIR "/sandbox"
#define CG_GUARD_OWNER 65534 /* nobody */

static int
write_file (const char *path, const char *value)
{
	int fd = open (path, O_WRONLY | O_CLOEXEC | O_NOFOLLOW);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = write (fd, value, strlen (value));
	close (fd);
	return n == (ssize_t)strlen (value) ? 0 : -1;
}

static int
enter_group (uint64_t max)
{
	char value[32];

	if (mount ("none", CG_DIR, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, "pids") < 0)
		return -1;
	snprintf (value, sizeof value, "%" PRIu64, max);
	if (mkdir (CG_GROUP, 0700) < 0 || write_file (CG_GROUP "/pids.max", value) < 0)
		return -1;
	snprintf (value, sizeof value, "%d", (int)getpid ());
	return write_file (CG_GROUP "/cgroup.procs", value);
}

int
ab_agent_pids_limit (const char *arg, ab_error_t *err)
{
	char *end;
	unsigned long long max;

	errno = 0;
	max = strtoull (arg, &end, 10);
	if (errno || end == arg || *end || max == 0 || max > 4194304)
		return ab_error (err, 0, AB_E_INVALID, "bad --pids-max %s", arg);
	if (mkdir (CG_GUARD, 0700) < 0 || mkdir (CG_DIR, 0700) < 0 || enter_group (max) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pids limit");
	/* Each exec's mark goes below the same guard (exec-mark.c). */
	ab_exec_marks_mount (CG_GUARD);
	if (chown (CG_GUARD, CG_GUARD_OWNER, CG_GUARD_OWNER) < 0 || chmod (CG_GUARD, 0) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pids limit");
	return 0;
}
