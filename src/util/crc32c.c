/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * CRC-32C (Castagnoli): reflected polynomial 0x82F63B78, initial value and
 * final XOR ~0, so that crc32c(0, "123456789", 9) == 0xE3069283 and calls
 * chain: crc32c(crc32c(0, a), b) == crc32c(0, a + b).
 *
 * It is its own small library (torpor-util), linked by the core and the
 * block-device library; plugins reach it through torpor_host.crc32c.
 *
 * Two implementations: the SSE4.2 crc32 instruction where the CPU has it
 * (chosen at load time), and slicing-by-8 tables everywhere else.  Both
 * are reachable on their own (crc32c.h) so that the tests compare them on
 * the same input.
 */
#include <stdint.h>
#include <string.h>

#include "crc32c.h"

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#define CRC32C_POLY 0x82F63B78u

/* crc32c_table[k][n]: the CRC register after byte n followed by k zero
 * bytes, which lets the loop fold eight bytes with eight lookups. */
static uint32_t crc32c_table[8][256];

uint32_t
crc32c_raw_table(uint32_t crc, const uint8_t *p, size_t len)
{
	/* Bytes until p is 8-aligned keep the word loads cheap everywhere. */
	while (len && ((uintptr_t)p & 7)) {
		crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
		len--;
	}
	while (len >= 8) {
		/* Explicit little-endian assembly: correct on any host. */
		uint32_t lo = (uint32_t)p[0] | (uint32_t)p[1] << 8 |
			      (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
		uint32_t hi = (uint32_t)p[4] | (uint32_t)p[5] << 8 |
			      (uint32_t)p[6] << 16 | (uint32_t)p[7] << 24;

		lo ^= crc;
		crc = crc32c_table[7][lo & 0xff] ^
		      crc32c_table[6][(lo >> 8) & 0xff] ^
		      crc32c_table[5][(lo >> 16) & 0xff] ^
		      crc32c_table[4][lo >> 24] ^
		      crc32c_table[3][hi & 0xff] ^
		      crc32c_table[2][(hi >> 8) & 0xff] ^
		      crc32c_table[1][(hi >> 16) & 0xff] ^
		      crc32c_table[0][hi >> 24];
		p += 8;
		len -= 8;
	}
	while (len--)
		crc = crc32c_table[0][(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return crc;
}

#if defined(__x86_64__)
/* The 32x32 matrix over GF(2) m (column i: the image of bit i) applied to
 * v. */
static uint32_t
gf2_apply(const uint32_t m[32], uint32_t v)
{
	uint32_t r = 0;
	unsigned i;

	for (i = 0; v; i++, v >>= 1)
		if (v & 1)
			r ^= m[i];
	return r;
}

/* m = m * m: the operator applied twice. */
static void
gf2_square(uint32_t m[32])
{
	uint32_t sq[32];
	unsigned i;

	for (i = 0; i < 32; i++)
		sq[i] = gf2_apply(m, m[i]);
	memcpy(m, sq, sizeof(sq));
}

/*
 * bit[k]: the raw register 1 << k after 2^log2_bits zero bits, which is
 * what running the table loop over that many zero bytes gives, but by
 * squaring the one-bit operator: a few thousand operations instead of a
 * loop over kilobytes of zeros in every process and plugin that links
 * this file (most of the user-space instructions of torpor's start).
 */
static void
crc32c_zero_bits(unsigned log2_bits, uint32_t bit[32])
{
	unsigned k;

	for (k = 0; k < 32; k++)
		bit[k] = k == 0 ? CRC32C_POLY : 1u << (k - 1);
	for (k = 0; k < log2_bits; k++)
		gf2_square(bit);
}

/*
 * The crc32 instruction has a latency of three cycles and a throughput of
 * one, so one dependency chain uses a third of it.  Long buffers are cut
 * into three lanes run side by side; the lanes are then joined by
 * "shifting" a lane's CRC over the bytes of the lanes after it, which is
 * a multiplication in GF(2) done with the shift tables below.
 */
#define CRC32C_LANE 8192	/* bytes per lane per round */

/* crc32c_shift[k][n]: the register after byte n of a register value
 * (byte k of it) is followed by CRC32C_LANE zero bytes; four lookups
 * shift a whole register over one lane. */
static uint32_t crc32c_shift[4][256];

static uint32_t
crc32c_shift_lane(uint32_t crc)
{
	return crc32c_shift[0][crc & 0xff] ^
	       crc32c_shift[1][(crc >> 8) & 0xff] ^
	       crc32c_shift[2][(crc >> 16) & 0xff] ^
	       crc32c_shift[3][crc >> 24];
}

__attribute__((target("sse4.2")))
uint32_t
crc32c_raw_sse42(uint32_t crc, const uint8_t *p, size_t len)
{
	uint64_t c0 = crc;

	while (len && ((uintptr_t)p & 7)) {
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
		len--;
	}
	while (len >= 3 * CRC32C_LANE) {
		uint64_t c1 = 0, c2 = 0;
		const uint8_t *end = p + CRC32C_LANE;

		do {
			uint64_t w0, w1, w2;

			memcpy(&w0, p, 8);
			memcpy(&w1, p + CRC32C_LANE, 8);
			memcpy(&w2, p + 2 * CRC32C_LANE, 8);
			c0 = _mm_crc32_u64(c0, w0);
			c1 = _mm_crc32_u64(c1, w1);
			c2 = _mm_crc32_u64(c2, w2);
			p += 8;
		} while (p < end);
		/* The raw register (no pre/post inversion) is linear, so
		 * lane CRCs started from zero combine by XOR after the
		 * shift. */
		c0 = crc32c_shift_lane((uint32_t)c0) ^ (uint32_t)c1;
		c0 = crc32c_shift_lane((uint32_t)c0) ^ (uint32_t)c2;
		p += 2 * CRC32C_LANE;
		len -= 3 * CRC32C_LANE;
	}
	while (len >= 8) {
		uint64_t w;

		memcpy(&w, p, 8);
		c0 = _mm_crc32_u64(c0, w);
		p += 8;
		len -= 8;
	}
	while (len--)
		c0 = _mm_crc32_u8((uint32_t)c0, *p++);
	return (uint32_t)c0;
}
#endif

static uint32_t (*crc32c_impl)(uint32_t crc, const uint8_t *p, size_t len);

__attribute__((constructor))
static void
crc32c_init(void)
{
	uint32_t n, k;

	for (n = 0; n < 256; n++) {
		uint32_t c = n;

		for (k = 0; k < 8; k++)
			c = c >> 1 ^ (CRC32C_POLY & -(c & 1));
		crc32c_table[0][n] = c;
	}
	for (n = 0; n < 256; n++)
		for (k = 1; k < 8; k++) {
			uint32_t c = crc32c_table[k - 1][n];

			crc32c_table[k][n] = crc32c_table[0][c & 0xff] ^ c >> 8;
		}
	crc32c_impl = crc32c_raw_table;

#if defined(__x86_64__)
	/* Shift tables.  Shifting is linear, so the 32 single-bit shifts
	 * (each over a lane of zeros: 2^16 bits) give every table entry. */
	{
		uint32_t bit[32];

		_Static_assert(CRC32C_LANE * 8 == 1 << 16,
			       "a lane is 2^16 bits");
		crc32c_zero_bits(16, bit);
		/* Entry n is entry n without its lowest bit, XOR that
		 * bit's shift. */
		for (k = 0; k < 4; k++)
			for (n = 1; n < 256; n++)
				crc32c_shift[k][n] =
					crc32c_shift[k][n & (n - 1)] ^
					bit[8 * k + (unsigned)__builtin_ctz(n)];
	}
	__builtin_cpu_init();
	if (__builtin_cpu_supports("sse4.2"))
		crc32c_impl = crc32c_raw_sse42;
#endif
}

/*
 * CRC32C of len bytes at buf, continuing from crc (0 to start); the result
 * can be passed back in as crc for the next piece.
 */
uint32_t
crc32c(uint32_t crc, const void *buf, size_t len)
{
	/* A caller from another constructor may run before ours. */
	if (!crc32c_impl)
		crc32c_init();
	return ~crc32c_impl(~crc, buf, len);
}
