/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Test tool: inspect and damage raw-writer images in precise places, so
 * that the integration tests can check each refusal.
 *
 *   image-tool layout FILE            signature, header and chunk offsets
 *   image-tool offset FILE WHAT [N]   one absolute offset: header, stream,
 *                                     frame N, data N
 *   image-tool flip FILE OFFSET       flip the low bit of one byte
 *   image-tool swap FILE A B          exchange framed chunks A and B
 *   image-tool set FILE FIELD VALUE   rewrite a header field with a valid
 *                                     checksum (release, page_count,
 *                                     chunk_count, stored_bytes, chain0)
 *   image-tool reorder FILE A B       exchange chunks A and B and renumber
 *                                     their frames (valid frame CRCs)
 *   image-tool duplicate FILE A B     chunk A's data in place of chunk B's,
 *                                     framed as chunk B (equal lengths)
 *   image-tool splice FILE OTHER N [reframe]
 *                                     chunk N of image OTHER in place of
 *                                     chunk N (equal lengths), as it is or
 *                                     framed for FILE's image
 *   image-tool first-pages FILE N     make the snapshot's first page say N
 *                                     pages (an image without filters)
 *   image-tool set FILE flags N       also rewrites the header's flags
 *   image-tool downgrade FILE [VERSION]
 *                                     rewrite the header as format 2 (no
 *                                     root guard) or 3 (no boot entry),
 *                                     as an older torpor wrote it,
 *                                     signature fixed
 *   image-tool writer-run DEV PHYS    in the image a swap or file writer
 *                                     left on DEV (its header in one
 *                                     piece), move the last run of the
 *                                     writer's saved layout to byte PHYS,
 *                                     every checksum valid
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "blockdev.h"
#include "crc32c.h"
#include "image-format.h"
#include "raw-format.h"
#include "sim-pages.h"
#include "snapshot-internal.h"
#include "snapshot-sim.h"

struct image {
	uint8_t *data;
	size_t size;
	uint64_t stream_off, stream_len, header_off, header_len;
	uint32_t seed;		/* chunk_crc_seed() of the image's UUID */
	uint64_t n_chunks;
	uint64_t chunk_off[1u << 20];
};

static struct image img;

static uint64_t
get64(const uint8_t *p)
{
	uint64_t v = 0;

	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

static uint32_t
get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

static void
die(const char *msg)
{
	fprintf(stderr, "image-tool: %s\n", msg);
	exit(1);
}

static void
load(const char *path)
{
	FILE *f = fopen(path, "rb");
	struct stat st;
	uint64_t pos;

	if (!f || fstat(fileno(f), &st) < 0)
		die("cannot open the image");
	img.size = (size_t)st.st_size;
	img.data = malloc(img.size + 1);
	if (!img.data || fread(img.data, 1, img.size, f) != img.size)
		die("cannot read the image");
	fclose(f);
	if (img.size < RAW_BLOCK || memcmp(img.data, RAW_MAGIC, 16) != 0)
		die("no raw signature");
	img.stream_off = get64(img.data + RAW_SIG_STREAM_OFFSET_AT);
	img.stream_len = get64(img.data + RAW_SIG_STREAM_LENGTH_AT);
	img.header_off = get64(img.data + RAW_SIG_HEADER_OFFSET_AT);
	img.header_len = get64(img.data + RAW_SIG_HEADER_LENGTH_AT);
	/* The UUID's place is fixed (doc/image-format.md), even in a
	 * header damaged elsewhere. */
	if (img.header_off + 36 > img.size)
		die("no header");
	img.seed = chunk_crc_seed(img.data + img.header_off + 20);
	for (pos = 0; pos + CHUNK_FRAME_SIZE <= img.stream_len;) {
		struct chunk_frame fr;
		char err[160];

		if (img.n_chunks >= sizeof(img.chunk_off) / sizeof(img.chunk_off[0]))
			die("too many chunks");
		if (chunk_frame_parse(img.data + img.stream_off + pos, img.seed, 1u << 30,
				      1u << 30, &fr, err, sizeof(err)) < 0) {
			fprintf(stderr, "image-tool: frame at %" PRIu64 ": %s\n", pos, err);
			exit(1);
		}
		img.chunk_off[img.n_chunks++] = img.stream_off + pos;
		pos += CHUNK_FRAME_SIZE + fr.stored_len;
	}
}

static void
save(const char *path)
{
	FILE *f = fopen(path, "r+b");

	if (!f || fwrite(img.data, 1, img.size, f) != img.size || fclose(f) != 0)
		die("cannot write the image");
}

static uint64_t
chunk_len(uint64_t i)
{
	uint64_t end = i + 1 < img.n_chunks ? img.chunk_off[i + 1] :
		img.stream_off + img.stream_len;

	return end - img.chunk_off[i];
}

static uint64_t
offset_of(const char *what, uint64_t n)
{
	if (strcmp(what, "header") == 0)
		return img.header_off;
	if (strcmp(what, "stream") == 0)
		return img.stream_off;
	if (n >= img.n_chunks)
		die("no such chunk");
	if (strcmp(what, "frame") == 0)
		return img.chunk_off[n];
	if (strcmp(what, "data") == 0)
		return img.chunk_off[n] + CHUNK_FRAME_SIZE;
	die("unknown offset kind");
	return 0;
}

/* Rewrite chunk n's frame as chunk seq of this image, with valid CRCs. */
static void
reframe(uint64_t n, uint64_t seq)
{
	uint8_t *p = img.data + img.chunk_off[n];
	struct chunk_frame f;
	char err[160];

	/* Parsed under any seed: the frame may come from another image. */
	f.raw_len = get32(p + 16);
	f.stored_len = get32(p + 20);
	f.flags = seq + 1 == img.n_chunks ? CHUNK_FLAG_LAST : 0;
	f.sequence = seq;
	f.seed = img.seed;
	f.stored_crc = crc32c(img.seed, p + CHUNK_FRAME_SIZE, f.stored_len);
	chunk_frame_encode(&f, p);
	if (chunk_frame_parse(p, img.seed, 1u << 30, 1u << 30, &f, err,
			      sizeof(err)) < 0)
		die(err);
}

/* Copy chunk a of src over chunk b of this image: equal lengths only. */
static void
copy_chunk(const struct image *src, uint64_t a, uint64_t b)
{
	uint64_t len = chunk_len(b);
	uint64_t src_end = a + 1 < src->n_chunks ? src->chunk_off[a + 1] :
		src->stream_off + src->stream_len;

	if (a >= src->n_chunks || b >= img.n_chunks)
		die("no such chunk");
	if (src_end - src->chunk_off[a] != len)
		die("the chunks differ in length");
	memmove(img.data + img.chunk_off[b], src->data + src->chunk_off[a], len);
}

/* Exchange chunks a < b (of one length), renumbered for their places. */
static void
reorder(uint64_t a, uint64_t b)
{
	static struct image orig;

	orig = img;
	orig.data = malloc(img.size);
	if (a >= b || b >= img.n_chunks || !orig.data ||
	    chunk_len(a) != chunk_len(b))
		die("need chunks A < B of equal length");
	memcpy(orig.data, img.data, img.size);
	copy_chunk(&orig, a, b);
	copy_chunk(&orig, b, a);
	reframe(a, a);
	reframe(b, b);
	free(orig.data);
}

/* Chunk n of the image in path over chunk n of this one. */
static void
splice_from(const char *path, uint64_t n, bool renumber)
{
	static struct image other, mine;

	mine = img;
	memset(&img, 0, sizeof(img));
	load(path);
	other = img;
	img = mine;
	copy_chunk(&other, n, n);
	if (renumber)
		reframe(n, n);
}

/* The snapshot's first page says n pages (and n pages of bytes). */
static void
set_first_pages(uint64_t n)
{
	uint8_t *page = img.data + img.chunk_off[0] + CHUNK_FRAME_SIZE;

	/* Stored as it is only when no filter changed the pages. */
	if (get32(img.data + img.chunk_off[0] + 16) !=
	    get32(img.data + img.chunk_off[0] + 20))
		die("chunk 0 is not stored as it is (filters?)");
	for (int i = 0; i < 8; i++) {
		page[SWSUSP_OFF_PAGES + i] = (uint8_t)(n >> (8 * i));
		page[SWSUSP_OFF_SIZE + i] = (uint8_t)((n * 4096) >> (8 * i));
	}
	reframe(0, 0);
}

static void
set_field(const char *field, const char *value)
{
	struct image_header h;
	char err[200];
	size_t len;
	uint8_t *buf;

	memset(&h, 0, sizeof(h));
	if (image_header_parse(img.data + img.header_off, img.header_len, &h,
			       err, sizeof(err)) < 0) {
		fprintf(stderr, "image-tool: header: %s\n", err);
		exit(1);
	}
	if (strcmp(field, "release") == 0)
		snprintf(h.kernel_release, sizeof(h.kernel_release), "%s", value);
	else if (strcmp(field, "page_count") == 0)
		h.page_count = strtoull(value, NULL, 0);
	else if (strcmp(field, "chunk_count") == 0)
		h.chunk_count = strtoull(value, NULL, 0);
	else if (strcmp(field, "stored_bytes") == 0)
		h.stored_bytes = strtoull(value, NULL, 0);
	else if (strcmp(field, "flags") == 0)
		h.flags = (uint32_t)strtoul(value, NULL, 0);
	else if (strcmp(field, "chain0") == 0)
		snprintf(h.chain[0].name, sizeof(h.chain[0].name), "%s", value);
	else
		die("unknown field");
	len = image_header_size(&h);
	if (len != img.header_len)
		die("the new header has another length");
	buf = calloc(1, len);
	if (!buf || image_header_encode(&h, buf, len, &len) < 0)
		die("cannot encode the header");
	memcpy(img.data + img.header_off, buf, len);
	free(buf);
	image_header_clear(&h);
}

/* The header as an older torpor wrote it: format 3, the same facts
 * without the boot entry (256 bytes shorter), or format 2, without the
 * root guard too; the signature's header length and CRC to match. */
static void
downgrade(uint32_t version)
{
	struct image_header h;
	char err[200];
	size_t len;
	uint8_t *sig = img.data;

	memset(&h, 0, sizeof(h));
	if (image_header_parse(img.data + img.header_off, img.header_len, &h,
			       err, sizeof(err)) < 0) {
		fprintf(stderr, "image-tool: header: %s\n", err);
		exit(1);
	}
	h.format_version = version;
	if (version == 2)
		memset(&h.guard, 0, sizeof(h.guard));
	memset(h.boot_entry, 0, sizeof(h.boot_entry));
	len = image_header_size(&h);
	memset(img.data + img.header_off, 0, img.header_len);
	if (image_header_encode(&h, img.data + img.header_off, len, &len) < 0)
		die("cannot encode the header as an older format");
	for (int i = 0; i < 8; i++)
		sig[RAW_SIG_HEADER_LENGTH_AT + i] = (uint8_t)((uint64_t)len >> (8 * i));
	memset(sig + RAW_SIG_CRC_AT, 0, 4);
	{
		uint32_t crc = crc32c(0, sig, RAW_BLOCK);

		for (int i = 0; i < 4; i++)
			sig[RAW_SIG_CRC_AT + i] = (uint8_t)(crc >> (8 * i));
	}
	image_header_clear(&h);
}

/* The header of the image on a block device, found by its magic at a
 * page boundary; the writer's blob (the last chain entry) gets its last
 * run moved to phys, blob and header checksums made again. */
static void
move_writer_run(const char *dev, uint64_t phys)
{
	static uint8_t buf[IMAGE_MAX_HEADER];
	struct image_header h;
	struct image_chain_entry *w;
	struct bd_map m;
	uint64_t stream_len;
	size_t len;
	char err[200];
	off_t at;
	int fd = open(dev, O_RDWR | O_CLOEXEC);

	if (fd < 0)
		die("cannot open the device");
	for (at = 0;; at += 4096) {
		uint32_t hl;

		if (pread(fd, buf, 16, at) != 16)
			die("no image header on the device");
		if (memcmp(buf, "TORPORIM", 8) != 0)
			continue;
		hl = get32(buf + 12);
		if (hl > sizeof(buf) || pread(fd, buf, hl, at) != (ssize_t)hl)
			die("the header cannot be read");
		memset(&h, 0, sizeof(h));
		if (image_header_parse(buf, hl, &h, err, sizeof(err)) == 0)
			break;
	}
	w = &h.chain[h.n_chain - 1];
	if (bd_map_load(w->blob, w->blob_len, &m, &stream_len) < 0 || m.n == 0)
		die("the writer's blob does not parse");
	m.runs[m.n - 1].phys = phys;
	if (bd_map_save(&m, stream_len, w->blob, w->blob_len) != (int)w->blob_len)
		die("the writer's blob cannot be written again");
	len = image_header_size(&h);
	if (image_header_encode(&h, buf, sizeof(buf), &len) < 0 ||
	    pwrite(fd, buf, len, at) != (ssize_t)len || fsync(fd) < 0)
		die("the header cannot be written back");
	bd_map_clear(&m);
	image_header_clear(&h);
	close(fd);
}

int
main(int argc, char **argv)
{
	if (argc < 3)
		die("usage: image-tool layout|offset|flip|swap|set|reorder|duplicate|splice|first-pages|downgrade|writer-run FILE ...");
	if (strcmp(argv[1], "writer-run") == 0 && argc == 4) {
		move_writer_run(argv[2], strtoull(argv[3], NULL, 0));
		return 0;
	}
	load(argv[2]);
	if (strcmp(argv[1], "layout") == 0) {
		printf("stream %" PRIu64 " +%" PRIu64 "\nheader %" PRIu64 " +%" PRIu64 "\nchunks %" PRIu64 "\n",
		       img.stream_off, img.stream_len, img.header_off,
		       img.header_len, img.n_chunks);
		for (uint64_t i = 0; i < img.n_chunks; i++)
			printf("chunk %" PRIu64 " %" PRIu64 " +%" PRIu64 "\n", i,
			       img.chunk_off[i], chunk_len(i));
	} else if (strcmp(argv[1], "offset") == 0 && argc >= 4) {
		printf("%" PRIu64 "\n", offset_of(argv[3], argc > 4 ? strtoull(argv[4], NULL, 0) : 0));
	} else if (strcmp(argv[1], "flip") == 0 && argc == 4) {
		uint64_t off = strtoull(argv[3], NULL, 0);

		if (off >= img.size)
			die("offset past the end");
		img.data[off] ^= 1;
		save(argv[2]);
	} else if (strcmp(argv[1], "swap") == 0 && argc == 5) {
		uint64_t a = strtoull(argv[3], NULL, 0), b = strtoull(argv[4], NULL, 0);
		uint64_t la, lb, start, end;
		uint8_t *tmp;

		if (a >= b || b >= img.n_chunks)
			die("need chunks A < B");
		la = chunk_len(a);
		lb = chunk_len(b);
		start = img.chunk_off[a];
		end = img.chunk_off[b] + lb;
		tmp = malloc(end - start);
		if (!tmp)
			die("out of memory");
		/* B, what lies between, A: the stream keeps its length. */
		memcpy(tmp, img.data + img.chunk_off[b], lb);
		memcpy(tmp + lb, img.data + start + la, img.chunk_off[b] - start - la);
		memcpy(tmp + lb + (img.chunk_off[b] - start - la), img.data + start, la);
		memcpy(img.data + start, tmp, end - start);
		free(tmp);
		save(argv[2]);
	} else if (strcmp(argv[1], "reorder") == 0 && argc == 5) {
		reorder(strtoull(argv[3], NULL, 0), strtoull(argv[4], NULL, 0));
		save(argv[2]);
	} else if (strcmp(argv[1], "duplicate") == 0 && argc == 5) {
		copy_chunk(&img, strtoull(argv[3], NULL, 0),
			   strtoull(argv[4], NULL, 0));
		reframe(strtoull(argv[4], NULL, 0), strtoull(argv[4], NULL, 0));
		save(argv[2]);
	} else if (strcmp(argv[1], "splice") == 0 && (argc == 5 || argc == 6)) {
		splice_from(argv[3], strtoull(argv[4], NULL, 0), argc == 6);
		save(argv[2]);
	} else if (strcmp(argv[1], "first-pages") == 0 && argc == 4) {
		set_first_pages(strtoull(argv[3], NULL, 0));
		save(argv[2]);
	} else if (strcmp(argv[1], "downgrade") == 0 && (argc == 3 || argc == 4)) {
		downgrade(argc == 4 ? (uint32_t)strtoul(argv[3], NULL, 10) : 2);
		save(argv[2]);
	} else if (strcmp(argv[1], "set") == 0 && argc == 5) {
		set_field(argv[3], argv[4]);
		save(argv[2]);
	} else {
		die("unknown command or wrong arguments");
	}
	return 0;
}
