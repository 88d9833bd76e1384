/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The on-disk pointers of the swap and file writers: the writer blob (the
 * data stream's runs), the index block (where the header lies) and the
 * image they describe once read back; see image-layout.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <torpor/plugin-util.h>

#include "crc32c.h"
#include "device-io.h"
#include "image-layout.h"
#include "run-list.h"

/* The writer blob (see image-layout.h). */
#define BLOB_MAGIC "TPRM"
#define BLOB_VERSION 1u
#define BLOB_CRC_AT 20
#define BLOB_RUNS_AT 24

/* The index block (see image-layout.h). */
#define INDEX_VERSION 1u
#define INDEX_CRC_AT 12
#define INDEX_RUNS_AT 128

uint32_t
bd_crc_without(const uint8_t *buf, size_t len, size_t field_at)
{
	static const uint8_t zero[4];
	uint32_t crc = crc32c(0, buf, field_at);

	crc = crc32c(crc, zero, sizeof(zero));
	return crc32c(crc, buf + field_at + 4, len - field_at - 4);
}

/* n runs of { phys u64, len u64 } at p. */
static void
runs_encode(const struct bd_map *m, size_t n, uint8_t *p)
{
	for (size_t i = 0; i < n; i++) {
		torpor_put_le64(p + 16 * i, m->runs[i].phys);
		torpor_put_le64(p + 16 * i + 8, m->runs[i].len);
	}
}

/* The inverse of runs_encode; -EBADMSG for an empty or wrapping run. */
static int
runs_decode(const uint8_t *p, uint32_t n, struct bd_map *ret)
{
	struct bd_map m = { 0 };
	int r = 0;

	for (uint32_t i = 0; r == 0 && i < n; i++) {
		uint64_t phys = torpor_get_le64(p + 16 * (size_t)i);
		uint64_t len = torpor_get_le64(p + 16 * (size_t)i + 8);

		if (len == 0 || phys + len < phys)
			r = -EBADMSG;
		else
			r = bd_map_add(&m, phys, len);
	}
	if (r < 0) {
		bd_map_clear(&m);
		return r;
	}
	*ret = m;
	return 0;
}

size_t
bd_map_blob_size(size_t n_runs)
{
	return BLOB_RUNS_AT + 16 * n_runs;
}

int
bd_map_save(const struct bd_map *m, uint64_t stream_len, uint8_t *buf,
	    size_t size)
{
	size_t need = bd_map_blob_size(m->n);

	if (size < need)
		return -ENOBUFS;
	if (need > INT_MAX)
		return -E2BIG;
	memset(buf, 0, need);
	memcpy(buf, BLOB_MAGIC, 4);
	torpor_put_le32(buf + 4, BLOB_VERSION);
	torpor_put_le64(buf + 8, stream_len);
	torpor_put_le32(buf + 16, (uint32_t)m->n);
	runs_encode(m, m->n, buf + BLOB_RUNS_AT);
	torpor_put_le32(buf + BLOB_CRC_AT,
			bd_crc_without(buf, need, BLOB_CRC_AT));
	return (int)need;
}

int
bd_map_load(const uint8_t *buf, size_t len, struct bd_map *ret,
	    uint64_t *ret_stream_len)
{
	struct bd_map m;
	uint64_t stream_len;
	uint32_t n;
	int r;

	if (len < BLOB_RUNS_AT || memcmp(buf, BLOB_MAGIC, 4) != 0 ||
	    torpor_get_le32(buf + 4) != BLOB_VERSION)
		return -EBADMSG;
	n = torpor_get_le32(buf + 16);
	if (len != bd_map_blob_size(n) ||
	    bd_crc_without(buf, len, BLOB_CRC_AT) !=
	    torpor_get_le32(buf + BLOB_CRC_AT))
		return -EBADMSG;
	stream_len = torpor_get_le64(buf + 8);
	r = runs_decode(buf + BLOB_RUNS_AT, n, &m);
	if (r < 0)
		return r;
	if (stream_len > m.total) {
		bd_map_clear(&m);
		return -EBADMSG;
	}
	*ret = m;
	*ret_stream_len = stream_len;
	return 0;
}

void
bd_index_encode(const struct bd_index *ix, const char magic[8],
		uint8_t *block)
{
	size_t n = ix->header.n < BD_INDEX_MAX_RUNS ? ix->header.n :
		   BD_INDEX_MAX_RUNS;

	memset(block, 0, BD_BLOCK);
	memcpy(block, magic, 8);
	torpor_put_le32(block + 8, INDEX_VERSION);
	torpor_put_le64(block + 16, ix->header_len);
	torpor_put_le32(block + 24, (uint32_t)ix->header.n);
	memcpy(block + 32, ix->saved, BD_INDEX_SAVED);
	runs_encode(&ix->header, n, block + INDEX_RUNS_AT);
	torpor_put_le32(block + INDEX_CRC_AT,
			bd_crc_without(block, BD_BLOCK, INDEX_CRC_AT));
}

int
bd_index_decode(const uint8_t *block, const char magic[8],
		struct bd_index *ret)
{
	struct bd_index ix;
	uint32_t n;
	int r;

	if (memcmp(block, magic, 8) != 0)
		return -ENOENT;
	n = torpor_get_le32(block + 24);
	if (bd_crc_without(block, BD_BLOCK, INDEX_CRC_AT) !=
	    torpor_get_le32(block + INDEX_CRC_AT) ||
	    torpor_get_le32(block + 8) != INDEX_VERSION ||
	    n > BD_INDEX_MAX_RUNS)
		return -EBADMSG;
	memset(&ix, 0, sizeof(ix));
	ix.header_len = torpor_get_le64(block + 16);
	memcpy(ix.saved, block + 32, BD_INDEX_SAVED);
	r = runs_decode(block + INDEX_RUNS_AT, n, &ix.header);
	if (r < 0)
		return r;
	if (ix.header_len == 0 || ix.header_len > ix.header.total) {
		bd_map_clear(&ix.header);
		return -EBADMSG;
	}
	*ret = ix;
	return 0;
}

int
bd_index_read(struct bd_dev *d, uint64_t at, const char magic[8],
	      struct bd_index *ret)
{
	uint8_t *blk;
	int r;

	if (at % 512 || at > d->size || BD_BLOCK > d->size - at)
		return -ERANGE;
	if (posix_memalign((void **)&blk, BD_BLOCK, BD_BLOCK) != 0)
		return -ENOMEM;
	r = bd_read(d, at, blk, BD_BLOCK);
	if (r == 0)
		r = bd_index_decode(blk, magic, ret);
	free(blk);
	return r;
}

int
bd_index_write(struct bd_dev *d, uint64_t at, const char magic[8],
	       const struct bd_index *ix)
{
	uint8_t *blk;
	int r;

	if (posix_memalign((void **)&blk, BD_BLOCK, BD_BLOCK) != 0)
		return -ENOMEM;
	if (ix)
		bd_index_encode(ix, magic, blk);
	else
		memset(blk, 0, BD_BLOCK);
	r = bd_write(d, at, blk, BD_BLOCK);
	free(blk);
	return r < 0 ? r : bd_sync(d);
}

void
bd_image_clear(struct bd_image *im)
{
	bd_map_clear(&im->ix.header);
	bd_map_clear(&im->stream);
	memset(im, 0, sizeof(*im));
}

void
bd_image_committed(struct bd_image *im, struct bd_index *ix,
		   struct bd_map *stream, uint64_t stream_len)
{
	bd_image_clear(im);
	im->found = true;
	im->ix = *ix;
	memset(&ix->header, 0, sizeof(ix->header));
	im->stream = *stream;
	memset(stream, 0, sizeof(*stream));
	im->stream_len = stream_len;
	im->have_stream = true;
}

int
bd_image_read_header(struct bd_dev *d, const struct bd_image *im, void *buf,
		     size_t size, size_t *ret_len)
{
	int r;

	if (!im->found || im->corrupt)
		return -EBADMSG;
	if (!bd_map_inside(&im->ix.header, d->size))
		return -EBADMSG;
	if (im->ix.header_len > size)
		return -EMSGSIZE;
	r = bd_map_read(d, &im->ix.header, 0, buf, im->ix.header_len);
	if (r < 0)
		return r;
	*ret_len = im->ix.header_len;
	return 0;
}

int
bd_image_load_config(const struct bd_dev *d, struct bd_image *im,
		     const uint8_t *buf, size_t len, char *why,
		     size_t why_size)
{
	struct bd_map m;
	uint64_t stream_len;
	size_t i;
	int r;

	r = bd_map_load(buf, len, &m, &stream_len);
	if (r < 0) {
		snprintf(why, why_size, "does not parse (%zu bytes)", len);
		return r;
	}
	i = bd_map_first_outside(&m, d->size);
	if (i < m.n) {
		snprintf(why, why_size,
			 "has run %zu of %zu (%" PRIu64 " bytes at byte %" PRIu64 ") past the end of the device (%" PRIu64 " bytes)",
			 i + 1, m.n, m.runs[i].len, m.runs[i].phys, d->size);
		bd_map_clear(&m);
		return -EBADMSG;
	}
	bd_map_clear(&im->stream);
	im->stream = m;
	im->stream_len = stream_len;
	im->have_stream = true;
	return 0;
}

int
bd_image_read(struct bd_dev *d, const struct bd_image *im, uint64_t off,
	      void *buf, size_t len)
{
	if (!im->have_stream || off > im->stream_len ||
	    len > im->stream_len - off)
		return -ENODATA;
	if (!bd_map_inside(&im->stream, d->size))
		return -EBADMSG;
	return bd_map_read(d, &im->stream, off, buf, len);
}

int
bd_image_rewrite_header(struct bd_dev *d, const struct bd_image *im,
			const void *header, size_t len)
{
	int r;

	if (!im->found || im->corrupt || len != im->ix.header_len)
		return -EINVAL;
	r = bd_map_write(d, &im->ix.header, 0, header, len);
	return r < 0 ? r : bd_sync(d);
}
