/* ab_egress_proxy_serve_fd: the API the sandbox side uses for --network
 * proxy (each in-sandbox connection arrives as an already-connected
 * stream, here one end of an AF_UNIX socketpair).  The proxy runs on the
 * test's own event loop; the origin is a TCP listener on 127.0.0.1 served
 * by a thread.  Checks: a forwarded request, a CONNECT tunnel through a
 * unix socket (splice or its fallback), a denial with the sandbox's own
 * policy, the sandbox id in the audit lines, and a client that hangs up
 * while the proxy writes to it (EPIPE, never a SIGPIPE: the proxy leaves
 * the process's signal dispositions alone). */
#include <arpa/inet.h>
#include <errno.h>
#include <event2/event.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <pthread.h>
#include <setjmp.h>
#include <signal.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "net/audit.h"
#include "net/egress-proxy.h"
#include "policy/egress-policy.h"

static const char origin_reply[] = "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello";

struct origin_s {
	int lfd;
	int port;
	pthread_t thread;
};

/* Answer every connection's first request head with origin_reply, then
 * echo whatever else comes until EOF. */
static void *
origin_main (void *arg)
{
	struct origin_s *o = arg;

	for (;;) {
		char buf[4096];
		size_t got = 0;
		ssize_t n;
		int fd = accept (o->lfd, NULL, NULL);
		if (fd < 0)
			return NULL;
		while (got < sizeof buf - 1
		       && (n = read (fd, buf + got, sizeof buf - 1 - got)) > 0) {
			got += (size_t)n;
			buf[got] = '\0';
			if (strstr (buf, "\r\n\r\n"))
				break;
		}
		if (write (fd, origin_reply, sizeof origin_reply - 1) < 0) {
			close (fd);
			continue;
		}
		while ((n = read (fd, buf, sizeof buf)) > 0)
			if (write (fd, buf, (size_t)n) < 0)
				break;
		close (fd);
	}
}

static void
origin_start (struct origin_s *o)
{
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof sin;

	sin.sin_addr.s_addr = htonl (INADDR_LOOPBACK);
	o->lfd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	assert_true (o->lfd >= 0);
	assert_int_equal (bind (o->lfd, (struct sockaddr *)&sin, sizeof sin), 0);
	assert_int_equal (listen (o->lfd, 16), 0);
	assert_int_equal (getsockname (o->lfd, (struct sockaddr *)&sin, &sl), 0);
	o->port = ntohs (sin.sin_port);
	assert_int_equal (pthread_create (&o->thread, NULL, origin_main, o), 0);
}

struct fixture_s {
	struct event_base *base;
	struct ab_egress_policy_s *policy;
	struct ab_egress_policy_s *strict;
	struct ab_audit_s *audit;
	int audit_rd;
	ab_egress_proxy_t *proxy;
	struct origin_s origin;
};

static int
setup (void **state)
{
	struct fixture_s *f = calloc (1, sizeof *f);
	struct ab_egress_proxy_config_s cfg = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	int p[2];

	origin_start (&f->origin);
	f->base = event_base_new ();
	/* The proxy's policy allows the test origin; the "sandbox" policy
	 * passed to serve_fd denies every non-global address. */
	f->policy = ab_egress_policy_new_standalone ();
	assert_int_equal (ab_egress_policy_add_allow_cidr (f->policy, "127.0.0.1/32", &err), 0);
	f->strict = ab_egress_policy_new_sandbox ();
	assert_int_equal (ab_egress_policy_add_allow_host (f->strict, "*", &err), 0);
	assert_int_equal (pipe2 (p, O_CLOEXEC | O_NONBLOCK), 0);
	f->audit_rd = p[0];
	f->audit = ab_audit_from_fd (p[1]);
	cfg.policy = f->policy;
	cfg.audit = f->audit;
	ab_egress_limits_default (&cfg.limits);
	f->proxy = ab_egress_proxy_new (f->base, &cfg, &err);
	assert_non_null (f->proxy);
	*state = f;
	return 0;
}

static int
teardown (void **state)
{
	struct fixture_s *f = *state;

	ab_egress_proxy_free (f->proxy);
	ab_audit_close (f->audit);
	close (f->audit_rd);
	ab_egress_policy_free (f->policy);
	ab_egress_policy_free (f->strict);
	event_base_free (f->base);
	shutdown (f->origin.lfd, SHUT_RDWR);
	pthread_join (f->origin.thread, NULL);
	close (f->origin.lfd);
	free (f);
	return 0;
}

/* Run the loop until `want` bytes came back on fd, EOF, or 5 s. */
static size_t
pump (struct fixture_s *f, int fd, char *out, size_t cap, size_t want)
{
	size_t got = 0;
	time_t end = time (NULL) + 5;

	while (got < want && time (NULL) < end) {
		ssize_t n;
		event_base_loop (f->base, EVLOOP_NONBLOCK);
		n = recv (fd, out + got, cap - 1 - got, MSG_DONTWAIT);
		if (n == 0)
			break;
		if (n > 0)
			got += (size_t)n;
		else
			usleep (1000);
	}
	out[got] = '\0';
	return got;
}

static void
audit_contains (struct fixture_s *f, const char *needle)
{
	char buf[8192];
	ssize_t n;

	for (int i = 0; i < 50; i++) {
		event_base_loop (f->base, EVLOOP_NONBLOCK);
		n = read (f->audit_rd, buf, sizeof buf - 1);
		if (n > 0) {
			buf[n] = '\0';
			if (strstr (buf, needle) == NULL)
				fail_msg ("audit line lacks %s: %s", needle, buf);
			return;
		}
		usleep (10000);
	}
	fail_msg ("no audit line");
}

static void
test_forward_over_socketpair (void **state)
{
	struct fixture_s *f = *state;
	ab_error_t err = AB_ERROR_INIT;
	char req[256], out[4096];
	int sv[2];

	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal (ab_egress_proxy_serve_fd (f->proxy, sv[0], "sb-1234", NULL, &err), 0);
	assert_int_equal (ab_egress_proxy_connections (f->proxy), 1);
	snprintf (req, sizeof req, "GET http://127.0.0.1:%d/x HTTP/1.1\r\nHost: a\r\n\r\n",
	          f->origin.port);
	assert_int_equal (write (sv[1], req, strlen (req)), (ssize_t)strlen (req));
	pump (f, sv[1], out, sizeof out, 40);
	assert_non_null (strstr (out, "HTTP/1.1 200 OK\r\n"));
	assert_non_null (strstr (out, "\r\n\r\nhello"));
	audit_contains (f, "\"sandbox\":\"sb-1234\"");
	close (sv[1]);
	for (int i = 0; i < 100 && ab_egress_proxy_connections (f->proxy) > 0; i++) {
		event_base_loop (f->base, EVLOOP_NONBLOCK);
		usleep (1000);
	}
	assert_int_equal (ab_egress_proxy_connections (f->proxy), 0);
}

static void
test_connect_over_socketpair (void **state)
{
	struct fixture_s *f = *state;
	ab_error_t err = AB_ERROR_INIT;
	static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
	char req[256], out[4096], big[100000];
	int sv[2];
	size_t got;

	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal (ab_egress_proxy_serve_fd (f->proxy, sv[0], "sb-t", NULL, &err), 0);
	/* The head and the first tunnel bytes in one write. */
	snprintf (req, sizeof req,
	          "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	          f->origin.port);
	assert_int_equal (write (sv[1], req, strlen (req)), (ssize_t)strlen (req));
	got = pump (f, sv[1], out, sizeof out, sizeof established - 1 + sizeof origin_reply - 1);
	assert_int_equal (got, sizeof established - 1 + sizeof origin_reply - 1);
	assert_memory_equal (out, established, sizeof established - 1);
	/* Then 100 kB through the echo, more than one pipe's worth. */
	memset (big, 'z', sizeof big);
	{
		size_t sent = 0, back = 0;
		time_t end = time (NULL) + 5;
		fcntl (sv[1], F_SETFL, O_NONBLOCK);
		while (back < sizeof big && time (NULL) < end) {
			ssize_t n;
			if (sent < sizeof big
			    && (n = write (sv[1], big + sent, sizeof big - sent)) > 0)
				sent += (size_t)n;
			event_base_loop (f->base, EVLOOP_NONBLOCK);
			n = read (sv[1], out, sizeof out);
			if (n > 0) {
				for (ssize_t i = 0; i < n; i++)
					assert_int_equal (out[i], 'z');
				back += (size_t)n;
			}
		}
		assert_int_equal (back, sizeof big);
	}
	close (sv[1]);
	for (int i = 0; i < 200 && ab_egress_proxy_connections (f->proxy) > 0; i++) {
		event_base_loop (f->base, EVLOOP_NONBLOCK);
		usleep (1000);
	}
	assert_int_equal (ab_egress_proxy_connections (f->proxy), 0);
	audit_contains (f, "\"method\":\"CONNECT\"");
}

static void
test_sandbox_policy_denies (void **state)
{
	struct fixture_s *f = *state;
	ab_error_t err = AB_ERROR_INIT;
	char req[256], out[4096];
	int sv[2];

	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal (ab_egress_proxy_serve_fd (f->proxy, sv[0], "sb-strict", f->strict, &err),
	                  0);
	snprintf (req, sizeof req, "GET http://127.0.0.1:%d/ HTTP/1.1\r\nHost: a\r\n\r\n",
	          f->origin.port);
	assert_int_equal (write (sv[1], req, strlen (req)), (ssize_t)strlen (req));
	pump (f, sv[1], out, sizeof out, sizeof out);
	assert_non_null (strstr (out, "HTTP/1.1 403 Forbidden\r\n"));
	assert_non_null (strstr (out, "\r\n\r\negress denied: loopback address 127.0.0.1\n"));
	audit_contains (f, "\"decision\":\"deny\"");
	close (sv[1]);
}

/* The echo sends back what the client wrote; the client is gone by then,
 * so the proxy's writes fail with EPIPE.  SIGPIPE keeps its default
 * action here: a write that raised it would end the test process. */
static void
test_client_gone_no_sigpipe (void **state)
{
	struct fixture_s *f = *state;
	ab_error_t err = AB_ERROR_INIT;
	static const char established[] = "HTTP/1.1 200 Connection Established\r\n\r\n";
	char req[256], out[4096], big[65536];
	struct sigaction sa;
	int sv[2];
	ssize_t n;

	signal (SIGPIPE, SIG_DFL);
	assert_int_equal (socketpair (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv), 0);
	assert_int_equal (ab_egress_proxy_serve_fd (f->proxy, sv[0], "sb-gone", NULL, &err), 0);
	snprintf (req, sizeof req,
	          "CONNECT 127.0.0.1:%d HTTP/1.1\r\nHost: a\r\n\r\nGET / HTTP/1.1\r\n\r\n",
	          f->origin.port);
	assert_int_equal (write (sv[1], req, strlen (req)), (ssize_t)strlen (req));
	pump (f, sv[1], out, sizeof out, sizeof established - 1 + sizeof origin_reply - 1);
	memset (big, 'z', sizeof big);
	fcntl (sv[1], F_SETFL, O_NONBLOCK);
	n = write (sv[1], big, sizeof big);
	assert_true (n > 0);
	close (sv[1]);
	for (int i = 0; i < 2000 && ab_egress_proxy_connections (f->proxy) > 0; i++) {
		event_base_loop (f->base, EVLOOP_NONBLOCK);
		usleep (1000);
	}
	assert_int_equal (ab_egress_proxy_connections (f->proxy), 0);
	assert_int_equal (sigaction (SIGPIPE, NULL, &sa), 0);
	assert_true (sa.sa_handler == SIG_DFL);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown (test_forward_over_socketpair, setup, teardown),
		cmocka_unit_test_setup_teardown (test_connect_over_socketpair, setup, teardown),
		cmocka_unit_test_setup_teardown (test_sandbox_policy_denies, setup, teardown),
		cmocka_unit_test_setup_teardown (test_client_gone_no_sigpipe, setup, teardown),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
