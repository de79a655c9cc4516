/* Big-endian integers on the wire (the TLV frames, the microVM mux). */
#ifndef AB_PROTO_BYTES_H
#define AB_PROTO_BYTES_H

#include <stdint.h>

static inline void
ab_put_be16 (uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline void
ab_put_be32 (uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (24 - 8 * i));
}

static inline uint32_t
ab_get_be32 (const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

#endif
