/* Running the outside tools a backend drives (runsc, docker, qemu-img):
 * output captured up to a cap, a deadline, and nothing of ours inherited
 * but the pipe (posix_spawn: vfork + exec, safe in any caller). */
#include "backend/monitor.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/sys.h"

extern char **environ;

/* Each of in, out, err_fd: an fd to dup, or -1 for /dev/null. */
static void
add_stdio (posix_spawn_file_actions_t *fa, int target, int fd)
{
	if (fd >= 0)
		posix_spawn_file_actions_adddup2 (fa, fd, target);
	else
		posix_spawn_file_actions_addopen (fa, target, "/dev/null", O_RDWR, 0);
}

pid_t
ab_spawn_tool (char *const argv[], int in, int out, int err_fd, ab_error_t *err)
{
	posix_spawn_file_actions_t fa;
	posix_spawnattr_t attr;
	sigset_t none, def;
	pid_t pid;
	int r;

	posix_spawn_file_actions_init (&fa);
	add_stdio (&fa, 0, in);
	add_stdio (&fa, 1, out);
	add_stdio (&fa, 2, err_fd);
	/* Nothing of the caller's signal state (a monitor blocks SIGTERM)
	 * carries over. */
	sigemptyset (&none);
	sigfillset (&def);
	posix_spawnattr_init (&attr);
	posix_spawnattr_setsigmask (&attr, &none);
	posix_spawnattr_setsigdefault (&attr, &def);
	posix_spawnattr_setflags (&attr, POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF);
	r = posix_spawnp (&pid, argv[0], &fa, &attr, argv, environ);
	posix_spawn_file_actions_destroy (&fa);
	posix_spawnattr_destroy (&attr);
	if (r != 0)
		return ab_error (err, r, AB_E_SYSTEM, "run %s", argv[0]);
	return pid;
}

static int
remaining_ms (uint64_t deadline_ms)
{
	uint64_t now = ab_mono_ms ();
	return now >= deadline_ms ? 0 : (int)(deadline_ms - now);
}

/* Read until EOF or the deadline; keeps at most cap-1 bytes, drains the rest. */
static bool
collect_output (int fd, char *out, size_t cap, uint64_t deadline_ms)
{
	size_t n = 0;
	char sink[4096];

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		int left = remaining_ms (deadline_ms);
		ssize_t r;
		if (left == 0 || poll (&p, 1, left) == 0)
			return false;
		if (out && n + 1 < cap)
			r = read (fd, out + n, cap - 1 - n);
		else
			r = read (fd, sink, sizeof sink);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (out && n + 1 < cap)
			n += (size_t)r;
	}
	if (out && cap)
		out[n] = '\0';
	return true;
}

int
ab_run_tool (char *const argv[], char *out, size_t cap, int timeout_ms, ab_error_t *err)
{
	int pipefd[2], status;
	bool done;
	pid_t pid;

	if (out && cap)
		out[0] = '\0';
	if (pipe2 (pipefd, O_CLOEXEC) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "pipe");
	pid = ab_spawn_tool (argv, -1, pipefd[1], pipefd[1], err);
	close (pipefd[1]);
	if (pid < 0) {
		close (pipefd[0]);
		return -1;
	}
	done = collect_output (pipefd[0], out, cap,
	                       ab_mono_ms () + (uint64_t)(timeout_ms > 0 ? timeout_ms : 0));
	close (pipefd[0]);
	if (!done)
		kill (pid, SIGKILL);
	while (waitpid (pid, &status, 0) < 0 && errno == EINTR)
		;
	if (!done)
		return ab_error (err, ETIMEDOUT, AB_E_SYSTEM, "%s did not finish within %d ms",
		                 argv[0], timeout_ms);
	if (WIFSIGNALED (status))
		return ab_error (err, 0, AB_E_SYSTEM, "%s was killed by signal %d", argv[0],
		                 WTERMSIG (status));
	return WEXITSTATUS (status);
}
