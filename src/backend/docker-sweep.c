/* Containers whose monitor died without removing them.  A container is a
 * child of containerd, not of our monitor: a monitor killed by SIGKILL
 * leaves it running.  Each container is labelled with the identity of its
 * monitor (boot id, pid namespace, pid, start time); after each new
 * sandbox is up, a detached sweeper removes the containers whose monitor
 * is gone.  Only monitors of this boot and of our pid namespace are
 * judged: a pid from another host or namespace (a shared dockerd) means
 * nothing here, so those containers are left alone. */
#include "backend/docker-internal.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "backend/monitor.h"
#include "base/cleanup.h"
#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"

#define LIST_TIMEOUT_MS 30000
#define RM_TIMEOUT_MS   30000
#define LIST_MAX        (256 * 1024)

struct self_s {
	char boot[40];
	uint64_t pidns;
};

static bool
whoami (struct self_s *me)
{
	struct stat st;
	cleanup_close int fd = open ("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read (fd, me->boot, sizeof me->boot - 1) : -1;

	if (n <= 0 || stat ("/proc/self/ns/pid", &st) < 0)
		return false;
	me->boot[n] = '\0';
	me->boot[strcspn (me->boot, "\n")] = '\0';
	me->pidns = (uint64_t)st.st_ino;
	return true;
}

char *
ab_docker_monitor_label (void)
{
	struct self_s me;
	pid_t pid = getpid ();

	if (!whoami (&me))
		return NULL;
	return xasprintf ("%s=%s/%" PRIu64 "/%d/%" PRIu64, AB_DOCKER_MONITOR_LABEL, me.boot,
	                  me.pidns, (int)pid, ab_proc_start_time (pid));
}

/* A zombie counts as gone: a SIGKILLed monitor stays one until whoever
 * inherited it (PID 1, a subreaper) reaps it. */
static bool
is_zombie (pid_t pid)
{
	char path[64], buf[512];
	cleanup_close int fd = -1;
	ssize_t n;
	char *p;

	snprintf (path, sizeof path, "/proc/%d/stat", (int)pid);
	fd = open (path, O_RDONLY | O_CLOEXEC);
	if (fd < 0 || (n = read (fd, buf, sizeof buf - 1)) <= 0)
		return false;
	buf[n] = '\0';
	p = strrchr (buf, ')');
	return p && p[1] == ' ' && (p[2] == 'Z' || p[2] == 'X');
}

bool
ab_docker_monitor_gone (const char *value, const char *boot, uint64_t pidns)
{
	char b[40];
	uint64_t ns, start;
	int pid, used = 0;

	if (sscanf (value, "%39[^/]/%" SCNu64 "/%d/%" SCNu64 "%n", b, &ns, &pid, &start, &used) != 4
	    || value[used] != '\0' || pid <= 0)
		return false; /* not ours to judge */
	if (strcmp (b, boot) != 0 || ns != pidns)
		return false;
	return ab_proc_start_time (pid) != start || is_zombie (pid);
}

static void
remove_container (const char *client, const char *id)
{
	char *rm[] = { (char *)client, (char *)"rm", (char *)"--force", (char *)id, NULL };
	ab_error_t ignored = AB_ERROR_INIT;

	ab_run_tool (rm, NULL, 0, RM_TIMEOUT_MS, &ignored);
}

static void
sweep (const char *client)
{
	char *ps[] = { (char *)client,
		       (char *)"ps",
		       (char *)"--all",
		       (char *)"--no-trunc",
		       (char *)"--filter",
		       (char *)"label=agentbox=1",
		       (char *)"--format",
		       (char *)"{{.ID}} {{.Label \"" AB_DOCKER_MONITOR_LABEL "\"}}",
		       NULL };
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *out = xmalloc (LIST_MAX);
	struct self_s me;
	char *save = NULL;

	if (!whoami (&me) || ab_run_tool (ps, out, LIST_MAX, LIST_TIMEOUT_MS, &err) != 0)
		return;
	for (char *line = strtok_r (out, "\n", &save); line; line = strtok_r (NULL, "\n", &save)) {
		char *value = strchr (line, ' ');
		if (!value)
			continue;
		*value++ = '\0';
		if (ab_docker_monitor_gone (value, me.boot, me.pidns))
			remove_container (client, line);
	}
}

void
ab_docker_sweep_async (const char *client)
{
	pid_t pid = fork ();

	if (pid != 0) {
		if (pid > 0)
			while (waitpid (pid, NULL, 0) < 0 && errno == EINTR)
				;
		return;
	}
	/* Detached (re-parented at once): the monitor never waits for it. */
	if (fork () != 0)
		_exit (0);
	ab_close_fds_except (NULL, 0);
	sweep (client);
	_exit (0);
}
