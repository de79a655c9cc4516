/* WebSocket messages over a blocking socket: see ws-io.h. */
#include "net/ws-io.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/cleanup.h"
#include "base/xalloc.h"

int
ab_ws_send (int fd, int opcode, const void *buf, size_t len, bool mask)
{
	uint8_t head[AB_WS_MAX_HEADER], key[4];
	cleanup_free uint8_t *copy = NULL;
	size_t h;
	int r;

	if (mask && getrandom (key, sizeof key, 0) != (ssize_t)sizeof key)
		return -1;
	h = ab_ws_encode_header (head, true, (uint8_t)opcode, len, mask ? key : NULL);
	if (mask && len > 0) {
		copy = xmalloc (len);
		memcpy (copy, buf, len);
		ab_ws_mask (copy, len, key, 0);
		buf = copy;
	}
	r = ab_http_write (fd, head, h);
	if (r == 0 && len > 0)
		r = ab_http_write (fd, buf, len);
	return r;
}

/* Exactly n bytes through io's buffer, each read bounded by
 * io->deadline_ms when it is set (a peer that never answers, such as a
 * crashed browser's DevTools, is ETIMEDOUT): 1, or 0 on EOF before the
 * first. */
static int
read_exact (struct ab_http_io_s *io, void *out, size_t n, ab_error_t *err)
{
	size_t got = 0;

	while (got < n) {
		if (io->off == io->len) {
			ssize_t r = ab_http_io_fill (io);
			if (r < 0 && errno == ETIMEDOUT)
				return ab_error (err, errno, AB_E_LIMIT,
				                 "no answer on the websocket in time");
			if (r < 0)
				return ab_error (err, errno, AB_E_SYSTEM, "websocket read");
			if (r == 0)
				return got == 0 ? 0
				                : ab_error (err, 0, AB_E_SYSTEM,
				                            "websocket closed inside a frame");
		}
		size_t take = io->len - io->off;
		if (take > n - got)
			take = n - got;
		memcpy ((uint8_t *)out + got, io->buf + io->off, take);
		io->off += take;
		got += take;
	}
	return 1;
}

/* The rest of a frame whose first byte has arrived: EOF is an error. */
static int
read_rest (struct ab_http_io_s *io, void *out, size_t n, ab_error_t *err)
{
	int r = n > 0 ? read_exact (io, out, n, err) : 1;

	if (r == 0)
		return ab_error (err, 0, AB_E_SYSTEM, "websocket closed inside a frame");
	return r < 0 ? -1 : 0;
}

/* A message over the size limit is AB_E_LIMIT (close code 1009), every
 * other violation AB_E_INVALID, so the caller closes with the right code. */
static int
protocol_error (ab_error_t *err, uint16_t code)
{
	return ab_error (err, 0, code == AB_WS_CLOSE_TOO_BIG ? AB_E_LIMIT : AB_E_INVALID,
	                 "websocket: protocol error (close code %u)", (unsigned)code);
}

/* One whole frame into *frame (owned; f's payload points into it, unmasked).
 * 1, 0 on EOF before the frame, -1. */
static int
read_frame (struct ab_http_io_s *io, bool want_masked, uint8_t **frame, struct ab_ws_frame_s *f,
            ab_error_t *err)
{
	uint8_t head[AB_WS_MAX_HEADER];
	uint64_t max = io->ws.max_message ? io->ws.max_message : AB_WS_MAX_MESSAGE;
	uint16_t code = 0;
	size_t hl;
	uint8_t *p;
	int r = read_exact (io, head, 2, err);

	if (r <= 0)
		return r;
	hl = ab_ws_header_len (head);
	if (read_rest (io, head + 2, hl - 2, err) < 0)
		return -1;
	/* The size is refused from the header, before the payload is read. */
	if (ab_ws_decode_header (head, hl, want_masked, max, f, &code) < 0)
		return protocol_error (err, code);
	p = xmalloc (hl + (size_t)f->payload_len + 1);
	memcpy (p, head, hl);
	if (read_rest (io, p + hl, (size_t)f->payload_len, err) < 0) {
		free (p);
		return -1;
	}
	ab_ws_decode_frame (p, hl + (size_t)f->payload_len, want_masked, max, f, &code);
	*frame = p;
	return 1;
}

static void
take_message (struct ab_ws_msg_s *m, int opcode, const uint8_t *data, size_t len)
{
	m->opcode = opcode;
	m->data = xmalloc (len + 1);
	if (len > 0)
		memcpy (m->data, data, len);
	m->data[len] = 0;
	m->len = len;
}

int
ab_ws_recv (struct ab_http_io_s *io, bool want_masked, struct ab_ws_msg_s *m, ab_error_t *err)
{
	struct ab_ws_assembler_s *as = &io->ws;

	memset (m, 0, sizeof *m);
	if (as->max_message == 0)
		ab_ws_assembler_init (as, AB_WS_MAX_MESSAGE);
	for (;;) {
		cleanup_free uint8_t *frame = NULL;
		struct ab_ws_frame_s f;
		struct ab_ws_event_s ev;
		uint16_t code = 0;
		int r = read_frame (io, want_masked, &frame, &f, err);

		if (r <= 0)
			return r;
		if (ab_ws_assemble (as, &f, &ev, &code) < 0)
			return protocol_error (err, code);
		if (ev.kind == AB_WS_EV_NONE)
			continue;
		take_message (m, ev.kind == AB_WS_EV_MESSAGE ? ev.opcode : f.opcode, ev.data,
		              ev.len);
		return 1;
	}
}
