/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image on the device (image-layout.c): the writer blob, the index
 * block, and an image read back by following them:
 *
 *   signature --> index block (one 4 KiB block: where the header lies)
 *             --> image header (its writer blob: the data stream's runs)
 *             --> data stream.
 */
#ifndef TORPOR_BD_IMAGE_LAYOUT_H
#define TORPOR_BD_IMAGE_LAYOUT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device-io.h"
#include "run-list.h"

/*
 * The writer blob: a run list and the stream length, little-endian:
 *   0 magic "TPRM"  4 version u32  8 stream length u64  16 n runs u32
 *   20 crc32c u32 (of the whole blob with this field zero)
 *   24 runs[n] { phys u64, len u64 }
 */
size_t bd_map_blob_size(size_t n_runs);
/* The blob's length in bytes, or -ENOBUFS when size is too small. */
int bd_map_save(const struct bd_map *m, uint64_t stream_len, uint8_t *buf,
		size_t size);
/* 0 and *ret (free with bd_map_clear), or -EBADMSG when the blob is not
 * one or does not check out. */
int bd_map_load(const uint8_t *buf, size_t len, struct bd_map *ret,
		uint64_t *ret_stream_len);

/*
 * One BD_BLOCK block that says where the image header lies.  The swap
 * writer keeps it in a swap page and points at it from the swap header's
 * tail; the file writer keeps it in the file's first block, where it is
 * the signature itself.
 *   0 magic[8]   8 version u32   12 crc32c u32 (of the block, field zero)
 *  16 header length u64   24 n runs u32   28 flags u32
 *  32 saved[64]: the swap header's original tail (restored by invalidate)
 *  96 image uuid[16] (informational)   112 reserved
 * 128 runs[n] { phys u64, len u64 }, at most BD_INDEX_MAX_RUNS
 */
#define BD_INDEX_MAX_RUNS ((BD_BLOCK - 128) / 16)
#define BD_INDEX_SAVED 64

struct bd_index {
	uint64_t header_len;
	uint8_t saved[BD_INDEX_SAVED];
	struct bd_map header;	/* where the header lies */
};

void bd_index_encode(const struct bd_index *ix, const char magic[8],
		     uint8_t *block);

/* 0 and *ret filled (free ret->header with bd_map_clear), -ENOENT when
 * the magic does not match, -EBADMSG when it matches but the block is
 * corrupt. */
int bd_index_decode(const uint8_t *block, const char magic[8],
		    struct bd_index *ret);

/* Read and decode the index block at byte at of d: as bd_index_decode,
 * and -ERANGE when the block does not lie inside d on a 512-byte
 * boundary. */
int bd_index_read(struct bd_dev *d, uint64_t at, const char magic[8],
		  struct bd_index *ret);

/* Encode ix (NULL: a zeroed block) at byte at of d and sync. */
int bd_index_write(struct bd_dev *d, uint64_t at, const char magic[8],
		   const struct bd_index *ix);

/* CRC32C of len bytes of buf, with the 4-byte field at field_at (where
 * the CRC itself is kept) read as zeros. */
uint32_t bd_crc_without(const uint8_t *buf, size_t len, size_t field_at);

/* What find() located and load_config() restored. */
struct bd_image {
	bool found;		/* a signature is there */
	bool corrupt;		/* ... but what it points at does not parse */
	struct bd_index ix;
	struct bd_map stream;	/* from the writer blob */
	uint64_t stream_len;
	bool have_stream;
};

void bd_image_clear(struct bd_image *im);

/* What commit() just wrote, readable at once (the simulated cycle goes on
 * as after a resume): im takes over ix->header and *stream. */
void bd_image_committed(struct bd_image *im, struct bd_index *ix,
			struct bd_map *stream, uint64_t stream_len);
int bd_image_read_header(struct bd_dev *d, const struct bd_image *im,
			 void *buf, size_t size, size_t *ret_len);
/*
 * The writer blob of a stored image (load_config()), checked whole before
 * anything is read: every run it names must lie inside d.  -EBADMSG (an
 * image to refuse) with why, a phrase for "its saved layout ...", when
 * the blob does not parse or a run lies past the device's end.
 */
int bd_image_load_config(const struct bd_dev *d, struct bd_image *im,
			 const uint8_t *buf, size_t len, char *why,
			 size_t why_size);
int bd_image_read(struct bd_dev *d, const struct bd_image *im,
		  uint64_t off, void *buf, size_t len);
int bd_image_rewrite_header(struct bd_dev *d, const struct bd_image *im,
			    const void *header, size_t len);

#endif
