/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz chunk_frame_parse().  Input: max_raw (4 bytes LE), max_stored
 * (4 bytes LE), the image's CRC seed (4 bytes LE), then the frame.  The
 * frame is parsed as it is and with its CRC made to match; what parses
 * must respect the limits, re-encode to the same bytes and be refused
 * under any other seed.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "crc32c.h"
#include "image-format.h"

#define INPUT_SIZE (12 + CHUNK_FRAME_SIZE)

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void
check(const uint8_t *in, uint32_t seed, uint32_t max_raw, uint32_t max_stored)
{
	struct chunk_frame f, f2;
	uint8_t out[CHUNK_FRAME_SIZE];
	char err[160];

	if (chunk_frame_parse(in, seed, max_raw, max_stored, &f, err,
			      sizeof(err)) < 0) {
		if (!err[0])
			abort();
		return;
	}
	if (f.raw_len == 0 || f.raw_len > max_raw || f.stored_len == 0 ||
	    f.stored_len > max_stored || (f.flags & ~CHUNK_FLAG_LAST))
		abort();
	chunk_frame_encode(&f, out);
	if (memcmp(out, in, CHUNK_FRAME_SIZE) != 0)
		abort();
	if (chunk_frame_parse(out, seed, max_raw, max_stored, &f2, err,
			      sizeof(err)) != 0 || memcmp(&f, &f2, sizeof(f)) != 0)
		abort();
	/* Seeds differing in one bit give CRCs differing in some bit. */
	if (chunk_frame_parse(out, seed ^ 1, max_raw, max_stored, &f2, err,
			      sizeof(err)) != -EBADMSG)
		abort();
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *frame;
	uint32_t crc, seed;

	if (size < INPUT_SIZE)
		return 0;
	/* An exact-size copy so that a read past the frame is caught. */
	frame = malloc(CHUNK_FRAME_SIZE);
	if (!frame)
		abort();
	seed = get32(data + 8);
	memcpy(frame, data + 12, CHUNK_FRAME_SIZE);
	check(frame, seed, get32(data), get32(data + 4));
	crc = crc32c(seed, frame, CHUNK_FRAME_SIZE - 4);
	for (int i = 0; i < 4; i++)
		frame[CHUNK_FRAME_SIZE - 4 + i] = (uint8_t)(crc >> (8 * i));
	check(frame, seed, get32(data), get32(data + 4));
	free(frame);
	return 0;
}

size_t
fuzz_seed(unsigned int i, uint8_t *buf, size_t size)
{
	struct chunk_frame f = {
		.sequence = 3 + i,
		.flags = i & 1 ? CHUNK_FLAG_LAST : 0,
		.raw_len = 131072,
		.stored_len = 5000 + i,
		.stored_crc = 0x12345678u * (i + 1),
		.seed = i ? 0x9e3779b9u : 0,
	};
	uint32_t max_raw = 131072, max_stored = 140000;

	if (i > 1 || size < INPUT_SIZE)
		return 0;
	for (int k = 0; k < 4; k++) {
		buf[k] = (uint8_t)(max_raw >> (8 * k));
		buf[4 + k] = (uint8_t)(max_stored >> (8 * k));
		buf[8 + k] = (uint8_t)(f.seed >> (8 * k));
	}
	chunk_frame_encode(&f, buf + 12);
	return INPUT_SIZE;
}
