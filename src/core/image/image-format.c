/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image header and the chunk frames, byte for byte as described in
 * doc/image-format.md.  Every multi-byte field is written and read with
 * explicit shifts, never by copying structs, so the layout does not depend
 * on the compiler or the host's byte order.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <torpor/plugin-util.h>

#include "crc32c.h"
#include "image-format.h"
#include "plugin-names.h"
#include "text.h"

#define IMAGE_MAGIC "TORPORIM"
#define FRAME_MAGIC "TCHK"

/* Fixed part of the header (see doc/image-format.md). */
#define OFF_MAGIC		0
#define OFF_VERSION		8
#define OFF_HEADER_LEN		12
#define OFF_FLAGS		16
#define OFF_UUID		20
#define OFF_CREATED		36
#define OFF_RELEASE		44
#define OFF_KVERSION		109
#define OFF_PAGE_SIZE		174
#define OFF_PAGE_COUNT		178
#define OFF_CHUNK_PAGES		186
#define OFF_CHUNK_COUNT		190
#define OFF_STORED_BYTES	198
#define OFF_STATS		206
#define STATS_SIZE		36	/* four u64 and their CRC32C */
#define STATS_END		(OFF_STATS + STATS_SIZE)
/* Format 3: the root-filesystem guard, then the chain. */
#define OFF_GUARD		242
#define GUARD_KIND		0
#define GUARD_UUID		4
#define GUARD_STAMP		20
#define GUARD_COUNT		28
#define GUARD_SIZE		32
/* Format 4: the boot menu entry of the kernel that wrote the image. */
#define OFF_BOOT_ENTRY		(OFF_GUARD + GUARD_SIZE)
/* Where the chain begins: after the boot entry, or (format 3) the guard,
 * or (format 2) the stats. */
#define OFF_N_CHAIN_V2		242
#define OFF_N_CHAIN_V3		(OFF_GUARD + GUARD_SIZE)
#define OFF_N_CHAIN		(OFF_BOOT_ENTRY + IMAGE_BOOT_ENTRY_SIZE)

/* One chain entry before its blob: name, type, position, blob length. */
#define ENTRY_NAME		0
#define ENTRY_TYPE		32
#define ENTRY_POSITION		33
#define ENTRY_BLOB_LEN		34
#define ENTRY_FIXED		38

#define CRC_SIZE		4

#define IMAGE_KNOWN_FLAGS	IMAGE_FLAG_TEST
#define CHUNK_KNOWN_FLAGS	CHUNK_FLAG_LAST

/* Chain entry types (enum torpor_plugin_type). */
#define TYPE_FILTER		1
#define TYPE_WRITER		2
#define TYPE_MISC		3

/* Chunk frame. */
#define FRAME_OFF_MAGIC		0
#define FRAME_OFF_FLAGS		4
#define FRAME_OFF_SEQUENCE	8
#define FRAME_OFF_RAW_LEN	16
#define FRAME_OFF_STORED_LEN	20
#define FRAME_OFF_STORED_CRC	24
#define FRAME_OFF_CRC		28

_Static_assert(FRAME_OFF_CRC + 4 == CHUNK_FRAME_SIZE, "frame layout");
_Static_assert(STATS_END == OFF_GUARD && STATS_END == OFF_N_CHAIN_V2,
	       "header layout");

/* n_chain's offset in a header of format version v (2, 3 or 4); the
 * chain entries follow it. */
static size_t
off_n_chain(uint32_t v)
{
	return v == 2 ? OFF_N_CHAIN_V2 : v == 3 ? OFF_N_CHAIN_V3 : OFF_N_CHAIN;
}

static size_t
off_chain(uint32_t v)
{
	return off_n_chain(v) + 4;
}

/* The header checksum covers everything except the stats slot and the
 * checksum itself (the last four bytes). */
static uint32_t
header_crc(const uint8_t *buf, size_t len)
{
	uint32_t crc = crc32c(0, buf, OFF_STATS);

	return crc32c(crc, buf + STATS_END, len - CRC_SIZE - STATS_END);
}

static uint32_t
stats_crc(const uint8_t *slot)
{
	return crc32c(0, slot, STATS_SIZE - 4);
}

static void
encode_stats(uint8_t *slot, const struct image_resume_stats *s)
{
	torpor_put_le64(slot, s->resumed_at);
	torpor_put_le64(slot + 8, s->read_usec);
	torpor_put_le64(slot + 16, s->pages_restored);
	torpor_put_le64(slot + 24, s->stored_bytes_read);
	torpor_put_le32(slot + 32, stats_crc(slot));
}

static void
encode_guard(uint8_t *p, const struct image_root_guard *g)
{
	torpor_put_le32(p + GUARD_KIND, g->kind);
	/* A guard of kind NONE is all zeros: one encoding per header. */
	if (g->kind == IMAGE_GUARD_NONE) {
		memset(p + GUARD_UUID, 0, GUARD_SIZE - GUARD_UUID);
		return;
	}
	memcpy(p + GUARD_UUID, g->fs_uuid, 16);
	torpor_put_le64(p + GUARD_STAMP, g->stamp);
	torpor_put_le32(p + GUARD_COUNT, g->count);
}

/* The guard's ranges (encode and parse). */
static int
check_guard(const struct image_root_guard *g, char *err, size_t err_size)
{
	if (g->kind != IMAGE_GUARD_NONE && g->kind != IMAGE_GUARD_EXT &&
	    g->kind != IMAGE_GUARD_BTRFS)
		return text_fail(-EBADMSG, err, err_size,
			    "guard kind (offset %d): %u is not 0 (none), 1 (ext) or 2 (btrfs)",
			    OFF_GUARD + GUARD_KIND, g->kind);
	if (g->kind == IMAGE_GUARD_EXT && g->count > 65535)
		return text_fail(-EBADMSG, err, err_size,
			    "guard mount count (offset %d): %u is more than 65535",
			    OFF_GUARD + GUARD_COUNT, g->count);
	if (g->kind == IMAGE_GUARD_BTRFS && g->count > 1)
		return text_fail(-EBADMSG, err, err_size,
			    "guard tree log flag (offset %d): %u is not 0 or 1",
			    OFF_GUARD + GUARD_COUNT, g->count);
	return 0;
}

/* The guard of a format 3 header at p. */
static int
parse_guard(const uint8_t *p, struct image_root_guard *g, char *err,
	    size_t err_size)
{
	static const uint8_t zero[GUARD_SIZE - GUARD_UUID];

	g->kind = torpor_get_le32(p + GUARD_KIND);
	memcpy(g->fs_uuid, p + GUARD_UUID, 16);
	g->stamp = torpor_get_le64(p + GUARD_STAMP);
	g->count = torpor_get_le32(p + GUARD_COUNT);
	if (g->kind == IMAGE_GUARD_NONE &&
	    (memcmp(p + GUARD_UUID, zero, sizeof(zero)) != 0))
		return text_fail(-EBADMSG, err, err_size,
			    "guard (offset %d): kind 0 (none) with bytes that are not zero",
			    OFF_GUARD);
	return check_guard(g, err, err_size);
}

/*
 * Text shown on a console: UTF-8 without a control character (C0, DEL or
 * C1: a console takes some for commands), no overlong form, surrogate or
 * code point past U+10FFFF.  The offset of the first bad byte, or len.
 */
static size_t
console_text_end(const uint8_t *s, size_t len)
{
	size_t i = 0, n, k;
	uint32_t cp;

	while (i < len) {
		uint8_t c = s[i];

		if (c >= 0x20 && c < 0x7f) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 1, cp = c & 0x1f;
		else if (c >= 0xe0 && c <= 0xef)
			n = 2, cp = c & 0x0f;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 3, cp = c & 0x07;
		else
			return i;
		if (len - i <= n)
			return i;
		for (k = 1; k <= n; k++) {
			if ((s[i + k] & 0xc0) != 0x80)
				return i;
			cp = cp << 6 | (s[i + k] & 0x3f);
		}
		if (cp < 0xa0 || (n == 2 && cp < 0x800) ||
		    (n == 3 && cp < 0x10000) || cp > 0x10ffff ||
		    (cp >= 0xd800 && cp <= 0xdfff))
			return i;
		i += n + 1;
	}
	return len;
}

/* The boot entry (format 4): NUL-terminated within its field, console
 * text before the NUL, zeros after it (when padding: parsing). */
static int
check_boot_entry(const char *e, bool padding, char *err, size_t err_size)
{
	size_t n = strnlen(e, IMAGE_BOOT_ENTRY_SIZE), bad, i;

	if (n == IMAGE_BOOT_ENTRY_SIZE)
		return text_fail(-EBADMSG, err, err_size,
			    "boot_entry (offset %d): not NUL-terminated",
			    OFF_BOOT_ENTRY);
	bad = console_text_end((const uint8_t *)e, n);
	if (bad < n)
		return text_fail(-EBADMSG, err, err_size,
			    "boot_entry (offset %d): byte 0x%02x at offset %zu is a control character or not UTF-8",
			    OFF_BOOT_ENTRY, (unsigned char)e[bad],
			    OFF_BOOT_ENTRY + bad);
	for (i = n; padding && i < IMAGE_BOOT_ENTRY_SIZE; i++)
		if (e[i])
			return text_fail(-EBADMSG, err, err_size,
				    "boot_entry (offset %d): padding after the NUL is not zero (offset %zu)",
				    OFF_BOOT_ENTRY, OFF_BOOT_ENTRY + i);
	return 0;
}

bool
image_boot_entry_valid(const char *s)
{
	return s && check_boot_entry(s, false, NULL, 0) == 0;
}

static bool
valid_page_size(uint32_t v)
{
	return v >= 4096 && v <= 65536 && (v & (v - 1)) == 0;
}

/* ceil(page_count / chunk_pages) without overflow (chunk_pages > 0). */
static uint64_t
expected_chunks(uint64_t page_count, uint32_t chunk_pages)
{
	return page_count / chunk_pages + (page_count % chunk_pages != 0);
}

/* Checks of the geometry shared by encode and parse; on failure writes
 * the field's name, offset and reason into err. */
static int
check_geometry(const struct image_header *h, char *err, size_t err_size)
{
	if (h->flags & ~IMAGE_KNOWN_FLAGS)
		return text_fail(-EBADMSG, err, err_size,
			    "flags (offset %d): unknown bits 0x%x",
			    OFF_FLAGS, h->flags & ~IMAGE_KNOWN_FLAGS);
	if (!valid_page_size(h->page_size))
		return text_fail(-EBADMSG, err, err_size,
			    "page_size (offset %d): %u is not a power of two in [4096, 65536]",
			    OFF_PAGE_SIZE, h->page_size);
	if (h->page_count == 0)
		return text_fail(-EBADMSG, err, err_size,
			    "page_count (offset %d): the image has no pages",
			    OFF_PAGE_COUNT);
	if (h->page_count > UINT64_MAX / h->page_size)
		return text_fail(-EBADMSG, err, err_size,
			    "page_count (offset %d): %llu pages of %u bytes overflow 64 bits",
			    OFF_PAGE_COUNT, (unsigned long long)h->page_count,
			    h->page_size);
	if (h->chunk_pages == 0 || h->chunk_pages > IMAGE_MAX_CHUNK_PAGES)
		return text_fail(-EBADMSG, err, err_size,
			    "chunk_pages (offset %d): %u is not in [1, %u]",
			    OFF_CHUNK_PAGES, h->chunk_pages,
			    IMAGE_MAX_CHUNK_PAGES);
	if (h->chunk_count != expected_chunks(h->page_count, h->chunk_pages))
		return text_fail(-EBADMSG, err, err_size,
			    "chunk_count (offset %d): %llu, but %llu pages in chunks of %u make %llu",
			    OFF_CHUNK_COUNT, (unsigned long long)h->chunk_count,
			    (unsigned long long)h->page_count, h->chunk_pages,
			    (unsigned long long)expected_chunks(h->page_count,
								h->chunk_pages));
	/* chunk_count <= page_count < 2^64 / 4096, so this cannot wrap. */
	if (h->stored_bytes < h->chunk_count * CHUNK_FRAME_SIZE)
		return text_fail(-EBADMSG, err, err_size,
			    "stored_bytes (offset %d): %llu is less than the %llu bytes of %llu chunk frames",
			    OFF_STORED_BYTES, (unsigned long long)h->stored_bytes,
			    (unsigned long long)(h->chunk_count * CHUNK_FRAME_SIZE),
			    (unsigned long long)h->chunk_count);
	return 0;
}

/* A kernel string field: NUL-terminated within its 65 bytes, printable
 * ASCII before the NUL and, when padding is set (parsing), zeros after it
 * so that a header has one encoding.  Encoding writes the zeros itself. */
static int
check_kernel_string(const char *s, const char *field, int off, bool padding,
		    char *err, size_t err_size)
{
	size_t n = strnlen(s, 65), i;

	if (n == 65)
		return text_fail(-EBADMSG, err, err_size,
			    "%s (offset %d): not NUL-terminated", field, off);
	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || (unsigned char)s[i] > 0x7e)
			return text_fail(-EBADMSG, err, err_size,
				    "%s (offset %d): non-printable byte 0x%02x at offset %zu",
				    field, off, (unsigned char)s[i], off + i);
	for (; padding && i < 65; i++)
		if (s[i])
			return text_fail(-EBADMSG, err, err_size,
				    "%s (offset %d): padding after the NUL is not zero (offset %zu)",
				    field, off, off + i);
	return 0;
}

/* A chain entry's name: [a-z0-9-]{1,31}, NUL-terminated, and (when
 * padding is set) zero-padded. */
static int
check_entry_name(const char *name, uint32_t index, size_t off, bool padding,
		 char *err, size_t err_size)
{
	size_t n = strnlen(name, 32), i;

	if (n == 0 || n == 32)
		return text_fail(-EBADMSG, err, err_size,
			    "chain[%u].name (offset %zu): %s", index, off,
			    n ? "not NUL-terminated" : "empty");
	for (i = 0; i < n; i++) {
		char c = name[i];

		if (!plugin_name_char(c))
			return text_fail(-EBADMSG, err, err_size,
				    "chain[%u].name (offset %zu): byte 0x%02x is not in [a-z0-9-]",
				    index, off, (unsigned char)c);
	}
	for (; padding && i < 32; i++)
		if (name[i])
			return text_fail(-EBADMSG, err, err_size,
				    "chain[%u].name (offset %zu): padding after the NUL is not zero",
				    index, off);
	return 0;
}

/* Type and position of entry index of n; the writer is last and only
 * last, filters and misc entries come before it in any order. */
static int
check_entry_place(const struct image_chain_entry *e, uint32_t index,
		  uint32_t n, size_t off, char *err, size_t err_size)
{
	bool last = index + 1 == n;

	if (e->type != TYPE_FILTER && e->type != TYPE_WRITER &&
	    e->type != TYPE_MISC)
		return text_fail(-EBADMSG, err, err_size,
			    "chain[%u].type (offset %zu): %u is not 1 (filter), 2 (writer) or 3 (misc)",
			    index, off + ENTRY_TYPE, e->type);
	if (last && e->type != TYPE_WRITER)
		return text_fail(-EBADMSG, err, err_size,
			    "chain[%u].type (offset %zu): the last entry must be the writer (2), not %u",
			    index, off + ENTRY_TYPE, e->type);
	if (!last && e->type == TYPE_WRITER)
		return text_fail(-EBADMSG, err, err_size,
			    "chain[%u].type (offset %zu): a writer before the end of the chain",
			    index, off + ENTRY_TYPE);
	if (e->position != index)
		return text_fail(-EBADMSG, err, err_size,
			    "chain[%u].position (offset %zu): %u, expected %u",
			    index, off + ENTRY_POSITION, e->position, index);
	return 0;
}

/*
 * Bytes image_header_encode() produces for h.  Entries past
 * IMAGE_MAX_CHAIN are not counted (encode refuses such a header anyway).
 */
size_t
image_header_size(const struct image_header *h)
{
	size_t len = off_chain(h->format_version) + CRC_SIZE;
	uint32_t i, n = h->n_chain < IMAGE_MAX_CHAIN ? h->n_chain : IMAGE_MAX_CHAIN;

	for (i = 0; i < n; i++)
		len += ENTRY_FIXED + (size_t)h->chain[i].blob_len;
	return len;
}

/* The checks encode makes before writing a byte. */
static int
check_for_encode(const struct image_header *h)
{
	uint32_t i;
	size_t off = off_chain(h->format_version);
	int r;

	/* Format 3 has no room for a boot entry, format 2 for a guard. */
	if (h->format_version != IMAGE_FORMAT_VERSION &&
	    ((h->format_version != 2 && h->format_version != 3) ||
	     h->boot_entry[0] ||
	     (h->format_version == 2 && h->guard.kind != IMAGE_GUARD_NONE)))
		return -EINVAL;
	if (check_boot_entry(h->boot_entry, false, NULL, 0) < 0)
		return -EINVAL;
	if (check_guard(&h->guard, NULL, 0) < 0)
		return -EINVAL;
	r = check_geometry(h, NULL, 0);
	if (r < 0)
		return -EINVAL;
	if (check_kernel_string(h->kernel_release, "", 0, false, NULL, 0) < 0 ||
	    check_kernel_string(h->kernel_version, "", 0, false, NULL, 0) < 0)
		return -EINVAL;
	if (h->n_chain == 0 || h->n_chain > IMAGE_MAX_CHAIN)
		return -EINVAL;
	for (i = 0; i < h->n_chain; i++) {
		const struct image_chain_entry *e = &h->chain[i];

		if (check_entry_name(e->name, i, off, false, NULL, 0) < 0 ||
		    check_entry_place(e, i, h->n_chain, off, NULL, 0) < 0 ||
		    e->blob_len > IMAGE_MAX_BLOB || (e->blob_len && !e->blob))
			return -EINVAL;
		off += ENTRY_FIXED + e->blob_len;
	}
	if (image_header_size(h) > IMAGE_MAX_HEADER)
		return -EINVAL;
	return 0;
}

/*
 * Serialise h into buf: -EINVAL if a field is out of range (nothing
 * written), -EMSGSIZE if size is too small; *ret_len gets the length.
 */
int
image_header_encode(const struct image_header *h, uint8_t *buf,
		    size_t size, size_t *ret_len)
{
	size_t len, off;
	uint32_t i;
	int r;

	r = check_for_encode(h);
	if (r < 0)
		return r;
	len = image_header_size(h);
	if (size < len)
		return -EMSGSIZE;

	memcpy(buf + OFF_MAGIC, IMAGE_MAGIC, 8);
	torpor_put_le32(buf + OFF_VERSION, h->format_version);
	torpor_put_le32(buf + OFF_HEADER_LEN, (uint32_t)len);
	torpor_put_le32(buf + OFF_FLAGS, h->flags);
	memcpy(buf + OFF_UUID, h->uuid, 16);
	torpor_put_le64(buf + OFF_CREATED, h->created);
	/* strncpy pads with zeros, which the parser insists on. */
	strncpy((char *)buf + OFF_RELEASE, h->kernel_release, 65);
	strncpy((char *)buf + OFF_KVERSION, h->kernel_version, 65);
	torpor_put_le32(buf + OFF_PAGE_SIZE, h->page_size);
	torpor_put_le64(buf + OFF_PAGE_COUNT, h->page_count);
	torpor_put_le32(buf + OFF_CHUNK_PAGES, h->chunk_pages);
	torpor_put_le64(buf + OFF_CHUNK_COUNT, h->chunk_count);
	torpor_put_le64(buf + OFF_STORED_BYTES, h->stored_bytes);
	encode_stats(buf + OFF_STATS, &h->stats);
	if (h->format_version != 2)
		encode_guard(buf + OFF_GUARD, &h->guard);
	/* strncpy pads with zeros, which the parser insists on. */
	if (h->format_version >= 4)
		strncpy((char *)buf + OFF_BOOT_ENTRY, h->boot_entry,
			IMAGE_BOOT_ENTRY_SIZE);
	torpor_put_le32(buf + off_n_chain(h->format_version), h->n_chain);
	off = off_chain(h->format_version);
	for (i = 0; i < h->n_chain; i++) {
		const struct image_chain_entry *e = &h->chain[i];
		uint8_t *p = buf + off;

		strncpy((char *)p + ENTRY_NAME, e->name, 32);
		p[ENTRY_TYPE] = e->type;
		p[ENTRY_POSITION] = e->position;
		torpor_put_le32(p + ENTRY_BLOB_LEN, e->blob_len);
		if (e->blob_len)
			memcpy(p + ENTRY_FIXED, e->blob, e->blob_len);
		off += ENTRY_FIXED + e->blob_len;
	}
	torpor_put_le32(buf + off, header_crc(buf, len));
	*ret_len = len;
	return 0;
}

void
image_header_clear(struct image_header *h)
{
	uint32_t i;

	if (!h)
		return;
	for (i = 0; i < IMAGE_MAX_CHAIN; i++) {
		free(h->chain[i].blob);
		h->chain[i].blob = NULL;
		h->chain[i].blob_len = 0;
	}
}

/* Magic, version and length: what must hold before the checksum can be
 * located and checked. */
static int
check_envelope(const uint8_t *buf, size_t len, char *err, size_t err_size)
{
	uint32_t version, header_len;

	if (len < OFF_FLAGS)
		return text_fail(-EBADMSG, err, err_size,
			    "header (offset 0): %zu bytes, too short for magic, version and length",
			    len);
	if (memcmp(buf + OFF_MAGIC, IMAGE_MAGIC, 8) != 0)
		return text_fail(-EBADMSG, err, err_size,
			    "magic (offset %d): not a torpor image header",
			    OFF_MAGIC);
	/* Bytes 0-15 keep their meaning in every version; what follows is
	 * the version's, so a newer one cannot even be checksummed here. */
	version = torpor_get_le32(buf + OFF_VERSION);
	if (version == 0)
		return text_fail(-EBADMSG, err, err_size,
			    "format_version (offset %d): 0 is not a version",
			    OFF_VERSION);
	if (version > IMAGE_FORMAT_VERSION)
		return text_fail(-EPROTONOSUPPORT, err, err_size,
			    "format_version (offset %d): the image has format %u, this torpor reads up to %u; resume it with the torpor that wrote it",
			    OFF_VERSION, version, IMAGE_FORMAT_VERSION);
	/* Format 1 frames were not bound to their image: its stream cannot
	 * be checked as this version checks one.  Format 3 is format 4
	 * without the boot entry, format 2 without the root guard too. */
	if (version < IMAGE_FORMAT_VERSION_MIN)
		return text_fail(-EPROTONOSUPPORT, err, err_size,
			    "format_version (offset %d): the image has format %u of an older torpor, this torpor reads formats %u to %u; resume it with the torpor that wrote it",
			    OFF_VERSION, version, IMAGE_FORMAT_VERSION_MIN,
			    IMAGE_FORMAT_VERSION);
	header_len = torpor_get_le32(buf + OFF_HEADER_LEN);
	if (header_len > IMAGE_MAX_HEADER)
		return text_fail(-EBADMSG, err, err_size,
			    "header_len (offset %d): %u is more than the %u allowed",
			    OFF_HEADER_LEN, header_len, IMAGE_MAX_HEADER);
	if (header_len != len)
		return text_fail(-EBADMSG, err, err_size,
			    "header_len (offset %d): %u, but the header read is %zu bytes",
			    OFF_HEADER_LEN, header_len, len);
	if (len < off_chain(version) + ENTRY_FIXED + CRC_SIZE)
		return text_fail(-EBADMSG, err, err_size,
			    "header_len (offset %d): %zu is less than the %zu of a header with one chain entry",
			    OFF_HEADER_LEN, len,
			    off_chain(version) + ENTRY_FIXED + CRC_SIZE);
	if (torpor_get_le32(buf + len - CRC_SIZE) != header_crc(buf, len))
		return text_fail(-EBADMSG, err, err_size,
			    "header checksum mismatch (CRC32C at offset %zu): the header is corrupt",
			    len - CRC_SIZE);
	return 0;
}

/* Chain entries, from n_chain to the checksum, into h. */
static int
parse_chain(const uint8_t *buf, size_t len, struct image_header *h,
	    char *err, size_t err_size)
{
	size_t end = len - CRC_SIZE, off = off_chain(h->format_version);
	uint32_t i;
	int r;

	h->n_chain = torpor_get_le32(buf + off_n_chain(h->format_version));
	if (h->n_chain == 0 || h->n_chain > IMAGE_MAX_CHAIN)
		return text_fail(-EBADMSG, err, err_size,
			    "n_chain (offset %zu): %u is not in [1, %u] (a writer is required)",
			    off_n_chain(h->format_version), h->n_chain,
			    IMAGE_MAX_CHAIN);
	for (i = 0; i < h->n_chain; i++) {
		struct image_chain_entry *e = &h->chain[i];
		const uint8_t *p = buf + off;
		uint32_t blob_len;

		if (end - off < ENTRY_FIXED)
			return text_fail(-EBADMSG, err, err_size,
				    "chain[%u] (offset %zu): entry runs past the end of the header",
				    i, off);
		memcpy(e->name, p + ENTRY_NAME, 32);
		r = check_entry_name(e->name, i, off, true, err, err_size);
		if (r < 0)
			return r;
		e->type = p[ENTRY_TYPE];
		e->position = p[ENTRY_POSITION];
		r = check_entry_place(e, i, h->n_chain, off, err, err_size);
		if (r < 0)
			return r;
		blob_len = torpor_get_le32(p + ENTRY_BLOB_LEN);
		if (blob_len > IMAGE_MAX_BLOB)
			return text_fail(-EBADMSG, err, err_size,
				    "chain[%u].blob_len (offset %zu): %u is more than %u",
				    i, off + ENTRY_BLOB_LEN, blob_len,
				    IMAGE_MAX_BLOB);
		if (blob_len > end - off - ENTRY_FIXED)
			return text_fail(-EBADMSG, err, err_size,
				    "chain[%u].blob_len (offset %zu): %u bytes run past the end of the header",
				    i, off + ENTRY_BLOB_LEN, blob_len);
		if (blob_len) {
			e->blob = malloc(blob_len);
			if (!e->blob)
				return text_fail(-ENOMEM, err, err_size,
					    "chain[%u] (offset %zu): out of memory",
					    i, off);
			memcpy(e->blob, p + ENTRY_FIXED, blob_len);
		}
		e->blob_len = blob_len;
		off += ENTRY_FIXED + blob_len;
	}
	if (off != end)
		return text_fail(-EBADMSG, err, err_size,
			    "header (offset %zu): %zu stray bytes after the last chain entry",
			    off, end - off);
	return 0;
}

/*
 * Parse and check an encoded header.  On success err holds "" or a note
 * (the resume-stats slot was damaged and reads as zero); on failure the
 * reason.  *ret is written only on success.
 */
int
image_header_parse(const uint8_t *buf, size_t len,
		   struct image_header *ret, char *err, size_t err_size)
{
	struct image_header h;
	const uint8_t *slot;
	int r;

	if (err && err_size)
		err[0] = '\0';
	r = check_envelope(buf, len, err, err_size);
	if (r < 0)
		return r;

	/* The checksum holds; the ranges are still checked, for headers
	 * crafted with a valid checksum. */
	memset(&h, 0, sizeof(h));
	h.format_version = torpor_get_le32(buf + OFF_VERSION);
	h.flags = torpor_get_le32(buf + OFF_FLAGS);
	memcpy(h.uuid, buf + OFF_UUID, 16);
	h.created = torpor_get_le64(buf + OFF_CREATED);
	memcpy(h.kernel_release, buf + OFF_RELEASE, 65);
	memcpy(h.kernel_version, buf + OFF_KVERSION, 65);
	h.page_size = torpor_get_le32(buf + OFF_PAGE_SIZE);
	h.page_count = torpor_get_le64(buf + OFF_PAGE_COUNT);
	h.chunk_pages = torpor_get_le32(buf + OFF_CHUNK_PAGES);
	h.chunk_count = torpor_get_le64(buf + OFF_CHUNK_COUNT);
	h.stored_bytes = torpor_get_le64(buf + OFF_STORED_BYTES);

	r = check_kernel_string(h.kernel_release, "kernel_release",
				OFF_RELEASE, true, err, err_size);
	if (r < 0)
		return r;
	r = check_kernel_string(h.kernel_version, "kernel_version",
				OFF_KVERSION, true, err, err_size);
	if (r < 0)
		return r;
	r = check_geometry(&h, err, err_size);
	if (r < 0)
		return r;
	if (h.format_version != 2) {
		r = parse_guard(buf + OFF_GUARD, &h.guard, err, err_size);
		if (r < 0)
			return r;
	}
	if (h.format_version >= 4) {
		memcpy(h.boot_entry, buf + OFF_BOOT_ENTRY, IMAGE_BOOT_ENTRY_SIZE);
		r = check_boot_entry(h.boot_entry, true, err, err_size);
		if (r < 0)
			return r;
	}
	r = parse_chain(buf, len, &h, err, err_size);
	if (r < 0) {
		image_header_clear(&h);
		return r;
	}

	/* The stats slot is rewritten after the image was written, so a
	 * torn or damaged slot must not cost the user the image. */
	slot = buf + OFF_STATS;
	if (torpor_get_le32(slot + 32) == stats_crc(slot)) {
		h.stats.resumed_at = torpor_get_le64(slot);
		h.stats.read_usec = torpor_get_le64(slot + 8);
		h.stats.pages_restored = torpor_get_le64(slot + 16);
		h.stats.stored_bytes_read = torpor_get_le64(slot + 24);
	} else {
		text_fail(0, err, err_size,
		     "stats (offset %d): slot checksum mismatch; resume statistics read as zero",
		     OFF_STATS);
	}
	*ret = h;
	return 0;
}

/*
 * Rewrite the stats slot of the encoded header at buf in place; the rest
 * of the header is checked first and left alone.  -EBADMSG if buf is not a
 * valid header, -EINVAL on a NULL argument.
 */
int
image_header_set_stats(uint8_t *buf, size_t len,
		       const struct image_resume_stats *stats)
{
	if (!buf || !stats)
		return -EINVAL;
	if (check_envelope(buf, len, NULL, 0) < 0)
		return -EBADMSG;
	encode_stats(buf + OFF_STATS, stats);
	return 0;
}

uint32_t
chunk_crc_seed(const uint8_t uuid[16])
{
	return crc32c(0, uuid, 16);
}

/* Write the CHUNK_FRAME_SIZE bytes of f to out, frame CRC included. */
void
chunk_frame_encode(const struct chunk_frame *f, uint8_t *out)
{
	memcpy(out + FRAME_OFF_MAGIC, FRAME_MAGIC, 4);
	torpor_put_le32(out + FRAME_OFF_FLAGS, f->flags);
	torpor_put_le64(out + FRAME_OFF_SEQUENCE, f->sequence);
	torpor_put_le32(out + FRAME_OFF_RAW_LEN, f->raw_len);
	torpor_put_le32(out + FRAME_OFF_STORED_LEN, f->stored_len);
	torpor_put_le32(out + FRAME_OFF_STORED_CRC, f->stored_crc);
	torpor_put_le32(out + FRAME_OFF_CRC, crc32c(f->seed, out, FRAME_OFF_CRC));
}

int
chunk_frame_parse(const uint8_t *in, uint32_t seed, uint32_t max_raw,
		  uint32_t max_stored, struct chunk_frame *ret,
		  char *err, size_t err_size)
{
	struct chunk_frame f;

	/* The struct has padding, and callers compare frames whole. */
	memset(&f, 0, sizeof(f));
	if (memcmp(in + FRAME_OFF_MAGIC, FRAME_MAGIC, 4) != 0)
		return text_fail(-EBADMSG, err, err_size,
			    "frame magic (offset %d): not a chunk frame",
			    FRAME_OFF_MAGIC);
	if (torpor_get_le32(in + FRAME_OFF_CRC) != crc32c(seed, in, FRAME_OFF_CRC))
		return text_fail(-EBADMSG, err, err_size,
			    "frame checksum mismatch (CRC32C at offset %d): the frame is corrupt or belongs to another image",
			    FRAME_OFF_CRC);
	f.seed = seed;
	f.flags = torpor_get_le32(in + FRAME_OFF_FLAGS);
	f.sequence = torpor_get_le64(in + FRAME_OFF_SEQUENCE);
	f.raw_len = torpor_get_le32(in + FRAME_OFF_RAW_LEN);
	f.stored_len = torpor_get_le32(in + FRAME_OFF_STORED_LEN);
	f.stored_crc = torpor_get_le32(in + FRAME_OFF_STORED_CRC);
	if (f.flags & ~CHUNK_KNOWN_FLAGS)
		return text_fail(-EBADMSG, err, err_size,
			    "frame flags (offset %d): unknown bits 0x%x",
			    FRAME_OFF_FLAGS, f.flags & ~CHUNK_KNOWN_FLAGS);
	if (f.raw_len == 0 || f.raw_len > max_raw)
		return text_fail(-EBADMSG, err, err_size,
			    "frame raw_len (offset %d): %u is not in [1, %u]",
			    FRAME_OFF_RAW_LEN, f.raw_len, max_raw);
	if (f.stored_len == 0 || f.stored_len > max_stored)
		return text_fail(-EBADMSG, err, err_size,
			    "frame stored_len (offset %d): %u is not in [1, %u]",
			    FRAME_OFF_STORED_LEN, f.stored_len, max_stored);
	*ret = f;
	return 0;
}
