/* WebSocket framing (RFC 6455 section 5) and the opening handshake's
 * keys (4.1, 4.2.2): see websocket.h for what is refused and why. */
#include "net/websocket.h"

#include <errno.h>
#include <openssl/evp.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "base/base64.h"
#include "base/cleanup.h"
#include "base/xalloc.h"
#include "net/preview-buf.h"

static const char ws_guid[] = "258EAFA5-E914-47DA-95CA-C5AB0DC85B11";

int
ab_ws_make_key (char key[AB_WS_KEY_LEN + 1])
{
	uint8_t raw[16];
	cleanup_free char *b64 = NULL;
	ssize_t n;

	do
		n = getrandom (raw, sizeof raw, 0);
	while (n < 0 && errno == EINTR);
	if (n != (ssize_t)sizeof raw)
		return -1;
	b64 = ab_base64_encode (raw, sizeof raw);
	memcpy (key, b64, AB_WS_KEY_LEN + 1);
	return 0;
}

void
ab_ws_accept_key (const char *key, size_t len, char accept[AB_WS_ACCEPT_LEN + 1])
{
	uint8_t digest[EVP_MAX_MD_SIZE];
	unsigned int dlen = 0;
	cleanup_free char *text = xasprintf ("%.*s%s", (int)len, key, ws_guid);
	cleanup_free char *b64 = NULL;

	/* SHA-1 is what 4.2.2 prescribes; the value only proves the server
	 * read the key and speaks WebSocket, it protects nothing. */
	if (EVP_Digest (text, strlen (text), digest, &dlen, EVP_sha1 (), NULL) != 1 || dlen != 20)
		abort (); /* only out of memory makes a digest of a short text fail */
	b64 = ab_base64_encode (digest, dlen);
	memcpy (accept, b64, AB_WS_ACCEPT_LEN + 1);
}

size_t
ab_ws_encode_header (uint8_t out[AB_WS_MAX_HEADER], bool fin, uint8_t opcode, uint64_t len,
                     const uint8_t *mask)
{
	size_t n = 2;

	out[0] = (uint8_t)((fin ? 0x80 : 0) | (opcode & 0x0f));
	/* 5.2: the minimal number of bytes MUST be used for the length. */
	if (len <= 125) {
		out[1] = (uint8_t)len;
	} else if (len <= 0xffff) {
		out[1] = 126;
		out[2] = (uint8_t)(len >> 8);
		out[3] = (uint8_t)len;
		n = 4;
	} else {
		out[1] = 127;
		for (int i = 0; i < 8; i++)
			out[2 + i] = (uint8_t)(len >> (56 - 8 * i));
		n = 10;
	}
	if (mask != NULL) {
		out[1] |= 0x80;
		memcpy (out + n, mask, 4);
		n += 4;
	}
	return n;
}

void
ab_ws_mask (uint8_t *p, size_t n, const uint8_t key[4], size_t offset)
{
	for (size_t i = 0; i < n; i++)
		p[i] ^= key[(offset + i) & 3];
}

static bool
opcode_known (uint8_t op)
{
	switch (op) {
	case AB_WS_OP_CONT:
	case AB_WS_OP_TEXT:
	case AB_WS_OP_BINARY:
	case AB_WS_OP_CLOSE:
	case AB_WS_OP_PING:
	case AB_WS_OP_PONG: return true;
	default: return false;
	}
}

static ssize_t
fail (uint16_t *close_code, uint16_t code)
{
	*close_code = code;
	return -1;
}

/* The payload length field (5.2) from buf[1..); 0 when more bytes are
 * needed, -1 when it is not in minimal form or has its top bit set. */
static int
decode_length (const uint8_t *buf, size_t len, size_t *pos, uint64_t *out)
{
	uint8_t l7 = buf[1] & 0x7f;
	uint64_t v = 0;

	if (l7 <= 125) {
		*out = l7;
		*pos = 2;
		return 1;
	}
	if (l7 == 126) {
		if (len < 4)
			return 0;
		v = (uint64_t)buf[2] << 8 | buf[3];
		if (v <= 125)
			return -1;
		*pos = 4;
	} else {
		if (len < 10)
			return 0;
		for (int i = 0; i < 8; i++)
			v = v << 8 | buf[2 + i];
		if ((v >> 63) != 0 || v <= 0xffff)
			return -1;
		*pos = 10;
	}
	*out = v;
	return 1;
}

/* What the first two bytes alone can refuse. */
static int
check_first_bytes (const uint8_t *buf, bool expect_masked, uint16_t *close_code)
{
	uint8_t op = buf[0] & 0x0f;
	bool masked = (buf[1] & 0x80) != 0;

	/* 5.2: RSV1-3 MUST be 0 unless an extension says otherwise; we never
	 * negotiate one. */
	if ((buf[0] & 0x70) != 0 || !opcode_known (op))
		return (int)fail (close_code, AB_WS_CLOSE_PROTOCOL);
	if (masked != expect_masked)
		return (int)fail (close_code, AB_WS_CLOSE_PROTOCOL);
	/* 5.5: control frames are never fragmented and carry <= 125 bytes. */
	if ((op & 0x08) != 0 && ((buf[0] & 0x80) == 0 || (buf[1] & 0x7f) > AB_WS_MAX_CONTROL))
		return (int)fail (close_code, AB_WS_CLOSE_PROTOCOL);
	return 0;
}

size_t
ab_ws_header_len (const uint8_t first[2])
{
	uint8_t l7 = first[1] & 0x7f;
	size_t n = l7 == 126 ? 4 : l7 == 127 ? 10 : 2;

	return (first[1] & 0x80) != 0 ? n + 4 : n;
}

ssize_t
ab_ws_decode_header (const uint8_t *buf, size_t len, bool expect_masked, uint64_t max_payload,
                     struct ab_ws_frame_s *f, uint16_t *close_code)
{
	size_t pos;
	uint64_t plen;
	int r;

	if (len < 2)
		return 0;
	if (check_first_bytes (buf, expect_masked, close_code) < 0)
		return -1;
	r = decode_length (buf, len, &pos, &plen);
	if (r < 0)
		return fail (close_code, AB_WS_CLOSE_PROTOCOL);
	if (r == 0)
		return 0;
	if ((buf[0] & 0x08) == 0 && plen > max_payload)
		return fail (close_code, AB_WS_CLOSE_TOO_BIG);
	memset (f, 0, sizeof *f);
	f->masked = (buf[1] & 0x80) != 0;
	if (f->masked) {
		if (len < pos + 4)
			return 0;
		memcpy (f->mask, buf + pos, 4);
		pos += 4;
	}
	f->fin = (buf[0] & 0x80) != 0;
	f->opcode = buf[0] & 0x0f;
	f->header_len = pos;
	f->payload_len = plen;
	return (ssize_t)pos;
}

ssize_t
ab_ws_decode_frame (uint8_t *buf, size_t len, bool expect_masked, uint64_t max_payload,
                    struct ab_ws_frame_s *f, uint16_t *close_code)
{
	ssize_t hl = ab_ws_decode_header (buf, len, expect_masked, max_payload, f, close_code);

	if (hl <= 0)
		return hl;
	if ((uint64_t)(len - (size_t)hl) < f->payload_len)
		return 0;
	f->payload = buf + hl;
	if (f->masked)
		ab_ws_mask (f->payload, (size_t)f->payload_len, f->mask, 0);
	return (ssize_t)((uint64_t)hl + f->payload_len);
}

void
ab_ws_assembler_init (struct ab_ws_assembler_s *a, uint64_t max_message)
{
	memset (a, 0, sizeof *a);
	a->max_message = max_message;
}

void
ab_ws_assembler_free (struct ab_ws_assembler_s *a)
{
	ab_iobuf_free (&a->buf);
	a->active = false;
}

bool
ab_ws_close_code_valid (uint16_t code)
{
	/* 7.4.1 defines 1000-1003 and 1007-1011 for the wire (1012-1014 are
	 * registered since); 1004-1006 and 1015 MUST NOT be sent; 1016-2999
	 * are reserved; 3000-4999 are for libraries and applications. */
	if (code >= 1000 && code <= 1003)
		return true;
	if (code >= 1007 && code <= 1014)
		return true;
	return code >= 3000 && code <= 4999;
}

int
ab_ws_parse_close (const uint8_t *p, size_t n, uint16_t *code, const char **reason,
                   size_t *reason_len, uint16_t *close_code)
{
	*reason = "";
	*reason_len = 0;
	if (n == 0) {
		*code = AB_WS_CLOSE_NO_STATUS;
		return 0;
	}
	if (n == 1)
		return (int)fail (close_code, AB_WS_CLOSE_PROTOCOL);
	*code = (uint16_t)(p[0] << 8 | p[1]);
	if (!ab_ws_close_code_valid (*code))
		return (int)fail (close_code, AB_WS_CLOSE_PROTOCOL);
	if (!ab_ws_utf8_valid (p + 2, n - 2))
		return (int)fail (close_code, AB_WS_CLOSE_BAD_DATA);
	*reason = (const char *)p + 2;
	*reason_len = n - 2;
	return 0;
}

static int
control_event (const struct ab_ws_frame_s *f, struct ab_ws_event_s *ev, uint16_t *close_code)
{
	ev->data = f->payload;
	ev->len = (size_t)f->payload_len;
	if (f->opcode == AB_WS_OP_PING) {
		ev->kind = AB_WS_EV_PING;
		return 0;
	}
	if (f->opcode == AB_WS_OP_PONG) {
		ev->kind = AB_WS_EV_PONG;
		return 0;
	}
	ev->kind = AB_WS_EV_CLOSE;
	return ab_ws_parse_close (f->payload, ev->len, &ev->close_code, &ev->reason,
	                          &ev->reason_len, close_code);
}

static int
deliver (struct ab_ws_event_s *ev, uint8_t opcode, const uint8_t *p, size_t n, uint16_t *close_code)
{
	if (opcode == AB_WS_OP_TEXT && !ab_ws_utf8_valid (p, n))
		return (int)fail (close_code, AB_WS_CLOSE_BAD_DATA);
	ev->kind = AB_WS_EV_MESSAGE;
	ev->opcode = opcode;
	ev->data = p;
	ev->len = n;
	return 0;
}

int
ab_ws_assemble (struct ab_ws_assembler_s *a, const struct ab_ws_frame_s *f,
                struct ab_ws_event_s *ev, uint16_t *close_code)
{
	memset (ev, 0, sizeof *ev);
	if ((f->opcode & 0x08) != 0)
		return control_event (f, ev, close_code);
	/* 5.4: a continuation only inside a message, a new message only
	 * outside one. */
	if ((f->opcode == AB_WS_OP_CONT) != a->active)
		return (int)fail (close_code, AB_WS_CLOSE_PROTOCOL);
	if (!a->active && f->fin)
		return deliver (ev, f->opcode, f->payload, (size_t)f->payload_len, close_code);
	if (!a->active) {
		a->active = true;
		a->opcode = f->opcode;
		ab_iobuf_consume (&a->buf, ab_iobuf_len (&a->buf));
	}
	if (f->payload_len > a->max_message - ab_iobuf_len (&a->buf))
		return (int)fail (close_code, AB_WS_CLOSE_TOO_BIG);
	ab_preview_append (&a->buf, f->payload, (size_t)f->payload_len);
	if (!f->fin)
		return 0;
	a->active = false;
	if (deliver (ev, a->opcode, (const uint8_t *)ab_preview_bytes (&a->buf),
	             ab_iobuf_len (&a->buf), close_code)
	    < 0)
		return -1;
	/* The bytes stay readable until the next call resets the buffer. */
	return 0;
}

/* RFC 3629 section 4, as a table of the valid second-byte ranges. */
bool
ab_ws_utf8_valid (const uint8_t *p, size_t n)
{
	size_t i = 0;

	while (i < n) {
		uint8_t c = p[i];
		size_t need;
		uint8_t lo = 0x80, hi = 0xbf;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			need = 1;
		else if (c >= 0xe0 && c <= 0xef)
			need = 2;
		else if (c >= 0xf0 && c <= 0xf4)
			need = 3;
		else
			return false; /* continuation byte, overlong 0xc0/0xc1, or > U+10FFFF */
		if (c == 0xe0)
			lo = 0xa0; /* overlong */
		else if (c == 0xed)
			hi = 0x9f; /* surrogates */
		else if (c == 0xf0)
			lo = 0x90; /* overlong */
		else if (c == 0xf4)
			hi = 0x8f; /* > U+10FFFF */
		if (n - i <= need || p[i + 1] < lo || p[i + 1] > hi)
			return false;
		for (size_t k = 2; k <= need; k++)
			if (p[i + k] < 0x80 || p[i + k] > 0xbf)
				return false;
		i += need + 1;
	}
	return true;
}
