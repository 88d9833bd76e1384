/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * zlib: compresses each chunk with deflate (zlib), slower than lzo and lz4
 * but smaller; [zlib] level= trades speed for size.
 *
 * Chunk format: one tag byte (TORPOR_FILTER_TAG_STORED or TORPOR_FILTER_TAG_PACKED) and
 * the payload.  The payload is a zlib stream rather than raw deflate: its
 * Adler-32 trailer costs six bytes a chunk and lets decode refuse most
 * corruption that deflate alone would turn into wrong pages.  A chunk that
 * deflate does not shrink is stored as it was.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <zlib.h>

#include <torpor/plugin.h>

#include <torpor/plugin-util.h>

#define NAME "zlib"

#define ZLIB_WINDOW_BITS 15
#define ZLIB_MEM_LEVEL 8
#define ZLIB_DEFAULT_LEVEL 1

struct zlib_state {
	z_stream def;
	z_stream inf;
};

static const struct torpor_host *host;
static struct torpor_filter_stats stats;
/* Written only by load / initialise / load_config, which the core never
 * runs alongside encode or decode. */
static int level = ZLIB_DEFAULT_LEVEL;
/* The level came from an image header: keep it over the configuration. */
static bool level_from_image;

static const struct torpor_config_key zlib_config_keys[] = {
	{
		.name = "level",
		.type = TORPOR_CONFIG_INT,
		.min = 1,
		.max = 9,
		.default_value = "1",
		.help = "deflate level: 1 is fastest, 9 gives the smallest image",
	},
	{ .name = NULL },
};

static int
zlib_read_level(void)
{
	int64_t l;
	int r;

	/* Checked against the declared range (1 to 9) by the core. */
	r = host->config_number("zlib", "level", &l);
	if (r == -ENOENT) {
		level = ZLIB_DEFAULT_LEVEL;
		return 0;
	}
	if (r < 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "level is not a deflate level (1 to 9)");
		return r;
	}
	level = (int)l;
	return 0;
}

static int
zlib_load(const struct torpor_host *h)
{
	if (!TORPOR_HOST_HAS(h, config_number))
		return -EPROTO;
	host = h;
	level_from_image = false;
	torpor_filter_stats_reset(&stats);
	return zlib_read_level();
}

static void
zlib_unload(void)
{
	host = NULL;
}

static int
zlib_initialise(int starting_cycle)
{
	if (!starting_cycle)
		return 0;
	torpor_filter_stats_reset(&stats);
	if (level_from_image)
		return 0;
	return zlib_read_level();
}

static void
zlib_cleanup(int finishing_cycle)
{
	if (finishing_cycle)
		level_from_image = false;
}

/* What deflateInit2 / inflateInit2 allocate for these parameters (zconf.h
 * gives the formulas), plus room for the streams' own state. */
static size_t
zlib_memory_needed(void)
{
	return (1u << (ZLIB_WINDOW_BITS + 2)) + (1u << (ZLIB_MEM_LEVEL + 9)) +
	       (1u << ZLIB_WINDOW_BITS) + 16 * 1024;
}

static size_t
zlib_storage_needed(void)
{
	return 2;
}

/* The level is not needed to inflate, but resume reports it and a later
 * format must be refused by an older resume side. */
static int
zlib_save_config(uint8_t *buf, size_t size)
{
	if (size < 2)
		return -ENOBUFS;
	buf[0] = TORPOR_FILTER_CONFIG_VERSION;
	buf[1] = (uint8_t)level;
	return 2;
}

static int
zlib_load_config(const uint8_t *buf, size_t len)
{
	int r;

	r = torpor_filter_config_check(buf, len, 2);
	if (r < 0)
		return r;
	if (buf[1] < 1 || buf[1] > 9)
		return -EBADMSG;
	level = buf[1];
	level_from_image = true;
	return 0;
}

static int
zlib_print_debug_info(char *buf, size_t size)
{
	char what[32];

	snprintf(what, sizeof(what), "deflate level %d", level);
	return torpor_filter_stats_print(&stats, what, buf, size);
}

/* Packed chunks are strictly smaller than their input (encode gives
 * deflate no more room than that), stored ones one byte larger. */
static size_t
zlib_max_encoded_size(size_t in_len)
{
	return TORPOR_FILTER_TAG_SIZE + in_len;
}

static int
zlib_thread_init(void **ret_state)
{
	struct zlib_state *s;

	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	if (deflateInit2(&s->def, level, Z_DEFLATED, ZLIB_WINDOW_BITS,
			 ZLIB_MEM_LEVEL, Z_DEFAULT_STRATEGY) != Z_OK) {
		free(s);
		return -ENOMEM;
	}
	if (inflateInit2(&s->inf, ZLIB_WINDOW_BITS) != Z_OK) {
		deflateEnd(&s->def);
		free(s);
		return -ENOMEM;
	}
	*ret_state = s;
	return 0;
}

static void
zlib_thread_free(void *state)
{
	struct zlib_state *s = state;

	if (!s)
		return;
	deflateEnd(&s->def);
	inflateEnd(&s->inf);
	free(s);
}

static int
zlib_encode(void *state, const struct torpor_chunk_info *info,
	    const uint8_t *in, size_t in_len,
	    uint8_t *out, size_t out_size, size_t *ret_len)
{
	struct zlib_state *s = state;
	size_t clen;
	int r;

	if (!s || out_size < zlib_max_encoded_size(in_len))
		return -ENOBUFS;
	if (in_len < 2 || in_len > UINT_MAX)
		goto stored;

	r = deflateReset(&s->def);
	if (r != Z_OK)
		goto fail;
	s->def.next_in = (Bytef *)in;
	s->def.avail_in = (uInt)in_len;
	s->def.next_out = out + TORPOR_FILTER_TAG_SIZE;
	/* Room for a payload smaller than the input and no more: when
	 * deflate runs out of it the chunk is stored. */
	s->def.avail_out = (uInt)(in_len - 1);
	r = deflate(&s->def, Z_FINISH);
	if (r == Z_OK || r == Z_BUF_ERROR)
		goto stored;
	if (r != Z_STREAM_END)
		goto fail;
	clen = in_len - 1 - s->def.avail_out;
	out[0] = TORPOR_FILTER_TAG_PACKED;
	*ret_len = clen + TORPOR_FILTER_TAG_SIZE;
	torpor_filter_stats_encoded(&stats, in_len, *ret_len, false);
	return 0;

stored:
	r = torpor_filter_store(in, in_len, out, out_size, ret_len);
	if (r >= 0)
		torpor_filter_stats_encoded(&stats, in_len, *ret_len, true);
	return r;

fail:
	torpor_log(host, NAME, TORPOR_LOG_ERR, "chunk %llu: deflate failed (%d)",
		  (unsigned long long)info->sequence, r);
	return -EIO;
}

static int
zlib_decode(void *state, const struct torpor_chunk_info *info,
	    const uint8_t *in, size_t in_len,
	    uint8_t *out, size_t out_size, size_t *ret_len)
{
	struct zlib_state *s = state;
	size_t clen, dlen;
	int r;

	if (!s)
		return -EINVAL;
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
	if (clen > UINT_MAX)
		return -EBADMSG;
	if (inflateReset(&s->inf) != Z_OK)
		return -EIO;
	s->inf.next_in = (Bytef *)in + TORPOR_FILTER_TAG_SIZE;
	s->inf.avail_in = (uInt)clen;
	s->inf.next_out = out;
	s->inf.avail_out = out_size > UINT_MAX ? UINT_MAX : (uInt)out_size;
	dlen = s->inf.avail_out;
	r = inflate(&s->inf, Z_FINISH);
	/* Anything but a complete stream that uses every input byte, fits
	 * in out and is larger than its payload was not written by encode
	 * (a bad Adler-32 shows up as Z_DATA_ERROR). */
	if (r != Z_STREAM_END || s->inf.avail_in != 0)
		return -EBADMSG;
	dlen -= s->inf.avail_out;
	if (dlen <= clen)
		return -EBADMSG;
	*ret_len = dlen;
	torpor_filter_stats_decoded(&stats);
	return 0;
}

/* Stored bytes per 1000, on the generous side: the writer reserves space
 * from it (doc/writers.md, "Capacity", says what was measured). */
static uint32_t
zlib_expected_ratio(void)
{
	return 600;
}

static const struct torpor_filter zlib_plugin = {
	.plugin = {
		.name = NAME,
		.description = "deflate compression (zlib): smaller, slower; [zlib] level=",
		.config_keys = zlib_config_keys,
		.load = zlib_load,
		.unload = zlib_unload,
		.initialise = zlib_initialise,
		.cleanup = zlib_cleanup,
		.memory_needed = zlib_memory_needed,
		.storage_needed = zlib_storage_needed,
		.save_config = zlib_save_config,
		.load_config = zlib_load_config,
		.print_debug_info = zlib_print_debug_info,
	},
	.max_encoded_size = zlib_max_encoded_size,
	.expected_ratio = zlib_expected_ratio,
	.thread_init = zlib_thread_init,
	.thread_free = zlib_thread_free,
	.encode = zlib_encode,
	.decode = zlib_decode,
};

TORPOR_FILTER_REGISTER(zlib_plugin)
