/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lzo: compresses each chunk with LZO1X-1 (liblzo2), the fastest codec of
 * the set and the one Suspend2 and uswsusp used by default.
 *
 * Chunk format: one tag byte (TORPOR_FILTER_TAG_STORED or TORPOR_FILTER_TAG_PACKED) and
 * the payload; a chunk that LZO does not shrink is stored as it was.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lzo/lzo1x.h>

#include <torpor/plugin.h>

#include <torpor/plugin-util.h>

static const struct torpor_host *host;
static struct torpor_filter_stats stats;

static int
lzo_load(const struct torpor_host *h)
{
	host = h;
	if (lzo_init() != LZO_E_OK) {
		h->log(TORPOR_LOG_ERR, "lzo",
		       "liblzo2 failed to initialise (built against %s, running %s)",
		       LZO_VERSION_STRING, lzo_version_string());
		return -ELIBBAD;
	}
	torpor_filter_stats_reset(&stats);
	return 0;
}

static void
lzo_unload(void)
{
	host = NULL;
}

static int
lzo_initialise(int starting_cycle)
{
	if (starting_cycle)
		torpor_filter_stats_reset(&stats);
	return 0;
}

static size_t
lzo_memory_needed(void)
{
	return LZO1X_1_MEM_COMPRESS;
}

static int
lzo_print_debug_info(char *buf, size_t size)
{
	return torpor_filter_stats_print(&stats, "LZO1X-1", buf, size);
}

/* The worst case LZO1X-1 documents for incompressible input. */
static size_t
lzo_max_encoded_size(size_t in_len)
{
	return TORPOR_FILTER_TAG_SIZE + in_len + in_len / 16 + 64 + 3;
}

/* LZO1X-1 keeps its dictionary here; one per thread. */
static int
lzo_thread_init(void **ret_state)
{
	return torpor_filter_workmem_init(ret_state, LZO1X_1_MEM_COMPRESS);
}

static int
lzo_encode(void *state, const struct torpor_chunk_info *info,
	   const uint8_t *in, size_t in_len,
	   uint8_t *out, size_t out_size, size_t *ret_len)
{
	lzo_uint clen;
	int r;

	/* lzo1x_1_compress() has no output limit: only the documented
	 * bound keeps it inside out. */
	if (!state || out_size < lzo_max_encoded_size(in_len))
		return -ENOBUFS;
	if (in_len == 0)
		goto stored;

	clen = out_size - TORPOR_FILTER_TAG_SIZE;
	r = lzo1x_1_compress(in, in_len, out + TORPOR_FILTER_TAG_SIZE, &clen,
			     state);
	if (r != LZO_E_OK) {
		host->log(TORPOR_LOG_ERR, "lzo",
			  "chunk %llu: lzo1x_1_compress failed (%d)",
			  (unsigned long long)info->sequence, r);
		return -EIO;
	}
	if (clen >= in_len)
		goto stored;
	out[0] = TORPOR_FILTER_TAG_PACKED;
	*ret_len = clen + TORPOR_FILTER_TAG_SIZE;
	torpor_filter_stats_encoded(&stats, in_len, *ret_len, false);
	return 0;

stored:
	r = torpor_filter_store(in, in_len, out, out_size, ret_len);
	if (r >= 0)
		torpor_filter_stats_encoded(&stats, in_len, *ret_len, true);
	return r;
}

static int
lzo_decode(void *state, const struct torpor_chunk_info *info,
	   const uint8_t *in, size_t in_len,
	   uint8_t *out, size_t out_size, size_t *ret_len)
{
	lzo_uint dlen = out_size;
	size_t clen;
	int r;

	if (in_len < TORPOR_FILTER_TAG_SIZE)
		return -EBADMSG;
	if (in[0] == TORPOR_FILTER_TAG_STORED) {
		r = torpor_filter_unstore(in, in_len, out, out_size, ret_len);
		goto done;
	}
	if (in[0] != TORPOR_FILTER_TAG_PACKED)
		return -EBADMSG;

	clen = in_len - TORPOR_FILTER_TAG_SIZE;
	/* The _safe decoder checks every read and write against the two
	 * lengths, so corrupt input cannot make it overrun out. */
	r = lzo1x_decompress_safe(in + TORPOR_FILTER_TAG_SIZE, clen, out, &dlen, NULL);
	/* The encoder packs a chunk only when that shrinks it. */
	if (r != LZO_E_OK || dlen > out_size || dlen <= clen)
		return -EBADMSG;
	*ret_len = dlen;
	r = 0;
done:
	if (r >= 0)
		torpor_filter_stats_decoded(&stats);
	return r;
}

/* Stored bytes per 1000 on a realistic page mix: the measured ratios are
 * 31-39 percent, 600 leaves room for less compressible memory when the
 * writer reserves space. */
static uint32_t
lzo_expected_ratio(void)
{
	return 600;
}

static const struct torpor_plugin lzo_plugin = {
	.name = "lzo",
	.description = "LZO1X-1 compression: fastest, moderate ratio",
	.type = TORPOR_PLUGIN_FILTER,
	.load = lzo_load,
	.unload = lzo_unload,
	.initialise = lzo_initialise,
	.memory_needed = lzo_memory_needed,
	.storage_needed = torpor_filter_version_storage,
	.save_config = torpor_filter_save_version,
	.load_config = torpor_filter_load_version,
	.print_debug_info = lzo_print_debug_info,
	.max_encoded_size = lzo_max_encoded_size,
	.expected_ratio = lzo_expected_ratio,
	.thread_init = lzo_thread_init,
	.thread_free = free,
	.encode = lzo_encode,
	.decode = lzo_decode,
};

TORPOR_PLUGIN_REGISTER(lzo_plugin)
