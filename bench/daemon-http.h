/* The bench clients' few lines of HTTP to `agentbox serve` on its unix
 * socket (bench/exec-client.c, bench/backends-client.c): a monotonic clock,
 * a connect, and one request with its whole Content-Length response.
 * Header-only and libc-only on purpose: each client is built standalone. */
#ifndef AB_BENCH_DAEMON_HTTP_H
#define AB_BENCH_DAEMON_HTTP_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

static long long
now_us (void)
{
	struct timespec ts;
	clock_gettime (CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000000LL + ts.tv_nsec / 1000;
}

static int
dial (const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	int fd = socket (AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	snprintf (sun.sun_path, sizeof sun.sun_path, "%s", path);
	if (fd < 0 || connect (fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
		perror ("connect");
		exit (1);
	}
	return fd;
}

/* One request (extra: more header lines, each ending in \r\n, or NULL) and
 * its whole response (Content-Length bodies only); the body is copied to
 * out (NUL-terminated), the head to head when it is not NULL.  Returns
 * the HTTP status. */
static int
call_with (int fd, const char *method, const char *path, const char *extra, const char *body,
           char *out, size_t cap, char *head, size_t head_cap)
{
	static char buf[1 << 16];
	char req[4096];
	size_t n = 0, blen = body ? strlen (body) : 0;
	int len = snprintf (req, sizeof req,
	                    "%s %s HTTP/1.1\r\nHost: b\r\nContent-Type: application/json\r\n"
	                    "%sContent-Length: %zu\r\n\r\n%s",
	                    method, path, extra ? extra : "", blen, body ? body : "");
	char *end = NULL;
	long clen = 0;

	if (len < 0 || (size_t)len >= sizeof req || write (fd, req, (size_t)len) != len) {
		fprintf (stderr, "request too large or write failed\n");
		exit (1);
	}
	for (;;) {
		ssize_t r = read (fd, buf + n, sizeof buf - 1 - n);
		if (r <= 0) {
			fprintf (stderr, "daemon closed the connection\n");
			exit (1);
		}
		n += (size_t)r;
		buf[n] = 0;
		if ((end = strstr (buf, "\r\n\r\n"))) {
			char *cl = strcasestr (buf, "content-length:");
			clen = cl ? atol (cl + 15) : 0;
			if ((size_t)(end + 4 - buf) + (size_t)clen <= n)
				break;
		}
	}
	if (out) {
		size_t k = (size_t)clen < cap - 1 ? (size_t)clen : cap - 1;
		memcpy (out, end + 4, k);
		out[k] = 0;
	}
	if (head) {
		size_t k = (size_t)(end - buf) < head_cap - 1 ? (size_t)(end - buf) : head_cap - 1;
		memcpy (head, buf, k);
		head[k] = 0;
	}
	return atoi (buf + 9);
}

static inline int
call (int fd, const char *method, const char *path, const char *body, char *out, size_t cap)
{
	return call_with (fd, method, path, NULL, body, out, cap, NULL, 0);
}

#endif
