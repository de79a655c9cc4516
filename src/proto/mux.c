/* The microVM multiplexer's frames (see mux.h and docs/microvm.md). */
#include "proto/mux.h"
#include "proto/bytes.h"

#include <string.h>

/* What each type allows: its payload length range and whether id 0 (the
 * stream itself) or a connection id is expected. */
static const struct {
	const char *name;
	uint32_t min_len, max_len;
	int stream_id; /* 1: id must be 0; 0: id must not be 0 */
} rules[] = {
	[AB_MUX_HELLO] = { "HELLO", 8, 8, 1 },
	[AB_MUX_OPEN] = { "OPEN", 0, 0, 0 },
	[AB_MUX_DATA] = { "DATA", 1, AB_MUX_MAX_DATA, 0 },
	[AB_MUX_EOF] = { "EOF", 0, 0, 0 },
	[AB_MUX_CLOSE] = { "CLOSE", 0, 0, 0 },
	[AB_MUX_CREDIT] = { "CREDIT", 4, 4, 0 },
};

#define N_TYPES (sizeof rules / sizeof *rules)

const char *
ab_mux_type_name (uint8_t type)
{
	return type < N_TYPES && rules[type].name ? rules[type].name : "unknown";
}

static int
check_header (uint8_t type, uint32_t id, uint32_t len, ab_error_t *err)
{
	if (type >= N_TYPES || !rules[type].name)
		return ab_error (err, 0, AB_E_INVALID, "mux: unknown frame type %u", type);
	if (len < rules[type].min_len || len > rules[type].max_len)
		return ab_error (err, 0, AB_E_INVALID, "mux: %s with a %u-byte payload",
		                 rules[type].name, len);
	if (rules[type].stream_id != (id == 0))
		return ab_error (err, 0, AB_E_INVALID, "mux: %s on id %u", rules[type].name, id);
	return 0;
}

static int
check_payload (struct ab_mux_frame_s *f, ab_error_t *err)
{
	if (f->type == AB_MUX_HELLO) {
		if (ab_get_be32 (f->payload) != AB_MUX_MAGIC)
			return ab_error (err, 0, AB_E_INVALID, "mux: HELLO without the magic");
		f->value = ab_get_be32 (f->payload + 4);
		if (f->value != AB_MUX_VERSION)
			return ab_error (err, 0, AB_E_INVALID, "mux: version %u (we speak %u)",
			                 f->value, AB_MUX_VERSION);
	} else if (f->type == AB_MUX_CREDIT) {
		f->value = ab_get_be32 (f->payload);
		if (f->value == 0 || f->value > AB_MUX_WINDOW)
			return ab_error (err, 0, AB_E_INVALID, "mux: CREDIT of %u bytes", f->value);
	}
	return 0;
}

int
ab_mux_decode (const uint8_t *buf, size_t n, struct ab_mux_frame_s *f, size_t *used,
               ab_error_t *err)
{
	if (n < AB_MUX_HEADER)
		return 0;
	memset (f, 0, sizeof *f);
	f->type = buf[0];
	f->id = ab_get_be32 (buf + 1);
	f->len = ab_get_be32 (buf + 5);
	if (check_header (f->type, f->id, f->len, err) < 0)
		return -1;
	if (n - AB_MUX_HEADER < f->len)
		return 0;
	f->payload = buf + AB_MUX_HEADER;
	if (check_payload (f, err) < 0)
		return -1;
	*used = AB_MUX_HEADER + f->len;
	return 1;
}

size_t
ab_mux_put_header (uint8_t *out, uint8_t type, uint32_t id, uint32_t len)
{
	out[0] = type;
	ab_put_be32 (out + 1, id);
	ab_put_be32 (out + 5, len);
	return AB_MUX_HEADER;
}

size_t
ab_mux_put_hello (uint8_t *out)
{
	ab_mux_put_header (out, AB_MUX_HELLO, 0, 8);
	ab_put_be32 (out + AB_MUX_HEADER, AB_MUX_MAGIC);
	ab_put_be32 (out + AB_MUX_HEADER + 4, AB_MUX_VERSION);
	return AB_MUX_HEADER + 8;
}

size_t
ab_mux_put_credit (uint8_t *out, uint32_t id, uint32_t n)
{
	ab_mux_put_header (out, AB_MUX_CREDIT, id, 4);
	ab_put_be32 (out + AB_MUX_HEADER, n);
	return AB_MUX_HEADER + 4;
}
