/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image header and chunk frame: round trips, every refusal with the
 * field it names, bit flips, truncation, the stats slot, and CRC32C.
 *
 * The offsets below are copied from doc/image-format.md rather than from
 * the implementation, so a test failing here means the code and the
 * document disagree.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "chain.h"
#include "image-format.h"

#include "crc32c.h"

/* From doc/image-format.md. */
#define D_VERSION	8
#define D_HEADER_LEN	12
#define D_FLAGS		16
#define D_UUID		20
#define D_CREATED	36
#define D_RELEASE	44
#define D_KVERSION	109
#define D_PAGE_SIZE	174
#define D_PAGE_COUNT	178
#define D_CHUNK_PAGES	186
#define D_CHUNK_COUNT	190
#define D_STORED	198
#define D_STATS		206
#define D_STATS_END	242
#define D_GUARD		242	/* format 3: kind 4, uuid 16, mtime 8, count 4 */
#define D_BOOT_ENTRY	274	/* format 4: 256 bytes */
#define D_N_CHAIN	530
#define D_CHAIN		534
#define D_N_CHAIN_V3	274	/* format 3: no boot entry */
#define D_N_CHAIN_V2	242	/* format 2: no guard */
#define D_ENTRY		38	/* name 32, type 1, position 1, blob_len 4 */

#define F_FLAGS		4
#define F_SEQUENCE	8
#define F_RAW_LEN	16
#define F_STORED_LEN	20
#define F_STORED_CRC	24
#define F_CRC		28

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static uint64_t
get64(const uint8_t *p)
{
	return (uint64_t)get32(p) | (uint64_t)get32(p + 4) << 32;
}

/* Recompute the header checksum after the test changed a field, the
 * way the document describes it. */
static void
fix_crc(uint8_t *buf, size_t len)
{
	uint32_t crc = crc32c(0, buf, D_STATS);

	crc = crc32c(crc, buf + D_STATS_END, len - 4 - D_STATS_END);
	put32(buf + len - 4, crc);
}

static void
set_entry(struct image_chain_entry *e, const char *name, uint8_t type,
	  uint8_t pos, uint32_t blob_len, uint8_t seed)
{
	memset(e, 0, sizeof(*e));
	strcpy(e->name, name);
	e->type = type;
	e->position = pos;
	e->blob_len = blob_len;
	if (blob_len) {
		e->blob = malloc(blob_len);
		ck_assert_ptr_nonnull(e->blob);
		for (uint32_t i = 0; i < blob_len; i++)
			e->blob[i] = (uint8_t)(seed + i * 7);
	}
}

#define BOOT_ENTRY "Advanced options for Debian GNU/Linux > Debian GNU/Linux, with Linux 6.1.0-18-amd64"

/* A header with a filter, a misc entry, another filter and the writer;
 * with_blobs gives three of them saved configurations. */
static void
make_header(struct image_header *h, bool with_blobs)
{
	memset(h, 0, sizeof(*h));
	h->format_version = IMAGE_FORMAT_VERSION;
	h->flags = IMAGE_FLAG_TEST;
	for (int i = 0; i < 16; i++)
		h->uuid[i] = (uint8_t)(0xa0 + i);
	h->created = 1700000000;
	strcpy(h->kernel_release, "6.1.0-18-amd64");
	strcpy(h->kernel_version, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)");
	h->page_size = 4096;
	h->page_count = 1000;
	h->chunk_pages = 32;
	h->chunk_count = 32;		/* ceil(1000 / 32) */
	h->stored_bytes = 123456;
	h->n_chain = 4;
	set_entry(&h->chain[0], "lzo", 1, 0, with_blobs ? 5 : 0, 1);
	set_entry(&h->chain[1], "sleep-hooks", 3, 1, 0, 0);
	set_entry(&h->chain[2], "crypt", 1, 2, with_blobs ? 300 : 0, 2);
	set_entry(&h->chain[3], "swap", 2, 3, with_blobs ? 17 : 0, 3);
	h->stats.resumed_at = 1700000100;
	h->stats.read_usec = 2500000;
	h->stats.pages_restored = 1000;
	h->stats.stored_bytes_read = 123456;
	h->guard.kind = IMAGE_GUARD_EXT;
	for (int i = 0; i < 16; i++)
		h->guard.fs_uuid[i] = (uint8_t)(0x30 + i);
	h->guard.stamp = 0x1234567890ull;	/* past 2038: the high bits */
	h->guard.count = 65535;
	strcpy(h->boot_entry, BOOT_ENTRY);
}

static uint8_t *
encode(const struct image_header *h, size_t *ret_len)
{
	size_t size = image_header_size(h), len = 0;
	uint8_t *buf = malloc(size);

	ck_assert_ptr_nonnull(buf);
	ck_assert_int_eq(image_header_encode(h, buf, size, &len), 0);
	ck_assert_uint_eq(len, size);
	*ret_len = len;
	return buf;
}

/* A valid encoded header with blobs, for tests to damage. */
static uint8_t *
valid_header(size_t *ret_len)
{
	struct image_header h;
	uint8_t *buf;

	make_header(&h, true);
	buf = encode(&h, ret_len);
	image_header_clear(&h);
	return buf;
}

/* Offset of chain entry i in an encoded header. */
static size_t
entry_off(const uint8_t *buf, uint32_t i)
{
	size_t off = D_CHAIN;

	while (i--)
		off += D_ENTRY + get32(buf + off + 34);
	return off;
}

/* Parse must refuse buf with -EBADMSG and a message naming the field
 * (and its offset, when offset >= 0). */
static void
assert_refused(const uint8_t *buf, size_t len, const char *field, int offset)
{
	struct image_header h;
	char err[256], where[32];
	int r;

	memset(&h, 0x5a, sizeof(h));
	r = image_header_parse(buf, len, &h, err, sizeof(err));
	ck_assert_msg(r == -EBADMSG, "expected -EBADMSG for %s, got %d (%s)",
		      field, r, r < 0 ? err : "accepted");
	ck_assert_msg(strstr(err, field), "'%s' does not name '%s'", err, field);
	if (offset >= 0) {
		snprintf(where, sizeof(where), "offset %d", offset);
		ck_assert_msg(strstr(err, where), "'%s' does not say '%s'", err, where);
	}
	/* ret_* untouched on failure. */
	ck_assert_uint_eq(h.page_size, 0x5a5a5a5a);
}

/* Change a 32/64-bit field of a valid header, re-checksum, expect a
 * refusal naming the field. */
static void
refuse32(size_t off, uint32_t v, const char *field)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	put32(buf + off, v);
	fix_crc(buf, len);
	assert_refused(buf, len, field, (int)off);
	free(buf);
}

static void
refuse64(size_t off, uint64_t v, const char *field)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	put64(buf + off, v);
	fix_crc(buf, len);
	assert_refused(buf, len, field, (int)off);
	free(buf);
}

static void
assert_headers_equal(const struct image_header *a, const struct image_header *b)
{
	ck_assert_uint_eq(a->format_version, b->format_version);
	ck_assert_uint_eq(a->flags, b->flags);
	ck_assert_mem_eq(a->uuid, b->uuid, 16);
	ck_assert_uint_eq(a->created, b->created);
	ck_assert_str_eq(a->kernel_release, b->kernel_release);
	ck_assert_str_eq(a->kernel_version, b->kernel_version);
	ck_assert_uint_eq(a->page_size, b->page_size);
	ck_assert_uint_eq(a->page_count, b->page_count);
	ck_assert_uint_eq(a->chunk_pages, b->chunk_pages);
	ck_assert_uint_eq(a->chunk_count, b->chunk_count);
	ck_assert_uint_eq(a->stored_bytes, b->stored_bytes);
	ck_assert_str_eq(a->boot_entry, b->boot_entry);
	ck_assert_uint_eq(a->n_chain, b->n_chain);
	for (uint32_t i = 0; i < a->n_chain; i++) {
		ck_assert_str_eq(a->chain[i].name, b->chain[i].name);
		ck_assert_uint_eq(a->chain[i].type, b->chain[i].type);
		ck_assert_uint_eq(a->chain[i].position, b->chain[i].position);
		ck_assert_uint_eq(a->chain[i].blob_len, b->chain[i].blob_len);
		if (a->chain[i].blob_len)
			ck_assert_mem_eq(a->chain[i].blob, b->chain[i].blob,
					 a->chain[i].blob_len);
	}
	ck_assert_uint_eq(a->stats.resumed_at, b->stats.resumed_at);
	ck_assert_uint_eq(a->stats.read_usec, b->stats.read_usec);
	ck_assert_uint_eq(a->stats.pages_restored, b->stats.pages_restored);
	ck_assert_uint_eq(a->stats.stored_bytes_read, b->stats.stored_bytes_read);
	ck_assert_uint_eq(a->guard.kind, b->guard.kind);
	ck_assert_mem_eq(a->guard.fs_uuid, b->guard.fs_uuid, 16);
	ck_assert_uint_eq(a->guard.stamp, b->guard.stamp);
	ck_assert_uint_eq(a->guard.count, b->guard.count);
}

static void assert_encode_einval(struct image_header *h);

/* h encoded and parsed back is h; h is cleared. */
static void
assert_round_trip(struct image_header *h)
{
	struct image_header p;
	char err[256];
	size_t len;
	uint8_t *buf = encode(h, &len);

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(image_header_parse(buf, len, &p, err, sizeof(err)), 0);
	assert_headers_equal(h, &p);
	image_header_clear(&p);
	image_header_clear(h);
	free(buf);
}

/* The chain binding (what crypt authenticates) covers the guard when
 * there is one, and is the format 2 binding, byte for byte, without. */
START_TEST(binding_covers_guard)
{
	struct image_header h;
	uint8_t *a, *b, *c;
	size_t la, lb, lc;

	make_header(&h, false);
	ck_assert_int_eq(chain_binding(&h, &a, &la), 0);
	h.guard.count--;
	ck_assert_int_eq(chain_binding(&h, &b, &lb), 0);
	ck_assert_uint_eq(la, lb);
	ck_assert_int_ne(memcmp(a, b, la), 0);
	memset(&h.guard, 0, sizeof(h.guard));
	ck_assert_int_eq(chain_binding(&h, &c, &lc), 0);
	ck_assert_uint_eq(lc, 8 + 4 + 16 + 65 + 65 + 4 + 8 + 4 + 8 + 4 + 4 * 34);
	ck_assert_uint_eq(la, lc + 32);
	ck_assert_mem_eq(a, c, lc);
	free(a);
	free(b);
	free(c);
	image_header_clear(&h);
}
END_TEST

/* ---- header round trip and layout ---- */

/* Format 2 (no guard) is still written on request and read: the chain
 * starts at 246, and it parses back as format 2 without a guard. */
START_TEST(header_format2_round_trip)
{
	struct image_header h, p;
	char err[256];
	size_t len;
	uint8_t *buf;

	make_header(&h, true);
	memset(&h.guard, 0, sizeof(h.guard));
	h.boot_entry[0] = '\0';
	h.format_version = 2;
	buf = encode(&h, &len);
	ck_assert_uint_eq(len, D_N_CHAIN_V2 + 4 + 4 * D_ENTRY + 5 + 300 + 17 + 4);
	ck_assert_uint_eq(get32(buf + D_VERSION), 2);
	ck_assert_uint_eq(get32(buf + D_N_CHAIN_V2), 4);
	ck_assert_mem_eq(buf + D_N_CHAIN_V2 + 4, "lzo", 4);
	memset(&p, 0x5a, sizeof(p));
	ck_assert_int_eq(image_header_parse(buf, len, &p, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_uint_eq(p.guard.kind, IMAGE_GUARD_NONE);
	assert_headers_equal(&h, &p);
	image_header_clear(&p);
	/* A format 2 header has no room for a guard. */
	h.guard.kind = IMAGE_GUARD_EXT;
	assert_encode_einval(&h);
	free(buf);
}
END_TEST

/*
 * Format 3 (a guard, no boot entry), as the release before wrote it, is
 * still written on request and read, so that an image stored across an
 * upgrade resumes: the chain starts at 278, and it parses back as format
 * 3 without a boot entry.  Format 3 has no room for one.
 */
START_TEST(header_format3_round_trip)
{
	struct image_header h, p;
	char err[256];
	size_t len;
	uint8_t *buf;

	make_header(&h, true);
	h.boot_entry[0] = '\0';
	h.format_version = 3;
	buf = encode(&h, &len);
	ck_assert_uint_eq(len, D_N_CHAIN_V3 + 4 + 4 * D_ENTRY + 5 + 300 + 17 + 4);
	ck_assert_uint_eq(get32(buf + D_VERSION), 3);
	ck_assert_uint_eq(get32(buf + D_GUARD), IMAGE_GUARD_EXT);
	ck_assert_uint_eq(get32(buf + D_N_CHAIN_V3), 4);
	ck_assert_mem_eq(buf + D_N_CHAIN_V3 + 4, "lzo", 4);
	memset(&p, 0x5a, sizeof(p));
	ck_assert_int_eq(image_header_parse(buf, len, &p, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_str_eq(p.boot_entry, "");
	assert_headers_equal(&h, &p);
	image_header_clear(&p);
	strcpy(h.boot_entry, "Debian GNU/Linux");
	assert_encode_einval(&h);
	free(buf);
}
END_TEST

/* The boot entry is shown on a console: UTF-8 text without a control
 * character, one encoding (zero padding), always terminated. */
START_TEST(header_boot_entry)
{
	static const char *const bad[] = {
		"Debian\x1b[2J",		/* an escape sequence */
		"Debian\x7f",			/* DEL */
		"Debian \xc2\x9b" "2J",	/* C1 CSI as UTF-8 */
		"Debian \x9b" "2J",		/* C1 CSI as a byte */
		"Options avanc\xe9" "es",	/* Latin-1, not UTF-8 */
		"\xc0\xaf",			/* overlong */
		"\xed\xa0\x80",		/* a surrogate */
		"Debian \xe2\x82",		/* cut short */
	};
	struct image_header h;
	size_t len, i;
	uint8_t *buf;

	make_header(&h, false);
	strcpy(h.boot_entry, "Options avanc\xc3\xa9" "es pour Debian GNU/Linux > Debian GNU/Linux, avec Linux 6.1.0-18-amd64 \xe2\x9c\x93 \xf0\x9f\x90\xa7");
	assert_round_trip(&h);
	make_header(&h, false);
	memset(h.boot_entry, 'x', sizeof(h.boot_entry) - 1);
	assert_round_trip(&h);
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		make_header(&h, false);
		strcpy(h.boot_entry, bad[i]);
		assert_encode_einval(&h);
		/* and written anyway, refused by the parser */
		make_header(&h, false);
		buf = encode(&h, &len);
		memset(buf + D_BOOT_ENTRY, 0, 256);
		memcpy(buf + D_BOOT_ENTRY, bad[i], strlen(bad[i]));
		fix_crc(buf, len);
		assert_refused(buf, len, "boot_entry", D_BOOT_ENTRY);
		free(buf);
		image_header_clear(&h);
	}
	/* not terminated; junk after the NUL */
	make_header(&h, false);
	buf = encode(&h, &len);
	memset(buf + D_BOOT_ENTRY, 'x', 256);
	fix_crc(buf, len);
	assert_refused(buf, len, "boot_entry", D_BOOT_ENTRY);
	memset(buf + D_BOOT_ENTRY, 0, 256);
	buf[D_BOOT_ENTRY + 200] = 'x';
	fix_crc(buf, len);
	assert_refused(buf, len, "boot_entry", D_BOOT_ENTRY);
	free(buf);
	image_header_clear(&h);
}
END_TEST

/* Without a guard: kind 0 and every guard byte zero. */
START_TEST(header_without_guard)
{
	struct image_header h, p;
	char err[256];
	size_t len;
	uint8_t *buf;

	make_header(&h, false);
	memset(&h.guard, 0, sizeof(h.guard));
	h.guard.stamp = 5;	/* not written: kind 0 has no values */
	buf = encode(&h, &len);
	for (size_t i = D_GUARD; i < D_BOOT_ENTRY; i++)
		ck_assert_uint_eq(buf[i], 0);
	ck_assert_int_eq(image_header_parse(buf, len, &p, err, sizeof(err)), 0);
	ck_assert_uint_eq(p.guard.kind, IMAGE_GUARD_NONE);
	ck_assert_uint_eq(p.guard.stamp, 0);
	image_header_clear(&p);
	/* Bytes under kind 0 are refused: one encoding per header. */
	buf[D_GUARD + 20] = 1;
	fix_crc(buf, len);
	assert_refused(buf, len, "guard", D_GUARD);
	image_header_clear(&h);
	free(buf);
}
END_TEST

START_TEST(parse_bad_guard)
{
	refuse32(D_GUARD, 3, "guard kind");
	refuse32(D_GUARD, 0xffffffffu, "guard kind");
	refuse32(D_GUARD + 28, 65536, "guard mount count");
}
END_TEST

/* A btrfs guard: its generation in the 64-bit slot, its tree log flag
 * (0 or 1) in the 32-bit one. */
START_TEST(btrfs_guard_round_trip)
{
	struct image_header h;

	make_header(&h, false);
	h.guard.kind = IMAGE_GUARD_BTRFS;
	h.guard.stamp = 0xfedcba9876543210ull;
	h.guard.count = 1;
	assert_round_trip(&h);
}
END_TEST

START_TEST(header_round_trip)
{
	struct image_header h, p;
	char err[256];
	size_t len;
	uint8_t *buf;

	make_header(&h, true);
	buf = encode(&h, &len);
	ck_assert_uint_eq(len, D_CHAIN + 4 * D_ENTRY + 5 + 300 + 17 + 4);
	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(image_header_parse(buf, len, &p, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	assert_headers_equal(&h, &p);
	ck_assert_ptr_null(p.chain[1].blob);
	image_header_clear(&p);
	ck_assert_ptr_null(p.chain[0].blob);
	image_header_clear(&h);
	free(buf);
}
END_TEST

START_TEST(header_layout_matches_document)
{
	struct image_header h;
	size_t len, off;
	uint8_t *buf;

	make_header(&h, true);
	buf = encode(&h, &len);
	ck_assert_mem_eq(buf, "TORPORIM", 8);
	ck_assert_uint_eq(get32(buf + D_VERSION), IMAGE_FORMAT_VERSION);
	ck_assert_uint_eq(get32(buf + D_HEADER_LEN), len);
	ck_assert_uint_eq(get32(buf + D_FLAGS), IMAGE_FLAG_TEST);
	ck_assert_mem_eq(buf + D_UUID, h.uuid, 16);
	ck_assert_uint_eq(get64(buf + D_CREATED), 1700000000);
	ck_assert_str_eq((char *)buf + D_RELEASE, h.kernel_release);
	ck_assert_str_eq((char *)buf + D_KVERSION, h.kernel_version);
	ck_assert_uint_eq(buf[D_KVERSION - 1], 0);	/* release padding */
	ck_assert_uint_eq(get32(buf + D_PAGE_SIZE), 4096);
	ck_assert_uint_eq(get64(buf + D_PAGE_COUNT), 1000);
	ck_assert_uint_eq(get32(buf + D_CHUNK_PAGES), 32);
	ck_assert_uint_eq(get64(buf + D_CHUNK_COUNT), 32);
	ck_assert_uint_eq(get64(buf + D_STORED), 123456);
	ck_assert_uint_eq(get64(buf + D_STATS), 1700000100);
	ck_assert_uint_eq(get64(buf + D_STATS + 24), 123456);
	ck_assert_uint_eq(get32(buf + D_GUARD), IMAGE_GUARD_EXT);
	ck_assert_mem_eq(buf + D_GUARD + 4, h.guard.fs_uuid, 16);
	ck_assert_uint_eq(get64(buf + D_GUARD + 20), 0x1234567890ull);
	ck_assert_uint_eq(get32(buf + D_GUARD + 28), 65535);
	ck_assert_uint_eq(get32(buf + D_STATS + 32), crc32c(0, buf + D_STATS, 32));
	ck_assert_str_eq((char *)buf + D_BOOT_ENTRY, BOOT_ENTRY);
	ck_assert_uint_eq(buf[D_N_CHAIN - 1], 0);	/* its padding */
	ck_assert_uint_eq(get32(buf + D_N_CHAIN), 4);
	off = entry_off(buf, 2);
	ck_assert_str_eq((char *)buf + off, "crypt");
	ck_assert_uint_eq(buf[off + 32], 1);
	ck_assert_uint_eq(buf[off + 33], 2);
	ck_assert_uint_eq(get32(buf + off + 34), 300);
	ck_assert_mem_eq(buf + off + D_ENTRY, h.chain[2].blob, 300);
	/* Header checksum: CRC32C of everything but the slot and itself. */
	ck_assert_uint_eq(get32(buf + len - 4),
			  crc32c(crc32c(0, buf, D_STATS), buf + D_STATS_END,
				 len - 4 - D_STATS_END));
	image_header_clear(&h);
	free(buf);
}
END_TEST

START_TEST(header_misc_before_writer_and_odd_geometry)
{
	struct image_header h;

	make_header(&h, false);
	h.page_size = 65536;
	h.page_count = 2049;
	h.chunk_pages = IMAGE_MAX_CHUNK_PAGES;
	h.chunk_count = 3;
	h.stored_bytes = 3 * 32;
	h.kernel_release[0] = '\0';	/* an empty string is allowed */
	h.n_chain = 2;
	set_entry(&h.chain[0], "a-0", 3, 0, 0, 0);
	set_entry(&h.chain[1], "raw", 2, 1, IMAGE_MAX_BLOB, 9);
	assert_round_trip(&h);
}
END_TEST

START_TEST(header_size_counts_blobs)
{
	struct image_header h;

	make_header(&h, true);
	ck_assert_uint_eq(image_header_size(&h), D_CHAIN + 4 * D_ENTRY + 322 + 4);
	image_header_clear(&h);
	make_header(&h, false);
	h.n_chain = 1;
	set_entry(&h.chain[0], "file", 2, 0, 0, 0);
	ck_assert_uint_eq(image_header_size(&h), D_CHAIN + D_ENTRY + 4);
	image_header_clear(&h);
}
END_TEST

/* ---- encode refusals ---- */

static void
assert_encode_einval(struct image_header *h)
{
	uint8_t buf[4096];
	size_t len = 777;

	ck_assert_int_eq(image_header_encode(h, buf, sizeof(buf), &len), -EINVAL);
	ck_assert_uint_eq(len, 777);
	image_header_clear(h);
}

START_TEST(encode_rejects_out_of_range)
{
	struct image_header h;

	make_header(&h, false); h.format_version = IMAGE_FORMAT_VERSION + 1; assert_encode_einval(&h);
	make_header(&h, false); h.format_version = IMAGE_FORMAT_VERSION - 1; assert_encode_einval(&h);
	make_header(&h, false); h.format_version = 0; assert_encode_einval(&h);
	make_header(&h, false); h.guard.kind = 3; assert_encode_einval(&h);
	make_header(&h, false); h.guard.count = 65536; assert_encode_einval(&h);
	make_header(&h, false); h.guard.kind = IMAGE_GUARD_BTRFS; h.guard.count = 2; assert_encode_einval(&h);
	make_header(&h, false); h.flags = 0x2; assert_encode_einval(&h);
	make_header(&h, false); h.page_size = 8192 + 4096; assert_encode_einval(&h);
	make_header(&h, false); h.page_size = 2048; assert_encode_einval(&h);
	make_header(&h, false); h.page_size = 131072; assert_encode_einval(&h);
	make_header(&h, false); h.page_count = 0; h.chunk_count = 0; assert_encode_einval(&h);
	make_header(&h, false); h.chunk_pages = 0; assert_encode_einval(&h);
	make_header(&h, false); h.chunk_pages = IMAGE_MAX_CHUNK_PAGES + 1; h.chunk_count = 1; assert_encode_einval(&h);
	make_header(&h, false); h.chunk_count = 31; assert_encode_einval(&h);
	make_header(&h, false); h.stored_bytes = 32 * 32 - 1; assert_encode_einval(&h);
	make_header(&h, false); memset(h.kernel_release, 'x', 65); assert_encode_einval(&h);
	make_header(&h, false); h.kernel_version[3] = '\n'; assert_encode_einval(&h);
	make_header(&h, false); h.n_chain = 0; assert_encode_einval(&h);
	make_header(&h, false); h.n_chain = IMAGE_MAX_CHAIN + 1; assert_encode_einval(&h);
	make_header(&h, false); strcpy(h.chain[0].name, "LZO"); assert_encode_einval(&h);
	make_header(&h, false); h.chain[0].name[0] = '\0'; assert_encode_einval(&h);
	make_header(&h, false); h.chain[1].type = 4; assert_encode_einval(&h);
	make_header(&h, false); h.chain[1].type = 2; assert_encode_einval(&h);
	make_header(&h, false); h.chain[3].type = 1; assert_encode_einval(&h);
	make_header(&h, false); h.chain[2].position = 1; assert_encode_einval(&h);
	make_header(&h, false); h.chain[2].blob_len = 3; assert_encode_einval(&h);	/* NULL blob */
	make_header(&h, false);
	free(h.chain[3].blob);
	set_entry(&h.chain[3], "swap", 2, 3, IMAGE_MAX_BLOB + 1, 0);
	assert_encode_einval(&h);
}
END_TEST

START_TEST(encode_rejects_header_over_max)
{
	struct image_header h;
	uint32_t i;

	make_header(&h, false);
	image_header_clear(&h);
	h.n_chain = IMAGE_MAX_CHAIN;
	for (i = 0; i < IMAGE_MAX_CHAIN; i++) {
		char name[8];

		snprintf(name, sizeof(name), "p%u", i);
		set_entry(&h.chain[i], name, i + 1 == IMAGE_MAX_CHAIN ? 2 : 1,
			  (uint8_t)i, IMAGE_MAX_BLOB, 0);
	}
	ck_assert_uint_gt(image_header_size(&h), IMAGE_MAX_HEADER);
	assert_encode_einval(&h);
}
END_TEST

START_TEST(encode_small_buffer)
{
	struct image_header h;
	size_t need, len = 777;
	uint8_t *buf;

	make_header(&h, true);
	need = image_header_size(&h);
	buf = calloc(1, need);
	ck_assert_int_eq(image_header_encode(&h, buf, need - 1, &len), -EMSGSIZE);
	ck_assert_uint_eq(len, 777);
	ck_assert_int_eq(image_header_encode(&h, buf, need, &len), 0);
	ck_assert_uint_eq(len, need);
	free(buf);
	image_header_clear(&h);
}
END_TEST

START_TEST(encode_normalises_padding)
{
	struct image_header h, p;
	char err[256];
	size_t len;
	uint8_t *buf;

	/* Bytes after the NUL in the struct (snprintf over a longer name)
	 * must not reach the disk: the parser insists on zero padding. */
	make_header(&h, false);
	strcpy(h.chain[0].name, "lzo-long");
	strcpy(h.chain[0].name, "x");
	strcpy(h.kernel_release, "6.1.0-18-amd64");
	h.kernel_release[1] = '\0';
	buf = encode(&h, &len);
	ck_assert_uint_eq(buf[D_CHAIN + 2], 0);
	ck_assert_uint_eq(buf[D_RELEASE + 2], 0);
	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(image_header_parse(buf, len, &p, err, sizeof(err)), 0);
	ck_assert_str_eq(p.chain[0].name, "x");
	ck_assert_str_eq(p.kernel_release, "6");
	image_header_clear(&p);
	image_header_clear(&h);
	free(buf);
}
END_TEST

/* ---- parse refusals, one per field ---- */

START_TEST(parse_short_buffer)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	assert_refused(buf, 0, "too short", 0);
	assert_refused(buf, 15, "too short", 0);
	free(buf);
}
END_TEST

START_TEST(parse_bad_magic)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	buf[3] = 'X';
	assert_refused(buf, len, "magic", 0);
	free(buf);
}
END_TEST

START_TEST(parse_version_zero)
{
	refuse32(D_VERSION, 0, "format_version");
}
END_TEST

START_TEST(parse_newer_version)
{
	struct image_header h;
	char err[256];
	size_t len;
	uint8_t *buf = valid_header(&len);

	put32(buf + D_VERSION, IMAGE_FORMAT_VERSION + 1);
	memset(&h, 0, sizeof(h));
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)),
			 -EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(err, "format_version"));
	ck_assert_ptr_nonnull(strstr(err, "offset 8"));
	ck_assert_ptr_nonnull(strstr(err, "format 5"));
	/* Format 1 frames were not bound to their image: refused as an
	 * older torpor's, not misread. */
	put32(buf + D_VERSION, 1);
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)),
			 -EPROTONOSUPPORT);
	ck_assert_ptr_nonnull(strstr(err, "format 1 of an older torpor"));
	free(buf);
}
END_TEST

START_TEST(parse_header_len_mismatch)
{
	size_t len;
	uint8_t *buf = valid_header(&len), *longer;

	/* A buffer longer than header_len (say a whole block read). */
	longer = calloc(1, len + 512);
	memcpy(longer, buf, len);
	assert_refused(longer, len + 512, "header_len", D_HEADER_LEN);
	/* header_len itself damaged. */
	put32(buf + D_HEADER_LEN, (uint32_t)len - 1);
	assert_refused(buf, len, "header_len", D_HEADER_LEN);
	free(longer);
	free(buf);
}
END_TEST

START_TEST(parse_header_len_over_max)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	put32(buf + D_HEADER_LEN, IMAGE_MAX_HEADER + 1);
	assert_refused(buf, len, "header_len", D_HEADER_LEN);
	free(buf);
}
END_TEST

START_TEST(parse_checksum_mismatch)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	buf[D_PAGE_COUNT] ^= 0x10;
	assert_refused(buf, len, "header checksum mismatch", (int)len - 4);
	free(buf);
}
END_TEST

START_TEST(parse_unknown_flags)
{
	refuse32(D_FLAGS, IMAGE_FLAG_TEST | 0x80000000u, "flags");
	refuse32(D_FLAGS, 0x2, "flags");
}
END_TEST

START_TEST(parse_bad_page_size)
{
	refuse32(D_PAGE_SIZE, 0, "page_size");
	refuse32(D_PAGE_SIZE, 2048, "page_size");
	refuse32(D_PAGE_SIZE, 5000, "page_size");
	refuse32(D_PAGE_SIZE, 131072, "page_size");
	refuse32(D_PAGE_SIZE, 0xffffffffu, "page_size");
}
END_TEST

START_TEST(parse_page_count_zero)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	put64(buf + D_PAGE_COUNT, 0);
	put64(buf + D_CHUNK_COUNT, 0);
	fix_crc(buf, len);
	assert_refused(buf, len, "page_count", D_PAGE_COUNT);
	free(buf);
}
END_TEST

START_TEST(parse_page_count_overflows)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	/* 2^52 pages of 4096 bytes are 2^64 bytes. */
	put64(buf + D_PAGE_COUNT, 1ull << 52);
	put64(buf + D_CHUNK_COUNT, (1ull << 52) / 32);
	fix_crc(buf, len);
	assert_refused(buf, len, "page_count", D_PAGE_COUNT);
	free(buf);
}
END_TEST

START_TEST(parse_bad_chunk_pages)
{
	refuse32(D_CHUNK_PAGES, 0, "chunk_pages");
	refuse32(D_CHUNK_PAGES, IMAGE_MAX_CHUNK_PAGES + 1, "chunk_pages");
}
END_TEST

START_TEST(parse_bad_chunk_count)
{
	refuse64(D_CHUNK_COUNT, 31, "chunk_count");	/* ceil(1000/32) = 32 */
	refuse64(D_CHUNK_COUNT, 33, "chunk_count");
	refuse64(D_CHUNK_COUNT, 0, "chunk_count");
}
END_TEST

START_TEST(parse_chunk_pages_without_chunk_count)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	/* chunk_pages changed alone: 1000 pages in chunks of 64 are 16. */
	put32(buf + D_CHUNK_PAGES, 64);
	fix_crc(buf, len);
	assert_refused(buf, len, "chunk_count", D_CHUNK_COUNT);
	free(buf);
}
END_TEST

START_TEST(parse_stored_bytes_below_frames)
{
	refuse64(D_STORED, 32 * CHUNK_FRAME_SIZE - 1, "stored_bytes");
	refuse64(D_STORED, 0, "stored_bytes");
}
END_TEST

static void
refuse_string(size_t off, const char *field, const char *how)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	if (strcmp(how, "unterminated") == 0)
		memset(buf + off, 'a', 65);
	else if (strcmp(how, "control") == 0)
		buf[off + 2] = 0x07;
	else if (strcmp(how, "high") == 0)
		buf[off + 2] = 0xc3;
	else	/* junk after the NUL */
		buf[off + 64] = 'z';
	fix_crc(buf, len);
	assert_refused(buf, len, field, (int)off);
	free(buf);
}

START_TEST(parse_bad_kernel_strings)
{
	static const char *const how[] = {
		"unterminated", "control", "high", "padding",
	};

	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		refuse_string(D_RELEASE, "kernel_release", how[i]);
		refuse_string(D_KVERSION, "kernel_version", how[i]);
	}
}
END_TEST

START_TEST(parse_bad_chain_count)
{
	refuse32(D_N_CHAIN, 0, "n_chain");
	refuse32(D_N_CHAIN, IMAGE_MAX_CHAIN + 1, "n_chain");
	refuse32(D_N_CHAIN, 0xffffffffu, "n_chain");
}
END_TEST

static void
refuse_name(uint32_t index, const char *name, size_t nbytes)
{
	char field[32];
	size_t len, off;
	uint8_t *buf = valid_header(&len);

	off = entry_off(buf, index);
	memset(buf + off, 0, 32);
	memcpy(buf + off, name, nbytes);
	fix_crc(buf, len);
	snprintf(field, sizeof(field), "chain[%u].name", index);
	assert_refused(buf, len, field, (int)off);
	free(buf);
}

START_TEST(parse_bad_entry_names)
{
	refuse_name(0, "", 0);
	refuse_name(1, "Lzo", 3);
	refuse_name(2, "a_b", 3);
	refuse_name(3, "sw\xffp", 4);
	refuse_name(0, "a b", 3);
	refuse_name(1, "abcdefghijklmnopqrstuvwxyz012345", 32);	/* no NUL */
	refuse_name(2, "lzo\0x", 5);			/* junk padding */
}
END_TEST

static void
refuse_entry_byte(uint32_t index, size_t field_off, uint8_t v,
		  const char *what)
{
	char field[40];
	size_t len, off;
	uint8_t *buf = valid_header(&len);

	off = entry_off(buf, index);
	buf[off + field_off] = v;
	fix_crc(buf, len);
	snprintf(field, sizeof(field), "chain[%u].%s", index, what);
	assert_refused(buf, len, field, (int)(off + field_off));
	free(buf);
}

START_TEST(parse_bad_entry_type)
{
	refuse_entry_byte(0, 32, 0, "type");
	refuse_entry_byte(1, 32, 4, "type");
	refuse_entry_byte(2, 32, 0xff, "type");
	refuse_entry_byte(0, 32, 2, "type");	/* writer not last */
	refuse_entry_byte(3, 32, 1, "type");	/* last not a writer */
	refuse_entry_byte(3, 32, 3, "type");
}
END_TEST

START_TEST(parse_bad_entry_position)
{
	refuse_entry_byte(0, 33, 1, "position");
	refuse_entry_byte(2, 33, 3, "position");
	refuse_entry_byte(3, 33, 0xff, "position");
}
END_TEST

START_TEST(parse_blob_too_long)
{
	size_t len, off;
	uint8_t *buf = valid_header(&len);

	off = entry_off(buf, 1);
	put32(buf + off + 34, IMAGE_MAX_BLOB + 1);
	fix_crc(buf, len);
	assert_refused(buf, len, "chain[1].blob_len", (int)off + 34);
	free(buf);
}
END_TEST

START_TEST(parse_blob_past_end)
{
	size_t len, off;
	uint8_t *buf = valid_header(&len);

	/* The writer's 17 bytes end at the checksum; one more runs over. */
	off = entry_off(buf, 3);
	put32(buf + off + 34, 18);
	fix_crc(buf, len);
	assert_refused(buf, len, "chain[3].blob_len", (int)off + 34);
	free(buf);
}
END_TEST

START_TEST(parse_entry_past_end)
{
	size_t len;
	uint8_t *buf = valid_header(&len);

	/* Five entries claimed, four present: the fifth would start at the
	 * checksum. */
	put32(buf + D_N_CHAIN, 5);
	fix_crc(buf, len);
	/* Entry 3 is the writer, which is refused first as not last. */
	assert_refused(buf, len, "chain[3].type", -1);
	free(buf);
}
END_TEST

START_TEST(parse_entry_fixed_part_past_end)
{
	struct image_header h;
	size_t len;
	uint8_t *buf, *big;

	/* One filter entry whose blob was shortened so that the writer's
	 * fixed part cannot fit before the checksum. */
	make_header(&h, false);
	h.n_chain = 2;
	set_entry(&h.chain[0], "lzo", 1, 0, 0, 0);
	set_entry(&h.chain[1], "swap", 2, 1, 0, 0);
	buf = encode(&h, &len);
	big = calloc(1, len - D_ENTRY);
	/* Drop the writer's entry; n_chain still says 2. */
	memcpy(big, buf, D_CHAIN + D_ENTRY);
	put32(big + D_HEADER_LEN, (uint32_t)(len - D_ENTRY));
	fix_crc(big, len - D_ENTRY);
	assert_refused(big, len - D_ENTRY, "chain[1]", D_CHAIN + D_ENTRY);
	free(big);
	free(buf);
	image_header_clear(&h);
}
END_TEST

START_TEST(parse_stray_bytes)
{
	size_t len;
	uint8_t *buf = valid_header(&len), *big;

	/* Four bytes between the last entry and the checksum. */
	big = calloc(1, len + 4);
	memcpy(big, buf, len - 4);
	put32(big + D_HEADER_LEN, (uint32_t)len + 4);
	fix_crc(big, len + 4);
	assert_refused(big, len + 4, "stray", (int)len - 4);
	free(big);
	free(buf);
}
END_TEST

START_TEST(parse_crafted_valid_checksum)
{
	struct image_header h;
	char err[256];
	size_t len;
	uint8_t *buf = valid_header(&len);

	/* A plain corruption of page_size says "checksum"... */
	put32(buf + D_PAGE_SIZE, 3000);
	memset(&h, 0, sizeof(h));
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "checksum"));
	/* ...the same value with the checksum made to match is still
	 * refused, by its range. */
	fix_crc(buf, len);
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_null(strstr(err, "checksum"));
	ck_assert_ptr_nonnull(strstr(err, "page_size"));
	free(buf);
}
END_TEST

/* ---- damage anywhere ---- */

START_TEST(parse_every_bit_flip)
{
	struct image_header h;
	char err[256];
	size_t len, i;
	uint8_t *buf;
	int bit, r;

	/* Blobs kept small so that every bit of the header is tried. */
	make_header(&h, false);
	free(h.chain[0].blob);
	set_entry(&h.chain[0], "lzo", 1, 0, 3, 7);
	buf = encode(&h, &len);
	image_header_clear(&h);
	for (i = 0; i < len; i++)
		for (bit = 0; bit < 8; bit++) {
			buf[i] ^= (uint8_t)(1u << bit);
			memset(&h, 0, sizeof(h));
			r = image_header_parse(buf, len, &h, err, sizeof(err));
			if (i >= D_STATS && i < D_STATS_END) {
				/* The slot is checked on its own: the image
				 * stays usable, the statistics read as 0. */
				ck_assert_msg(r == 0, "flip in stats byte %zu: %s", i, err);
				ck_assert_uint_eq(h.stats.resumed_at, 0);
				ck_assert_uint_eq(h.stats.read_usec, 0);
				ck_assert_uint_eq(h.stats.pages_restored, 0);
				ck_assert_uint_eq(h.stats.stored_bytes_read, 0);
				ck_assert_ptr_nonnull(strstr(err, "stats"));
				ck_assert_uint_eq(h.page_count, 1000);
				image_header_clear(&h);
			} else {
				ck_assert_msg(r < 0, "flip of bit %d in byte %zu accepted",
					      bit, i);
				ck_assert_ptr_null(h.chain[0].blob);
			}
			buf[i] ^= (uint8_t)(1u << bit);
		}
	/* And undamaged it still parses with its statistics. */
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)), 0);
	ck_assert_uint_eq(h.stats.read_usec, 2500000);
	image_header_clear(&h);
	free(buf);
}
END_TEST

START_TEST(parse_every_truncation)
{
	struct image_header h;
	char err[256];
	size_t len, n;
	uint8_t *buf = valid_header(&len), *copy;

	for (n = 0; n < len; n++) {
		/* An exact-size copy, so ASan catches any read past n. */
		copy = malloc(n ? n : 1);
		memcpy(copy, buf, n);
		memset(&h, 0, sizeof(h));
		ck_assert_int_eq(image_header_parse(copy, n, &h, err, sizeof(err)),
				 -EBADMSG);
		free(copy);
	}
	free(buf);
}
END_TEST

START_TEST(parse_null_or_small_err)
{
	struct image_header h;
	char err[8];
	size_t len;
	uint8_t *buf = valid_header(&len);

	buf[0] ^= 1;
	memset(&h, 0, sizeof(h));
	ck_assert_int_eq(image_header_parse(buf, len, &h, NULL, 0), -EBADMSG);
	memset(err, 'x', sizeof(err));
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)), -EBADMSG);
	ck_assert_uint_eq(strlen(err), sizeof(err) - 1);
	free(buf);
}
END_TEST

/* ---- the stats slot ---- */

START_TEST(stats_rewrite_in_place)
{
	struct image_header h, p;
	struct image_resume_stats s = {
		.resumed_at = 1800000000,
		.read_usec = 42,
		.pages_restored = 999,
		.stored_bytes_read = 0x0102030405060708ull,
	};
	char err[256];
	size_t len, i;
	uint8_t *buf, *before;

	make_header(&h, true);
	memset(&h.stats, 0, sizeof(h.stats));
	buf = encode(&h, &len);
	before = malloc(len);
	memcpy(before, buf, len);

	ck_assert_int_eq(image_header_set_stats(buf, len, &s), 0);
	for (i = 0; i < len; i++)
		if (i < D_STATS || i >= D_STATS_END)
			ck_assert_msg(buf[i] == before[i], "byte %zu changed", i);
	ck_assert_int_ne(memcmp(buf + D_STATS, before + D_STATS, 36), 0);

	memset(&p, 0, sizeof(p));
	ck_assert_int_eq(image_header_parse(buf, len, &p, err, sizeof(err)), 0);
	ck_assert_str_eq(err, "");
	ck_assert_uint_eq(p.stats.resumed_at, s.resumed_at);
	ck_assert_uint_eq(p.stats.read_usec, s.read_usec);
	ck_assert_uint_eq(p.stats.pages_restored, s.pages_restored);
	ck_assert_uint_eq(p.stats.stored_bytes_read, s.stored_bytes_read);
	h.stats = s;
	assert_headers_equal(&h, &p);
	image_header_clear(&p);

	/* Rewriting again replaces, and a zero slot reads back as zero. */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(image_header_set_stats(buf, len, &s), 0);
	ck_assert_mem_eq(buf, before, len);

	image_header_clear(&h);
	free(before);
	free(buf);
}
END_TEST

START_TEST(stats_rewrite_refuses_non_header)
{
	struct image_resume_stats s = { .resumed_at = 1 };
	size_t len;
	uint8_t *buf = valid_header(&len), *copy;

	copy = malloc(len);
	memcpy(copy, buf, len);
	ck_assert_int_eq(image_header_set_stats(buf, len - 1, &s), -EBADMSG);
	ck_assert_int_eq(image_header_set_stats(buf, 10, &s), -EBADMSG);
	ck_assert_int_eq(image_header_set_stats(buf, len, NULL), -EINVAL);
	buf[D_PAGE_SIZE] ^= 1;
	ck_assert_int_eq(image_header_set_stats(buf, len, &s), -EBADMSG);
	buf[D_PAGE_SIZE] ^= 1;
	/* None of the refusals wrote anything. */
	ck_assert_mem_eq(buf, copy, len);
	free(copy);
	free(buf);
}
END_TEST

START_TEST(stats_bad_crc_reads_zero)
{
	struct image_header h;
	char err[256];
	size_t len;
	uint8_t *buf = valid_header(&len);

	/* A torn rewrite: new values, old slot CRC. */
	put64(buf + D_STATS + 8, 77);
	memset(&h, 0, sizeof(h));
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)), 0);
	ck_assert_uint_eq(h.stats.read_usec, 0);
	ck_assert_uint_eq(h.stats.resumed_at, 0);
	ck_assert_ptr_nonnull(strstr(err, "stats"));
	ck_assert_ptr_nonnull(strstr(err, "offset 206"));
	ck_assert_uint_eq(h.n_chain, 4);
	image_header_clear(&h);
	/* An all-zero slot (never written) is not a valid slot either. */
	memset(buf + D_STATS, 0, 36);
	ck_assert_int_eq(image_header_parse(buf, len, &h, err, sizeof(err)), 0);
	ck_assert_uint_eq(h.stats.read_usec, 0);
	image_header_clear(&h);
	free(buf);
}
END_TEST

/* ---- chunk frames ---- */

static const struct chunk_frame sample_frame = {
	.sequence = 0x0102030405060708ull,
	.flags = CHUNK_FLAG_LAST,
	.raw_len = 131072,
	.stored_len = 4321,
	.stored_crc = 0xdeadbeef,
};

START_TEST(frame_round_trip)
{
	struct chunk_frame f;
	uint8_t out[CHUNK_FRAME_SIZE];
	char err[160];

	chunk_frame_encode(&sample_frame, out);
	ck_assert_mem_eq(out, "TCHK", 4);
	ck_assert_uint_eq(get32(out + F_FLAGS), CHUNK_FLAG_LAST);
	ck_assert_uint_eq(get64(out + F_SEQUENCE), sample_frame.sequence);
	ck_assert_uint_eq(get32(out + F_RAW_LEN), 131072);
	ck_assert_uint_eq(get32(out + F_STORED_LEN), 4321);
	ck_assert_uint_eq(get32(out + F_STORED_CRC), 0xdeadbeef);
	ck_assert_uint_eq(get32(out + F_CRC), crc32c(0, out, F_CRC));

	memset(&f, 0, sizeof(f));
	ck_assert_int_eq(chunk_frame_parse(out, 0, 131072, 4321, &f, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.sequence, sample_frame.sequence);
	ck_assert_uint_eq(f.flags, sample_frame.flags);
	ck_assert_uint_eq(f.raw_len, sample_frame.raw_len);
	ck_assert_uint_eq(f.stored_len, sample_frame.stored_len);
	ck_assert_uint_eq(f.stored_crc, sample_frame.stored_crc);

	/* An odd raw_len (not a page multiple) is the caller's business. */
	f.raw_len = 1;
	f.flags = 0;
	chunk_frame_encode(&f, out);
	ck_assert_int_eq(chunk_frame_parse(out, 0, 131072, 4321, &f, err, sizeof(err)), 0);
	ck_assert_uint_eq(f.raw_len, 1);
}
END_TEST

static void
frame_refused(const uint8_t *in, uint32_t max_raw, uint32_t max_stored,
	      const char *field, int offset)
{
	struct chunk_frame f;
	char err[160], where[32];

	memset(&f, 0x5a, sizeof(f));
	ck_assert_int_eq(chunk_frame_parse(in, 0, max_raw, max_stored, &f, err,
					   sizeof(err)), -EBADMSG);
	ck_assert_msg(strstr(err, field), "'%s' does not name '%s'", err, field);
	snprintf(where, sizeof(where), "offset %d", offset);
	ck_assert_msg(strstr(err, where), "'%s' does not say '%s'", err, where);
	ck_assert_uint_eq(f.raw_len, 0x5a5a5a5a);
}

/* Encode f with one field forced to v (the frame CRC made valid). */
static void
frame_with(uint8_t *out, size_t off, uint32_t v)
{
	chunk_frame_encode(&sample_frame, out);
	put32(out + off, v);
	put32(out + F_CRC, crc32c(0, out, F_CRC));
}

START_TEST(frame_rejections)
{
	uint8_t out[CHUNK_FRAME_SIZE];

	chunk_frame_encode(&sample_frame, out);
	out[0] = 'X';
	frame_refused(out, 131072, 8192, "magic", 0);

	chunk_frame_encode(&sample_frame, out);
	out[F_STORED_CRC] ^= 4;
	frame_refused(out, 131072, 8192, "checksum", F_CRC);

	frame_with(out, F_FLAGS, 0x2);
	frame_refused(out, 131072, 8192, "flags", F_FLAGS);
	frame_with(out, F_RAW_LEN, 0);
	frame_refused(out, 131072, 8192, "raw_len", F_RAW_LEN);
	frame_with(out, F_RAW_LEN, 131073);
	frame_refused(out, 131072, 8192, "raw_len", F_RAW_LEN);
	frame_with(out, F_STORED_LEN, 0);
	frame_refused(out, 131072, 8192, "stored_len", F_STORED_LEN);
	frame_with(out, F_STORED_LEN, 8193);
	frame_refused(out, 131072, 8192, "stored_len", F_STORED_LEN);
	/* The limits are the caller's: the same frame passes a wider one. */
	chunk_frame_encode(&sample_frame, out);
	frame_refused(out, 131071, 8192, "raw_len", F_RAW_LEN);
	frame_refused(out, 131072, 4320, "stored_len", F_STORED_LEN);
}
END_TEST

/* A frame is bound to its image: under another image's seed it is
 * refused, and the seed does not change the frame's bytes but its CRC. */
START_TEST(frame_bound_to_image)
{
	static const uint8_t uuid_a[16] = { 1, 2, 3 }, uuid_b[16] = { 1, 2, 4 };
	struct chunk_frame f = sample_frame, g;
	uint8_t out[CHUNK_FRAME_SIZE];
	char err[160];

	f.seed = chunk_crc_seed(uuid_a);
	ck_assert_uint_eq(f.seed, crc32c(0, uuid_a, 16));
	chunk_frame_encode(&f, out);
	ck_assert_uint_eq(get32(out + F_CRC), crc32c(f.seed, out, F_CRC));
	ck_assert_int_eq(chunk_frame_parse(out, f.seed, 131072, 8192, &g, err,
					   sizeof(err)), 0);
	ck_assert_uint_eq(g.seed, f.seed);
	ck_assert_int_eq(chunk_frame_parse(out, chunk_crc_seed(uuid_b), 131072,
					   8192, &g, err, sizeof(err)), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(err, "another image"));
	ck_assert_int_eq(chunk_frame_parse(out, 0, 131072, 8192, &g, err,
					   sizeof(err)), -EBADMSG);
}
END_TEST

START_TEST(frame_every_bit_flip)
{
	struct chunk_frame f;
	uint8_t out[CHUNK_FRAME_SIZE];
	char err[160];

	chunk_frame_encode(&sample_frame, out);
	for (int i = 0; i < CHUNK_FRAME_SIZE; i++)
		for (int bit = 0; bit < 8; bit++) {
			out[i] ^= (uint8_t)(1u << bit);
			ck_assert_msg(chunk_frame_parse(out, 0, UINT32_MAX, UINT32_MAX,
							&f, err, sizeof(err)) == -EBADMSG,
				      "frame bit %d of byte %d", bit, i);
			out[i] ^= (uint8_t)(1u << bit);
		}
}
END_TEST

/* ---- CRC32C ---- */


Suite *image_format_suite(void);

Suite *
image_format_suite(void)
{
	Suite *s = suite_create("image-format");
	TCase *tc;

	tc = tcase_create("header");
	tcase_add_test(tc, header_round_trip);
	tcase_add_test(tc, header_format2_round_trip);
	tcase_add_test(tc, header_format3_round_trip);
	tcase_add_test(tc, header_boot_entry);
	tcase_add_test(tc, header_without_guard);
	tcase_add_test(tc, binding_covers_guard);
	tcase_add_test(tc, header_layout_matches_document);
	tcase_add_test(tc, header_misc_before_writer_and_odd_geometry);
	tcase_add_test(tc, header_size_counts_blobs);
	tcase_add_test(tc, encode_rejects_out_of_range);
	tcase_add_test(tc, encode_rejects_header_over_max);
	tcase_add_test(tc, encode_small_buffer);
	tcase_add_test(tc, encode_normalises_padding);
	suite_add_tcase(s, tc);

	tc = tcase_create("refusals");
	tcase_add_test(tc, parse_short_buffer);
	tcase_add_test(tc, parse_bad_magic);
	tcase_add_test(tc, parse_version_zero);
	tcase_add_test(tc, parse_newer_version);
	tcase_add_test(tc, parse_header_len_mismatch);
	tcase_add_test(tc, parse_header_len_over_max);
	tcase_add_test(tc, parse_checksum_mismatch);
	tcase_add_test(tc, parse_unknown_flags);
	tcase_add_test(tc, parse_bad_page_size);
	tcase_add_test(tc, parse_page_count_zero);
	tcase_add_test(tc, parse_page_count_overflows);
	tcase_add_test(tc, parse_bad_chunk_pages);
	tcase_add_test(tc, parse_bad_chunk_count);
	tcase_add_test(tc, parse_chunk_pages_without_chunk_count);
	tcase_add_test(tc, parse_stored_bytes_below_frames);
	tcase_add_test(tc, parse_bad_kernel_strings);
	tcase_add_test(tc, parse_bad_chain_count);
	tcase_add_test(tc, parse_bad_guard);
	tcase_add_test(tc, btrfs_guard_round_trip);
	tcase_add_test(tc, parse_bad_entry_names);
	tcase_add_test(tc, parse_bad_entry_type);
	tcase_add_test(tc, parse_bad_entry_position);
	tcase_add_test(tc, parse_blob_too_long);
	tcase_add_test(tc, parse_blob_past_end);
	tcase_add_test(tc, parse_entry_past_end);
	tcase_add_test(tc, parse_entry_fixed_part_past_end);
	tcase_add_test(tc, parse_stray_bytes);
	tcase_add_test(tc, parse_crafted_valid_checksum);
	tcase_add_test(tc, parse_null_or_small_err);
	suite_add_tcase(s, tc);

	tc = tcase_create("damage");
	tcase_add_test(tc, parse_every_bit_flip);
	tcase_add_test(tc, parse_every_truncation);
	suite_add_tcase(s, tc);

	tc = tcase_create("stats");
	tcase_add_test(tc, stats_rewrite_in_place);
	tcase_add_test(tc, stats_rewrite_refuses_non_header);
	tcase_add_test(tc, stats_bad_crc_reads_zero);
	suite_add_tcase(s, tc);

	tc = tcase_create("frame");
	tcase_add_test(tc, frame_round_trip);
	tcase_add_test(tc, frame_rejections);
	tcase_add_test(tc, frame_every_bit_flip);
	tcase_add_test(tc, frame_bound_to_image);
	suite_add_tcase(s, tc);

	return s;
}
