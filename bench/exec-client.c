/* bench/exec's timing helper: prints one duration in microseconds per line.
 *
 *   exec-client rtt SOCKET ID N       POST /exec {"cmd":["true"],"wait":true}, one
 *                                     keep-alive connection, N sequential round trips
 *   exec-client create SOCKET N       POST /v1/sandboxes then the first exec (timed),
 *                                     then DELETE (not timed)
 *   exec-client spawn N CMD [ARGS]    posix_spawn + waitpid, N times
 *
 * Standalone on purpose (libc only): it measures the daemon, not our client code. */
#define _GNU_SOURCE
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "daemon-http.h"

extern char **environ;

static void
rtt (const char *sock, const char *id, int n)
{
	char path[256], out[4096];
	int fd = dial (sock);

	snprintf (path, sizeof path, "/v1/sandboxes/%s/exec", id);
	for (int i = 0; i < n; i++) {
		long long t0 = now_us ();
		int st = call (fd, "POST", path, "{\"cmd\":[\"true\"],\"wait\":true}", out,
		               sizeof out);
		long long t1 = now_us ();
		if (st != 200 || !strstr (out, "\"exit_code\":0")) {
			fprintf (stderr, "exec failed: %d %s\n", st, out);
			exit (1);
		}
		printf ("%lld\n", t1 - t0);
	}
}

static void
create (const char *sock, int n)
{
	char out[8192], path[256], id[64];
	int fd = dial (sock);

	for (int i = 0; i < n; i++) {
		long long t0 = now_us ();
		int st =
		        call (fd, "POST", "/v1/sandboxes", "{\"workspace\":null}", out, sizeof out);
		char *p = strstr (out, "\"id\":\"");
		if (st != 201 || !p) {
			fprintf (stderr, "create failed: %d %s\n", st, out);
			exit (1);
		}
		snprintf (id, sizeof id, "%.16s", p + 6);
		snprintf (path, sizeof path, "/v1/sandboxes/%s/exec", id);
		st = call (fd, "POST", path, "{\"cmd\":[\"true\"],\"wait\":true}", out, sizeof out);
		long long t1 = now_us ();
		if (st != 200) {
			fprintf (stderr, "first exec failed: %d %s\n", st, out);
			exit (1);
		}
		printf ("%lld\n", t1 - t0);
		fflush (stdout);
		snprintf (path, sizeof path, "/v1/sandboxes/%s?force=1", id);
		call (fd, "DELETE", path, NULL, NULL, 0);
	}
}

static void
spawn (int n, char **argv)
{
	for (int i = 0; i < n; i++) {
		pid_t pid;
		int status;
		posix_spawn_file_actions_t fa;
		posix_spawn_file_actions_init (&fa);
		posix_spawn_file_actions_addopen (&fa, 0, "/dev/null", 0, 0);
		posix_spawn_file_actions_addopen (&fa, 1, "/dev/null", 1, 0);
		long long t0 = now_us ();
		if (posix_spawn (&pid, argv[0], &fa, NULL, argv, environ) != 0)
			exit (1);
		waitpid (pid, &status, 0);
		long long t1 = now_us ();
		posix_spawn_file_actions_destroy (&fa);
		if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
			fprintf (stderr, "%s failed\n", argv[0]);
			exit (1);
		}
		printf ("%lld\n", t1 - t0);
	}
}

int
main (int argc, char **argv)
{
	if (argc >= 5 && strcmp (argv[1], "rtt") == 0)
		rtt (argv[2], argv[3], atoi (argv[4]));
	else if (argc >= 4 && strcmp (argv[1], "create") == 0)
		create (argv[2], atoi (argv[3]));
	else if (argc >= 4 && strcmp (argv[1], "spawn") == 0)
		spawn (atoi (argv[2]), argv + 3);
	else {
		fprintf (stderr,
		         "usage: exec-client rtt SOCK ID N | create SOCK N | spawn N CMD...\n");
		return 2;
	}
	return 0;
}
