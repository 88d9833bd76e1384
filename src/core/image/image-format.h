/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The on-disk image format, in one place: the image header and the framing
 * of each chunk.  Every field is fixed-width little-endian.  The layout is
 * documented in doc/image-format.md; keep the two in step.
 *
 * Parsers take untrusted bytes: every field is range-checked, every length
 * is checked against the buffer, and a failure names the field.
 */
#ifndef TORPOR_IMAGE_FORMAT_H
#define TORPOR_IMAGE_FORMAT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <torpor/plugin.h>

#define IMAGE_FORMAT_VERSION 4
/* The oldest version still read (and resumed): 3 has no boot entry, 2
 * no root guard either. */
#define IMAGE_FORMAT_VERSION_MIN 2
#define IMAGE_MAX_CHAIN 16		/* entries in the chain */
/* The header budget is part of the plugin ABI. */
#define IMAGE_MAX_BLOB TORPOR_IMAGE_MAX_BLOB
#define IMAGE_MAX_HEADER TORPOR_IMAGE_MAX_HEADER
#define IMAGE_MAX_CHUNK_PAGES 1024

/* Header flags */
#define IMAGE_FLAG_TEST 0x1u		/* written by `hibernate --test` */

/* One plugin of the chain, in hibernate order; the writer is last. */
struct image_chain_entry {
	char name[32];			/* NUL-terminated [a-z0-9-]{1,31} */
	uint8_t type;			/* enum torpor_plugin_type */
	uint8_t position;		/* 0-based, equals its index */
	uint32_t blob_len;
	uint8_t *blob;			/* save_config() output (owned) */
};

/* What the resume side records for the resumed system to report. */
struct image_resume_stats {
	uint64_t resumed_at;		/* unix time, 0: not resumed */
	uint64_t read_usec;		/* reading + decoding the image */
	uint64_t pages_restored;
	uint64_t stored_bytes_read;
};

/* Root-filesystem guard kinds (doc/image-format.md). */
#define IMAGE_GUARD_NONE 0u		/* nothing recorded */
#define IMAGE_GUARD_EXT 1u		/* an ext2/3/4 root filesystem */
#define IMAGE_GUARD_BTRFS 2u		/* a btrfs root filesystem */

/* The root filesystem as it was when the image was written: a resume over
 * a filesystem mounted (ext) or written (btrfs) since would lose data
 * (format 3). */
struct image_root_guard {
	uint32_t kind;			/* IMAGE_GUARD_* */
	uint8_t fs_uuid[16];		/* the filesystem's UUID (btrfs: fsid) */
	uint64_t stamp;			/* ext: its last mount time (unix
					 * time); btrfs: its generation */
	uint32_t count;			/* ext: its mount count, <= 65535;
					 * btrfs: 1 when a tree log was
					 * pending, else 0 */
};

/* Bytes of the boot entry field (format 4), its NUL included. */
#define IMAGE_BOOT_ENTRY_SIZE 256

struct image_header {
	uint32_t format_version;
	uint32_t flags;			/* IMAGE_FLAG_* */
	uint8_t uuid[16];
	uint64_t created;		/* unix time */
	char kernel_release[65];
	char kernel_version[65];
	uint32_t page_size;
	uint64_t page_count;		/* snapshot pages in the image */
	uint32_t chunk_pages;		/* pages per full chunk */
	uint64_t chunk_count;
	uint64_t stored_bytes;		/* bytes of the data stream, framing included */
	struct image_root_guard guard;	/* format 3; kind NONE in format 2 */
	/* Format 4: the boot menu entry that starts the kernel that wrote
	 * the image, as a person finds it ("Advanced options for Debian
	 * GNU/Linux > Debian GNU/Linux, with Linux 6.1.0-28-amd64"); UTF-8
	 * without control characters, "" when not known (and in formats 2
	 * and 3). */
	char boot_entry[IMAGE_BOOT_ENTRY_SIZE];
	uint32_t n_chain;
	struct image_chain_entry chain[IMAGE_MAX_CHAIN];
	struct image_resume_stats stats;
};

/* Whether s may be the header's boot_entry: shorter than
 * IMAGE_BOOT_ENTRY_SIZE, UTF-8 without a control character. */
bool image_boot_entry_valid(const char *s);

/* Free the blobs of h (h itself is the caller's). */
void image_header_clear(struct image_header *h);

/* Bytes image_header_encode() will produce for h (format 2 or 3 when
 * h->format_version says so, else the current format). */
size_t image_header_size(const struct image_header *h);

/* Serialise h into buf (size bytes), checksum included.  -EMSGSIZE when it
 * does not fit, -EINVAL when a field is out of range.  Writes the current
 * format, or as an older torpor did (tests, tools) format 3 for a header
 * without a boot entry, format 2 for one without a guard either. */
int image_header_encode(const struct image_header *h, uint8_t *buf,
			size_t size, size_t *ret_len);

/*
 * Parse and check len bytes into *ret (blobs allocated; release with
 * image_header_clear).  On failure returns -EBADMSG (corrupt or out of
 * range), -EPROTONOSUPPORT (a newer format version) and writes a reason
 * naming the field and its offset into err (err_size bytes).
 */
int image_header_parse(const uint8_t *buf, size_t len,
		       struct image_header *ret, char *err, size_t err_size);

/* Rewrite only the resume-stats slot of an encoded header in place (the
 * slot has its own checksum; the header checksum does not cover it). */
int image_header_set_stats(uint8_t *buf, size_t len,
			   const struct image_resume_stats *stats);

/* Chunk framing: a fixed frame before each chunk's stored bytes. */
#define CHUNK_FRAME_SIZE 32
#define CHUNK_FLAG_LAST 0x1u		/* = TORPOR_CHUNK_LAST */

struct chunk_frame {
	uint64_t sequence;
	uint32_t flags;
	uint32_t raw_len;		/* page bytes before the filters */
	uint32_t stored_len;		/* bytes after the frame */
	uint32_t stored_crc;		/* CRC32C of the stored bytes */
	/* Not stored: chunk_crc_seed() of the image.  The frame CRC and the
	 * stored CRC continue from it, so that a frame or chunk of another
	 * image does not match.  0: the plain CRC32C (tests). */
	uint32_t seed;
};

/* The CRC32C of an image's UUID, which every frame of the image
 * continues from (doc/image-format.md). */
uint32_t chunk_crc_seed(const uint8_t uuid[16]);

/* Serialise a frame (CHUNK_FRAME_SIZE bytes, with its own CRC continuing
 * from f->seed). */
void chunk_frame_encode(const struct chunk_frame *f, uint8_t *out);

/* Parse a frame of the image whose chunk_crc_seed() is seed; checks magic,
 * its CRC and ranges (raw_len <= max_raw, stored_len <= max_stored).
 * -EBADMSG with a reason in err. */
int chunk_frame_parse(const uint8_t *in, uint32_t seed, uint32_t max_raw,
		      uint32_t max_stored, struct chunk_frame *ret,
		      char *err, size_t err_size);


#endif
