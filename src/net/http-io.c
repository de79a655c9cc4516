/* HTTP/1.1 message I/O: see http-io.h. */
#include "net/http-io.h"

#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/sys.h"
#include "base/xalloc.h"

void
ab_http_io_init (struct ab_http_io_s *io, int fd, size_t max_head)
{
	memset (io, 0, sizeof *io);
	io->fd = fd;
	io->buf = xmalloc (AB_HTTP_IO_BUF);
	io->max_head = max_head < AB_HTTP_IO_BUF ? max_head : AB_HTTP_IO_BUF;
	io->body_done = true;
}

void
ab_http_io_free (struct ab_http_io_s *io)
{
	/* Request bodies pass through here (credentials on create). */
	if (io->buf)
		explicit_bzero (io->buf, AB_HTTP_IO_BUF);
	free (io->buf);
	free (io->head_copy);
	io->buf = io->head_copy = NULL;
	ab_ws_assembler_free (&io->ws);
}

/* Wait until the socket is readable or the deadline has passed (-1,
 * ETIMEDOUT): the deadline bounds a whole request, however slowly its
 * bytes trickle in, where SO_RCVTIMEO bounds only each read. */
static int
wait_deadline (struct ab_http_io_s *io)
{
	for (;;) {
		struct pollfd p = { .fd = io->fd, .events = POLLIN };
		uint64_t now = ab_mono_ms ();
		uint64_t left = io->deadline_ms > now ? io->deadline_ms - now : 0;
		int r;

		if (left == 0) {
			errno = ETIMEDOUT;
			return -1;
		}
		r = poll (&p, 1, left > INT_MAX ? INT_MAX : (int)left);
		if (r > 0)
			return 0;
		if (r < 0 && errno != EINTR)
			return -1;
	}
}

ssize_t
ab_http_io_fill (struct ab_http_io_s *io)
{
	ssize_t n;

	if (io->off == io->len)
		io->off = io->len = 0;
	if (io->len == AB_HTTP_IO_BUF) {
		memmove (io->buf, io->buf + io->off, io->len - io->off);
		io->len -= io->off;
		io->off = 0;
	}
	if (io->deadline_ms != 0 && wait_deadline (io) < 0)
		return -1;
	do
		n = read (io->fd, io->buf + io->len, AB_HTTP_IO_BUF - io->len);
	while (n < 0 && errno == EINTR);
	if (n > 0)
		io->len += (size_t)n;
	return n;
}

static void
set_body (struct ab_http_io_s *io)
{
	io->body = io->head.body;
	io->body_left = io->head.content_length;
	io->body_done = io->body == AB_HTTP_BODY_NONE
	                || (io->body == AB_HTTP_BODY_LENGTH && io->body_left == 0);
	io->in_chunk_data = false;
	io->body_read = 0;
	io->body_error = NULL;
	ab_http_chunked_init (&io->chunk);
}

static int
read_head (struct ab_http_io_s *io, bool request, bool req_is_head, struct ab_http_error_s *e)
{
	struct ab_http_limits_s lim = { .max_head = io->max_head,
		                        .max_fields = AB_HTTP_IO_MAX_FIELDS };
	size_t scan = 0;
	ssize_t end;

	/* The head must be contiguous: move what is left to the front. */
	memmove (io->buf, io->buf + io->off, io->len - io->off);
	io->len -= io->off;
	io->off = 0;
	e->status = 0;
	e->reason = "connection closed";
	while ((end = ab_http_head_end (io->buf, io->len, &scan, &lim, e)) == 0) {
		ssize_t n = io->len < AB_HTTP_IO_BUF ? ab_http_io_fill (io) : 0;
		if (n == 0 && io->len == 0)
			return 0;
		if (n <= 0) {
			e->status = io->len >= io->max_head ? 431 : 0;
			e->reason = io->len >= io->max_head ? "head too large"
			                                    : "connection closed in a head";
			return -1;
		}
	}
	if (end < 0)
		return -1;
	free (io->head_copy);
	io->head_copy = xstrndup (io->buf, (size_t)end);
	io->off = (size_t)end;
	io->head.fields = io->fields;
	if ((request ? ab_http_parse_request (io->head_copy, (size_t)end, &lim, &io->head, e)
	             : ab_http_parse_response (io->head_copy, (size_t)end, &lim, req_is_head,
	                                       &io->head, e))
	    < 0)
		return -1;
	set_body (io);
	return 1;
}

int
ab_http_io_read_request (struct ab_http_io_s *io, struct ab_http_error_s *e)
{
	return read_head (io, true, false, e);
}

int
ab_http_io_read_response (struct ab_http_io_s *io, bool req_is_head, struct ab_http_error_s *e)
{
	return read_head (io, false, req_is_head, e);
}

/* Make sure some unread bytes are buffered; 0 at EOF. */
static int
need (struct ab_http_io_s *io, ab_error_t *err)
{
	ssize_t n;

	if (io->off < io->len)
		return 1;
	n = ab_http_io_fill (io);
	if (n < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "read request body");
	return n > 0;
}

/* Chunked: the validator walks every framing byte; data bytes inside a
 * chunk are handed out as they stand in the buffer.  A chunk's data starts
 * right after the LF that ends its size line, and the validator's
 * `remaining` is then the chunk size (non-zero): that is how we know. */
static ssize_t
read_chunked (struct ab_http_io_s *io, char *out, size_t cap, ab_error_t *err)
{
	struct ab_http_error_s e;

	while (!io->chunk.done) {
		int r = need (io, err);
		if (r <= 0)
			return r < 0 ? -1
			             : ab_error (err, 0, AB_E_SYSTEM,
			                         "request body ended inside a chunk");
		if (io->in_chunk_data) {
			size_t n = io->len - io->off;
			if (n > cap)
				n = cap;
			if (n > io->chunk.remaining)
				n = (size_t)io->chunk.remaining;
			memcpy (out, io->buf + io->off, n);
			ab_http_chunked_advance (&io->chunk, io->buf + io->off, n, &e);
			io->off += n;
			io->in_chunk_data = io->chunk.remaining > 0;
			return (ssize_t)n;
		}
		char c = io->buf[io->off];
		if (ab_http_chunked_advance (&io->chunk, &c, 1, &e) < 0) {
			io->body_error = e.reason;
			return ab_error (err, 0, AB_E_INVALID, "malformed chunked body: %s",
			                 e.reason);
		}
		io->off++;
		io->in_chunk_data = c == '\n' && io->chunk.remaining > 0;
	}
	io->body_done = true;
	return 0;
}

ssize_t
ab_http_io_body_read (struct ab_http_io_s *io, void *buf, size_t cap, ab_error_t *err)
{
	ssize_t n;
	int r;

	if (io->body_done || cap == 0)
		return 0;
	if (io->body == AB_HTTP_BODY_CHUNKED)
		n = read_chunked (io, buf, cap, err);
	else {
		r = need (io, err);
		if (r < 0)
			return -1;
		if (r == 0) {
			if (io->body == AB_HTTP_BODY_UNTIL_CLOSE) {
				io->body_done = true;
				return 0;
			}
			return ab_error (err, 0, AB_E_SYSTEM, "connection closed inside a body");
		}
		size_t m = io->len - io->off;
		if (m > cap)
			m = cap;
		if (io->body == AB_HTTP_BODY_LENGTH && m > io->body_left)
			m = (size_t)io->body_left;
		memcpy (buf, io->buf + io->off, m);
		io->off += m;
		if (io->body == AB_HTTP_BODY_LENGTH && (io->body_left -= m) == 0)
			io->body_done = true;
		n = (ssize_t)m;
	}
	if (n > 0)
		io->body_read += (uint64_t)n;
	return n;
}

int
ab_http_io_body_all (struct ab_http_io_s *io, size_t max, char **out, size_t *len, ab_error_t *err)
{
	size_t cap = 4096, n = 0;
	char *b;

	if (io->body == AB_HTTP_BODY_LENGTH && io->body_left > max)
		return ab_error (err, E2BIG, AB_E_LIMIT, "request body larger than %zu bytes", max);
	b = xmalloc (cap + 1);
	for (;;) {
		ssize_t r;
		if (n == cap) {
			if (cap > max) {
				free (b);
				return ab_error (err, E2BIG, AB_E_LIMIT,
				                 "request body larger than %zu bytes", max);
			}
			cap *= 2;
			b = xrealloc (b, cap + 1);
		}
		r = ab_http_io_body_read (io, b + n, cap - n, err);
		if (r < 0) {
			free (b);
			return -1;
		}
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		free (b);
		return ab_error (err, E2BIG, AB_E_LIMIT, "request body larger than %zu bytes", max);
	}
	b[n] = '\0';
	*out = b;
	*len = n;
	return 0;
}

const char *
ab_http_io_field (const struct ab_http_io_s *io, const char *lower_name, size_t *len)
{
	for (unsigned i = 0; i < io->head.n_fields; i++) {
		const struct ab_http_field_s *f = &io->head.fields[i];
		if (ab_http_token_eq (f->name, f->name_len, lower_name)) {
			if (len)
				*len = f->value_len;
			return f->value;
		}
	}
	return NULL;
}

static int
writev_all (int fd, struct iovec *iov, int n)
{
	while (n > 0) {
		struct msghdr m = { .msg_iov = iov, .msg_iovlen = (size_t)n };
		ssize_t w = sendmsg (fd, &m, MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		ab_iov_advance (&iov, &n, (size_t)w);
	}
	return 0;
}

int
ab_http_write (int fd, const void *buf, size_t len)
{
	struct iovec iov = { .iov_base = (void *)buf, .iov_len = len };
	return len ? writev_all (fd, &iov, 1) : 0;
}

/* "SIZE\r\n" of a chunk of len bytes into size[24]; its length. */
static size_t
chunk_size_line (char *size, size_t len)
{
	return (size_t)snprintf (size, 24, "%zx\r\n", len);
}

static int
write_chunk (int fd, const void *buf, size_t len, bool last)
{
	char size[24];
	struct iovec iov[3];

	iov[0].iov_base = size;
	iov[0].iov_len = chunk_size_line (size, len);
	iov[1].iov_base = (void *)buf;
	iov[1].iov_len = len;
	iov[2].iov_base = (void *)(last ? "\r\n0\r\n\r\n" : "\r\n");
	iov[2].iov_len = last ? 7 : 2;
	return writev_all (fd, iov, 3);
}

int
ab_http_write_chunk (int fd, const void *buf, size_t len)
{
	return len == 0 ? 0 : write_chunk (fd, buf, len, false);
}

int
ab_http_write_chunk_last (int fd, const void *buf, size_t len)
{
	return len == 0 ? ab_http_write_last_chunk (fd) : write_chunk (fd, buf, len, true);
}

char *
ab_http_chunk_frame (const void *buf, size_t len, size_t *out_len)
{
	char size[24];
	size_t n = chunk_size_line (size, len);
	char *f = xmalloc (n + len + 2);

	memcpy (f, size, n);
	memcpy (f + n, buf, len);
	memcpy (f + n + len, "\r\n", 2);
	*out_len = n + len + 2;
	return f;
}

int
ab_http_write_last_chunk (int fd)
{
	return ab_http_write (fd, "0\r\n\r\n", 5);
}
