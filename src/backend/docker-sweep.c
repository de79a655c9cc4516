/* Containers whose monitor died without removing them.  A container is a
 * child of containerd, not of our monitor: a monitor killed by SIGKILL
 * leaves it running.  Each container is labelled with the identity of its
 * monitor (boot id, pid namespace, pid, start time); after each new
 * sandbox is up, a detached sweeper removes the containers whose monitor
 * is gone, and the daemon does the same at its start and periodically
 * (ab_docker_sweep, from its housekeeping).  Only monitors of this boot and of our pid namespace
 * are judged: a pid from another host or namespace (a shared dockerd) means nothing here, so those
 * containers are left alone. */
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
#include "base/log.h"
#include "base/sys.h"
#include "base/unix-socket.h"
#include "base/xalloc.h"

#define LIST_TIMEOUT_MS 30000
#define RM_TIMEOUT_MS   30000
#define LIST_MAX        (256 * 1024)
/* Removals in one pass: a pass stays bounded in time (each `docker rm` is
 * bounded by RM_TIMEOUT_MS); the next pass takes the rest. */
#define SWEEP_MAX 32

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

/* /proc/PID/stat: the state letter and the flags (fields 3 and 9); 0 for
 * a process that is not there. */
static char
proc_state (pid_t pid, unsigned *flags)
{
	char buf[512];
	const char *f = ab_proc_stat_fields (pid, buf, sizeof buf);

	*flags = 0;
	if (!f)
		return 0;
	if (sscanf (f + 1, " %*d %*d %*d %*d %*d %u", flags) != 1)
		*flags = 0;
	return f[0];
}

/* A zombie counts as gone: a SIGKILLed monitor stays one until whoever
 * inherited it (PID 1, a subreaper) reaps it. */
bool
ab_docker_is_zombie (pid_t pid)
{
	unsigned flags;
	char st = proc_state (pid, &flags);

	return st == 'Z' || st == 'X';
}

bool
ab_docker_is_exiting (pid_t pid)
{
	unsigned flags = 0;
	char st = proc_state (pid, &flags);

	return st && st != 'Z' && st != 'X' && (flags & 0x4) != 0; /* PF_EXITING */
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
	return ab_proc_start_time (pid) != start || ab_docker_is_zombie (pid);
}

static void
remove_container (const char *client, const char *id)
{
	char *rm[] = { (char *)client, (char *)"rm", (char *)"--force", (char *)id, NULL };
	ab_error_t ignored = AB_ERROR_INIT;

	ab_run_tool (rm, NULL, 0, RM_TIMEOUT_MS, &ignored);
}

/* Lists our containers (label agentbox=1: nobody else's is even looked
 * at) and removes those whose monitor label names a monitor that is gone;
 * at most SWEEP_MAX a pass.  The number removed, -1 when the list failed. */
static int
sweep (const char *client, bool log)
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
	int n = 0;

	if (!whoami (&me) || ab_run_tool (ps, out, LIST_MAX, LIST_TIMEOUT_MS, &err) != 0)
		return -1;
	for (char *line = strtok_r (out, "\n", &save); line && n < SWEEP_MAX;
	     line = strtok_r (NULL, "\n", &save)) {
		char *value = strchr (line, ' ');
		if (!value)
			continue;
		*value++ = '\0';
		if (!ab_docker_monitor_gone (value, me.boot, me.pidns))
			continue;
		remove_container (client, line);
		n++;
		if (log)
			ab_log (AB_LOG_INFO, "removed docker container %.12s: its monitor is gone",
			        line);
	}
	return n;
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
	sweep (client, false);
	_exit (0);
}

/* The engine's socket answers: DOCKER_HOST's unix:// path, or the default
 * one.  Another scheme (tcp://, ssh://) counts as reachable: the client's
 * own bounded list call is then the test. */
static bool
engine_reachable (void)
{
	const char *host = getenv ("DOCKER_HOST");
	const char *path = "/var/run/docker.sock";
	ab_error_t ignored = AB_ERROR_INIT;
	int fd;

	if (host && host[0]) {
		if (strncmp (host, "unix://", 7) != 0)
			return true;
		path = host + 7;
	}
	fd = ab_unix_connect (path, &ignored);
	if (fd < 0)
		return false;
	close (fd);
	return true;
}

int
ab_docker_sweep (void)
{
	/* Only root runs Docker sandboxes (docker.c): nothing of ours to find
	 * for another user. */
	if (geteuid () != 0 || !engine_reachable ())
		return -1;
	return sweep (ab_docker_client (), true);
}
