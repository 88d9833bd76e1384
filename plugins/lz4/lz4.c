/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lz4: compresses each chunk with LZ4 (liblz4, block format): about as
 * fast as LZO to compress and much faster to decompress, which shortens
 * resume.  [lz4] acceleration= (LZ4's own, 1 by default) trades size for
 * speed where the disk is faster than the compressor; decoding does not
 * need it.
 *
 * Chunk format: one tag byte (TORPOR_FILTER_TAG_STORED or TORPOR_FILTER_TAG_PACKED) and
 * the payload; a chunk that LZ4 does not shrink is stored as it was.
 */
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include <lz4.h>

#include <torpor/plugin.h>

#include <torpor/plugin-util.h>

#define NAME "lz4"

#define LZ4_DEFAULT_ACCELERATION 1
#define LZ4_TORPOR_MAX_ACCELERATION 64

static const struct torpor_host *host;
static struct torpor_filter_stats stats;
/* Set by load() and initialise() before the workers run; read by
 * encode(). */
static int acceleration = LZ4_DEFAULT_ACCELERATION;

static const struct torpor_config_key lz4_config_keys[] = {
	{
		.name = "acceleration",
		.type = TORPOR_CONFIG_INT,
		.min = 1,
		.max = LZ4_TORPOR_MAX_ACCELERATION,
		.default_value = "1",
		.help = "LZ4 acceleration: 1 gives the smallest image, higher "
			"compresses faster and less",
	},
	{ .name = NULL },
};

static int
lz4_read_acceleration(void)
{
	int64_t a;
	int r;

	acceleration = LZ4_DEFAULT_ACCELERATION;
	if (!TORPOR_HOST_HAS(host, config_number))
		return 0;
	/* Checked against the declared range by the core. */
	r = host->config_number("lz4", "acceleration", &a);
	if (r == -ENOENT)
		return 0;
	if (r < 0 || a < 1 || a > LZ4_TORPOR_MAX_ACCELERATION) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "acceleration is not a number from 1 to %d",
			  LZ4_TORPOR_MAX_ACCELERATION);
		return r < 0 ? r : -EINVAL;
	}
	acceleration = (int)a;
	return 0;
}

static int
lz4_load(const struct torpor_host *h)
{
	host = h;
	torpor_filter_stats_reset(&stats);
	return lz4_read_acceleration();
}

static void
lz4_unload(void)
{
	host = NULL;
}

static int
lz4_initialise(int starting_cycle)
{
	if (!starting_cycle)
		return 0;
	torpor_filter_stats_reset(&stats);
	return lz4_read_acceleration();
}

static size_t
lz4_memory_needed(void)
{
	return (size_t)LZ4_sizeofState();
}

static int
lz4_print_debug_info(char *buf, size_t size)
{
	return torpor_filter_stats_print(&stats, "LZ4 " LZ4_VERSION_STRING,
				  buf, size);
}

static size_t
lz4_max_encoded_size(size_t in_len)
{
	/* LZ4_compressBound() answers 0 for what LZ4 cannot take; such a
	 * chunk is stored raw. */
	if (in_len > LZ4_MAX_INPUT_SIZE)
		return TORPOR_FILTER_TAG_SIZE + in_len;
	return TORPOR_FILTER_TAG_SIZE + (size_t)LZ4_compressBound((int)in_len);
}

/* The compressor's hash table; liblz4 would otherwise put 16 KiB
 * on the stack for every chunk. */
static int
lz4_thread_init(void **ret_state)
{
	return torpor_filter_workmem_init(ret_state, (size_t)LZ4_sizeofState());
}

static int
lz4_encode(void *state, const struct torpor_chunk_info *info,
	   const uint8_t *in, size_t in_len,
	   uint8_t *out, size_t out_size, size_t *ret_len)
{
	size_t cap;
	int clen, r;

	if (!state || out_size < lz4_max_encoded_size(in_len))
		return -ENOBUFS;
	if (in_len == 0 || in_len > LZ4_MAX_INPUT_SIZE)
		goto stored;

	cap = out_size - TORPOR_FILTER_TAG_SIZE;
	if (cap > INT_MAX)
		cap = INT_MAX;
	/* With at least LZ4_compressBound() of room LZ4 cannot fail and
	 * takes its faster unchecked path. */
	clen = LZ4_compress_fast_extState(state, (const char *)in,
					  (char *)out + TORPOR_FILTER_TAG_SIZE,
					  (int)in_len, (int)cap, acceleration);
	if (clen <= 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "chunk %llu: LZ4 compression failed (%d)",
			  (unsigned long long)info->sequence, clen);
		return -EIO;
	}
	if ((size_t)clen >= in_len)
		goto stored;
	out[0] = TORPOR_FILTER_TAG_PACKED;
	*ret_len = (size_t)clen + TORPOR_FILTER_TAG_SIZE;
	torpor_filter_stats_encoded(&stats, in_len, *ret_len, false);
	return 0;

stored:
	r = torpor_filter_store(in, in_len, out, out_size, ret_len);
	if (r >= 0)
		torpor_filter_stats_encoded(&stats, in_len, *ret_len, true);
	return r;
}

static int
lz4_decode(void *state, const struct torpor_chunk_info *info,
	   const uint8_t *in, size_t in_len,
	   uint8_t *out, size_t out_size, size_t *ret_len)
{
	size_t clen;
	int dlen, r;

	if (in_len < TORPOR_FILTER_TAG_SIZE)
		return -EBADMSG;
	if (in[0] == TORPOR_FILTER_TAG_STORED) {
		r = torpor_filter_unstore(in, in_len, out, out_size, ret_len);
		if (r >= 0)
			torpor_filter_stats_decoded(&stats);
		return r;
	}
	if (in[0] != TORPOR_FILTER_TAG_PACKED)
		return -EBADMSG;

	clen = in_len - TORPOR_FILTER_TAG_SIZE;
	if (clen > INT_MAX)
		return -EBADMSG;
	if (out_size > INT_MAX)
		out_size = INT_MAX;
	/* LZ4_decompress_safe() checks every read and write against the
	 * two lengths and fails on malformed input. */
	dlen = LZ4_decompress_safe((const char *)in + TORPOR_FILTER_TAG_SIZE,
				   (char *)out, (int)clen, (int)out_size);
	/* The encoder packs a chunk only when that shrinks it. */
	if (dlen < 0 || (size_t)dlen <= clen)
		return -EBADMSG;
	*ret_len = (size_t)dlen;
	torpor_filter_stats_decoded(&stats);
	return 0;
}

/* Stored bytes per 1000, on the generous side: the writer reserves space
 * from it (doc/writers.md, "Capacity", says what was measured). */
static uint32_t
lz4_expected_ratio(void)
{
	return 600;
}

static const struct torpor_filter lz4_plugin = {
	.plugin = {
		.name = NAME,
		.description = "LZ4 compression: fast, fastest to decompress at resume; [lz4] acceleration=",
		.config_keys = lz4_config_keys,
		.load = lz4_load,
		.unload = lz4_unload,
		.initialise = lz4_initialise,
		.memory_needed = lz4_memory_needed,
		.storage_needed = torpor_filter_version_storage,
		.save_config = torpor_filter_save_version,
		.load_config = torpor_filter_load_version,
		.print_debug_info = lz4_print_debug_info,
	},
	.max_encoded_size = lz4_max_encoded_size,
	.expected_ratio = lz4_expected_ratio,
	.thread_init = lz4_thread_init,
	.thread_free = free,
	.encode = lz4_encode,
	.decode = lz4_decode,
};

TORPOR_FILTER_REGISTER(lz4_plugin)
