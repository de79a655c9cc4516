/* WebSocket framing: see websocket.h. */
#include "daemon/websocket.h"

#include <errno.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "base/base64.h"
#include "base/xalloc.h"
#include "daemon/daemon-internal.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

void
ab_ws_accept_key (const char *key, size_t len, char out[29])
{
	char buf[128];
	uint8_t digest[20];
	char *b64;

	if (len > sizeof buf - sizeof ws_guid)
		len = sizeof buf - sizeof ws_guid;
	memcpy (buf, key, len);
	memcpy (buf + len, ws_guid, sizeof ws_guid - 1);
	ab_sha1 (buf, len + sizeof ws_guid - 1, digest);
	b64 = ab_base64_encode (digest, sizeof digest);
	snprintf (out, 29, "%s", b64);
	free (b64);
}

int
ab_ws_send (int fd, int opcode, const void *buf, size_t len, bool mask)
{
	uint8_t head[14];
	size_t h = 2;
	uint8_t key[4] = { 0 };
	uint8_t *copy = NULL;
	int r;

	head[0] = (uint8_t)(0x80 | opcode);
	if (len < 126)
		head[1] = (uint8_t)len;
	else if (len <= 0xffff) {
		head[1] = 126;
		head[2] = (uint8_t)(len >> 8);
		head[3] = (uint8_t)len;
		h = 4;
	} else {
		head[1] = 127;
		for (int i = 0; i < 8; i++)
			head[2 + i] = (uint8_t)((uint64_t)len >> (56 - 8 * i));
		h = 10;
	}
	if (mask) {
		head[1] |= 0x80;
		if (getrandom (key, sizeof key, 0) != (ssize_t)sizeof key)
			return -1;
		memcpy (head + h, key, 4);
		h += 4;
		copy = xmalloc (len + 1);
		for (size_t i = 0; i < len; i++)
			copy[i] = ((const uint8_t *)buf)[i] ^ key[i % 4];
		buf = copy;
	}
	r = ab_http_write (fd, head, h);
	if (r == 0)
		r = ab_http_write (fd, buf, len);
	free (copy);
	return r;
}

/* Exactly n bytes through io's buffer; 0 on EOF before the first. */
static int
read_exact (struct ab_http_io_s *io, void *out, size_t n, ab_error_t *err)
{
	size_t got = 0;

	while (got < n) {
		if (io->off == io->len) {
			ssize_t r;
			io->off = io->len = 0;
			do
				r = read (io->fd, io->buf, AB_HTTP_IO_BUF);
			while (r < 0 && errno == EINTR);
			if (r < 0)
				return ab_error (err, errno, AB_E_SYSTEM, "websocket read");
			if (r == 0)
				return got == 0 ? 0
				                : ab_error (err, 0, AB_E_SYSTEM,
				                            "websocket closed inside a frame");
			io->len = (size_t)r;
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

struct frame_s {
	bool fin, masked;
	int opcode;
	uint64_t len;
	uint8_t key[4];
};

static int
read_frame_head (struct ab_http_io_s *io, struct frame_s *f, ab_error_t *err)
{
	uint8_t h[8];
	int r = read_exact (io, h, 2, err);

	if (r <= 0)
		return r;
	f->fin = h[0] & 0x80;
	f->opcode = h[0] & 0x0f;
	f->masked = h[1] & 0x80;
	f->len = h[1] & 0x7f;
	if (h[0] & 0x70)
		return ab_error (err, 0, AB_E_INVALID, "websocket: reserved bits set");
	if (f->len == 126) {
		if (read_exact (io, h, 2, err) <= 0)
			return -1;
		f->len = (uint64_t)h[0] << 8 | h[1];
	} else if (f->len == 127) {
		if (read_exact (io, h, 8, err) <= 0)
			return -1;
		f->len = 0;
		for (int i = 0; i < 8; i++)
			f->len = f->len << 8 | h[i];
	}
	if (f->masked && read_exact (io, f->key, 4, err) <= 0)
		return -1;
	return 1;
}

int
ab_ws_recv (struct ab_http_io_s *io, bool want_masked, struct ab_ws_msg_s *m, ab_error_t *err)
{
	memset (m, 0, sizeof *m);
	for (;;) {
		struct frame_s f;
		int r = read_frame_head (io, &f, err);
		if (r <= 0) {
			free (m->data);
			return r;
		}
		bool control = f.opcode & 0x8;
		if (f.masked != want_masked || (control && (f.len > 125 || !f.fin))
		    || f.len > AB_WS_MAX_MESSAGE || m->len + f.len > AB_WS_MAX_MESSAGE
		    || (f.opcode == AB_WS_CONT) != (m->data != NULL && !control)) {
			free (m->data);
			return ab_error (err, 0, AB_E_INVALID,
			                 "websocket: protocol error (mask, size or fragmentation)");
		}
		uint8_t *p = xmalloc (m->len + f.len + 1);
		if (m->data)
			memcpy (p, m->data, m->len);
		free (m->data);
		m->data = p;
		if (f.len && read_exact (io, p + m->len, f.len, err) <= 0) {
			free (m->data);
			return -1;
		}
		if (f.masked)
			for (uint64_t i = 0; i < f.len; i++)
				p[m->len + i] ^= f.key[i % 4];
		m->len += f.len;
		p[m->len] = 0;
		if (f.opcode != AB_WS_CONT)
			m->opcode = f.opcode;
		if (f.fin)
			return 1;
	}
}
