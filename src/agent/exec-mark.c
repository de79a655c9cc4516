/* An exec's mark where no keeper can run (gVisor 2022: no
 * PR_SET_CHILD_SUBREAPER, and no /proc/PID/ns/uts to tell namespaces
 * apart): a group of its own in a cgroup hierarchy of gVisor's cgroupfs.
 * The command's process joins it before it gives up its ids; every process
 * it forks inherits the group, also after setsid or its parent's exit, and
 * none can leave it: the hierarchy is mounted below the pids limit's guard
 * (agent/pids-limit.c), a mode-0000 directory owned by nobody that a
 * command without capabilities cannot traverse, uid 0 or not.
 *
 * cpuacct, not pids: gVisor's pids controller is not hierarchical, so a
 * process in a child group of the pids hierarchy would escape the
 * sandbox's pids.max.  Membership in one hierarchy leaves the others
 * alone (a task moved into a cpuacct group keeps its pids group and is
 * still counted there). */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "agent/subtree.h"
#include "base/cleanup.h"
#include "base/xalloc.h"

static int marks = -1;
static unsigned next_id;

void
ab_exec_marks_mount (const char *dir)
{
	char path[256];

	snprintf (path, sizeof path, "%s/marks", dir);
	if (mkdir (path, 0700) < 0
	    || mount ("none", path, "cgroup", MS_NOSUID | MS_NODEV | MS_NOEXEC, "cpuacct") < 0)
		return; /* no marks: kills reach what hangs below the command */
	marks = open (path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
}

int
ab_exec_mark_new (unsigned *id, int *procs)
{
	char name[32];
	int dir;

	*procs = -1;
	if (marks < 0)
		return -1;
	*id = next_id++;
	snprintf (name, sizeof name, "e%u", *id);
	if (mkdirat (marks, name, 0700) < 0 && errno != EEXIST)
		return -1;
	dir = openat (marks, name, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0)
		return -1;
	*procs = openat (dir, "cgroup.procs", O_WRONLY | O_CLOEXEC);
	if (*procs < 0) {
		ab_exec_mark_release (dir, *id);
		return -1;
	}
	return dir;
}

void
ab_exec_mark_release (int mark_fd, unsigned id)
{
	char name[32];

	if (mark_fd < 0)
		return;
	close (mark_fd);
	snprintf (name, sizeof name, "e%u", id);
	unlinkat (marks, name, AT_REMOVEDIR); /* EBUSY while it has members */
}

pid_t *
ab_exec_mark_members (int mark_fd, pid_t *out, size_t *n, size_t *cap)
{
	int fd = openat (mark_fd, "cgroup.procs", O_RDONLY | O_CLOEXEC);
	cleanup_file FILE *f = fd >= 0 ? fdopen (fd, "r") : NULL;
	int pid;

	if (!f) {
		if (fd >= 0)
			close (fd);
		return out;
	}
	/* cgroup.procs lists pids in the reader's (our) pid namespace. */
	while (*n < 65536 && fscanf (f, "%d", &pid) == 1) {
		if (*n == *cap)
			out = xrealloc (out, (*cap = *cap ? *cap * 2 : 64) * sizeof *out);
		out[(*n)++] = (pid_t)pid;
	}
	return out;
}
