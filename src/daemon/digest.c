/* SHA-1 (RFC 3174; only for the WebSocket handshake, RFC 6455 4.2.2, where
 * it is not a security boundary) and SHA-256 (FIPS 180-4; bearer tokens are
 * compared as digests in constant time so the comparison's duration says
 * nothing about the token). */
#include "daemon/daemon-internal.h"

#include <string.h>

static uint32_t
rol (uint32_t x, int n)
{
	return (x << n) | (x >> (32 - n));
}

static uint32_t
ror (uint32_t x, int n)
{
	return (x >> n) | (x << (32 - n));
}

/* Both hashes pad the same way: 0x80, zeros, the bit length big-endian. */
static void
md_blocks (const void *data, size_t len, void (*block) (void *st, const uint8_t b[64]), void *st)
{
	const uint8_t *p = data;
	uint8_t tail[128] = { 0 };
	size_t rest = len % 64, n = rest < 56 ? 64 : 128;
	uint64_t bits = (uint64_t)len * 8;

	for (size_t i = 0; i + 64 <= len; i += 64)
		block (st, p + i);
	memcpy (tail, p + len - rest, rest);
	tail[rest] = 0x80;
	for (int i = 0; i < 8; i++)
		tail[n - 1 - i] = (uint8_t)(bits >> (8 * i));
	for (size_t i = 0; i < n; i += 64)
		block (st, tail + i);
}

static uint32_t
be32 (const uint8_t *b)
{
	return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3];
}

static void
sha1_block (void *st, const uint8_t b[64])
{
	uint32_t *h = st, w[80], a = h[0], bb = h[1], c = h[2], d = h[3], e = h[4];

	for (int i = 0; i < 16; i++)
		w[i] = be32 (b + 4 * i);
	for (int i = 16; i < 80; i++)
		w[i] = rol (w[i - 3] ^ w[i - 8] ^ w[i - 14] ^ w[i - 16], 1);
	for (int i = 0; i < 80; i++) {
		uint32_t f, k, t;
		if (i < 20)
			f = (bb & c) | (~bb & d), k = 0x5a827999;
		else if (i < 40)
			f = bb ^ c ^ d, k = 0x6ed9eba1;
		else if (i < 60)
			f = (bb & c) | (bb & d) | (c & d), k = 0x8f1bbcdc;
		else
			f = bb ^ c ^ d, k = 0xca62c1d6;
		t = rol (a, 5) + f + e + k + w[i];
		e = d, d = c, c = rol (bb, 30), bb = a, a = t;
	}
	h[0] += a, h[1] += bb, h[2] += c, h[3] += d, h[4] += e;
}

void
ab_sha1 (const void *data, size_t len, uint8_t out[20])
{
	uint32_t h[5] = { 0x67452301, 0xefcdab89, 0x98badcfe, 0x10325476, 0xc3d2e1f0 };

	md_blocks (data, len, sha1_block, h);
	for (int i = 0; i < 20; i++)
		out[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
}

static const uint32_t k256[64] = {
	0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4,
	0xab1c5ed5, 0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe,
	0x9bdc06a7, 0xc19bf174, 0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f,
	0x4a7484aa, 0x5cb0a9dc, 0x76f988da, 0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7,
	0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967, 0x27b70a85, 0x2e1b2138, 0x4d2c6dfc,
	0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85, 0xa2bfe8a1, 0xa81a664b,
	0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070, 0x19a4c116,
	0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
	0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7,
	0xc67178f2,
};

static void
sha256_block (void *st, const uint8_t b[64])
{
	uint32_t *h = st, w[64], v[8];

	for (int i = 0; i < 16; i++)
		w[i] = be32 (b + 4 * i);
	for (int i = 16; i < 64; i++) {
		uint32_t s0 = ror (w[i - 15], 7) ^ ror (w[i - 15], 18) ^ (w[i - 15] >> 3);
		uint32_t s1 = ror (w[i - 2], 17) ^ ror (w[i - 2], 19) ^ (w[i - 2] >> 10);
		w[i] = w[i - 16] + s0 + w[i - 7] + s1;
	}
	memcpy (v, h, sizeof v);
	for (int i = 0; i < 64; i++) {
		uint32_t s1 = ror (v[4], 6) ^ ror (v[4], 11) ^ ror (v[4], 25);
		uint32_t ch = (v[4] & v[5]) ^ (~v[4] & v[6]);
		uint32_t t1 = v[7] + s1 + ch + k256[i] + w[i];
		uint32_t s0 = ror (v[0], 2) ^ ror (v[0], 13) ^ ror (v[0], 22);
		uint32_t mj = (v[0] & v[1]) ^ (v[0] & v[2]) ^ (v[1] & v[2]);
		memmove (v + 1, v, 7 * sizeof *v);
		v[4] += t1;
		v[0] = t1 + s0 + mj;
	}
	for (int i = 0; i < 8; i++)
		h[i] += v[i];
}

void
ab_sha256 (const void *data, size_t len, uint8_t out[32])
{
	uint32_t h[8] = { 0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
		          0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19 };

	md_blocks (data, len, sha256_block, h);
	for (int i = 0; i < 32; i++)
		out[i] = (uint8_t)(h[i / 4] >> (24 - 8 * (i % 4)));
}

bool
ab_digest_equal (const uint8_t *a, const uint8_t *b, size_t n)
{
	volatile uint8_t diff = 0;
	for (size_t i = 0; i < n; i++)
		diff |= a[i] ^ b[i];
	return diff == 0;
}
