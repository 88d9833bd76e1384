/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * lzo: compresses each chunk with LZO1X-1 (liblzo2), the fastest codec of
 * the set and the one Suspend2 and uswsusp used by default.
 *
 * Chunk format (format version 2, saved in the image header): a tag byte,
 * then the payload.
 *  - TORPOR_FILTER_TAG_STORED: the chunk as it was (LZO did not shrink it).
 *  - LZO_TAG_BLOCKS: the chunk cut in blocks of LZO_BLOCK bytes (the last
 *    one may be shorter), each a 3-byte header, a kind byte (LZO_BLOCK_RAW
 *    or LZO_BLOCK_PACKED) and a 16-bit little-endian length, then that
 *    many bytes: the block as it was, or its LZO1X-1 output.  A block that
 *    LZO does not shrink by 1/16 is kept raw: liblzo2's safe decoder
 *    copies literals a byte at a time, so incompressible memory (compressed
 *    files, keys) decodes faster as one memcpy than as literals.
 *  - TORPOR_FILTER_TAG_PACKED: format 1, the whole chunk through LZO1X-1.
 *    No longer written; still read, so an image written before the change
 *    resumes.
 * Format 2 images carry version byte 2, which an older resume side
 * refuses at the header instead of misreading the blocks.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <lzo/lzo1x.h>

#include <torpor/plugin.h>

#include <torpor/plugin-util.h>

#define NAME "lzo"

/* Format version saved in the image header: 2 writes blocks; 1 (whole
 * chunks packed) is still read. */
#define LZO_FORMAT		2
#define LZO_TAG_BLOCKS		2
#define LZO_BLOCK		(32 * 1024)
#define LZO_BLOCK_HEADER	3
#define LZO_BLOCK_RAW		0
#define LZO_BLOCK_PACKED	1

static const struct torpor_host *host;
static struct torpor_filter_stats stats;

static int
lzo_load(const struct torpor_host *h)
{
	host = h;
	if (lzo_init() != LZO_E_OK) {
		torpor_log(h, NAME, TORPOR_LOG_ERR,
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

static size_t
lzo_block_count(size_t in_len)
{
	return (in_len + LZO_BLOCK - 1) / LZO_BLOCK;
}

/* The tag, every block's header and length, and room for the worst case
 * LZO1X-1 documents for incompressible input on the block being packed
 * (earlier blocks take at most their own length). */
static size_t
lzo_max_encoded_size(size_t in_len)
{
	size_t last = in_len < LZO_BLOCK ? in_len : LZO_BLOCK;

	return TORPOR_FILTER_TAG_SIZE +
	       lzo_block_count(in_len) * LZO_BLOCK_HEADER + in_len +
	       last / 16 + 64 + 3;
}

/* Format 1 images carry version 1 and are still read. */
static int
lzo_save_config(uint8_t *buf, size_t size)
{
	if (size < 1)
		return -ENOBUFS;
	buf[0] = LZO_FORMAT;
	return 1;
}

static int
lzo_load_config(const uint8_t *buf, size_t len)
{
	if (!buf || len != 1 || buf[0] < 1 || buf[0] > LZO_FORMAT)
		return -EBADMSG;
	return 0;
}

/* LZO1X-1 keeps its dictionary here; one per thread. */
static int
lzo_thread_init(void **ret_state)
{
	return torpor_filter_workmem_init(ret_state, LZO1X_1_MEM_COMPRESS);
}

/* One block at out: header and payload, raw unless LZO shrinks it by at
 * least 1/16.  Returns the bytes written or a negative errno. */
static long
lzo_encode_block(void *state, const struct torpor_chunk_info *info,
		 const uint8_t *in, size_t len, uint8_t *out)
{
	lzo_uint clen = len + len / 16 + 64 + 3;
	int r;

	r = lzo1x_1_compress(in, len, out + LZO_BLOCK_HEADER, &clen, state);
	if (r != LZO_E_OK) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "chunk %llu: lzo1x_1_compress failed (%d)",
			  (unsigned long long)info->sequence, r);
		return -EIO;
	}
	if (clen > len - len / 16) {
		out[0] = LZO_BLOCK_RAW;
		memcpy(out + LZO_BLOCK_HEADER, in, len);
		clen = len;
	} else {
		out[0] = LZO_BLOCK_PACKED;
	}
	torpor_put_le16(out + 1, (uint16_t)clen);
	return (long)(LZO_BLOCK_HEADER + clen);
}

static int
lzo_encode(void *state, const struct torpor_chunk_info *info,
	   const uint8_t *in, size_t in_len,
	   uint8_t *out, size_t out_size, size_t *ret_len)
{
	size_t pos = TORPOR_FILTER_TAG_SIZE, off, len;
	long n;
	int r;

	/* lzo1x_1_compress() has no output limit: only the documented
	 * bound keeps it inside out. */
	if (!state || out_size < lzo_max_encoded_size(in_len))
		return -ENOBUFS;
	for (off = 0; off < in_len; off += len) {
		len = in_len - off < LZO_BLOCK ? in_len - off : LZO_BLOCK;
		n = lzo_encode_block(state, info, in + off, len, out + pos);
		if (n < 0)
			return (int)n;
		pos += (size_t)n;
	}
	if (in_len == 0 || pos >= TORPOR_FILTER_TAG_SIZE + in_len)
		goto stored;
	out[0] = LZO_TAG_BLOCKS;
	*ret_len = pos;
	torpor_filter_stats_encoded(&stats, in_len, *ret_len, false);
	return 0;

stored:
	r = torpor_filter_store(in, in_len, out, out_size, ret_len);
	if (r >= 0)
		torpor_filter_stats_encoded(&stats, in_len, *ret_len, true);
	return r;
}

static int
lzo_refuse(const struct torpor_chunk_info *info, size_t block,
	   const char *what, size_t v)
{
	torpor_log(host, NAME, TORPOR_LOG_ERR, "chunk %llu, block %zu: %s (%zu)",
		  (unsigned long long)info->sequence, block, what, v);
	return -EBADMSG;
}

/* A format 1 chunk: the whole chunk through LZO1X-1. */
static int
lzo_decode_packed(const uint8_t *in, size_t in_len, uint8_t *out,
		  size_t out_size, size_t *ret_len)
{
	lzo_uint dlen = out_size;
	int r;

	/* The _safe decoder checks every read and write against the two
	 * lengths, so corrupt input cannot make it overrun out. */
	r = lzo1x_decompress_safe(in, in_len, out, &dlen, NULL);
	/* The encoder packs a chunk only when that shrinks it. */
	if (r != LZO_E_OK || dlen > out_size || dlen <= in_len)
		return -EBADMSG;
	*ret_len = dlen;
	return 0;
}

/*
 * One block at in (header checked for room by the caller) into out, which
 * has room left; returns the bytes decoded or -EBADMSG.  Every block but
 * the last decodes to LZO_BLOCK bytes: the caller checks that.
 */
static long
lzo_decode_block(const struct torpor_chunk_info *info, size_t block,
		 const uint8_t *in, size_t in_len, uint8_t *out, size_t room)
{
	size_t len = torpor_get_le16(in + 1);
	size_t max = room < LZO_BLOCK ? room : LZO_BLOCK;
	lzo_uint dlen = max;
	int r;

	if (len == 0)
		return lzo_refuse(info, block, "empty block", len);
	if (len > in_len - LZO_BLOCK_HEADER)
		return lzo_refuse(info, block, "block length past the chunk",
				  len);
	in += LZO_BLOCK_HEADER;
	switch (in[-LZO_BLOCK_HEADER]) {
	case LZO_BLOCK_RAW:
		if (len > max)
			return lzo_refuse(info, block,
					  "raw block longer than the room left",
					  len);
		memcpy(out, in, len);
		return (long)len;
	case LZO_BLOCK_PACKED:
		r = lzo1x_decompress_safe(in, len, out, &dlen, NULL);
		/* Packed only when that shrank it by 1/16. */
		if (r != LZO_E_OK || dlen > max || len > dlen - dlen / 16)
			return lzo_refuse(info, block,
					  "packed block does not decode", len);
		return (long)dlen;
	default:
		return lzo_refuse(info, block, "unknown block kind",
				  in[-LZO_BLOCK_HEADER]);
	}
}

static int
lzo_decode_blocks(const struct torpor_chunk_info *info, const uint8_t *in,
		  size_t in_len, uint8_t *out, size_t out_size, size_t *ret_len)
{
	size_t pos = 0, o = 0, block;
	long n = LZO_BLOCK;

	for (block = 0; pos < in_len; block++) {
		if (n != LZO_BLOCK)
			return lzo_refuse(info, block,
					  "block after a short block",
					  (size_t)n);
		if (in_len - pos < LZO_BLOCK_HEADER)
			return lzo_refuse(info, block, "block header cut",
					  in_len - pos);
		if (o == out_size)
			return lzo_refuse(info, block,
					  "block past the chunk's size",
					  out_size);
		n = lzo_decode_block(info, block, in + pos, in_len - pos,
				     out + o, out_size - o);
		if (n < 0)
			return (int)n;
		pos += LZO_BLOCK_HEADER + torpor_get_le16(in + pos + 1);
		o += (size_t)n;
	}
	if (block == 0)
		return lzo_refuse(info, 0, "no block", 0);
	*ret_len = o;
	return 0;
}

static int
lzo_decode(void *state, const struct torpor_chunk_info *info,
	   const uint8_t *in, size_t in_len,
	   uint8_t *out, size_t out_size, size_t *ret_len)
{
	int r;

	(void)state;
	if (in_len < TORPOR_FILTER_TAG_SIZE)
		return -EBADMSG;
	switch (in[0]) {
	case TORPOR_FILTER_TAG_STORED:
		r = torpor_filter_unstore(in, in_len, out, out_size, ret_len);
		break;
	case LZO_TAG_BLOCKS:
		r = lzo_decode_blocks(info, in + TORPOR_FILTER_TAG_SIZE,
				      in_len - TORPOR_FILTER_TAG_SIZE, out,
				      out_size, ret_len);
		break;
	case TORPOR_FILTER_TAG_PACKED:
		r = lzo_decode_packed(in + TORPOR_FILTER_TAG_SIZE,
				      in_len - TORPOR_FILTER_TAG_SIZE, out,
				      out_size, ret_len);
		break;
	default:
		return -EBADMSG;
	}
	if (r >= 0)
		torpor_filter_stats_decoded(&stats);
	return r;
}

/* Stored bytes per 1000, on the generous side: the writer reserves space
 * from it (doc/writers.md, "Capacity", says what was measured). */
static uint32_t
lzo_expected_ratio(void)
{
	return 600;
}

static const struct torpor_filter lzo_plugin = {
	.plugin = {
		.name = NAME,
		.description = "LZO1X-1 compression: fastest, moderate ratio",
		.load = lzo_load,
		.unload = lzo_unload,
		.initialise = lzo_initialise,
		.memory_needed = lzo_memory_needed,
		.storage_needed = torpor_filter_version_storage,
		.save_config = lzo_save_config,
		.load_config = lzo_load_config,
		.print_debug_info = lzo_print_debug_info,
	},
	.max_encoded_size = lzo_max_encoded_size,
	.expected_ratio = lzo_expected_ratio,
	.thread_init = lzo_thread_init,
	.thread_free = free,
	.encode = lzo_encode,
	.decode = lzo_decode,
};

TORPOR_FILTER_REGISTER(lzo_plugin)
