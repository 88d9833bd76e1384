/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The swap area's header page and torpor's tail in it (swap-tail.h).
 */
#include <errno.h>
#include <string.h>

#include <torpor/plugin-util.h>

#include "swap-tail.h"

#define TAIL_VERSION 1u
#define TAIL_CRC_AT 12
/*
 * The consumed-image record: what resume's consume() leaves in the 54
 * bytes before SWAPSPACE2 (the end of the bad-page list, unused while
 * nr_badpages is 0), so that the resumed system finds the header:
 *   0 magic[8]  8 version u32  12 CRC32C u32 (of the 54 bytes, field
 *   zero)  16 index block u64  24 image UUID[16]  40..53 zero.
 * blkid, swapon and the kernel read only the signature and the header
 * fields; the next reserve() and invalidate() clear the record.
 */
#define USED_MAGIC "TORPORCR"
#define USED_VERSION 1u
#define USED_CRC_AT 12

bool
swap_page_signed(const uint8_t *pg, uint32_t page, const char *sig)
{
	return memcmp(pg + page - SWAP_SIG_LEN, sig, SWAP_SIG_LEN) == 0;
}

uint64_t
swap_header_free_bytes(const uint8_t *pg, uint32_t page)
{
	uint32_t last = torpor_get_le32(pg + SWAP_HDR_LAST_PAGE_AT);
	uint32_t nbad = torpor_get_le32(pg + SWAP_HDR_NR_BAD_AT);

	return last > nbad ? (uint64_t)(last - nbad) * page : 0;
}

void
swap_tail_encode(uint8_t *pg, uint32_t page, uint64_t index_phys)
{
	uint8_t *t = SWAP_TAIL(pg, page);

	memset(t, 0, SWAP_TAIL_LEN);
	torpor_put_le64(t, index_phys);
	torpor_put_le32(t + 8, TAIL_VERSION);
	memcpy(t + SWAP_RECORD_LEN, TORPOR_SIG, SWAP_SIG_LEN);
	torpor_put_le32(t + TAIL_CRC_AT,
			bd_crc_without(t, SWAP_TAIL_LEN, TAIL_CRC_AT));
}

int
swap_tail_decode(const uint8_t *pg, uint32_t page, uint64_t *ret_index)
{
	const uint8_t *t = SWAP_TAIL(pg, page);

	if (!swap_page_signed(pg, page, TORPOR_SIG))
		return -ENOENT;
	if (bd_crc_without(t, SWAP_TAIL_LEN, TAIL_CRC_AT) !=
	    torpor_get_le32(t + TAIL_CRC_AT) ||
	    torpor_get_le32(t + 8) != TAIL_VERSION)
		return -EBADMSG;
	*ret_index = torpor_get_le64(t);
	return 0;
}

/* What mkswap writes there: zeros and the signature. */
static void
mkswap_tail(uint8_t *tail)
{
	memset(tail, 0, SWAP_TAIL_LEN);
	memcpy(tail + SWAP_RECORD_LEN, SWAP_SIG, SWAP_SIG_LEN);
}

void
swap_tail_original(struct bd_dev *dev, const uint8_t *pg, uint32_t page,
		   uint8_t *ret)
{
	struct bd_index ix;
	uint64_t at;

	mkswap_tail(ret);
	if (swap_tail_decode(pg, page, &at) < 0 ||
	    bd_index_read(dev, at, SWAP_INDEX_MAGIC, &ix) < 0)
		return;
	if (memcmp(ix.saved + SWAP_RECORD_LEN, SWAP_SIG, SWAP_SIG_LEN) == 0)
		memcpy(ret, ix.saved, SWAP_TAIL_LEN);
	bd_map_clear(&ix.header);
}

bool
swap_record_present(const uint8_t *t)
{
	return memcmp(t, USED_MAGIC, 8) == 0;
}

static void
encode_record(uint8_t *t, uint64_t index_phys, const uint8_t uuid[16])
{
	memset(t, 0, SWAP_RECORD_LEN);
	memcpy(t, USED_MAGIC, 8);
	torpor_put_le32(t + 8, USED_VERSION);
	torpor_put_le64(t + 16, index_phys);
	memcpy(t + 24, uuid, 16);
	torpor_put_le32(t + USED_CRC_AT,
			bd_crc_without(t, SWAP_RECORD_LEN, USED_CRC_AT));
}

int
swap_record_decode(const uint8_t *t, uint64_t *ret_index, uint8_t *ret_uuid)
{
	if (!swap_record_present(t))
		return -ENOENT;
	if (bd_crc_without(t, SWAP_RECORD_LEN, USED_CRC_AT) !=
	    torpor_get_le32(t + USED_CRC_AT) ||
	    torpor_get_le32(t + 8) != USED_VERSION)
		return -EBADMSG;
	*ret_index = torpor_get_le64(t + 16);
	memcpy(ret_uuid, t + 24, 16);
	return 0;
}

int
swap_tail_to_restore(struct bd_dev *dev, const struct bd_image *img,
		     const uint8_t *pg, uint32_t page, const uint8_t *uuid,
		     uint8_t *tail)
{
	uint64_t at;

	if (img->found && !img->corrupt)
		memcpy(tail, img->ix.saved, SWAP_TAIL_LEN);
	else
		swap_tail_original(dev, pg, page, tail);
	if (memcmp(tail + SWAP_RECORD_LEN, SWAP_SIG, SWAP_SIG_LEN) != 0)
		mkswap_tail(tail);
	if (swap_record_present(tail))
		memset(tail, 0, SWAP_RECORD_LEN);
	if (!uuid || swap_tail_decode(pg, page, &at) < 0)
		return 0;
	if (torpor_get_le32(pg + SWAP_HDR_NR_BAD_AT) != 0 ||
	    !bd_all_zero(tail, SWAP_RECORD_LEN))
		return -ENOSPC;
	encode_record(tail, at, uuid);
	return 0;
}
