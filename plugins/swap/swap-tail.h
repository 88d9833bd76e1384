/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swap area's header page and the tail torpor writes into it.
 *
 * The swap area keeps everything that makes it a swap area: only the tail
 * of its header page changes.  The last 10 bytes ("SWAPSPACE2") become
 * "TORPOR0001" and the 54 unused bytes before them point at an index
 * block; the index block says where the image header lies.  The original
 * tail is kept in the index block and is put back byte for byte, so the
 * swap UUID and label (bytes 1036..1068, never written) and the signature
 * survive.  After a resume the 54 bytes may hold a consumed-image record
 * instead, which names the image and its index block.
 */
#ifndef TORPOR_SWAP_TAIL_H
#define TORPOR_SWAP_TAIL_H

#include <stdbool.h>
#include <stdint.h>

#include "blockdev.h"

#define SWAP_SIG		"SWAPSPACE2"
#define TORPOR_SIG		"TORPOR0001"
#define SWAP_SIG_LEN		10
#define SWAP_INDEX_MAGIC	"TORPORSI"

/* What mkswap writes in the header page (struct swap_header). */
#define SWAP_HDR_VERSION_AT	1024	/* u32, 1 */
#define SWAP_HDR_LAST_PAGE_AT	1028	/* u32 */
#define SWAP_HDR_NR_BAD_AT	1032	/* u32 */
#define SWAP_HDR_BADPAGES_AT	1536	/* u32 each */

/* torpor's tail, counted back from the end of the header page; the
 * kernel's own swsusp_header uses the same unused stretch. */
#define SWAP_TAIL_LEN		BD_INDEX_SAVED
/* The consumed-image record: the tail without the signature. */
#define SWAP_RECORD_LEN		(SWAP_TAIL_LEN - SWAP_SIG_LEN)

/* The tail of the header page pg (page bytes). */
#define SWAP_TAIL(pg, page)	((pg) + (page) - SWAP_TAIL_LEN)

/* Whether the header page pg ends with the signature sig. */
bool swap_page_signed(const uint8_t *pg, uint32_t page, const char *sig);

/* The bytes of the pages the header page pg leaves free: pages
 * 1..last_page, the bad ones taken off. */
uint64_t swap_header_free_bytes(const uint8_t *pg, uint32_t page);

/* Write torpor's tail into pg: a pointer to the index block at
 * index_phys, and the signature. */
void swap_tail_encode(uint8_t *pg, uint32_t page, uint64_t index_phys);

/* The index block torpor's tail in pg points at: 0, -ENOENT when pg does
 * not carry torpor's signature, -EBADMSG when the tail is damaged. */
int swap_tail_decode(const uint8_t *pg, uint32_t page, uint64_t *ret_index);

/* The original tail (SWAP_TAIL_LEN bytes into ret) of a header page pg
 * that carries torpor's signature: from the index block on dev, or,
 * when that is unreadable, what mkswap writes (zeros and SWAPSPACE2). */
void swap_tail_original(struct bd_dev *dev, const uint8_t *pg,
			uint32_t page, uint8_t *ret);

/*
 * The tail to put back over torpor's signature in pg: the original one
 * (img's, when the image was found whole, else swap_tail_original()), a
 * consumed-image record in it cleared as an old one; with uuid, a record
 * of that image as well.  -ENOSPC when uuid was given and the record has
 * no room (bad pages, or other data in its bytes): the tail is then the
 * original one alone.
 */
int swap_tail_to_restore(struct bd_dev *dev, const struct bd_image *img,
			 const uint8_t *pg, uint32_t page,
			 const uint8_t *uuid, uint8_t *tail);

/* Whether the tail t holds a consumed-image record (valid or not). */
bool swap_record_present(const uint8_t *t);

/* The index block and the image a consumed-image record in t names: 0,
 * -ENOENT when there is none, -EBADMSG when it is damaged. */
int swap_record_decode(const uint8_t *t, uint64_t *ret_index,
		       uint8_t *ret_uuid);

#endif
