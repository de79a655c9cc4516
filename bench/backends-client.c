/* bench/backends' timing helper: talks to `agentbox serve` over its unix
 * socket (one keep-alive connection) and runs the raw reference tool,
 * interleaved, printing one "LABEL MICROSECONDS" line per measurement.
 *
 *   backends-client probe SOCK BODY
 *       create (BODY is the JSON of POST /v1/sandboxes), exec `true`, delete;
 *       prints "ok", or the daemon's answer and exits 1
 *   backends-client start SOCK BODY N SECS [-- RAW...]
 *       N times, alternating: agentbox create + first exec ("create"), its
 *       delete ("delete"), then RAW once ("raw"); stops early after SECS
 *   backends-client rtt SOCK BODY N SECS [-- RAW...]
 *       one sandbox; N exec round trips of `true` ("exec"), and after every
 *       N/10 of them RAW once ("raw"); stops early after SECS
 *
 * A RAW argv with an argument containing @SOCK@ is a VM boot: the client
 * listens on a unix socket, puts its path there (QEMU's `-chardev
 * socket,path=@SOCK@` connects to it), and the time is the time to the
 * guest agent's first mux HELLO frame (src/proto/mux.h: type 1, id 0,
 * length 8, "ABMX"); then the VM is killed.
 *
 * Standalone on purpose (libc only): it measures the daemon and the tools,
 * not our client library.  Time bounds are checked between measurements. */
#define _GNU_SOURCE
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
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

/* `raw` (the check before timing): the tool's stderr is shown, not dropped. */
static int keep_stderr;

/* POST /v1/sandboxes; the id into id, or -1 with the answer in out. */
static int
create_box (int fd, const char *body, char *id, size_t id_cap, char *out, size_t cap)
{
	int st = call (fd, "POST", "/v1/sandboxes", body, out, cap);
	char *p = strstr (out, "\"id\":\"");
	if (st != 201 || !p)
		return -1; /* out holds the daemon's JSON error */
	snprintf (id, id_cap, "%.*s", (int)strcspn (p + 6, "\""), p + 6);
	return 0;
}

static int
exec_true (int fd, const char *id, char *out, size_t cap)
{
	char path[256];
	snprintf (path, sizeof path, "/v1/sandboxes/%s/exec", id);
	int st = call (fd, "POST", path, "{\"cmd\":[\"true\"],\"wait\":true}", out, cap);
	return st == 200 && strstr (out, "\"exit_code\":0") ? 0 : -1;
}

static void
delete_box (int fd, const char *id)
{
	char path[256], out[4096];
	snprintf (path, sizeof path, "/v1/sandboxes/%s?force=1", id);
	int st = call (fd, "DELETE", path, NULL, out, sizeof out);
	if (st / 100 != 2) {
		fprintf (stderr, "delete %s: HTTP %d %s\n", id, st, out);
		exit (1);
	}
}

/* RAW once, stdio on /dev/null; exits on failure (the caller checked it
 * runs before timing anything, so a failure here is worth stopping for). */
static long long run_raw_hello (char **argv);

static long long
run_raw (char **argv)
{
	posix_spawn_file_actions_t fa;
	pid_t pid;
	int status;
	long long t0, t1;

	for (int i = 0; argv[i]; i++)
		if (strstr (argv[i], "@SOCK@"))
			return run_raw_hello (argv);
	posix_spawn_file_actions_init (&fa);
	posix_spawn_file_actions_addopen (&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen (&fa, 1, "/dev/null", O_WRONLY, 0);
	if (!keep_stderr)
		posix_spawn_file_actions_addopen (&fa, 2, "/dev/null", O_WRONLY, 0);
	t0 = now_us ();
	if (posix_spawnp (&pid, argv[0], &fa, NULL, argv, environ) != 0) {
		fprintf (stderr, "cannot run %s\n", argv[0]);
		exit (1);
	}
	waitpid (pid, &status, 0);
	t1 = now_us ();
	posix_spawn_file_actions_destroy (&fa);
	if (!WIFEXITED (status) || WEXITSTATUS (status) != 0) {
		fprintf (stderr, "raw command %s failed (status %d)\n", argv[0], status);
		exit (1);
	}
	return t1 - t0;
}

#define HELLO_TIMEOUT_S 120

/* argv with every "@SOCK@" replaced by path (a leaked copy: few calls). */
static char **
substitute (char **argv, const char *path, int *found)
{
	int n = 0;
	while (argv[n])
		n++;
	char **out = calloc ((size_t)n + 1, sizeof *out);
	for (int i = 0; i < n; i++) {
		char *at = strstr (argv[i], "@SOCK@");
		if (!at) {
			out[i] = argv[i];
			continue;
		}
		*found = 1;
		if (asprintf (&out[i], "%.*s%s%s", (int)(at - argv[i]), argv[i], path, at + 6) < 0)
			exit (1);
	}
	return out;
}

/* Read from fd until the mux HELLO signature went by, or the deadline. */
static int
await_hello (int fd, long long deadline)
{
	static const unsigned char sig[] = { 1, 0, 0, 0, 0, 0, 0, 0, 8, 'A', 'B', 'M', 'X' };
	unsigned char win[sizeof sig] = { 0 }, c;
	size_t have = 0;

	for (;;) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		long long left = (deadline - now_us ()) / 1000;
		if (left <= 0 || poll (&p, 1, (int)left) <= 0 || read (fd, &c, 1) != 1)
			return -1;
		memmove (win, win + 1, sizeof win - 1);
		win[sizeof win - 1] = c;
		if (++have >= sizeof sig && memcmp (win, sig, sizeof sig) == 0)
			return 0;
	}
}

static long long
run_raw_hello (char **argv)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char dir[] = "/tmp/abbk-hello-XXXXXX";
	int found = 0, lfd, cfd, status;
	posix_spawn_file_actions_t fa;
	pid_t pid;
	long long t0, t1;

	if (!mkdtemp (dir))
		exit (1);
	snprintf (sun.sun_path, sizeof sun.sun_path, "%s/s", dir);
	char **args = substitute (argv, sun.sun_path, &found);
	lfd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (lfd < 0 || bind (lfd, (struct sockaddr *)&sun, sizeof sun) < 0 || listen (lfd, 1) < 0)
		exit (1);
	posix_spawn_file_actions_init (&fa);
	posix_spawn_file_actions_addopen (&fa, 0, "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen (&fa, 1, "/dev/null", O_WRONLY, 0);
	if (!keep_stderr)
		posix_spawn_file_actions_addopen (&fa, 2, "/dev/null", O_WRONLY, 0);
	t0 = now_us ();
	if (posix_spawnp (&pid, args[0], &fa, NULL, args, environ) != 0) {
		fprintf (stderr, "cannot run %s\n", args[0]);
		exit (1);
	}
	struct pollfd p = { .fd = lfd, .events = POLLIN };
	cfd = poll (&p, 1, HELLO_TIMEOUT_S * 1000) == 1 ? accept4 (lfd, NULL, NULL, SOCK_CLOEXEC)
	                                                : -1;
	int ok = cfd >= 0 && await_hello (cfd, t0 + HELLO_TIMEOUT_S * 1000000LL) == 0;
	t1 = now_us ();
	kill (pid, SIGKILL);
	waitpid (pid, &status, 0);
	posix_spawn_file_actions_destroy (&fa);
	close (lfd);
	if (cfd >= 0)
		close (cfd);
	unlink (sun.sun_path);
	rmdir (dir);
	if (!ok) {
		fprintf (stderr, "raw VM %s: no agent HELLO within %d s\n", args[0],
		         HELLO_TIMEOUT_S);
		exit (1);
	}
	return t1 - t0;
}

static int
probe (const char *sock, const char *body)
{
	char id[128], out[8192];
	int fd = dial (sock);

	if (create_box (fd, body, id, sizeof id, out, sizeof out) < 0) {
		printf ("%s\n", out);
		return 1;
	}
	if (exec_true (fd, id, out, sizeof out) < 0) {
		printf ("exec true failed: %s\n", out);
		delete_box (fd, id);
		return 1;
	}
	delete_box (fd, id);
	printf ("ok\n");
	return 0;
}

static int
start (const char *sock, const char *body, int n, int secs, char **raw)
{
	char id[128], out[8192];
	int fd = dial (sock);
	long long deadline = now_us () + secs * 1000000LL;

	for (int i = 0; i < n; i++) {
		if (now_us () > deadline) {
			fprintf (stderr, "  (time bound: %d of %d rounds in %d s)\n", i, n, secs);
			break;
		}
		long long t0 = now_us ();
		if (create_box (fd, body, id, sizeof id, out, sizeof out) < 0
		    || exec_true (fd, id, out, sizeof out) < 0) {
			fprintf (stderr, "create + exec failed: %s\n", out);
			return 1;
		}
		long long t1 = now_us ();
		delete_box (fd, id);
		long long t2 = now_us ();
		printf ("create %lld\ndelete %lld\n", t1 - t0, t2 - t1);
		if (raw && raw[0])
			printf ("raw %lld\n", run_raw (raw));
		fflush (stdout);
	}
	return 0;
}

static int
rtt (const char *sock, const char *body, int n, int secs, char **raw)
{
	char id[128], out[8192];
	int fd = dial (sock);
	int every = n >= 10 ? n / 10 : 1;
	long long deadline;

	if (create_box (fd, body, id, sizeof id, out, sizeof out) < 0) {
		fprintf (stderr, "create failed: %s\n", out);
		return 1;
	}
	for (int i = 0; i < 20; i++) /* warm-up */
		if (exec_true (fd, id, out, sizeof out) < 0) {
			fprintf (stderr, "exec failed: %s\n", out);
			delete_box (fd, id);
			return 1;
		}
	deadline = now_us () + secs * 1000000LL;
	for (int i = 0; i < n; i++) {
		if (now_us () > deadline) {
			fprintf (stderr, "  (time bound: %d of %d execs in %d s)\n", i, n, secs);
			break;
		}
		if (raw && raw[0] && i % every == 0)
			printf ("raw %lld\n", run_raw (raw));
		long long t0 = now_us ();
		if (exec_true (fd, id, out, sizeof out) < 0) {
			fprintf (stderr, "exec failed: %s\n", out);
			delete_box (fd, id);
			return 1;
		}
		printf ("exec %lld\n", now_us () - t0);
	}
	fflush (stdout);
	delete_box (fd, id);
	return 0;
}

/* argv after "--", or NULL. */
static char **
raw_args (int argc, char **argv, int from)
{
	for (int i = from; i < argc; i++)
		if (strcmp (argv[i], "--") == 0)
			return argv + i + 1;
	return NULL;
}

int
main (int argc, char **argv)
{
	setvbuf (stdout, NULL, _IOLBF, 0);
	keep_stderr = argc >= 3 && strcmp (argv[1], "raw") == 0;
	if (keep_stderr) /* once, to check it runs */
		return printf ("raw %lld\n", run_raw (raw_args (argc, argv, 2))) < 0;
	if (argc == 4 && strcmp (argv[1], "probe") == 0)
		return probe (argv[2], argv[3]);
	if (argc >= 6 && strcmp (argv[1], "start") == 0)
		return start (argv[2], argv[3], atoi (argv[4]), atoi (argv[5]),
		              raw_args (argc, argv, 6));
	if (argc >= 6 && strcmp (argv[1], "rtt") == 0)
		return rtt (argv[2], argv[3], atoi (argv[4]), atoi (argv[5]),
		            raw_args (argc, argv, 6));
	fprintf (stderr,
	         "usage: backends-client probe SOCK BODY | start SOCK BODY N SECS [-- RAW...]"
	         " | rtt SOCK BODY N SECS [-- RAW...]\n");
	return 2;
}
