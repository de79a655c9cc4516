/* The framed stdio relay: see preview-framed.h.  One thread, one poll(2)
 * loop over the upstream socket and stdin; stdout is written in place
 * (bounded by the idle timeout), which also holds back reading upstream
 * while the consumer is slow. */
#include "net/preview-framed.h"

#include <errno.h>
#include <poll.h>
#include <string.h>
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/uio.h>
#include <unistd.h>

#include "base/fd.h"
#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/http-head.h"
#include "net/preview-buf.h"
#include "net/preview-dial.h"
#include "net/preview-doc.h"
#include "net/preview-ws-handshake.h"
#include "net/websocket.h"

/* Stop reading stdin while this much is still queued for the server. */
#define UPLINK_HIGH (1u << 20)
/* After we stop: time to flush our close frame and hear the server's. */
#define CLOSE_LINGER_MS 1000
#define MAX_FIELDS      100

struct relay_s {
	int sock;
	int in_fd;
	int out_fd;
	uint64_t max_frame;
	uint64_t idle_ms;
	uint64_t last_ms;         /* last frame either way */
	struct ab_iobuf_s ws_in;  /* bytes from the server, not yet decoded */
	struct ab_iobuf_s ws_out; /* frames for the server, not yet sent */
	struct ab_iobuf_s std_in; /* bytes from stdin, not yet a whole frame */
	struct ab_ws_assembler_s as;
	bool stop;
	bool close_sent;
	bool close_received;
	bool upstream_gone; /* EOF or error: nothing more to send or read */
	uint8_t rnd[256];   /* masking keys, drawn in bulk */
	size_t rnd_used;
};

struct handshake_s {
	struct ab_preview_target_s target;
	const char *path;
	struct ab_preview_headers_s headers;
	uint64_t max_frame;
	uint64_t idle_ms;
};

/* ---- the handshake line ------------------------------------------------ */

/* Read stdin up to the first '\n'; what follows stays in r->std_in. */
static int
read_handshake_line (struct relay_s *r, json_t **doc, ab_error_t *err)
{
	char *nl = NULL;
	size_t line_len;
	json_error_t jerr;

	while (ab_iobuf_len (&r->std_in) == 0
	       || (nl = memchr (ab_preview_bytes (&r->std_in), '\n', ab_iobuf_len (&r->std_in)))
	                  == NULL) {
		ssize_t n;
		if (ab_iobuf_len (&r->std_in) > AB_PREVIEW_HANDSHAKE_MAX)
			return ab_error (err, 0, AB_E_LIMIT, "handshake line longer than 1 MiB");
		n = ab_iobuf_read (&r->std_in, r->in_fd, 64 * 1024, AB_PREVIEW_HANDSHAKE_MAX + 2);
		if (n == 0)
			return ab_error (err, 0, AB_E_INVALID,
			                 "stdin ended before the handshake line");
		if (n < 0 && errno != EINTR)
			return ab_error (err, errno, AB_E_SYSTEM, "read stdin");
	}
	line_len = (size_t)(nl - ab_preview_bytes (&r->std_in));
	if (line_len > AB_PREVIEW_HANDSHAKE_MAX)
		return ab_error (err, 0, AB_E_LIMIT, "handshake line longer than 1 MiB");
	*doc = json_loadb (ab_preview_bytes (&r->std_in), line_len, 0, &jerr);
	ab_iobuf_consume (&r->std_in, line_len + 1);
	if (*doc == NULL || !json_is_object (*doc))
		return ab_error (err, 0, AB_E_INVALID, "malformed handshake document");
	return 0;
}

static int
parse_handshake (const json_t *doc, struct handshake_s *h, ab_error_t *err)
{
	if (ab_preview_parse_target (json_object_get (doc, "target"), &h->target) < 0)
		return ab_error (err, 0, AB_E_INVALID, "invalid preview target");
	if (ab_preview_get_string (doc, "path", "/", &h->path) < 0
	    || !ab_preview_path_valid (h->path)
	    || ab_preview_get_uint (doc, "maxFrameBytes", 1, AB_PREVIEW_MAX_FRAME_LIMIT,
	                            AB_PREVIEW_DEFAULT_MAX_FRAME, &h->max_frame)
	               < 0
	    || ab_preview_get_uint (doc, "idleTimeoutMs", 1, UINT32_MAX, AB_PREVIEW_DEFAULT_IDLE_MS,
	                            &h->idle_ms)
	               < 0
	    || ab_preview_parse_headers (json_object_get (doc, "headers"),
	                                 AB_PREVIEW_HDRS_WEBSOCKET, &h->headers)
	               < 0)
		return ab_error (err, 0, AB_E_INVALID, "malformed handshake document");
	return 0;
}

/* ---- opening the upstream WebSocket ------------------------------------ */

/* Read the server's answer to the upgrade; frames that came right behind
 * it stay in r->ws_in. */
static int
read_upgrade_response (struct relay_s *r, const char *key, uint64_t deadline, ab_error_t *err)
{
	const struct ab_http_limits_s lim = { .max_head = AB_HTTP_MAX_HEAD_DEFAULT,
		                              .max_fields = MAX_FIELDS };
	struct ab_http_field_s fields[MAX_FIELDS];
	struct ab_http_head_s head = { .fields = fields };
	struct ab_http_error_s e;
	const char *why;
	size_t scan = 0;
	ssize_t end;

	while ((end = ab_http_head_end (ab_preview_bytes (&r->ws_in), ab_iobuf_len (&r->ws_in),
	                                &scan, &lim, &e))
	       == 0) {
		ssize_t n = ab_preview_recv (r->sock, &r->ws_in, lim.max_head + 1, deadline, err);
		if (n < 0)
			return ab_error_wrap (err, "waiting for the upgrade");
		if (n == 0)
			return ab_error (err, 0, AB_E_SYSTEM, "server closed before upgrading");
	}
	if (end < 0
	    || ab_http_parse_response (ab_preview_bytes (&r->ws_in), (size_t)end, &lim, false,
	                               &head, &e)
	               < 0)
		return ab_error (err, 0, AB_E_INVALID, "malformed upgrade response");
	if (ab_ws_check_response (&head, key, &why) < 0)
		return ab_error (err, 0, AB_E_INVALID, "upgrade refused: %s (status %d)", why,
		                 head.status);
	ab_iobuf_consume (&r->ws_in, (size_t)end);
	return 0;
}

static int
open_upstream (struct relay_s *r, const struct handshake_s *h, ab_error_t *err)
{
	/* Opening is traffic too: it gets the same idle allowance. */
	uint64_t deadline = ab_mono_ms () + h->idle_ms;
	char key[AB_WS_KEY_LEN + 1];
	struct ab_iobuf_s req = { 0 };
	int rc;

	if (ab_ws_make_key (key) < 0)
		return ab_error (err, errno, AB_E_SYSTEM, "getrandom");
	r->sock = ab_preview_dial (h->target.hostname, h->target.port, deadline, err);
	if (r->sock < 0)
		return ab_error_wrap (err, "cannot connect to %s", h->target.host_header);
	ab_ws_format_request (&req, h->target.host_header, h->path, key, &h->headers);
	rc = ab_preview_send_all (r->sock, ab_preview_bytes (&req), ab_iobuf_len (&req), deadline,
	                          err);
	ab_iobuf_free (&req);
	if (rc < 0)
		return ab_error_wrap (err, "sending the upgrade");
	return read_upgrade_response (r, key, deadline, err);
}

/* ---- frames to and from the server ------------------------------------ */

static int
next_mask (struct relay_s *r, uint8_t mask[4])
{
	/* 5.3: masking keys must be unpredictable, from a strong source. */
	if (r->rnd_used == 0 || r->rnd_used + 4 > sizeof r->rnd) {
		if (getrandom (r->rnd, sizeof r->rnd, 0) != (ssize_t)sizeof r->rnd)
			return -1;
		r->rnd_used = 0;
	}
	memcpy (mask, r->rnd + r->rnd_used, 4);
	r->rnd_used += 4;
	return 0;
}

static void
queue_frame (struct relay_s *r, uint8_t opcode, const void *p, size_t n)
{
	uint8_t hdr[AB_WS_MAX_HEADER];
	uint8_t mask[4];
	size_t hl;

	if (next_mask (r, mask) < 0) {
		r->stop = r->upstream_gone = true;
		return;
	}
	hl = ab_ws_encode_header (hdr, true, opcode, n, mask);
	ab_iobuf_append (&r->ws_out, hdr, hl);
	ab_preview_append (&r->ws_out, p, n);
	ab_ws_mask ((uint8_t *)r->ws_out.data + r->ws_out.end - n, n, mask, 0);
}

static void
queue_close (struct relay_s *r, uint16_t code)
{
	uint8_t p[2] = { (uint8_t)(code >> 8), (uint8_t)code };

	if (r->close_sent || r->upstream_gone)
		return;
	queue_frame (r, AB_WS_OP_CLOSE, p, code == AB_WS_CLOSE_NO_STATUS ? 0 : 2);
	r->close_sent = true;
}

static void
stop (struct relay_s *r, uint16_t code)
{
	queue_close (r, code);
	r->stop = true;
}

/* Write all of an iovec to stdout, bounded by the idle timeout. */
static int
write_stdout (struct relay_s *r, struct iovec *iov, int n)
{
	uint64_t deadline = ab_mono_ms () + r->idle_ms;

	while (n > 0) {
		ssize_t w = writev (r->out_fd, iov, n);
		if (w < 0 && errno == EAGAIN) {
			struct pollfd p = { .fd = r->out_fd, .events = POLLOUT };
			if (ab_preview_ms_left (deadline) == 0)
				return -1;
			poll (&p, 1, ab_preview_ms_left (deadline));
			continue;
		}
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		ab_iov_advance (&iov, &n, (size_t)w);
	}
	return 0;
}

static int
emit_frame (struct relay_s *r, const uint8_t *p, size_t n)
{
	uint8_t len[4] = { (uint8_t)(n >> 24), (uint8_t)(n >> 16), (uint8_t)(n >> 8), (uint8_t)n };
	struct iovec iov[2] = { { len, 4 }, { (void *)p, n } };

	return write_stdout (r, iov, n > 0 ? 2 : 1);
}

static void
on_event (struct relay_s *r, const struct ab_ws_event_s *ev)
{
	switch (ev->kind) {
	case AB_WS_EV_MESSAGE:
		if (emit_frame (r, ev->data, ev->len) < 0)
			stop (r, AB_WS_CLOSE_GOING_AWAY); /* nobody reads stdout any more */
		break;
	case AB_WS_EV_PING:
		if (!r->close_sent)
			queue_frame (r, AB_WS_OP_PONG, ev->data, ev->len);
		break;
	case AB_WS_EV_CLOSE:
		/* 5.5.1: answer with a close frame, echoing the code. */
		r->close_received = true;
		stop (r, ev->close_code);
		break;
	case AB_WS_EV_PONG:
	case AB_WS_EV_NONE: break;
	}
}

/* Decode every whole frame in ws_in. */
static void
drain_upstream (struct relay_s *r)
{
	while (!r->close_received && ab_iobuf_len (&r->ws_in) > 0) {
		struct ab_ws_frame_s f;
		struct ab_ws_event_s ev;
		uint16_t code = 0;
		ssize_t n = ab_ws_decode_frame ((uint8_t *)r->ws_in.data + r->ws_in.start,
		                                ab_iobuf_len (&r->ws_in), false, r->max_frame, &f,
		                                &code);
		if (n == 0)
			return;
		if (n < 0 || ab_ws_assemble (&r->as, &f, &ev, &code) < 0) {
			stop (r, code);
			return;
		}
		r->last_ms = ab_mono_ms ();
		on_event (r, &ev);
		ab_iobuf_consume (&r->ws_in, (size_t)n);
		if (r->stop && !r->close_received)
			return;
	}
}

static void
read_upstream (struct relay_s *r)
{
	/* A whole frame must fit: the largest data frame plus its header. */
	ssize_t n = ab_iobuf_read (&r->ws_in, r->sock, 64 * 1024, r->max_frame + AB_WS_MAX_HEADER);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		r->upstream_gone = true; /* EOF or reset without a close frame */
		r->stop = true;
		return;
	}
	drain_upstream (r);
}

static void
flush_upstream (struct relay_s *r)
{
	while (ab_iobuf_len (&r->ws_out) > 0) {
		ssize_t w = send (r->sock, ab_preview_bytes (&r->ws_out), ab_iobuf_len (&r->ws_out),
		                  MSG_NOSIGNAL);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0 && errno == EAGAIN)
			return;
		if (w <= 0) {
			r->upstream_gone = true;
			r->stop = true;
			ab_iobuf_free (&r->ws_out);
			return;
		}
		ab_iobuf_consume (&r->ws_out, (size_t)w);
	}
	ab_iobuf_trim (&r->ws_out);
}

/* ---- frames from stdin -------------------------------------------------- */

static void
drain_stdin (struct relay_s *r)
{
	while (!r->stop && ab_iobuf_len (&r->std_in) >= 4) {
		const uint8_t *p = (const uint8_t *)ab_preview_bytes (&r->std_in);
		uint32_t len =
		        (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];

		if (len > r->max_frame) {
			stop (r, AB_WS_CLOSE_TOO_BIG);
			return;
		}
		if (ab_iobuf_len (&r->std_in) - 4 < len)
			return;
		queue_frame (r, AB_WS_OP_BINARY, p + 4, len);
		ab_iobuf_consume (&r->std_in, 4 + (size_t)len);
		r->last_ms = ab_mono_ms ();
	}
}

static void
read_stdin (struct relay_s *r)
{
	ssize_t n = ab_iobuf_read (&r->std_in, r->in_fd, 64 * 1024, r->max_frame + 4);

	if (n < 0 && (errno == EAGAIN || errno == EINTR))
		return;
	if (n <= 0) {
		stop (r, AB_WS_CLOSE_NORMAL); /* EOF (a partial frame is dropped) */
		return;
	}
	drain_stdin (r);
}

/* ---- the loop ------------------------------------------------------------ */

static void
relay_loop (struct relay_s *r)
{
	drain_upstream (r); /* frames that arrived with the 101 */
	drain_stdin (r);    /* frames that came right after the handshake line */
	while (!r->stop) {
		struct pollfd p[2] = { { .fd = r->sock, .events = POLLIN },
			               { .fd = r->in_fd, .events = POLLIN } };
		int left = ab_preview_ms_left (r->last_ms + r->idle_ms);
		nfds_t nfds = ab_iobuf_len (&r->ws_out) < UPLINK_HIGH ? 2 : 1;

		if (left == 0) {
			stop (r, AB_WS_CLOSE_NORMAL);
			break;
		}
		if (ab_iobuf_len (&r->ws_out) > 0)
			p[0].events |= POLLOUT;
		if (poll (p, nfds, left) < 0) {
			if (errno == EINTR)
				continue;
			stop (r, AB_WS_CLOSE_GOING_AWAY);
			break;
		}
		if (p[0].revents & (POLLIN | POLLHUP | POLLERR))
			read_upstream (r);
		if (!r->stop && (p[0].revents & POLLOUT))
			flush_upstream (r);
		if (!r->stop && nfds == 2 && (p[1].revents & (POLLIN | POLLHUP | POLLERR)))
			read_stdin (r);
	}
}

/* Send our close frame, then give the server a moment to answer with its
 * own and close the TCP connection first (RFC 6455 7.1.1). */
static void
linger (struct relay_s *r)
{
	uint64_t deadline = ab_mono_ms () + CLOSE_LINGER_MS;

	while (!r->upstream_gone && ab_preview_ms_left (deadline) > 0) {
		struct pollfd p = { .fd = r->sock, .events = POLLIN };
		char scratch[4096];
		ssize_t n;

		if (ab_iobuf_len (&r->ws_out) > 0) {
			p.events |= POLLOUT;
		} else if (r->close_received) {
			shutdown (r->sock, SHUT_WR);
			r->close_received = false; /* now only wait for the server's EOF */
		}
		if (poll (&p, 1, ab_preview_ms_left (deadline)) <= 0)
			continue;
		if (p.revents & POLLOUT)
			flush_upstream (r);
		if (p.revents & (POLLIN | POLLHUP | POLLERR)) {
			n = recv (r->sock, scratch, sizeof scratch, 0);
			if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR))
				break;
		}
	}
}

static void
relay_free (struct relay_s *r)
{
	if (r->sock >= 0)
		close (r->sock);
	ab_iobuf_free (&r->ws_in);
	ab_iobuf_free (&r->ws_out);
	ab_iobuf_free (&r->std_in);
	ab_ws_assembler_free (&r->as);
}

int
ab_preview_framed_run (int in_fd, int out_fd, ab_error_t *err)
{
	struct relay_s r = { .sock = -1, .in_fd = in_fd, .out_fd = out_fd };
	struct handshake_s h = { 0 };
	json_t *doc = NULL;
	int rc = -1;
	static const uint8_t opened[4] = { 0, 0, 0, 0 };
	struct iovec iov = { (void *)opened, 4 };

	if (read_handshake_line (&r, &doc, err) < 0 || parse_handshake (doc, &h, err) < 0
	    || open_upstream (&r, &h, err) < 0)
		goto out;
	r.max_frame = h.max_frame;
	r.idle_ms = h.idle_ms;
	r.last_ms = ab_mono_ms ();
	ab_ws_assembler_init (&r.as, h.max_frame);
	if (write_stdout (&r, &iov, 1) < 0) {
		stop (&r, AB_WS_CLOSE_GOING_AWAY);
	} else {
		relay_loop (&r);
	}
	linger (&r);
	rc = 0;
out:
	ab_preview_headers_free (&h.headers);
	json_decref (doc);
	relay_free (&r);
	return rc;
}
