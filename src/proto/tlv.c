#include <stdlib.h>
#include <string.h>

#include "base/xalloc.h"
#include "proto/proto.h"
#include "proto/bytes.h"

void
ab_tlv_put (struct ab_tlv_writer_s *w, uint16_t tag, const void *value, size_t len)
{
	size_t need = w->len + 6 + len;
	if (need > w->cap) {
		w->cap = need * 2 < 256 ? 256 : need * 2;
		w->buf = xrealloc (w->buf, w->cap);
	}
	ab_put_be16 (w->buf + w->len, tag);
	ab_put_be32 (w->buf + w->len + 2, (uint32_t)len);
	if (len)
		memcpy (w->buf + w->len + 6, value, len);
	w->len = need;
}

void
ab_tlv_put_str (struct ab_tlv_writer_s *w, uint16_t tag, const char *s)
{
	ab_tlv_put (w, tag, s, strlen (s));
}

void
ab_tlv_put_u32 (struct ab_tlv_writer_s *w, uint16_t tag, uint32_t v)
{
	uint8_t b[4];
	ab_put_be32 (b, v);
	ab_tlv_put (w, tag, b, sizeof b);
}

void
ab_tlv_put_u64 (struct ab_tlv_writer_s *w, uint16_t tag, uint64_t v)
{
	uint8_t b[8];
	ab_put_be32 (b, (uint32_t)(v >> 32));
	ab_put_be32 (b + 4, (uint32_t)v);
	ab_tlv_put (w, tag, b, sizeof b);
}

void
ab_tlv_writer_free (struct ab_tlv_writer_s *w)
{
	free (w->buf);
	memset (w, 0, sizeof *w);
}

void
ab_tlv_reader_init (struct ab_tlv_reader_s *r, const uint8_t *buf, size_t len)
{
	r->buf = buf;
	r->len = len;
	r->off = 0;
}

int
ab_tlv_next (struct ab_tlv_reader_s *r, struct ab_tlv_s *out, ab_error_t *err)
{
	size_t left = r->len - r->off;
	uint32_t len;

	if (left == 0)
		return 0;
	if (left < 6)
		return ab_error (err, 0, AB_E_INVALID, "truncated TLV record header");
	len = ab_get_be32 (r->buf + r->off + 2);
	if (len > left - 6)
		return ab_error (err, 0, AB_E_INVALID, "TLV record length %u exceeds payload", len);
	out->tag = (uint16_t)(r->buf[r->off] << 8 | r->buf[r->off + 1]);
	out->length = len;
	out->value = r->buf + r->off + 6;
	r->off += 6 + (size_t)len;
	return 1;
}

int
ab_tlv_u32 (const struct ab_tlv_s *t, uint32_t *v, ab_error_t *err)
{
	if (t->length != 4)
		return ab_error (err, 0, AB_E_INVALID, "TLV tag %u: expected 4 bytes, got %u",
		                 t->tag, t->length);
	*v = ab_get_be32 (t->value);
	return 0;
}

int
ab_tlv_u64 (const struct ab_tlv_s *t, uint64_t *v, ab_error_t *err)
{
	if (t->length != 8)
		return ab_error (err, 0, AB_E_INVALID, "TLV tag %u: expected 8 bytes, got %u",
		                 t->tag, t->length);
	*v = (uint64_t)ab_get_be32 (t->value) << 32 | ab_get_be32 (t->value + 4);
	return 0;
}

char *
ab_tlv_strdup (const struct ab_tlv_s *t, ab_error_t *err)
{
	if (memchr (t->value, '\0', t->length)) {
		ab_error (err, 0, AB_E_INVALID, "TLV tag %u: string contains NUL", t->tag);
		return NULL;
	}
	return xstrndup ((const char *)t->value, t->length);
}

void
ab_proto_encode_header (uint8_t out[AB_PROTO_HEADER_SIZE], uint16_t type, uint32_t channel,
                        uint32_t length)
{
	ab_put_be32 (out, length);
	ab_put_be16 (out + 4, type);
	ab_put_be16 (out + 6, 0);
	ab_put_be32 (out + 8, channel);
}

int
ab_proto_decode_header (const uint8_t in[AB_PROTO_HEADER_SIZE], struct ab_frame_s *frame,
                        ab_error_t *err)
{
	frame->length = ab_get_be32 (in);
	frame->type = (uint16_t)(in[4] << 8 | in[5]);
	frame->flags = (uint16_t)(in[6] << 8 | in[7]);
	frame->channel = ab_get_be32 (in + 8);
	frame->payload = NULL;
	if (frame->length > AB_PROTO_MAX_PAYLOAD)
		return ab_error (err, 0, AB_E_LIMIT, "frame of %u bytes exceeds the %u-byte limit",
		                 frame->length, AB_PROTO_MAX_PAYLOAD);
	if (frame->flags != 0)
		return ab_error (err, 0, AB_E_INVALID, "frame has unknown flags 0x%x",
		                 frame->flags);
	return 0;
}
