/* `agentbox port ID PORT [--listen ADDR:PORT]`: forward a host port to
 * 127.0.0.1:PORT inside a daemon's sandbox.  Each accepted connection gets
 * a stream of its own over the daemon's socket (POST .../tcp/PORT, upgraded
 * to raw bytes) and a thread that relays both ways; any TCP protocol works
 * (HTTP, WebSocket, databases).  The listener is loopback only: whoever
 * reaches it reaches the sandbox's port with our authority. */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"
#include "cli/cli.h"
#include "cli/client.h"
#include "daemon/relay.h"
#include "policy/hostname.h"

static const char usage[] = "usage: agentbox port [--host SOCKET] ID PORT [--listen 127.0.0.1:0]\n";

struct fwd_s {
	const char *host, *id;
	unsigned port;
	ab_cli_stream_fn open; /* the stream for one accepted connection */
	void *ctx;
};

struct conn_s {
	const struct fwd_s *fwd;
	int fd;
};

/* ADDR:PORT with a loopback IPv4 literal or [::1] (policy/hostname.h's
 * rules); PORT 0 = any free one. */
static int
parse_listen (const char *spec, struct sockaddr_storage *ss, socklen_t *len, ab_error_t *err)
{
	struct ab_hostport_s hp;

	memset (ss, 0, sizeof *ss);
	if (ab_listen_parse (spec, NULL, &hp, err) < 0)
		return ab_error_wrap (err, "--listen %s", spec);
	if (hp.kind == AB_HOST_IPV6
	    && !IN6_IS_ADDR_LOOPBACK ((const struct in6_addr *)hp.addr.bytes))
		return ab_error (err, 0, AB_E_INVALID, "--listen %s: only [::1] (loopback)", spec);
	if (hp.kind != AB_HOST_IPV6 && (hp.kind != AB_HOST_IPV4 || hp.addr.bytes[0] != 127))
		return ab_error (err, 0, AB_E_INVALID,
		                 "--listen %s: a loopback address (127.x.x.x or [::1]) is required",
		                 spec);
	*len = ab_addr_to_sockaddr (&hp.addr, hp.port, ss);
	return 0;
}

static int
listen_on (const char *spec, ab_error_t *err)
{
	struct sockaddr_storage ss;
	socklen_t len = 0;
	cleanup_close int fd = -1;
	int one = 1;
	char addr[INET6_ADDRSTRLEN];

	if (parse_listen (spec, &ss, &len, err) < 0)
		return -1;
	fd = socket (ss.ss_family, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0 || setsockopt (fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one) < 0
	    || bind (fd, (struct sockaddr *)&ss, len) < 0 || listen (fd, 128) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "listen on %s", spec);
	len = sizeof ss;
	if (getsockname (fd, (struct sockaddr *)&ss, &len) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "getsockname");
	if (ss.ss_family == AF_INET6)
		printf ("listening on [%s]:%u\n",
		        inet_ntop (AF_INET6, &((struct sockaddr_in6 *)&ss)->sin6_addr, addr,
		                   sizeof addr),
		        ntohs (((struct sockaddr_in6 *)&ss)->sin6_port));
	else
		printf ("listening on %s:%u\n",
		        inet_ntop (AF_INET, &((struct sockaddr_in *)&ss)->sin_addr, addr,
		                   sizeof addr),
		        ntohs (((struct sockaddr_in *)&ss)->sin_port));
	fflush (stdout);
	return steal_fd (&fd);
}

/* A raw stream to the sandbox's port through the daemon. */
static int
open_stream (void *ctx, const char *host, int client_fd, struct ab_client_s *c, ab_error_t *err)
{
	const struct fwd_s *f = ctx;
	(void)host;
	(void)client_fd;

	cleanup_free char *path = xasprintf ("/v1/sandboxes/%s/tcp/%u", f->id, f->port);

	if (ab_client_open (c, f->host, err) < 0
	    || ab_client_send (c, "POST", path, NULL, NULL, 0,
	                       "Connection: Upgrade\r\nUpgrade: tcp\r\n", err)
	               < 0
	    || ab_client_head (c, err) < 0)
		return -1;
	if (c->status != 101)
		return ab_client_fail (c, err);
	return 0;
}

static void *
conn_main (void *arg)
{
	struct conn_s *cn = arg;
	struct ab_client_s c;
	ab_error_t err = AB_ERROR_INIT;

	if (cn->fwd->open (cn->fwd->ctx, cn->fwd->host, cn->fd, &c, &err) < 0) {
		fprintf (stderr, "agentbox port: %s\n", err.msg);
	} else {
		/* Bytes the daemon sent right after the 101 were read with the head. */
		size_t n = c.io.len - c.io.off;
		if (n == 0 || ab_http_write (cn->fd, c.io.buf + c.io.off, n) == 0)
			ab_relay_fds (cn->fd, c.fd, NULL, NULL);
	}
	ab_client_close (&c);
	close (cn->fd);
	free (cn);
	return NULL;
}

static void
start_conn (const struct fwd_s *f, int fd)
{
	struct conn_s *cn = xcalloc (1, sizeof *cn);
	pthread_attr_t attr;
	pthread_t t;

	cn->fwd = f;
	cn->fd = fd;
	pthread_attr_init (&attr);
	pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
	if (pthread_create (&t, &attr, conn_main, cn) != 0) {
		fprintf (stderr, "agentbox port: cannot start a thread; connection dropped\n");
		close (fd);
		free (cn);
	}
	pthread_attr_destroy (&attr);
}

/* Accept until SIGINT or SIGTERM (read from a signalfd: the threads never
 * see them). */
static int
serve (const struct fwd_s *f, int lfd, int sfd)
{
	for (;;) {
		struct pollfd p[2] = { { .fd = lfd, .events = POLLIN },
			               { .fd = sfd, .events = POLLIN } };
		int fd;

		if (poll (p, 2, -1) < 0 && errno != EINTR)
			return AB_EXIT_FAILED;
		if (p[1].revents)
			return 0;
		if (!(p[0].revents & POLLIN))
			continue;
		fd = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
		if (fd >= 0)
			start_conn (f, fd);
	}
}

static int
parse_args (int argc, char **argv, struct fwd_s *f, const char **listen_spec)
{
	int n = 0;
	char *end;

	for (int i = 1; i < argc; i++) {
		if (strcmp (argv[i], "--listen") == 0 && i + 1 < argc)
			*listen_spec = argv[++i];
		else if (strncmp (argv[i], "--listen=", 9) == 0)
			*listen_spec = argv[i] + 9;
		else if (argv[i][0] == '-' || n == 2)
			return -1;
		else if (n++ == 0)
			f->id = argv[i];
		else {
			errno = 0;
			f->port = (unsigned)strtoul (argv[i], &end, 10);
			if (*end || argv[i][0] == '\0' || errno || f->port < 1 || f->port > 65535)
				return -1;
		}
	}
	/* The id goes into request paths: an id is hex, refuse anything that
	 * could change the request (a '/', '?', space or line break). */
	if (n == 2
	    && (f->id[0] == '\0' || strspn (f->id, "0123456789abcdefABCDEF") != strlen (f->id)))
		return -1;
	return n == 2 ? 0 : -1;
}

static int forward (struct fwd_s *f, const char *listen_spec);

int
ab_cmd_port (int argc, char **argv)
{
	struct fwd_s f = { .host = ab_client_take_host (&argc, argv), .open = open_stream };
	const char *listen_spec = "127.0.0.1:0";
	ab_error_t err = AB_ERROR_INIT;
	cleanup_free char *path = NULL;
	json_t *j;

	if (argc == 2 && strcmp (argv[1], "--help") == 0) {
		fputs (usage, stdout);
		return 0;
	}
	if (parse_args (argc, argv, &f, &listen_spec) < 0) {
		fputs (usage, stderr);
		return AB_EXIT_FAILED;
	}
	/* A wrong id or a stopped daemon is reported now, not per connection. */
	path = xasprintf ("/v1/sandboxes/%s", f.id);
	if (!(j = ab_client_call (f.host, "GET", path, NULL, NULL, &err))) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	json_decref (j);
	f.ctx = &f;
	return forward (&f, listen_spec);
}

/* Listen, then a stream per accepted connection until SIGINT/SIGTERM. */
static int
forward (struct fwd_s *f, const char *listen_spec)
{
	ab_error_t err = AB_ERROR_INIT;
	cleanup_close int lfd = -1, sfd = -1;
	sigset_t set;

	sigemptyset (&set);
	sigaddset (&set, SIGINT);
	sigaddset (&set, SIGTERM);
	signal (SIGPIPE, SIG_IGN);
	if (pthread_sigmask (SIG_BLOCK, &set, NULL) != 0
	    || (sfd = signalfd (-1, &set, SFD_CLOEXEC)) < 0) {
		ab_error (&err, errno, AB_E_SYSTEM, "signalfd");
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	if ((lfd = listen_on (listen_spec, &err)) < 0) {
		ab_cli_report (&err);
		return AB_EXIT_FAILED;
	}
	return serve (f, lfd, sfd);
}

int
ab_cli_forward (const char *host, const char *listen_spec, ab_cli_stream_fn open, void *ctx)
{
	struct fwd_s f = { .host = host, .open = open, .ctx = ctx };

	return forward (&f, listen_spec);
}
