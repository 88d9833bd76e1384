/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zero-elide: an example torpor filter, built from the installed SDK alone
 * (see torpor-plugin(3)).  It drops the 4 KiB blocks of a chunk that are
 * all zero and puts them back at resume.
 *
 * Encoded chunk: the input length (le32), a bitmap with one bit per block
 * of the input (set: the block was all zero and is not stored), then the
 * other blocks in order; the last block may be short.
 */
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include <torpor/plugin.h>
#include <torpor/plugin-util.h>

#define BLOCK 4096u

static size_t
bitmap_size(size_t len)
{
	return ((len + BLOCK - 1) / BLOCK + 7) / 8;
}

/* Every stored block comes back whatever the input: never smaller. */
static size_t
ze_max_encoded_size(size_t in_len)
{
	return 4 + bitmap_size(in_len) + in_len;
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	return p[0] == 0 && memcmp(p, p + 1, len - 1) == 0;
}

static int
ze_encode(void *state, const struct torpor_chunk_info *info,
	  const uint8_t *in, size_t in_len,
	  uint8_t *out, size_t out_size, size_t *ret_len)
{
	size_t bm = bitmap_size(in_len), pos = 4 + bm, off;

	if (in_len > UINT32_MAX || out_size < ze_max_encoded_size(in_len))
		return -ENOBUFS;
	torpor_put_le32(out, (uint32_t)in_len);
	memset(out + 4, 0, bm);
	for (off = 0; off < in_len; off += BLOCK) {
		size_t n = in_len - off < BLOCK ? in_len - off : BLOCK;

		if (all_zero(in + off, n)) {
			out[4 + off / BLOCK / 8] |= 1u << (off / BLOCK % 8);
			continue;
		}
		memcpy(out + pos, in + off, n);
		pos += n;
	}
	*ret_len = pos;
	return 0;
}

/* Corrupt input is refused (-EBADMSG) before anything is written past
 * what it describes, and never past out_size. */
static int
ze_decode(void *state, const struct torpor_chunk_info *info,
	  const uint8_t *in, size_t in_len,
	  uint8_t *out, size_t out_size, size_t *ret_len)
{
	size_t len, bm, pos, off;

	if (in_len < 4)
		return -EBADMSG;
	len = torpor_get_le32(in);
	bm = bitmap_size(len);
	if (len > out_size || in_len < 4 + bm)
		return -EBADMSG;
	for (pos = 4 + bm, off = 0; off < len; off += BLOCK) {
		size_t n = len - off < BLOCK ? len - off : BLOCK;

		if (in[4 + off / BLOCK / 8] & (1u << (off / BLOCK % 8))) {
			memset(out + off, 0, n);
			continue;
		}
		if (in_len - pos < n)
			return -EBADMSG;
		memcpy(out + off, in + pos, n);
		pos += n;
	}
	if (pos != in_len)
		return -EBADMSG;
	*ret_len = len;
	return 0;
}

/* The header records the format's version, so that a resume side built
 * for another format refuses the image instead of misreading it. */
static size_t
ze_storage_needed(void)
{
	return 1;
}

static int
ze_save_config(uint8_t *buf, size_t size)
{
	if (size < 1)
		return -ENOBUFS;
	buf[0] = TORPOR_FILTER_CONFIG_VERSION;
	return 1;
}

static int
ze_load_config(const uint8_t *buf, size_t len)
{
	return torpor_filter_config_check(buf, len, 1);
}

static const struct torpor_filter zero_elide = {
	.plugin = {
		.name = "zero-elide",
		.description = "example: leaves out 4 KiB blocks that are all zero",
		.storage_needed = ze_storage_needed,
		.save_config = ze_save_config,
		.load_config = ze_load_config,
	},
	.max_encoded_size = ze_max_encoded_size,
	.encode = ze_encode,
	.decode = ze_decode,
};

TORPOR_FILTER_REGISTER(zero_elide)
