/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The raw writer's on-device layout (also read by the test image tool).
 *
 * Block 0 is the signature, written last and wiped by invalidate:
 *   0  magic[16] RAW_MAGIC       16 version u32      20 crc32c u32 (of the
 *   block with this field zero)  24 stream offset u64  32 stream length u64
 *   40 header offset u64         48 header length u64  rest zero.
 * The data stream starts at RAW_STREAM_OFFSET; the image header follows it
 * at the next RAW_BLOCK boundary.  Integers are little-endian.
 */
#ifndef TORPOR_RAW_FORMAT_H
#define TORPOR_RAW_FORMAT_H

#define RAW_BLOCK 4096u
#define RAW_STREAM_OFFSET ((uint64_t)RAW_BLOCK)
#define RAW_MAGIC "TORPOR-RAW-SIG01"	/* 16 bytes, no NUL */
#define RAW_SIG_VERSION 1u

#define RAW_SIG_VERSION_AT 16
#define RAW_SIG_CRC_AT 20
#define RAW_SIG_STREAM_OFFSET_AT 24
#define RAW_SIG_STREAM_LENGTH_AT 32
#define RAW_SIG_HEADER_OFFSET_AT 40
#define RAW_SIG_HEADER_LENGTH_AT 48

/*
 * What resume's consume() leaves in block 0 instead of zeros: the same
 * layout under RAW_USED_MAGIC (never an image: find() reports none), with
 * the image UUID at RAW_USED_UUID_AT, so that the resumed system finds the
 * header and its resume statistics.  reserve() and invalidate() zero it.
 */
#define RAW_USED_MAGIC "TORPOR-RAW-USED1"	/* 16 bytes, no NUL */
#define RAW_USED_UUID_AT 56

#endif
