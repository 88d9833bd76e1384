/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz image_header_parse().  Each input is parsed as it is, and once more
 * with header_len and both checksums made to match, so that mutations get
 * past the CRC to the range checks behind it.  Whatever parses must
 * re-encode to the same bytes and parse again to the same header.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "crc32c.h"
#include "image-format.h"

/* From doc/image-format.md. */
#define D_HEADER_LEN	12
#define D_STATS		206
#define D_STATS_END	242
#define D_MIN		(D_STATS_END + 4 + 38 + 4)

static void
put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
fix_up(uint8_t *buf, size_t len)
{
	uint32_t crc;

	put32(buf + D_HEADER_LEN, (uint32_t)len);
	put32(buf + D_STATS_END - 4, crc32c(0, buf + D_STATS, 32));
	crc = crc32c(0, buf, D_STATS);
	crc = crc32c(crc, buf + D_STATS_END, len - 4 - D_STATS_END);
	put32(buf + len - 4, crc);
}

static bool
same_header(const struct image_header *a, const struct image_header *b)
{
	if (a->format_version != b->format_version || a->flags != b->flags ||
	    memcmp(a->uuid, b->uuid, 16) || a->created != b->created ||
	    strcmp(a->kernel_release, b->kernel_release) ||
	    strcmp(a->kernel_version, b->kernel_version) ||
	    a->page_size != b->page_size || a->page_count != b->page_count ||
	    a->chunk_pages != b->chunk_pages ||
	    a->chunk_count != b->chunk_count ||
	    a->stored_bytes != b->stored_bytes || a->n_chain != b->n_chain ||
	    memcmp(&a->stats, &b->stats, sizeof(a->stats)))
		return false;
	for (uint32_t i = 0; i < a->n_chain; i++) {
		const struct image_chain_entry *x = &a->chain[i], *y = &b->chain[i];

		if (strcmp(x->name, y->name) || x->type != y->type ||
		    x->position != y->position || x->blob_len != y->blob_len ||
		    (x->blob_len && memcmp(x->blob, y->blob, x->blob_len)))
			return false;
	}
	return true;
}

static void
check(const uint8_t *buf, size_t len)
{
	struct image_header h, h2;
	char err[256];
	uint8_t *out, *out2;
	size_t n = 0, n2 = 0;
	bool stats_ok;

	memset(&h, 0, sizeof(h));
	if (image_header_parse(buf, len, &h, err, sizeof(err)) < 0) {
		if (!err[0])
			abort();	/* a refusal must say why */
		return;
	}
	stats_ok = err[0] == '\0';
	if (h.n_chain == 0 || h.n_chain > IMAGE_MAX_CHAIN)
		abort();
	if (image_header_size(&h) != len)
		abort();
	out = malloc(len);
	if (!out || image_header_encode(&h, out, len, &n) != 0 || n != len)
		abort();
	/* The same bytes, except a damaged stats slot, which reads as zero
	 * and is written back valid. */
	if (stats_ok ? memcmp(out, buf, len) != 0 :
	    memcmp(out, buf, D_STATS) != 0 ||
	    memcmp(out + D_STATS_END, buf + D_STATS_END, len - D_STATS_END) != 0)
		abort();
	memset(&h2, 0, sizeof(h2));
	if (image_header_parse(out, n, &h2, err, sizeof(err)) != 0 || err[0])
		abort();
	if (!same_header(&h, &h2))
		abort();
	out2 = malloc(n);
	if (!out2 || image_header_encode(&h2, out2, n, &n2) != 0 || n2 != n ||
	    memcmp(out, out2, n) != 0)
		abort();
	free(out2);
	free(out);
	image_header_clear(&h2);
	image_header_clear(&h);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t *copy;

	check(data, size);
	if (size < D_MIN || size > IMAGE_MAX_HEADER)
		return 0;
	copy = malloc(size);
	if (!copy)
		abort();
	memcpy(copy, data, size);
	fix_up(copy, size);
	check(copy, size);
	free(copy);
	return 0;
}

static void
entry(struct image_chain_entry *e, const char *name, uint8_t type,
      uint8_t pos, uint32_t blob_len)
{
	snprintf(e->name, sizeof(e->name), "%s", name);
	e->type = type;
	e->position = pos;
	e->blob_len = blob_len;
	e->blob = NULL;
	if (blob_len) {
		e->blob = malloc(blob_len);
		if (!e->blob)
			abort();
		for (uint32_t k = 0; k < blob_len; k++)
			e->blob[k] = (uint8_t)(k * 13 + type);
	}
}

size_t
fuzz_seed(unsigned int i, uint8_t *buf, size_t size)
{
	struct image_header h;
	size_t len = 0;

	if (i > 2)
		return 0;
	memset(&h, 0, sizeof(h));
	h.format_version = IMAGE_FORMAT_VERSION;
	h.flags = i == 1 ? IMAGE_FLAG_TEST : 0;
	for (int k = 0; k < 16; k++)
		h.uuid[k] = (uint8_t)(k * 17 + i);
	h.created = 1700000000 + i;
	snprintf(h.kernel_release, sizeof(h.kernel_release), "6.1.0-%u-amd64", i);
	snprintf(h.kernel_version, sizeof(h.kernel_version), "#1 SMP Debian");
	h.page_size = 4096u << i;
	h.page_count = 1000 + i * 7;
	h.chunk_pages = 32;
	h.chunk_count = (h.page_count + 31) / 32;
	h.stored_bytes = h.chunk_count * CHUNK_FRAME_SIZE + 5000;
	h.stats.resumed_at = i;
	h.stats.pages_restored = h.page_count;
	switch (i) {
	case 0:
		h.n_chain = 1;
		entry(&h.chain[0], "swap", 2, 0, 0);
		break;
	case 1:
		h.n_chain = 3;
		entry(&h.chain[0], "lzo", 1, 0, 4);
		entry(&h.chain[1], "crypt", 1, 1, 40);
		entry(&h.chain[2], "file", 2, 2, 12);
		break;
	default:
		h.n_chain = 4;
		entry(&h.chain[0], "sleep-hooks", 3, 0, 0);
		entry(&h.chain[1], "zlib", 1, 1, 1);
		entry(&h.chain[2], "checksum", 1, 2, 8);
		entry(&h.chain[3], "raw", 2, 3, 3);
		break;
	}
	if (image_header_encode(&h, buf, size, &len) < 0)
		len = 0;
	image_header_clear(&h);
	return len;
}
