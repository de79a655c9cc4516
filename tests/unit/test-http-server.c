/* Unit tests for the one HTTP server model (net/http-server.c) over real
 * loopback sockets: pipelined keep-alive requests answered in order, the
 * head limit (431 through head_error, then closed), the request deadline
 * on a slow head, the connection limit (refuse), stop_conns ending idle
 * connections; and the preview bridge on it (net/preview-serve.c): the
 * deepest JSON the parser takes, stored and dumped back on a connection
 * thread's stack, and SIGTERM stopping it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <errno.h>
#include <netinet/in.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include "base/sys.h"
#include "net/http-server.h"
#include "net/listener.h"
#include "net/preview-serve.h"

struct fixture_s {
	ab_http_server_t *s;
	pthread_t thread;
	int stop[2];
	uint16_t port;
	int head_errors, refused, requests;
	pthread_mutex_t lock;
};

static void
write_answer (int fd, const char *body, bool close_it)
{
	char buf[512];
	int n = snprintf (buf, sizeof buf, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n%s\r\n%s",
	                  strlen (body), close_it ? "Connection: close\r\n" : "", body);
	ab_http_write (fd, buf, (size_t)n);
}

/* Read the body, echo the target; "/close" answers and closes. */
static ab_http_next
on_request (void *ctx, struct ab_http_conn_s *c)
{
	struct fixture_s *f = ctx;
	ab_error_t err = AB_ERROR_INIT;
	char target[128];
	char *body = NULL;
	size_t len;
	bool close_it;

	if (ab_http_io_body_all (&c->io, 1024, &body, &len, &err) < 0)
		return AB_HTTP_DROP;
	free (body);

	snprintf (target, sizeof target, "%.*s", (int)c->io.head.target_len, c->io.head.target);
	close_it = strcmp (target, "/close") == 0;
	pthread_mutex_lock (&f->lock);
	f->requests++;
	pthread_mutex_unlock (&f->lock);
	write_answer (c->fd, target, close_it);
	return close_it ? AB_HTTP_CLOSE : AB_HTTP_KEEP;
}

static void
on_head_error (void *ctx, struct ab_http_conn_s *c, const struct ab_http_error_s *e)
{
	struct fixture_s *f = ctx;
	char buf[128];
	int n = snprintf (buf, sizeof buf,
	                  "HTTP/1.1 %d Error\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
	                  e->status);

	pthread_mutex_lock (&f->lock);
	f->head_errors++;
	pthread_mutex_unlock (&f->lock);
	ab_http_write (c->fd, buf, (size_t)n);
}

static void
on_refuse (void *ctx, int fd, const char *why)
{
	struct fixture_s *f = ctx;

	pthread_mutex_lock (&f->lock);
	f->refused++;
	pthread_mutex_unlock (&f->lock);
	ab_http_write (fd, "HTTP/1.1 503 Busy\r\nContent-Length: 0\r\n\r\n", 41);
}

static const struct ab_http_server_ops_s ops = {
	.refuse = on_refuse,
	.head_error = on_head_error,
	.request = on_request,
};

static void *
run_server (void *arg)
{
	struct fixture_s *f = arg;
	ab_error_t err = AB_ERROR_INIT;

	ab_http_server_run (f->s, f->stop[0], &err);
	return NULL;
}

static struct fixture_s *
start_with (unsigned max_conns, unsigned head_timeout_ms, unsigned request_timeout_ms)
{
	const struct ab_http_server_config_s cfg = {
		.max_conns = max_conns,
		.max_head = 1024,
		.idle_timeout_ms = 5000,
		.send_timeout_ms = 5000,
		.head_timeout_ms = head_timeout_ms,
		.request_timeout_ms = request_timeout_ms,
		.linger_ms = 500,
		.thread_stack = 256 * 1024,
	};
	struct fixture_s *f = calloc (1, sizeof *f);
	ab_error_t err = AB_ERROR_INIT;
	char bound[64];
	int fd;

	pthread_mutex_init (&f->lock, NULL);
	assert_int_equal (pipe (f->stop), 0);
	f->s = ab_http_server_new (&cfg, &ops, f);
	fd = ab_tcp_listen ("127.0.0.1", "0", bound, sizeof bound, &err);
	assert_true (fd >= 0);
	f->port = (uint16_t)atoi (strrchr (bound, ':') + 1);
	assert_int_equal (ab_http_server_add_listener (f->s, fd, 7, &err), 0);
	assert_int_equal (pthread_create (&f->thread, NULL, run_server, f), 0);
	return f;
}

static struct fixture_s *
start (unsigned max_conns, unsigned request_timeout_ms)
{
	return start_with (max_conns, 0, request_timeout_ms);
}

static void
stop (struct fixture_s *f)
{
	assert_int_equal (write (f->stop[1], "x", 1), 1);
	pthread_join (f->thread, NULL);
	ab_http_server_stop_conns (f->s);
	assert_int_equal (ab_http_server_conns (f->s), 0);
	ab_http_server_free (f->s);
	close (f->stop[0]);
	close (f->stop[1]);
	pthread_mutex_destroy (&f->lock);
	free (f);
}

static int
dial (uint16_t port)
{
	struct sockaddr_in sin = { .sin_family = AF_INET,
		                   .sin_port = htons (port),
		                   .sin_addr.s_addr = htonl (INADDR_LOOPBACK) };
	int fd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

	assert_true (fd >= 0);
	assert_int_equal (connect (fd, (struct sockaddr *)&sin, sizeof sin), 0);
	return fd;
}

/* Everything the server sends until EOF or timeout_ms of silence. */
static size_t
read_all (int fd, char *buf, size_t cap, int timeout_ms, bool *eof)
{
	size_t n = 0;

	*eof = false;
	while (n + 1 < cap) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		ssize_t r;

		if (poll (&p, 1, timeout_ms) <= 0)
			break;
		r = recv (fd, buf + n, cap - 1 - n, 0);
		if (r <= 0) {
			*eof = true;
			break;
		}
		n += (size_t)r;
	}
	buf[n] = '\0';
	return n;
}

static void
send_str (int fd, const char *s)
{
	assert_int_equal (send (fd, s, strlen (s), MSG_NOSIGNAL), (ssize_t)strlen (s));
}

static void
test_keep_alive_order (void **state)
{
	struct fixture_s *f = start (8, 0);
	int fd = dial (f->port);
	char buf[2048];
	bool eof;

	/* Three requests in one write: three answers, in order, on one
	 * connection that stays open after the first two. */
	send_str (fd, "GET /a HTTP/1.1\r\nHost: x\r\n\r\nGET /b HTTP/1.1\r\nHost: x\r\n\r\n"
	              "GET /close HTTP/1.1\r\nHost: x\r\n\r\n");
	read_all (fd, buf, sizeof buf, 2000, &eof);
	assert_true (eof);
	assert_non_null (strstr (buf, "\r\n\r\n/a"));
	assert_true (strstr (buf, "\r\n\r\n/a") < strstr (buf, "\r\n\r\n/b"));
	assert_true (strstr (buf, "\r\n\r\n/b") < strstr (buf, "\r\n\r\n/close"));
	assert_int_equal (f->requests, 3);
	close (fd);
	stop (f);
}

static void
test_head_limit (void **state)
{
	struct fixture_s *f = start (8, 0);
	int fd = dial (f->port);
	char big[4096], buf[1024];
	bool eof;

	memset (big, 'a', sizeof big);
	memcpy (big, "GET / HTTP/1.1\r\nX: ", 19);
	big[sizeof big - 1] = '\0';
	send_str (fd, big);
	read_all (fd, buf, sizeof buf, 2000, &eof);
	assert_true (strncmp (buf, "HTTP/1.1 431 ", 13) == 0);
	assert_true (eof); /* and closed, after the linger saw our EOF or ended */
	assert_int_equal (f->head_errors, 1);
	assert_int_equal (f->requests, 0);
	close (fd);
	stop (f);
}

/* A byte now and then keeps each read short of the idle timeout; the
 * deadline (the request's, or the head's alone) still ends it. */
static void
slow_head (unsigned head_timeout_ms, unsigned request_timeout_ms)
{
	struct fixture_s *f = start_with (8, head_timeout_ms, request_timeout_ms);
	int fd = dial (f->port);
	uint64_t t0 = ab_mono_ms ();
	char buf[256];
	bool eof;

	for (int i = 0; i < 4; i++) {
		send (fd, "G", 1, MSG_NOSIGNAL);
		usleep (100 * 1000);
	}
	read_all (fd, buf, sizeof buf, 3000, &eof);
	assert_true (eof);
	assert_int_equal (strlen (buf), 0); /* nothing to answer: just closed */
	assert_true (ab_mono_ms () - t0 < 2500);
	assert_int_equal (f->head_errors, 0);
	close (fd);
	stop (f);
}

static void
test_slow_head_times_out (void **state)
{
	slow_head (0, 300);
	slow_head (300, 0);
}

/* The head deadline is the head's: a body may take longer. */
static void
test_head_timeout_spares_the_body (void **state)
{
	struct fixture_s *f = start_with (8, 300, 0);
	int fd = dial (f->port);
	char buf[512];
	bool eof;

	send_str (fd, "POST /slow-body HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\n");
	usleep (500 * 1000);
	read_all (fd, buf, sizeof buf, 100, &eof);
	assert_false (eof); /* the head arrived in time: still open */
	send_str (fd, "body");
	read_all (fd, buf, sizeof buf, 2000, &eof);
	assert_non_null (strstr (buf, "/slow-body"));
	close (fd);
	stop (f);
}

static void
test_connection_limit (void **state)
{
	struct fixture_s *f = start (1, 0);
	int a = dial (f->port), b;
	char buf[256];
	bool eof;

	/* a is being served (its thread waits for a head), so b is refused. */
	send_str (a, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
	read_all (a, buf, sizeof buf, 300, &eof);
	assert_non_null (strstr (buf, "/a"));
	b = dial (f->port);
	read_all (b, buf, sizeof buf, 2000, &eof);
	assert_true (strncmp (buf, "HTTP/1.1 503 ", 13) == 0);
	assert_true (eof);
	assert_int_equal (f->refused, 1);
	assert_int_equal (ab_http_server_conns (f->s), 1);
	close (b);
	close (a);
	stop (f);
}

static void
test_stop_conns_ends_idle (void **state)
{
	struct fixture_s *f = start (8, 0);
	int a = dial (f->port);
	char buf[256];
	bool eof;

	send_str (a, "GET /a HTTP/1.1\r\nHost: x\r\n\r\n");
	read_all (a, buf, sizeof buf, 300, &eof);
	assert_false (eof);
	stop (f); /* waits for the idle connection's thread */
	read_all (a, buf, sizeof buf, 1000, &eof);
	assert_true (eof);
	close (a);
}

struct preview_s {
	ab_preview_server_t *srv;
	int rc;
};

static void *
run_preview (void *arg)
{
	struct preview_s *p = arg;
	ab_error_t err = AB_ERROR_INIT;

	p->rc = ab_preview_server_run (p->srv, &err);
	return NULL;
}

/* POST doc to /signal on a new connection; the answer's status. */
static int
post_signal (uint16_t port, const char *doc, size_t *body_len)
{
	int fd = dial (port);
	size_t cap = 1 << 20, n;
	char *buf = malloc (cap);
	char *head = NULL;
	bool eof;
	int status = 0;

	n = (size_t)snprintf (buf, cap,
	                      "POST /signal HTTP/1.1\r\nHost: x\r\nConnection: close\r\n"
	                      "Content-Length: %zu\r\n\r\n",
	                      strlen (doc));
	send_str (fd, buf);
	assert_int_equal (send (fd, doc, strlen (doc), MSG_NOSIGNAL), (ssize_t)strlen (doc));
	(void)n;
	n = read_all (fd, buf, cap, 5000, &eof);
	if (n > 12 && strncmp (buf, "HTTP/1.1 ", 9) == 0)
		status = atoi (buf + 9);
	head = strstr (buf, "\r\n\r\n");
	*body_len = head ? n - (size_t)(head + 4 - buf) : 0;
	close (fd);
	free (buf);
	return status;
}

static void
test_preview_deep_json (void **state)
{
	struct ab_preview_serve_config_s cfg;
	struct preview_s p = { 0 };
	ab_error_t err = AB_ERROR_INIT;
	const int depth = 2047; /* jansson's deepest; 2048 is "bad json" */
	char bound[64];
	pthread_t t;
	size_t len;
	char *doc = malloc (2 * depth + 128);
	int n = sprintf (doc, "{\"sessionId\":\"d\",\"role\":\"host\",\"type\":\"x\",\"payload\":");

	for (int i = 0; i < depth; i++)
		doc[n++] = '[';
	for (int i = 0; i < depth; i++)
		doc[n++] = ']';
	strcpy (doc + n, "}");
	ab_preview_serve_config_default (&cfg);
	p.srv = ab_preview_server_new (&cfg, &err);
	assert_non_null (p.srv);
	assert_int_equal (
	        ab_preview_server_listen (p.srv, "127.0.0.1", "0", bound, sizeof bound, &err), 0);
	assert_int_equal (pthread_create (&t, NULL, run_preview, &p), 0);
	/* Parsed, stored, then dumped back in a poll: all on the connection
	 * thread's stack, which must hold it (the bridge served it on its
	 * main thread's 8 MiB before). */
	assert_int_equal (post_signal ((uint16_t)atoi (strrchr (bound, ':') + 1), doc, &len), 200);
	assert_int_equal (post_signal ((uint16_t)atoi (strrchr (bound, ':') + 1),
	                               "{\"sessionId\":\"d\",\"type\":\"poll\"}", &len),
	                  200);
	assert_true (len > 2 * (size_t)depth);
	/* SIGTERM (blocked, read from the signalfd) stops it cleanly. */
	assert_int_equal (pthread_kill (t, SIGTERM), 0);
	pthread_join (t, NULL);
	assert_int_equal (p.rc, 0);
	ab_preview_server_free (p.srv);
	free (doc);
}

int
main (void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test (test_keep_alive_order),
		cmocka_unit_test (test_head_limit),
		cmocka_unit_test (test_slow_head_times_out),
		cmocka_unit_test (test_head_timeout_spares_the_body),
		cmocka_unit_test (test_connection_limit),
		cmocka_unit_test (test_stop_conns_ends_idle),
		cmocka_unit_test (test_preview_deep_json),
	};
	return cmocka_run_group_tests (tests, NULL, NULL);
}
