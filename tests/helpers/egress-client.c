/* Raw clients for the egress proxy's integration tests and benchmark: what
 * curl cannot do (half-close, a byte a second, a thousand tunnels at once).
 * Loopback only: every mode connects to 127.0.0.1:PORT.
 *
 *   egress-client raw PORT [--no-shut]   stdin to the proxy, then SHUT_WR,
 *                                        then everything back to stdout
 *   egress-client halfclose PORT TARGET  CONNECT TARGET, send "ping\n",
 *                                        SHUT_WR, print what comes back
 *   egress-client slow PORT              a request head at one byte a
 *                                        second; prints when and how the
 *                                        proxy ended it
 *   egress-client tunnels PORT TARGET N HOLD
 *                                        N tunnels to an echo TARGET at
 *                                        once, each checked, held HOLD s
 *   egress-client idle PORT N HOLD       N idle connections held HOLD s
 * A hold ends early on SIGUSR1: a test lets go when it has looked, rather
 * than guessing how long its looking takes.  Every mode gives up after
 * 60 s (alarm). */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

/* Only there to interrupt the hold's sleep(3). */
static void
on_usr1 (int sig)
{
	(void)sig;
}

static double
now_s (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int
dial (int port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_port = htons ((uint16_t)port) };
	int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	inet_pton (AF_INET, "127.0.0.1", &sin.sin_addr);
	if (fd < 0 || connect (fd, (struct sockaddr *)&sin, sizeof sin) < 0) {
		perror ("egress-client: connect");
		exit (1);
	}
	return fd;
}

static int
write_all (int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		ssize_t w = send (fd, s, n, MSG_NOSIGNAL);
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Read a response head (up to CRLFCRLF) byte by byte; returns its length. */
static ssize_t
read_head (int fd, char *buf, size_t cap)
{
	size_t n = 0;
	while (n + 1 < cap) {
		ssize_t r = read (fd, buf + n, 1);
		if (r <= 0)
			return -1;
		n++;
		if (n >= 4 && memcmp (buf + n - 4, "\r\n\r\n", 4) == 0) {
			buf[n] = '\0';
			return (ssize_t)n;
		}
	}
	return -1;
}

static void
copy_out (int fd)
{
	char buf[65536];
	ssize_t n;
	while ((n = read (fd, buf, sizeof buf)) > 0)
		fwrite (buf, 1, (size_t)n, stdout);
}

static int
mode_raw (int port, bool shut)
{
	int fd = dial (port);
	char buf[65536];
	ssize_t n;

	while ((n = read (0, buf, sizeof buf)) > 0)
		if (write_all (fd, buf, (size_t)n) < 0)
			break;
	if (shut)
		shutdown (fd, SHUT_WR);
	copy_out (fd);
	return 0;
}

static int
connect_tunnel (int port, const char *target)
{
	char req[512], head[4096];
	int fd = dial (port);

	snprintf (req, sizeof req, "CONNECT %s HTTP/1.1\r\nHost: %s\r\n\r\n", target, target);
	if (write_all (fd, req, strlen (req)) < 0 || read_head (fd, head, sizeof head) < 0)
		return -1;
	if (strncmp (head, "HTTP/1.1 200 ", 13) != 0) {
		fprintf (stderr, "egress-client: CONNECT refused: %s", head);
		close (fd);
		return -1;
	}
	return fd;
}

static int
mode_halfclose (int port, const char *target)
{
	int fd = connect_tunnel (port, target);

	if (fd < 0)
		return 1;
	write_all (fd, "ping\n", 5);
	shutdown (fd, SHUT_WR);
	copy_out (fd);
	return 0;
}

static int
mode_slow (int port)
{
	static const char req[] = "GET http://127.0.0.1:9/ HTTP/1.1\r\nHost: 127.0.0.1\r\n"
	                          "X-Slow: 0123456789012345678901234567890123456789\r\n\r\n";
	int fd = dial (port);
	double t0 = now_s ();
	char resp[4096];
	size_t got = 0;

	for (size_t i = 0; i < sizeof req - 1; i++) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (send (fd, req + i, 1, MSG_NOSIGNAL) != 1)
			break;
		/* One byte a second, watching for the proxy's answer meanwhile. */
		if (poll (&p, 1, 1000) > 0) {
			ssize_t n = read (fd, resp + got, sizeof resp - 1 - got);
			if (n > 0)
				got += (size_t)n;
			break;
		}
	}
	for (;;) {
		ssize_t n = read (fd, resp + got, sizeof resp - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
	}
	resp[got] = '\0';
	printf ("closed after %.1f s\n%s", now_s () - t0, resp);
	return 0;
}

static void
raise_nofile (void)
{
	struct rlimit rl;
	if (getrlimit (RLIMIT_NOFILE, &rl) == 0) {
		rl.rlim_cur = rl.rlim_max;
		setrlimit (RLIMIT_NOFILE, &rl);
	}
}

static int
mode_tunnels (int port, const char *target, int n, int hold)
{
	int *fds = calloc ((size_t)n, sizeof *fds);
	double t0 = now_s ();
	int ok = 0;

	raise_nofile ();
	for (int i = 0; i < n; i++)
		if ((fds[i] = connect_tunnel (port, target)) < 0)
			return 1;
	/* All open at once: each carries its own message through. */
	for (int i = 0; i < n; i++) {
		char msg[32], back[32];
		int len = snprintf (msg, sizeof msg, "tunnel-%d\n", i);
		if (write_all (fds[i], msg, (size_t)len) < 0)
			continue;
		if (recv (fds[i], back, (size_t)len, MSG_WAITALL) == len
		    && memcmp (msg, back, (size_t)len) == 0)
			ok++;
	}
	printf ("established %d of %d in %.2f s\n", ok, n, now_s () - t0);
	fflush (stdout);
	sleep ((unsigned)hold);
	for (int i = 0; i < n; i++)
		close (fds[i]);
	return ok == n ? 0 : 1;
}

static int
mode_idle (int port, int n, int hold)
{
	raise_nofile ();
	for (int i = 0; i < n; i++)
		dial (port);
	printf ("open %d\n", n);
	fflush (stdout);
	sleep ((unsigned)hold);
	return 0;
}

int
main (int argc, char **argv)
{
	signal (SIGPIPE, SIG_IGN);
	signal (SIGUSR1, on_usr1);
	alarm (60);
	if (argc >= 3 && strcmp (argv[1], "raw") == 0)
		return mode_raw (atoi (argv[2]),
		                 !(argc >= 4 && strcmp (argv[3], "--no-shut") == 0));
	if (argc == 4 && strcmp (argv[1], "halfclose") == 0)
		return mode_halfclose (atoi (argv[2]), argv[3]);
	if (argc == 3 && strcmp (argv[1], "slow") == 0)
		return mode_slow (atoi (argv[2]));
	if (argc == 6 && strcmp (argv[1], "tunnels") == 0)
		return mode_tunnels (atoi (argv[2]), argv[3], atoi (argv[4]), atoi (argv[5]));
	if (argc == 5 && strcmp (argv[1], "idle") == 0)
		return mode_idle (atoi (argv[2]), atoi (argv[3]), atoi (argv[4]));
	fprintf (stderr, "usage: egress-client raw|halfclose|slow|tunnels|idle PORT ...\n");
	return 2;
}
