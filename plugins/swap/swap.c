/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swap: the image in a swap partition or a swap file.  This file is the
 * writer; swap-area.c finds the area, swap-tail.c reads and writes the
 * tail of its header page, where torpor's signature points at an index
 * block (swap-tail.h).  The index block says where the image header
 * lies, and the header's writer blob says where the data stream lies;
 * invalidate() / refused() put the original tail back byte for byte.
 *
 * Pages come from the snapshot device (SNAPSHOT_ALLOC_SWAP_PAGE, through
 * the host) once it has taken the area.  A device that leaves an area to
 * the writer (-EOPNOTSUPP from swap_set_area) leaves its pages to the
 * writer, who takes them from the area itself, front to back, skipping
 * the bad ones; only an area the running kernel does not use (not
 * active) allows that, since the kernel alone knows which of an active
 * area's pages are free.
 *
 * A swap file is written through the block device under it, at the
 * physical offsets FIEMAP gives, so nothing of its filesystem changes; it
 * must be root's with mode 0600.  A swap partition is opened exclusively
 * (refused while mounted or held) unless it is active, where only the
 * device's pages are written.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torpor/plugin.h>
#include <torpor/plugin-util.h>

#include "blockdev.h"
#include "swap-area.h"
#include "swap-tail.h"

static const char *const NAME = SWAP_NAME;

static const struct torpor_host *host;
static uint32_t page;			/* swap page size */

/* Where the swap area is (from initialise). */
static struct swap_area sa;
/* The swap file, held open from reserve() to the cycle's end: its page
 * cache is dropped through it after the snapshot, when a path lookup on
 * btrfs can wait forever (bd_drop_cache). */
static int file_fd = -1;

static struct bd_dev dev;

/* Writing. */
/* The pages come from the snapshot device (SNAPSHOT_ALLOC_SWAP_PAGE);
 * false: the writer takes them from the area (cursor). */
static bool source_alloc;
static uint8_t *hdr_page;		/* page 0 as found at reserve() */
static uint8_t saved_tail[SWAP_TAIL_LEN];
static uint32_t last_page, nr_bad;
static uint32_t *bad;
static uint64_t cursor;			/* the next page the writer takes */
static struct bd_stream out;
static struct bd_map stream;		/* runs of the data stream */
static bool reserved;

/* Reading. */
static struct bd_image img;

static const struct torpor_config_key swap_keys[] = {
	{ .name = "device", .type = TORPOR_CONFIG_PATH,
	  .help = "swap partition (path, UUID=, LABEL=, PARTUUID=) or swap file; unset: the active non-zram swap with the most free space" },
	{ .name = NULL },
};


static void
reset_write_state(void)
{
	free(hdr_page);
	hdr_page = NULL;
	free(bad);
	bad = NULL;
	nr_bad = 0;
	bd_stream_free(&out);
	bd_map_clear(&stream);
	reserved = false;
}

static void
reset_area(void)
{
	swap_area_clear(&sa);
	if (file_fd >= 0)
		close(file_fd);
	file_fd = -1;
}

static int
swap_initialise(int starting_cycle)
{
	char picked[PATH_MAX];
	const char *s;
	int r;

	reset_area();
	if (!starting_cycle)
		return 0;
	r = swap_area_from_cmdline(&sa, host);
	if (r != 0)
		return r < 0 ? r : 0;
	s = swap_area_configured(host, picked, sizeof(picked));
	if (!s) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "no [swap] device= configured and no active swap area to choose: zram does not count, as a power-off empties it (name a swap partition or file in [swap] device=, or let torpor setup make an image file for the file writer)");
		return -ENODEV;
	}
	if (s == picked)
		torpor_log(host, NAME, TORPOR_LOG_INFO, "using %s, the active swap area with the most free space",
		    picked);
	r = swap_area_locate(&sa, host, s, page);
	if (r < 0)
		return r;
	/* Remember whose area this is, to notice a swap between now and
	 * reserve(). */
	if (bd_uuid_of(swap_area_path(&sa), sa.uuid, sizeof(sa.uuid)) < 0)
		sa.uuid[0] = '\0';
	return 0;
}

static void
swap_cleanup(int finishing_cycle)
{
	reset_write_state();
	bd_image_clear(&img);
	bd_close(&dev);
	reset_area();
}

/*
 * How to open the device for writing.  The device under a swap file is
 * its filesystem's (mounted): shared.  An active swap partition is the
 * kernel's: shared, and written only with the kernel snapshot source,
 * where the kernel allocates the pages (SNAPSHOT_ALLOC_SWAP_PAGE) and
 * itself refuses writes to an active swap device other than the
 * hibernation one (ETXTBSY).  Any other partition: exclusive, so a device
 * that is mounted or held is refused.  At resume= a header not at byte 0
 * is a swap file's.
 */
static enum bd_mode
write_mode(void)
{
	struct stat st;

	if (sa.file_path[0] || sa.hdr_phys != 0)
		return BD_SHARED;
	if (stat(sa.dev_path, &st) == 0 && swap_area_active(&st, NULL) == 1)
		return BD_SHARED;
	return BD_EXCL;
}

static int
open_dev(bool writable)
{
	char why[512] = "";
	int r;

	if (!sa.dev_path[0])
		return -ENODEV;
	r = bd_reopen(&dev, sa.dev_path, writable ? write_mode() : BD_RDONLY,
		      why, sizeof(why));
	if (r == -EBUSY)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "refusing swap area %s: %s %s", sa.spec, sa.dev_path, why);
	else if (r == -ENXIO || r == -ENOENT || r == -ENODEV || r == -ENOMEDIUM)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "swap area %s has disappeared: %s cannot be opened or is empty (%m)",
		    sa.spec, sa.dev_path);
	else if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot open %s: %m", sa.dev_path);
	return r;
}

/* The swap header page, in *ret (free() it). */
static int
read_page0(uint8_t **ret)
{
	uint8_t *pg;
	int r;

	if (sa.hdr_phys > dev.size || page > dev.size - sa.hdr_phys) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the swap header at byte %" PRIu64 " lies outside %s (%" PRIu64 " bytes)",
		    sa.hdr_phys, sa.dev_path, dev.size);
		return -ERANGE;
	}
	pg = malloc(page);
	if (!pg)
		return -ENOMEM;
	r = bd_read(&dev, sa.hdr_phys, pg, page);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot read the swap header of %s: %m", sa.dev_path);
		free(pg);
		return r;
	}
	*ret = pg;
	return 0;
}

/*
 * swapon and blkid read a swap file through its page cache, which did not
 * see our write to the device below: drop it, through the file held open
 * since reserve() when it is (no lookup after the snapshot).  At resume=
 * the file is not known, but when the configured device is a swap file
 * that exists (the simulated cycle, or a resume after the filesystem was
 * mounted) its cache may hold the old header page too.
 */
static void
drop_file_cache(void)
{
	bd_drop_cache(file_fd, sa.file_path[0] ? sa.file_path :
		      host->config_get(NAME, "device"));
}

static int
write_page0(const uint8_t *buf)
{
	int r = bd_write(&dev, sa.hdr_phys, buf, page);

	if (r == 0)
		r = bd_sync(&dev);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot write the swap header of %s: %m", sa.dev_path);
		return r;
	}
	drop_file_cache();
	return 0;
}

/* Put the original tail back if torpor's signature is there (with uuid:
 * and leave a consumed-image record of it); clear a record that is
 * there without it. */
static int
restore_swap_signature(const uint8_t *uuid)
{
	uint8_t *pg, *t;
	int r;

	r = open_dev(true);
	if (r < 0)
		return r;
	r = read_page0(&pg);
	if (r < 0)
		return r;
	t = SWAP_TAIL(pg, page);
	if (swap_page_signed(pg, page, TORPOR_SIG)) {
		uint8_t tail[SWAP_TAIL_LEN];

		if (swap_tail_to_restore(&dev, &img, pg, page, uuid, tail) ==
		    -ENOSPC)
			torpor_log(host, NAME, TORPOR_LOG_INFO, "no room for a consumed-image record on %s (bad pages or other data there): the resumed system cannot read the resume figures",
				   sa.spec);
		memcpy(t, tail, SWAP_TAIL_LEN);
		r = write_page0(pg);
	} else if (swap_page_signed(pg, page, SWAP_SIG) &&
		   swap_record_present(t)) {
		memset(t, 0, SWAP_RECORD_LEN);
		r = write_page0(pg);
	}
	free(pg);
	return r;
}

static bool
is_bad_page(uint64_t p)
{
	for (uint32_t i = 0; i < nr_bad; i++)
		if (bad[i] == p)
			return true;
	return false;
}

/* The area as it is now: open, its logical space known, its header
 * page read, still the one initialise() chose.  st: the area's inode. */
static int
open_area(struct stat *st)
{
	const char *what = swap_area_path(&sa);
	char uuid[40];
	int r;

	if (stat(what, st) < 0) {
		r = -errno;
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s has disappeared: %s: %m", sa.spec,
		    what);
		return r;
	}
	r = open_dev(true);
	if (r < 0)
		return r;
	if (!sa.file_path[0]) {
		bd_map_clear(&sa.map);
		r = bd_map_add(&sa.map, 0, dev.size / page * page);
		if (r < 0)
			return r;
	}
	r = read_page0(&hdr_page);
	if (r < 0)
		return r;
	if (sa.uuid[0] && (bd_uuid_of(what, uuid, sizeof(uuid)) < 0 ||
			     strcmp(uuid, sa.uuid) != 0)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s has changed since it was chosen (UUID %s is gone)",
		    sa.spec, sa.uuid);
		return -ENODEV;
	}
	return 0;
}

/* Take the header page over: drop an older image, keep the original
 * tail, read the size and the bad pages. */
static int
parse_swap_header(void)
{
	int r;

	if (swap_page_signed(hdr_page, page, TORPOR_SIG)) {
		/* An image nobody resumed: it must not survive a cycle that
		 * fails half-way, and its pages are about to be reused. */
		torpor_log(host, NAME, TORPOR_LOG_NOTICE, "discarding an older image on %s", sa.spec);
		swap_tail_original(&dev, hdr_page, page, saved_tail);
		memcpy(SWAP_TAIL(hdr_page, page), saved_tail, SWAP_TAIL_LEN);
		r = write_page0(hdr_page);
		if (r < 0)
			return r;
	} else if (!swap_page_signed(hdr_page, page, SWAP_SIG)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "%s is not a swap area (no %s signature); run mkswap on it first",
		    sa.spec, SWAP_SIG);
		return -EINVAL;
	}
	memcpy(saved_tail, SWAP_TAIL(hdr_page, page), SWAP_TAIL_LEN);
	/* The last resume's record goes with this image's signature, and
	 * is never put back. */
	if (swap_record_present(saved_tail))
		memset(saved_tail, 0, SWAP_RECORD_LEN);
	last_page = torpor_get_le32(hdr_page + SWAP_HDR_LAST_PAGE_AT);
	nr_bad = torpor_get_le32(hdr_page + SWAP_HDR_NR_BAD_AT);
	if (torpor_get_le32(hdr_page + SWAP_HDR_VERSION_AT) != 1 ||
	    (uint64_t)SWAP_HDR_BADPAGES_AT + 4ull * nr_bad >
	    page - SWAP_TAIL_LEN) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap header of %s is not version 1 or its bad-page list reaches torpor's tail",
		    sa.spec);
		return -EINVAL;
	}
	if (nr_bad) {
		bad = calloc(nr_bad, sizeof(*bad));
		if (!bad)
			return -ENOMEM;
		for (uint32_t i = 0; i < nr_bad; i++)
			bad[i] = torpor_get_le32(hdr_page +
						 SWAP_HDR_BADPAGES_AT + 4 * i);
	}
	if ((uint64_t)last_page + 1 > sa.map.total / page) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap header of %s says %u pages, the area holds %" PRIu64,
		    sa.spec, last_page + 1, sa.map.total / page);
		return -EINVAL;
	}
	return 0;
}

/*
 * Hand the area to the snapshot device and say what is free of it: the
 * device's count once it took the area (its pages then come from it), or,
 * where the device leaves the area to the writer (-EOPNOTSUPP), what the
 * header leaves free, if the running kernel does not use the area.
 */
static int
free_space(const struct stat *st, uint64_t *ret)
{
	const char *what = swap_area_path(&sa);
	int active = swap_area_active(st, NULL);
	int64_t a;
	int r;

	source_alloc = false;
	r = host->swap_set_area(bd_kernel_dev(sa.rdev), sa.hdr_phys);
	if (r == -EOPNOTSUPP && active == 0) {
		*ret = swap_header_free_bytes(hdr_page, page);
		return 0;
	}
	if (r == -EOPNOTSUPP) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s is %s: only the running kernel knows which of its pages are free, and this snapshot device does not hand them out; run swapoff %s first",
		    sa.spec, active > 0 ? "in use by the kernel" : "perhaps in use by the kernel (/proc/swaps cannot be read)",
		    what);
		return -EBUSY;
	}
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "the snapshot device refused swap area %s (%s at byte %" PRIu64 ")%s: %m",
		    sa.spec, sa.dev_path, sa.hdr_phys,
		    active == 0 ? "; it is not active: swapon it first" : "");
		return r;
	}
	a = host->swap_avail();
	*ret = a > 0 ? (uint64_t)a : 0;
	source_alloc = true;
	return 0;
}

/*
 * The free bytes of the area without touching it.  An active area's pages
 * are the running kernel's: its count (/proc/swaps).  An inactive one's
 * are what its header leaves free, unless the snapshot is the running
 * kernel's, which hands out pages of active areas only (none here).
 */
static int
area_free_bytes(uint64_t *ret)
{
	struct stat st;
	uint8_t *pg = NULL;
	int r;

	if (stat(swap_area_path(&sa), &st) < 0)
		return -errno;
	*ret = 0;
	r = swap_area_active(&st, ret);
	if (r != 0 || host->snapshot_kind() == TORPOR_SNAPSHOT_KERNEL)
		return r < 0 ? r : 0;
	r = open_dev(false);
	if (r == 0)
		r = read_page0(&pg);
	if (r < 0)
		return r;
	*ret = swap_header_free_bytes(pg, page);
	free(pg);
	return 0;
}

static int
swap_free_space(uint64_t *ret)
{
	uint64_t avail = 0, overhead = TORPOR_IMAGE_MAX_HEADER + page;
	int r;

	if (!sa.known)
		return -ENODEV;
	r = area_free_bytes(&avail);
	if (r < 0)
		return r;
	*ret = avail > overhead ? avail - overhead : 0;
	return 0;
}

/* Hold the swap file that open_area() found (st) open to the cycle's end. */
static int
hold_file(const struct stat *st)
{
	struct stat now;
	int fd;

	if (file_fd >= 0)
		return 0;
	fd = open(sa.file_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int r = -errno;

		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot open swap file %s: %m",
				 sa.file_path);
		return r;
	}
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev ||
	    now.st_ino != st->st_ino) {
		close(fd);
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap file %s was replaced while it was being opened",
			   sa.file_path);
		return -ENODEV;
	}
	file_fd = fd;
	return 0;
}

static int
swap_reserve(uint64_t expected)
{
	uint64_t need, avail = 0;
	struct stat st;
	int r;

	reset_write_state();
	bd_image_clear(&img);
	if (!sa.known) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "no swap area to write to (initialise found none)");
		return -ENODEV;
	}
	r = open_area(&st);
	if (r == 0 && sa.file_path[0])
		r = hold_file(&st);
	if (r == 0)
		r = parse_swap_header();
	if (r == 0)
		r = free_space(&st, &avail);
	if (r < 0)
		return r;
	/* The stream, the header (at most TORPOR_IMAGE_MAX_HEADER) and the index. */
	need = bd_round_up(expected, page) + TORPOR_IMAGE_MAX_HEADER + page;
	if (need > avail) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "need %" PRIu64 " MiB, %" PRIu64 " MiB free on %s",
		    (need + (1 << 20) - 1) >> 20, avail >> 20, sa.spec);
		return -ENOSPC;
	}
	torpor_log(host, NAME, TORPOR_LOG_INFO, "image of %" PRIu64 " bytes expected: need %" PRIu64 " MiB, %" PRIu64 " MiB free on %s",
	    expected, (need + (1 << 20) - 1) >> 20, avail >> 20, sa.spec);
	bd_stream_start(&out, page);
	(void)bd_flusher_take_begun(&dev.flusher);
	cursor = 1;
	reserved = true;
	return 0;
}

/* Take count pages; append their physical runs to m. */
static int
alloc_pages(uint64_t count, struct bd_map *m)
{
	int r;

	while (count > 0) {
		if (source_alloc) {
			int64_t off = host->swap_alloc_page();

			if (off == 0 || off == -ENOSPC) {
				torpor_log(host, NAME, TORPOR_LOG_ERR, "the kernel has no free page left in %s", sa.spec);
				return -ENOSPC;
			}
			if (off < 0) {
				torpor_log_errno(host, NAME, TORPOR_LOG_ERR, (int)off, "the kernel gave no swap page of %s: %m",
				    sa.spec);
				return (int)off;
			}
			if ((uint64_t)off % page || (uint64_t)off == sa.hdr_phys)
				return -EIO;
			r = bd_map_add(m, (uint64_t)off, page);
			if (r < 0)
				return r;
			count--;
			continue;
		}
		while (cursor <= last_page && is_bad_page(cursor))
			cursor++;
		if (cursor > last_page) {
			torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s is full", sa.spec);
			return -ENOSPC;
		}
		/* Contiguous logical pages up to the next bad one. */
		{
			uint64_t n = 1;

			while (n < count && cursor + n <= last_page &&
			       !is_bad_page(cursor + n))
				n++;
			r = bd_map_slice(&sa.map, cursor * page, n * page, m);
			if (r < 0)
				return r;
			cursor += n;
			count -= n;
		}
	}
	return 0;
}

/* Write n bytes (whole pages) of the stream to newly taken pages. */
static int
emit_stream(void *ctx, const uint8_t *p, size_t n)
{
	struct bd_map runs = { 0 };
	int r;

	r = alloc_pages(n / page, &runs);
	for (size_t i = 0; r == 0 && i < runs.n; i++) {
		r = bd_write(&dev, runs.runs[i].phys, p, runs.runs[i].len);
		if (r < 0)
			torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "write to %s at byte %" PRIu64 " failed: %m",
			    sa.dev_path, runs.runs[i].phys);
		p += runs.runs[i].len;
		if (r == 0)
			r = bd_map_add(&stream, runs.runs[i].phys, runs.runs[i].len);
	}
	bd_map_clear(&runs);
	if (r == 0)
		bd_flush_behind(&dev, n);
	return r;
}

static int
swap_write(const void *buf, size_t len)
{
	if (!reserved)
		return -EINVAL;
	return bd_stream_write(&out, buf, len, emit_stream, NULL);
}

static size_t
swap_storage_needed(void)
{
	/* One more run for the last partial page. */
	return bd_map_blob_size(stream.n + 1);
}

static int
swap_save_config(uint8_t *buf, size_t size)
{
	int r;

	if (!reserved)
		return -EINVAL;
	r = bd_stream_flush(&out, emit_stream, NULL);
	if (r < 0)
		return r;
	if (bd_map_blob_size(stream.n) > TORPOR_IMAGE_MAX_BLOB) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the image lies in %zu pieces on %s: too fragmented to describe",
		    stream.n, sa.spec);
		return -E2BIG;
	}
	return bd_map_save(&stream, out.written, buf, size);
}

static int
swap_commit(const void *header, size_t len)
{
	struct bd_index ix = { 0 };
	struct bd_map index_at = { 0 };
	int r;

	if (!reserved)
		return -EINVAL;
	r = bd_stream_flush(&out, emit_stream, NULL);
	if (r < 0)
		return r;
	r = alloc_pages(bd_round_up(len, page) / page, &ix.header);
	if (r == 0 && ix.header.n > BD_INDEX_MAX_RUNS) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the image header lies in %zu pieces: too many", ix.header.n);
		r = -E2BIG;
	}
	if (r == 0)
		r = bd_map_write(&dev, &ix.header, 0, header, len);
	if (r == 0)
		r = alloc_pages(1, &index_at);
	if (r < 0)
		goto out;
	ix.header_len = len;
	memcpy(ix.saved, saved_tail, SWAP_TAIL_LEN);
	/* Everything the signature points at is on the disk (synced)
	 * before the signature is. */
	r = bd_index_write(&dev, index_at.runs[0].phys, SWAP_INDEX_MAGIC, &ix);
	if (r < 0)
		goto out;
	swap_tail_encode(hdr_page, page, index_at.runs[0].phys);
	r = write_page0(hdr_page);
	if (r < 0)
		goto out;
	torpor_log(host, NAME, TORPOR_LOG_INFO, "early flushes of %s while writing: %u",
	    sa.dev_path, bd_flusher_take_begun(&dev.flusher));
	bd_image_committed(&img, &ix, &stream, out.written);
	reserved = false;
out:
	if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "commit to %s failed: %m", sa.spec);
	bd_map_clear(&ix.header);
	bd_map_clear(&index_at);
	return r;
}

static void
swap_abort(void)
{
	/* Nothing was signed: the swap header is as reserve() left it. */
	if (reserved && source_alloc && TORPOR_HOST_HAS(host, swap_free_pages))
		host->swap_free_pages();
	reset_write_state();
}

static int
swap_find(void)
{
	uint64_t at = 0;
	uint8_t *pg;
	int r;

	bd_image_clear(&img);
	r = open_dev(false);
	if (r < 0)
		return r;
	r = read_page0(&pg);
	if (r < 0)
		return r;
	if (!swap_page_signed(pg, page, TORPOR_SIG)) {
		if (!swap_page_signed(pg, page, SWAP_SIG))
			torpor_log(host, NAME, TORPOR_LOG_WARNING, "%s at byte %" PRIu64 " holds neither a swap nor a torpor signature",
			    sa.dev_path, sa.hdr_phys);
		else if (swap_record_present(SWAP_TAIL(pg, page)))
			torpor_log(host, NAME, TORPOR_LOG_NOTICE, "%s holds only the record of an image that was already resumed (consumed): it is never resumed again",
			    sa.spec);
		r = 0;
		goto out;
	}
	img.found = true;
	r = swap_tail_decode(pg, page, &at);
	if (r == 0)
		r = bd_index_read(&dev, at, SWAP_INDEX_MAGIC, &img.ix);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "%s carries torpor's signature, but what it points at is corrupt (%m)",
		    sa.spec);
		img.corrupt = true;
	}
	r = 1;
out:
	free(pg);
	return r;
}

static int
swap_read_header(void *buf, size_t size, size_t *ret_len)
{
	int r;

	if (!img.found)
		return -EBADMSG;
	r = open_dev(false);
	if (r < 0)
		return r;
	r = bd_image_read_header(&dev, &img, buf, size, ret_len);
	if (r == -EBADMSG)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the image header on %s lies outside the device or is unreadable",
		    sa.spec);
	return r;
}

/* Every run of the saved layout is checked against the device before
 * anything is read: a damaged one is an image to refuse. */
static int
swap_load_config(const uint8_t *buf, size_t len)
{
	char why[200];
	int r = open_dev(false);

	if (r < 0)
		return r;
	r = bd_image_load_config(&dev, &img, buf, len, why, sizeof(why));
	if (r == -EBADMSG)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the image's saved layout on %s %s",
		    sa.dev_path, why);
	return r;
}

static int
swap_read(uint64_t offset, void *buf, size_t len)
{
	int r = open_dev(false);

	return r < 0 ? r : bd_image_read(&dev, &img, offset, buf, len);
}

static int
swap_invalidate(void)
{
	return restore_swap_signature(NULL);
}

static int
swap_consume(const uint8_t uuid[16])
{
	return restore_swap_signature(uuid);
}

/* The header page's record of image uuid, and the index block it points
 * at, read past the page cache (bd_read is O_DIRECT). */
static int
swap_read_consumed(const uint8_t uuid[16], void *buf, size_t size,
		   size_t *ret_len)
{
	struct bd_image im = { 0 };
	uint8_t *pg, got[16];
	uint64_t at = 0;
	int r;

	r = open_dev(false);
	if (r == 0)
		r = read_page0(&pg);
	if (r < 0)
		return r;
	if (!swap_page_signed(pg, page, SWAP_SIG))
		r = -ENOENT;
	else
		r = swap_record_decode(SWAP_TAIL(pg, page), &at, got);
	free(pg);
	if (r == 0 && memcmp(got, uuid, 16) != 0)
		r = -ESTALE;
	if (r < 0)
		return r;
	r = bd_index_read(&dev, at, SWAP_INDEX_MAGIC, &im.ix);
	if (r == -ENOENT || r == -ERANGE)
		r = -EBADMSG;	/* the record points at no index block */
	if (r < 0)
		return r;
	im.found = true;
	r = bd_image_read_header(&dev, &im, buf, size, ret_len);
	bd_image_clear(&im);
	return r;
}

static void
swap_refused(void)
{
	/* The booting system needs its swap back; the image stays
	 * readable until the pages are reused. */
	if (restore_swap_signature(NULL) == 0)
		torpor_log(host, NAME, TORPOR_LOG_NOTICE, "restored the swap signature of %s", sa.spec);
}

static int
swap_rewrite_header(const void *header, size_t len)
{
	int r = open_dev(true);

	return r < 0 ? r : bd_image_rewrite_header(&dev, &img, header, len);
}

static int
swap_resume_args(char *buf, size_t size)
{
	char picked[PATH_MAX];
	bool own = !sa.known;
	const char *s;
	int r = 0;

	if (own) {
		s = swap_area_configured(host, picked, sizeof(picked));
		if (!s) {
			torpor_log(host, NAME, TORPOR_LOG_ERR, "no [swap] device= configured and no active swap area to name");
			return -ENODEV;
		}
		r = swap_area_locate(&sa, host, s, page);
	}
	if (r == 0)
		r = sa.hdr_phys % page ? -EINVAL :
		    bd_resume_words(sa.dev_path, sa.hdr_phys, page, buf, size);
	if (own)
		reset_area();
	return r;
}

static int
swap_print_debug_info(char *buf, size_t size)
{
	const char *s = host ? host->config_get(NAME, "device") : NULL;

	return torpor_filter_print(buf, size, "device %s",
				   s && *s ? s : "(auto: /proc/swaps)");
}

static int
swap_load(const struct torpor_host *h)
{
	host = h;
	page = bd_page_size();
	bd_init(&dev);
	memset(&img, 0, sizeof(img));
	memset(&out, 0, sizeof(out));
	memset(&stream, 0, sizeof(stream));
	memset(&sa.map, 0, sizeof(sa.map));
	reset_area();
	return 0;
}

static void
swap_unload(void)
{
	swap_cleanup(1);
}

static const struct torpor_writer swap_plugin = {
	.plugin = {
		.name = "swap",
		.description = "writes the image to a swap partition or swap file, keeping the swap area intact",
		.config_keys = swap_keys,
		.load = swap_load,
		.unload = swap_unload,
		.initialise = swap_initialise,
		.cleanup = swap_cleanup,
		.storage_needed = swap_storage_needed,
		.save_config = swap_save_config,
		.load_config = swap_load_config,
		.print_debug_info = swap_print_debug_info,
	},
	.reserve = swap_reserve,
	.write = swap_write,
	.commit = swap_commit,
	.abort = swap_abort,
	.find = swap_find,
	.read_header = swap_read_header,
	.read = swap_read,
	.invalidate = swap_invalidate,
	.rewrite_header = swap_rewrite_header,
	.refused = swap_refused,
	.resume_args = swap_resume_args,
	.free_space = swap_free_space,
	.consume = swap_consume,
	.read_consumed = swap_read_consumed,
};

TORPOR_WRITER_REGISTER(swap_plugin)
