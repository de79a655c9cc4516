/* HTTP/1.1 message I/O over a blocking stream socket, shared by the HTTP
 * server (net/http-server.h) and the CLI's client: a buffered reader that finds and
 * parses heads with the project's strict parser (net/http-head.h), a body
 * reader that decodes Content-Length and chunked bodies as they stream (the
 * chunked grammar is checked by ab_http_chunked_advance), and writers for
 * fixed-length and chunked bodies.  No copies of bodies are kept: memory
 * per connection is the read buffer, whatever the body size. */
#ifndef AB_NET_HTTP_IO_H
#define AB_NET_HTTP_IO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "base/error.h"
#include "net/http-head.h"
#include "net/websocket.h"

#define AB_HTTP_IO_BUF        (64 * 1024)
#define AB_HTTP_IO_MAX_FIELDS 64

struct ab_http_io_s {
	int fd;
	char *buf;       /* AB_HTTP_IO_BUF bytes */
	size_t off, len; /* unread bytes are buf[off..len) */
	size_t max_head;
	char *head_copy; /* the current head; fields point into it */
	struct ab_http_head_s head;
	struct ab_http_field_s fields[AB_HTTP_IO_MAX_FIELDS];
	/* the current body */
	ab_http_body_kind body;
	uint64_t body_left;             /* LENGTH: bytes still to read */
	struct ab_http_chunked_s chunk; /* CHUNKED: the validator's state */
	bool in_chunk_data;             /* CHUNKED: inside a chunk's data */
	bool body_done;
	uint64_t body_read; /* bytes delivered so far */
	/* 0, or the monotonic ms (base/sys.h ab_mono_ms) by which every read
	 * must have its bytes: a read that would wait past it fails with
	 * ETIMEDOUT (set per request by net/http-server.c) */
	uint64_t deadline_ms;
	const char *body_error; /* the chunk parser's reason, after AB_E_INVALID */
	/* after an upgrade: the WebSocket message being reassembled
	 * (daemon/websocket.c) */
	struct ab_ws_assembler_s ws;
};

void ab_http_io_init (struct ab_http_io_s *io, int fd, size_t max_head);
/* More bytes into the buffer (after an upgrade: the WebSocket reader's):
 * > 0 bytes, 0 at EOF, -1 with errno (ETIMEDOUT past io->deadline_ms). */
ssize_t ab_http_io_fill (struct ab_http_io_s *io);
void ab_http_io_free (struct ab_http_io_s *io);

/* Read and parse the next request (server) or response (client) head.
 * Returns 1 with io->head filled, 0 on a clean EOF before any byte, -1 on a
 * malformed head (*e says the status: 400, 431, 501, 505) or an I/O error
 * (e->status 0). */
int ab_http_io_read_request (struct ab_http_io_s *io, struct ab_http_error_s *e);
int ab_http_io_read_response (struct ab_http_io_s *io, bool req_is_head, struct ab_http_error_s *e);

/* Body bytes of the current message: > 0 bytes, 0 at its end, -1 on error
 * (malformed chunking is AB_E_INVALID, a short body or an I/O error
 * AB_E_SYSTEM). */
ssize_t ab_http_io_body_read (struct ab_http_io_s *io, void *buf, size_t cap, ab_error_t *err);
/* The whole body, at most max bytes (more is AB_E_LIMIT with errnum E2BIG:
 * the server answers 413).  NUL-terminated for convenience. */
int ab_http_io_body_all (struct ab_http_io_s *io, size_t max, char **out, size_t *len,
                         ab_error_t *err);

/* Case-insensitive lookup of a field of the current head; NULL if absent. */
const char *ab_http_io_field (const struct ab_http_io_s *io, const char *lower_name, size_t *len);

/* Writers (MSG_NOSIGNAL; a peer that went away is -1 with errno EPIPE). */
int ab_http_write (int fd, const void *buf, size_t len);
int ab_http_write_chunk (int fd, const void *buf, size_t len); /* len 0 writes nothing */
int ab_http_write_last_chunk (int fd);
/* A data chunk and the last chunk in one write (len 0: the last only). */
int ab_http_write_chunk_last (int fd, const void *buf, size_t len);
/* "SIZE\r\nDATA\r\n" in a new buffer (its length in *out_len), to send
 * with other bytes in one write. */
char *ab_http_chunk_frame (const void *buf, size_t len, size_t *out_len);

#endif
