/* A tiny origin server for the egress proxy's integration tests: loopback
 * only, a thread per connection, keep-alive.  Prints the port it bound
 * (port 0 = any) on stdout, then serves until killed.
 *
 *   egress-origin [--addr A] [--port P]           HTTP mode, paths:
 *       /bytes/N    N bytes (Content-Length)       /chunked/N  N bytes, chunked
 *       /close/N    N bytes, then close            /headers    the request head back
 *       /echo       the request body back          /silent     never answers
 *       /status/N   status N, empty body           /bad-cl-te  CL and TE (invalid)
 *       /hop        a response full of hop-by-hop fields
 *       /conn       the connection's serial number (1, 2, ...) as the body
 *       /then-drop  like /conn, but the next request on this connection
 *                   is read and the connection closed without an answer
 *                   (a kept-alive server closing just as it is reused)
 *   egress-origin --echo    raw bytes back; on EOF writes "EOF\n" and closes
 *   egress-origin --silent  accepts and never writes
 */
#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <pthread.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>
#include <unistd.h>

enum { MODE_HTTP, MODE_ECHO, MODE_SILENT };
static int mode = MODE_HTTP;
static unsigned n_conns;

#define HEAD_MAX 65536
#define BODY_MAX (16 << 20)

static int
write_all (int fd, const void *p, size_t n)
{
	const char *s = p;
	while (n > 0) {
		ssize_t w = send (fd, s, n, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w <= 0)
			return -1;
		s += w;
		n -= (size_t)w;
	}
	return 0;
}

/* Bytes of the test pattern: "0123456789abcdef" repeated. */
static void
pattern (char *p, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = "0123456789abcdef"[i % 16];
}

struct conn_s {
	int fd;
	unsigned serial;
	bool drop_next;
	char buf[HEAD_MAX];
	size_t len;
};

/* Read until buf holds n bytes (or EOF). */
static int
fill (struct conn_s *c, size_t n)
{
	while (c->len < n) {
		ssize_t r = read (c->fd, c->buf + c->len, sizeof c->buf - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
	}
	return 0;
}

static void
consume (struct conn_s *c, size_t n)
{
	memmove (c->buf, c->buf + n, c->len - n);
	c->len -= n;
}

static ssize_t
read_head (struct conn_s *c)
{
	for (;;) {
		char *end = memmem (c->buf, c->len, "\r\n\r\n", 4);
		ssize_t r;
		if (end)
			return end + 4 - c->buf;
		if (c->len == sizeof c->buf)
			return -1;
		r = read (c->fd, c->buf + c->len, sizeof c->buf - c->len);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			return -1;
		c->len += (size_t)r;
	}
}

static const char *
field (const char *head, size_t len, const char *name, size_t *vlen)
{
	size_t nl = strlen (name);
	for (const char *p = head; p && p < head + len;) {
		const char *eol = memmem (p, (size_t)(head + len - p), "\r\n", 2);
		if (eol == NULL)
			break;
		if ((size_t)(eol - p) > nl && p[nl] == ':' && strncasecmp (p, name, nl) == 0) {
			const char *v = p + nl + 1;
			while (*v == ' ')
				v++;
			*vlen = (size_t)(eol - v);
			return v;
		}
		p = eol + 2;
	}
	return NULL;
}

/* Read a request body (Content-Length or chunked) into a new buffer. */
static char *
read_body (struct conn_s *c, const char *head, size_t hlen, size_t *blen)
{
	size_t vl;
	const char *cl = field (head, hlen, "content-length", &vl);
	const char *te = field (head, hlen, "transfer-encoding", &vl);
	char *body = malloc (BODY_MAX);
	size_t n = 0;

	*blen = 0;
	if (cl) {
		size_t want = strtoul (cl, NULL, 10);
		while (n < want) {
			size_t k;
			if (c->len == 0 && fill (c, 1) < 0)
				break;
			k = c->len < want - n ? c->len : want - n;
			if (n + k > BODY_MAX)
				break;
			memcpy (body + n, c->buf, k);
			consume (c, k);
			n += k;
		}
	} else if (te) {
		for (;;) {
			char *eol;
			size_t sz;
			while ((eol = memmem (c->buf, c->len, "\r\n", 2)) == NULL)
				if (fill (c, c->len + 1) < 0)
					goto out;
			sz = strtoul (c->buf, NULL, 16);
			consume (c, (size_t)(eol + 2 - c->buf));
			if (sz == 0) {
				while ((eol = memmem (c->buf, c->len, "\r\n", 2)) == NULL)
					if (fill (c, c->len + 1) < 0)
						goto out;
				consume (c, (size_t)(eol + 2 - c->buf));
				break;
			}
			while (sz > 0) {
				size_t k;
				if (c->len == 0 && fill (c, 1) < 0)
					goto out;
				k = c->len < sz ? c->len : sz;
				if (n + k <= BODY_MAX) {
					memcpy (body + n, c->buf, k);
					n += k;
				}
				consume (c, k);
				sz -= k;
			}
			if (fill (c, 2) < 0)
				goto out;
			consume (c, 2);
		}
	}
out:
	*blen = n;
	return body;
}

static int
respond (struct conn_s *c, const char *head, size_t hlen, const char *body, size_t blen)
{
	char method[16] = "", path[1024] = "", line[256];
	bool keep = strstr (head, "HTTP/1.1\r\n") != NULL;
	size_t vl;
	const char *conn = field (head, hlen, "connection", &vl);
	unsigned long n = 0;

	if (conn && strncasecmp (conn, "close", 5) == 0)
		keep = false;
	sscanf (head, "%15s %1023s", method, path);
	if (strcmp (path, "/silent") == 0) {
		char sink[4096];
		while (read (c->fd, sink, sizeof sink) > 0)
			;
		return -1;
	}
	if (sscanf (path, "/bytes/%lu", &n) == 1 || sscanf (path, "/close/%lu", &n) == 1) {
		bool close_mode = strncmp (path, "/close/", 7) == 0;
		char *p = malloc (n + 1);
		pattern (p, n);
		if (close_mode)
			snprintf (line, sizeof line,
			          "HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n");
		else
			snprintf (line, sizeof line,
			          "HTTP/1.1 200 OK\r\nContent-Length: %lu\r\n%s\r\n", n,
			          keep ? "" : "Connection: close\r\n");
		if (strcmp (method, "HEAD") == 0)
			n = 0;
		if (write_all (c->fd, line, strlen (line)) < 0 || write_all (c->fd, p, n) < 0)
			keep = false;
		free (p);
		return close_mode ? -1 : keep ? 0 : -1;
	}
	if (sscanf (path, "/chunked/%lu", &n) == 1) {
		char *p = malloc (n + 1);
		pattern (p, n);
		snprintf (line, sizeof line,
		          "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
		write_all (c->fd, line, strlen (line));
		for (unsigned long off = 0; off < n; off += 1000) {
			unsigned long k = n - off < 1000 ? n - off : 1000;
			snprintf (line, sizeof line, "%lx\r\n", k);
			write_all (c->fd, line, strlen (line));
			write_all (c->fd, p + off, k);
			write_all (c->fd, "\r\n", 2);
		}
		write_all (c->fd, "0\r\nX-Trailer: t\r\n\r\n", 19);
		free (p);
		return keep ? 0 : -1;
	}
	if (sscanf (path, "/status/%lu", &n) == 1) {
		snprintf (line, sizeof line, "HTTP/1.1 %lu X\r\nContent-Length: 0\r\n\r\n", n);
		write_all (c->fd, line, strlen (line));
		return keep ? 0 : -1;
	}
	if (strcmp (path, "/conn") == 0 || strcmp (path, "/then-drop") == 0) {
		char num[16];
		int nl = snprintf (num, sizeof num, "%u", c->serial);
		c->drop_next = strcmp (path, "/then-drop") == 0;
		snprintf (line, sizeof line, "HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n", nl);
		write_all (c->fd, line, strlen (line));
		write_all (c->fd, num, (size_t)nl);
		return keep ? 0 : -1;
	}
	if (strcmp (path, "/hop") == 0) {
		snprintf (
		        line, sizeof line,
		        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nConnection: X-Hop, keep-alive\r\n"
		        "X-Hop: 1\r\nKeep-Alive: timeout=5\r\nProxy-Authenticate: Basic\r\n"
		        "Upgrade: h2c\r\nTrailer: X-T\r\nX-End: 1\r\n\r\nok");
		write_all (c->fd, line, strlen (line));
		return keep ? 0 : -1;
	}
	if (strcmp (path, "/bad-cl-te") == 0) {
		snprintf (
		        line, sizeof line,
		        "HTTP/1.1 200 OK\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\n"
		        "0\r\n\r\n");
		write_all (c->fd, line, strlen (line));
		return -1;
	}
	if (strcmp (path, "/headers") == 0 || strcmp (path, "/echo") == 0) {
		const char *b = strcmp (path, "/headers") == 0 ? head : body;
		size_t bl = strcmp (path, "/headers") == 0 ? hlen : blen;
		snprintf (line, sizeof line, "HTTP/1.1 200 OK\r\nContent-Length: %zu\r\n\r\n", bl);
		write_all (c->fd, line, strlen (line));
		write_all (c->fd, b, bl);
		return keep ? 0 : -1;
	}
	snprintf (line, sizeof line, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n");
	write_all (c->fd, line, strlen (line));
	return keep ? 0 : -1;
}

static void
serve_http (struct conn_s *c)
{
	for (;;) {
		ssize_t hl = read_head (c);
		char head[HEAD_MAX + 1];
		char *body;
		size_t blen;
		int r;

		if (hl < 0 || c->drop_next)
			return;
		memcpy (head, c->buf, (size_t)hl);
		head[hl] = '\0';
		consume (c, (size_t)hl);
		body = read_body (c, head, (size_t)hl, &blen);
		r = respond (c, head, (size_t)hl, body, blen);
		free (body);
		if (r < 0)
			return;
	}
}

static void
serve_echo (int fd)
{
	char buf[16384];
	ssize_t n;

	while ((n = read (fd, buf, sizeof buf)) > 0)
		if (write_all (fd, buf, (size_t)n) < 0)
			return;
	if (n == 0)
		write_all (fd, "EOF\n", 4);
}

static void *
conn_main (void *arg)
{
	struct conn_s *c = arg;

	if (mode == MODE_HTTP) {
		serve_http (c);
	} else if (mode == MODE_ECHO) {
		serve_echo (c->fd);
	} else {
		char sink[4096];
		while (read (c->fd, sink, sizeof sink) > 0)
			;
	}
	close (c->fd);
	free (c);
	return NULL;
}

int
main (int argc, char **argv)
{
	const char *addr = "127.0.0.1";
	int port = 0;
	struct sockaddr_in sin = { .sin_family = AF_INET };
	socklen_t sl = sizeof sin;
	pthread_attr_t attr;
	int one = 1;
	int lfd;

	for (int i = 1; i < argc; i++) {
		if (strcmp (argv[i], "--echo") == 0)
			mode = MODE_ECHO;
		else if (strcmp (argv[i], "--silent") == 0)
			mode = MODE_SILENT;
		else if (strcmp (argv[i], "--addr") == 0 && i + 1 < argc)
			addr = argv[++i];
		else if (strcmp (argv[i], "--port") == 0 && i + 1 < argc)
			port = atoi (argv[++i]);
		else {
			fprintf (stderr,
			         "usage: egress-origin [--echo|--silent] [--addr A] [--port P]\n");
			return 2;
		}
	}
	signal (SIGPIPE, SIG_IGN);
	lfd = socket (AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	setsockopt (lfd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
	sin.sin_port = htons ((uint16_t)port);
	if (inet_pton (AF_INET, addr, &sin.sin_addr) != 1
	    || bind (lfd, (struct sockaddr *)&sin, sizeof sin) < 0 || listen (lfd, 4096) < 0
	    || getsockname (lfd, (struct sockaddr *)&sin, &sl) < 0) {
		perror ("egress-origin: listen");
		return 1;
	}
	printf ("%d\n", ntohs (sin.sin_port));
	fflush (stdout);
	pthread_attr_init (&attr);
	pthread_attr_setstacksize (&attr, 256 * 1024);
	pthread_attr_setdetachstate (&attr, PTHREAD_CREATE_DETACHED);
	for (;;) {
		int fd = accept4 (lfd, NULL, NULL, SOCK_CLOEXEC);
		struct conn_s *c;
		pthread_t t;
		if (fd < 0) {
			if (errno == EINTR || errno == ECONNABORTED)
				continue;
			if (errno == EMFILE || errno == ENFILE) {
				usleep (10000);
				continue;
			}
			return 1;
		}
		c = calloc (1, sizeof *c);
		c->fd = fd;
		c->serial = __atomic_add_fetch (&n_conns, 1, __ATOMIC_RELAXED);
		if (pthread_create (&t, &attr, conn_main, c) != 0) {
			close (fd);
			free (c);
		}
	}
}
