/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CRC32C library (src/util/crc32c.c): known vectors, chaining, the
 * table and SSE4.2 implementations agreeing on every length and alignment,
 * and the table against a bitwise register.
 */
#include <check.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crc32c.h"

START_TEST(crc32c_known_vectors)
{
	uint8_t b[48];

	ck_assert_uint_eq(crc32c(0, "123456789", 9), 0xE3069283);
	ck_assert_uint_eq(crc32c(0, "", 0), 0);
	ck_assert_uint_eq(crc32c(0x12345678, "", 0), 0x12345678);
	/* RFC 3720, B.4. */
	memset(b, 0, 32);
	ck_assert_uint_eq(crc32c(0, b, 32), 0x8A9136AA);
	memset(b, 0xff, 32);
	ck_assert_uint_eq(crc32c(0, b, 32), 0x62A8AB43);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)i;
	ck_assert_uint_eq(crc32c(0, b, 32), 0x46DD794E);
	for (int i = 0; i < 32; i++)
		b[i] = (uint8_t)(31 - i);
	ck_assert_uint_eq(crc32c(0, b, 32), 0x113FDB5C);
	/* The same through both implementations. */
	ck_assert_uint_eq(~crc32c_raw_table(~0u, (const uint8_t *)"123456789", 9), 0xE3069283);
#if defined(__x86_64__)
	if (__builtin_cpu_supports("sse4.2"))
		ck_assert_uint_eq(~crc32c_raw_sse42(~0u, (const uint8_t *)"123456789", 9),
				  0xE3069283);
#endif
}
END_TEST

static uint64_t rng_state = 0x9e3779b97f4a7c15ull;

static uint64_t
rng(void)
{
	/* xorshift64*: deterministic, so a failure reproduces. */
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

START_TEST(crc32c_chains)
{
	size_t n = 100000, cut;
	uint8_t *b = malloc(n);
	uint32_t whole;

	for (size_t i = 0; i < n; i++)
		b[i] = (uint8_t)rng();
	whole = crc32c(0, b, n);
	for (cut = 0; cut <= n; cut += cut < 64 ? 1 : 4099)
		ck_assert_uint_eq(crc32c(crc32c(0, b, cut), b + cut, n - cut), whole);
	free(b);
}
END_TEST

START_TEST(crc32c_paths_agree)
{
	/* Lengths around the 3 x 8 KiB lanes of the hardware path too. */
	size_t max = 3 * 8192 * 3 + 64;
	uint8_t *b = malloc(max + 16);
	bool hw = false;
	int round;

#if defined(__x86_64__)
	hw = __builtin_cpu_supports("sse4.2");
#endif
	for (size_t i = 0; i < max + 16; i++)
		b[i] = (uint8_t)rng();
	for (round = 0; round < 400; round++) {
		size_t align = rng() % 16, len;
		uint32_t seed = (uint32_t)rng(), sw, pub;

		switch (round % 4) {
		case 0:
			len = rng() % 64;
			break;
		case 1:
			len = 3 * 8192 + rng() % 64 - 32;
			break;
		default:
			len = rng() % max;
			break;
		}
		len |= 1;	/* odd lengths leave a byte tail */
		if (len > max)
			len = max;
		sw = crc32c_raw_table(seed, b + align, len);
		pub = ~crc32c(~seed, b + align, len);
		ck_assert_msg(sw == pub, "table %08x, crc32c() %08x at len %zu align %zu",
			      sw, pub, len, align);
#if defined(__x86_64__)
		if (hw)
			ck_assert_msg(crc32c_raw_sse42(seed, b + align, len) == sw,
				      "hw and table differ at len %zu align %zu",
				      len, align);
#endif
	}
	(void)hw;
	free(b);
}
END_TEST

/* The register one bit at a time, without the tables. */
static uint32_t
crc32c_bitwise(uint32_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= *p++;
		for (int k = 0; k < 8; k++)
			crc = crc >> 1 ^ (0x82F63B78u & -(crc & 1));
	}
	return crc;
}

/* The table path against the bitwise register, on any CPU (the
 * comparison with the SSE4.2 path above needs the instruction): long
 * buffers, with a word and a byte tail, from aligned and unaligned
 * starts. */
START_TEST(crc32c_table_matches_bitwise)
{
	static const size_t lens[] = {
		3 * 8192 - 1, 3 * 8192, 3 * 8192 + 7, 3 * 8192 + 8,
		2 * 3 * 8192 + 4095, 3 * 3 * 8192 + 1, 4 * 3 * 8192 + 8 * 1023 + 5,
	};
	size_t max = 4 * 3 * 8192 + 8192;
	uint8_t *b = malloc(max + 16);

	for (size_t i = 0; i < max + 16; i++)
		b[i] = (uint8_t)rng();
	for (size_t i = 0; i < sizeof(lens) / sizeof(lens[0]); i++)
		for (size_t align = 0; align < 9; align += 4) {
			uint32_t seed = (uint32_t)rng();

			ck_assert_msg(crc32c_raw_table(seed, b + align, lens[i]) ==
				      crc32c_bitwise(seed, b + align, lens[i]),
				      "table and bitwise differ at len %zu align %zu",
				      lens[i], align);
		}
	free(b);
}
END_TEST

Suite *crc32c_suite(void);

Suite *
crc32c_suite(void)
{
	Suite *s = suite_create("crc32c");
	TCase *tc = tcase_create("crc32c");

	tcase_add_test(tc, crc32c_known_vectors);
	tcase_add_test(tc, crc32c_chains);
	tcase_add_test(tc, crc32c_paths_agree);
	tcase_add_test(tc, crc32c_table_matches_bitwise);
	suite_add_tcase(s, tc);
	return s;
}
