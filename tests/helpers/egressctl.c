/* egressctl: drives the agent's egress stream path (EGRESS_LISTEN with
 * EGRESS_STREAM, EGRESS_READY, EGRESS_OPEN) through the client library, for
 * tests/integration/agent-egress-stream.bats.  The sandbox comes from
 * agentctl launch.
 *
 *   egressctl SOCK serve PORT N [CLAIM_MS]
 *       subscribe (stream mode), print "listening", then claim N announced
 *       connections one by one and answer each with "egress:" + the line it
 *       sent; prints "served N"
 *   egressctl SOCK announce PORT CLAIM_MS SECONDS
 *       subscribe, print "listening", then print "ready PORT CONN" for each
 *       announcement during SECONDS, claiming none
 *   egressctl SOCK claim CONN
 *       claim CONN on a fresh connection: "claimed" (then answers it like
 *       serve) or "agentctl: KIND: message" and exit 1
 *   egressctl SOCK slowclaim PORT
 *       subscribe, claim the first announced connection, then read nothing
 *       from it (print "stalled"; exits on SIGTERM)
 *   egressctl SOCK blast PORT BYTES
 *       subscribe, claim the first announced connection, read its line,
 *       write BYTES bytes and close at once (no lingering: what is still
 *       in flight must be delivered all the same); prints "sent BYTES"
 *
 * Errors print "egressctl: KIND: message" and exit 1. */
#include <errno.h>
#include <poll.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "base/fd.h"
#include "session/agent-client.h"

static const char *sock_path;

static void __attribute__ ((noreturn)) fail (const ab_error_t *e)
{
	fprintf (stderr, "egressctl: %s: %s\n", ab_error_kind_name (e->kind), e->msg);
	exit (1);
}

static void __attribute__ ((noreturn)) usage (void)
{
	fprintf (stderr, "usage: egressctl SOCK serve|announce|claim|slowclaim ... "
	                 "(see tests/helpers/egressctl.c)\n");
	exit (2);
}

static ab_agent_conn_t *
conn (void)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = ab_agent_connect (sock_path, &err);

	if (!c)
		fail (&err);
	return c;
}

static ab_agent_conn_t *
subscribe (const char *port, uint32_t claim_ms)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c = conn ();

	if (ab_agent_egress_listen_stream (c, (uint16_t)atoi (port), claim_ms, &err) < 0)
		fail (&err);
	printf ("listening\n");
	fflush (stdout);
	return c;
}

/* One line from fd, answered "egress:" + line; then a lingering close
 * (until the client closed, at most 10 s), so the relay thread has
 * delivered the answer before this process may exit. */
static void
answer (int fd)
{
	char buf[256] = "egress:";
	ssize_t k = read (fd, buf + 7, sizeof buf - 8);
	struct pollfd p = { .fd = fd, .events = POLLIN };

	if (k > 0)
		ab_write_all (fd, buf, 7 + (size_t)k);
	shutdown (fd, SHUT_WR);
	while (poll (&p, 1, 10000) > 0 && read (fd, buf, sizeof buf) > 0)
		;
	close (fd);
}

static int
claim_fd (uint32_t id, ab_error_t *err)
{
	ab_agent_conn_t *c = conn ();
	int fd = ab_agent_egress_open (&c, id, err);

	ab_agent_close (c); /* NULL once the relay owns it */
	return fd;
}

static int
cmd_serve (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	int n;

	if (argc < 3 || argc > 4)
		usage ();
	n = atoi (argv[2]);
	c = subscribe (argv[1], argc == 4 ? (uint32_t)atoi (argv[3]) : 0);
	for (int i = 0; i < n; i++) {
		uint32_t id;
		uint16_t port;
		int fd;
		if (ab_agent_egress_next_ready (c, &id, &port, 20000, &err) <= 0) {
			if (err.kind != AB_E_NONE)
				fail (&err);
			fprintf (stderr, "egressctl: no announcement in 20 s\n");
			return 1;
		}
		if ((fd = claim_fd (id, &err)) < 0)
			fail (&err);
		answer (fd);
	}
	printf ("served %d\n", n);
	ab_agent_close (c);
	return 0;
}

static uint64_t
now_ms (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static int
cmd_announce (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	uint64_t until;

	if (argc != 4)
		usage ();
	c = subscribe (argv[1], (uint32_t)atoi (argv[2]));
	until = now_ms () + (uint64_t)atoi (argv[3]) * 1000;
	for (uint64_t now; (now = now_ms ()) < until;) {
		uint32_t id;
		uint16_t port;
		int r = ab_agent_egress_next_ready (c, &id, &port, (int)(until - now), &err);
		if (r < 0)
			fail (&err);
		if (r > 0) {
			printf ("ready %u %u\n", port, id);
			fflush (stdout);
		}
	}
	ab_agent_close (c);
	return 0;
}

static int
cmd_claim (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	int fd;

	if (argc != 2)
		usage ();
	if ((fd = claim_fd ((uint32_t)strtoul (argv[1], NULL, 10), &err)) < 0)
		fail (&err);
	printf ("claimed\n");
	fflush (stdout);
	answer (fd);
	return 0;
}

static int
cmd_slowclaim (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	ab_agent_conn_t *c;
	uint32_t id;
	uint16_t port;
	int fd;

	if (argc != 2)
		usage ();
	c = subscribe (argv[1], 0);
	if (ab_agent_egress_next_ready (c, &id, &port, 20000, &err) <= 0)
		fail (&err);
	if ((fd = claim_fd (id, &err)) < 0)
		fail (&err);
	printf ("stalled\n");
	fflush (stdout);
	for (;;)
		pause ();
}

/* The relay thread's last act: all it was given is with the agent. */
static void
relay_ended (void *ctx)
{
	char b = 1;

	if (write (*(int *)ctx, &b, 1) < 0)
		_exit (1);
}

static int
cmd_blast (int argc, char **argv)
{
	ab_error_t err = AB_ERROR_INIT;
	static char buf[65536];
	static int ended[2];
	struct pollfd p;
	ab_agent_conn_t *c;
	size_t want, left;
	uint32_t id;
	uint16_t port;
	int fd;

	if (argc != 3)
		usage ();
	want = left = strtoul (argv[2], NULL, 10);
	c = subscribe (argv[1], 0);
	if (ab_agent_egress_next_ready (c, &id, &port, 20000, &err) <= 0)
		fail (&err);
	if (pipe (ended) < 0) {
		perror ("egressctl: pipe");
		return 1;
	}
	if ((fd = ab_agent_egress_claim (sock_path, id, relay_ended, &ended[1], &err)) < 0)
		fail (&err);
	if (read (fd, buf, sizeof buf) <= 0)
		return 1;
	memset (buf, 'b', sizeof buf);
	while (left > 0) {
		size_t k = left < sizeof buf ? left : sizeof buf;
		if (ab_write_all (fd, buf, k) < 0)
			return 1;
		left -= k;
	}
	close (fd);
	printf ("sent %zu\n", want);
	fflush (stdout);
	/* This process must live until the relay thread delivered the rest
	 * (bounded: the test's own timeout is longer). */
	p = (struct pollfd){ .fd = ended[0], .events = POLLIN };
	if (poll (&p, 1, 60000) != 1) {
		fprintf (stderr, "egressctl: the relay did not end in 60 s\n");
		return 1;
	}
	ab_agent_close (c);
	return 0;
}

int
main (int argc, char **argv)
{
	if (argc < 3)
		usage ();
	sock_path = argv[1];
	argc -= 2;
	argv += 2;
	if (strcmp (argv[0], "serve") == 0)
		return cmd_serve (argc, argv);
	if (strcmp (argv[0], "announce") == 0)
		return cmd_announce (argc, argv);
	if (strcmp (argv[0], "claim") == 0)
		return cmd_claim (argc, argv);
	if (strcmp (argv[0], "slowclaim") == 0)
		return cmd_slowclaim (argc, argv);
	if (strcmp (argv[0], "blast") == 0)
		return cmd_blast (argc, argv);
	usage ();
}
