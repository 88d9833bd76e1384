/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * swap: the image in a swap partition or a swap file.
 *
 * The swap area keeps everything that makes it a swap area: only the tail
 * of its header page changes.  The last 10 bytes ("SWAPSPACE2") become
 * "TORPOR0001" and the 54 unused bytes before them point at an index
 * block; the index block says where the image header lies, and the
 * header's writer blob says where the data stream lies.  The original tail
 * is kept in the index block, and invalidate() / refused() put it back
 * byte for byte, so the swap UUID and label (bytes 1036..1068, never
 * written) and the signature survive.
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

#define SWAP_SIG "SWAPSPACE2"
#define TORPOR_SIG "TORPOR0001"
#define INDEX_MAGIC "TORPORSI"
#define TAIL_VERSION 1u
/* Where torpor's pointer lives, counted back from the end of the header
 * page; the kernel's own swsusp_header uses the same unused stretch. */
#define TAIL_LEN BD_INDEX_SAVED
#define TAIL_CRC_AT 12
#define BADPAGES_AT 1536
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
#define USED_LEN (TAIL_LEN - 10)
#define USED_VERSION 1u
#define USED_CRC_AT 12

static const char *const NAME = "swap";

static const struct torpor_host *host;
static uint32_t page;			/* swap page size */

/* Where the swap area is (from initialise). */
static char spec[PATH_MAX];		/* as configured, for messages */
static char dev_path[PATH_MAX];		/* block device written */
static char file_path[PATH_MAX];	/* swap file, or "" */
/* The swap file, held open from reserve() to the cycle's end: its page
 * cache is dropped through it after the snapshot, when a path lookup on
 * btrfs can wait forever (bd_drop_cache). */
static int file_fd = -1;
static dev_t dev_rdev;
static uint64_t hdr_phys;		/* page 0 of the area on dev_path */
static struct bd_map area;		/* the area's bytes, logical -> physical */
static bool have_area;			/* area known (not at resume=) */
static char area_uuid[40];

static struct bd_dev dev;

/* Writing. */
/* The pages come from the snapshot device (SNAPSHOT_ALLOC_SWAP_PAGE);
 * false: the writer takes them from the area (cursor). */
static bool source_alloc;
static uint8_t *hdr_page;		/* page 0 as found at reserve() */
static uint8_t saved_tail[TAIL_LEN];
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
	bd_map_clear(&area);
	have_area = false;
	dev_path[0] = file_path[0] = spec[0] = area_uuid[0] = '\0';
	hdr_phys = 0;
	dev_rdev = 0;
	if (file_fd >= 0)
		close(file_fd);
	file_fd = -1;
}

/* Is the block device or file at path the one in /proc/swaps line name? */
static bool
same_object(const char *name, const struct stat *want)
{
	struct stat st;

	if (stat(name, &st) < 0)
		return false;
	if (S_ISBLK(want->st_mode))
		return S_ISBLK(st.st_mode) && st.st_rdev == want->st_rdev;
	return S_ISREG(st.st_mode) && st.st_dev == want->st_dev &&
	       st.st_ino == want->st_ino;
}

/* /proc/swaps escapes blanks as \040. */
static void
unescape(char *s)
{
	char *o = s;

	while (*s) {
		if (s[0] == '\\' && s[1] >= '0' && s[1] <= '7' && s[2] && s[3]) {
			*o++ = (char)((s[1] - '0') * 64 + (s[2] - '0') * 8 + (s[3] - '0'));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
}

/*
 * With want == NULL: pick the active non-zram swap with the most free
 * space into buf.  Otherwise: 1 when want is active (its free bytes in
 * *ret_free when that is not NULL), 0 when not.
 */
static int
scan_proc_swaps_free(const struct stat *want, char *buf, size_t size,
		     uint64_t *ret_free)
{
	FILE *f = fopen("/proc/swaps", "re");
	char line[PATH_MAX + 128], name[PATH_MAX];
	unsigned long long sz, used, best = 0;
	int r = want ? 0 : -ENOENT;

	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%4095s %*s %llu %llu", name, &sz, &used) != 3)
			continue;
		unescape(name);
		if (want) {
			if (same_object(name, want)) {
				if (ret_free)	/* KiB in /proc/swaps */
					*ret_free = used < sz ? (sz - used) * 1024 : 0;
				r = 1;
				break;
			}
			continue;
		}
		if (strncmp(name, "/dev/zram", 9) == 0 || used > sz)
			continue;
		if (r < 0 || sz - used > best) {
			best = sz - used;
			snprintf(buf, size, "%s", name);
			r = 0;
		}
	}
	fclose(f);
	return r;
}

static int
scan_proc_swaps(const struct stat *want, char *buf, size_t size)
{
	return scan_proc_swaps_free(want, buf, size, NULL);
}

/* A swap file holds a copy of memory once an image is in it: root's,
 * mode 0600 (swapon itself warns about anything else), on a filesystem
 * whose block map stays put.  st: the file, from fd. */
static int
check_swap_file(int fd, struct stat *st, char *why, size_t size)
{
	char reason[384];
	int r;

	if (fstat(fd, st) < 0) {
		r = -errno;
		snprintf(why, size, "cannot be examined: %m");
		return r;
	}
	r = bd_check_private(st, reason, sizeof(reason));
	if (r < 0) {
		snprintf(why, size, "%s; as root: swapoff it if it is active, then chown root:root and chmod 0600 it (safer: a new swap file created 0600)",
			 reason);
		return r;
	}
	return bd_check_fs(fd, why, size);
}

/* Find where the swap area named by s lives: dev_path, hdr_phys, area. */
static int
locate(const char *s)
{
	char path[PATH_MAX], why[1024];
	struct stat st;
	int fd, r;

	r = bd_resolve(s, path, sizeof(path));
	if (r == -ENODEV)
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			   "cannot find swap area %s: no device has that name (blkid lists the swap areas; name one in [swap] device=)",
			   s);
	else if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r,
				 "cannot find swap area %s: %m", s);
	if (r < 0)
		return r;
	if (stat(path, &st) < 0) {
		r = -errno;
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s (%s) is gone: %m", s, path);
		return r;
	}
	if (S_ISBLK(st.st_mode)) {
		snprintf(dev_path, sizeof(dev_path), "%s", path);
		dev_rdev = st.st_rdev;
		hdr_phys = 0;
		file_path[0] = '\0';
		/* The logical space is the device itself; its size is
		 * known once it is opened. */
		have_area = true;
		return 0;
	}
	if (!S_ISREG(st.st_mode)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "%s is neither a block device nor a swap file", path);
		return -EINVAL;
	}
	snprintf(file_path, sizeof(file_path), "%s", path);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		r = -errno;
		torpor_log(host, NAME, TORPOR_LOG_ERR, "cannot open swap file %s: %m", path);
		return r;
	}
	r = check_swap_file(fd, &st, why, sizeof(why));
	/* The device that holds the blocks: on btrfs not st_dev, which is
	 * the filesystem's own number (the kernel's swap area is on the
	 * device, and SET_SWAP_AREA names that). */
	if (r == 0)
		r = bd_file_place(fd, (uint64_t)st.st_size / page * page, true, &area,
				  dev_path, sizeof(dev_path), &dev_rdev,
				  why, sizeof(why));
	close(fd);
	if (r < 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap file %s %s", path, why);
		return r;
	}
	if (area.n == 0 || area.runs[0].phys % page) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap file %s does not start on a page boundary of %s",
		    path, dev_path);
		return -EINVAL;
	}
	hdr_phys = area.runs[0].phys;
	have_area = true;
	return 0;
}

/* At resume the command line names the device and the header page. */
static int
use_resume_location(void)
{
	int r = bd_resume_location(host, dev_path, sizeof(dev_path), &dev_rdev,
				   &hdr_phys);

	if (r == -ENOTBLK)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "resume= names %s, which is not a block device",
		    dev_path);
	if (r == 1)
		snprintf(spec, sizeof(spec), "%s", dev_path);
	return r;
}

/* The configured swap area, else the active one with the most room. */
static const char *
configured_area(char *picked, size_t size)
{
	const char *s = host->config_get(NAME, "device");

	if (s && *s)
		return s;
	if (scan_proc_swaps(NULL, picked, size) < 0)
		return NULL;
	return picked;
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
	r = use_resume_location();
	if (r != 0)
		return r < 0 ? r : 0;
	s = configured_area(picked, sizeof(picked));
	if (!s) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "no [swap] device= configured and no active swap area to choose: zram does not count, as a power-off empties it (name a swap partition or file in [swap] device=, or let torpor setup make an image file for the file writer)");
		return -ENODEV;
	}
	if (s == picked)
		torpor_log(host, NAME, TORPOR_LOG_INFO, "using %s, the active swap area with the most free space",
		    picked);
	snprintf(spec, sizeof(spec), "%s", s);
	r = locate(s);
	if (r < 0)
		return r;
	/* Remember whose area this is, to notice a swap between now and
	 * reserve(). */
	if (bd_uuid_of(file_path[0] ? file_path : dev_path, area_uuid,
		       sizeof(area_uuid)) < 0)
		area_uuid[0] = '\0';
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

	if (file_path[0] || hdr_phys != 0)
		return BD_SHARED;
	if (stat(dev_path, &st) == 0 && scan_proc_swaps(&st, NULL, 0) == 1)
		return BD_SHARED;
	return BD_EXCL;
}

static int
open_dev(bool writable)
{
	char why[512] = "";
	int r;

	if (!dev_path[0])
		return -ENODEV;
	r = bd_reopen(&dev, dev_path, writable ? write_mode() : BD_RDONLY,
		      why, sizeof(why));
	if (r == -EBUSY)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "refusing swap area %s: %s %s", spec, dev_path, why);
	else if (r == -ENXIO || r == -ENOENT || r == -ENODEV || r == -ENOMEDIUM)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "swap area %s has disappeared: %s cannot be opened or is empty (%m)",
		    spec, dev_path);
	else if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot open %s: %m", dev_path);
	return r;
}

/* The swap header page, in *ret (free() it). */
static int
read_page0(uint8_t **ret)
{
	uint8_t *pg;
	int r;

	if (hdr_phys > dev.size || page > dev.size - hdr_phys) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the swap header at byte %" PRIu64 " lies outside %s (%" PRIu64 " bytes)",
		    hdr_phys, dev_path, dev.size);
		return -ERANGE;
	}
	pg = malloc(page);
	if (!pg)
		return -ENOMEM;
	r = bd_read(&dev, hdr_phys, pg, page);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot read the swap header of %s: %m", dev_path);
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
	bd_drop_cache(file_fd, file_path[0] ? file_path :
		      host->config_get(NAME, "device"));
}

static int
write_page0(const uint8_t *buf)
{
	int r = bd_write(&dev, hdr_phys, buf, page);

	if (r == 0)
		r = bd_sync(&dev);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot write the swap header of %s: %m", dev_path);
		return r;
	}
	drop_file_cache();
	return 0;
}

/* The tail torpor writes: a pointer to the index block and the
 * signature. */
static void
encode_tail(uint8_t *pg, uint64_t index_phys)
{
	uint8_t *t = pg + page - TAIL_LEN;

	memset(t, 0, TAIL_LEN);
	torpor_put_le64(t, index_phys);
	torpor_put_le32(t + 8, TAIL_VERSION);
	memcpy(t + TAIL_LEN - 10, TORPOR_SIG, 10);
	torpor_put_le32(t + TAIL_CRC_AT, bd_crc_without(t, TAIL_LEN, TAIL_CRC_AT));
}

static int
decode_tail(const uint8_t *pg, uint64_t *ret_index)
{
	const uint8_t *t = pg + page - TAIL_LEN;

	if (memcmp(t + TAIL_LEN - 10, TORPOR_SIG, 10) != 0)
		return -ENOENT;
	if (bd_crc_without(t, TAIL_LEN, TAIL_CRC_AT) !=
	    torpor_get_le32(t + TAIL_CRC_AT) ||
	    torpor_get_le32(t + 8) != TAIL_VERSION)
		return -EBADMSG;
	*ret_index = torpor_get_le64(t);
	return 0;
}

/* The original tail of a header page that carries torpor's signature:
 * from its index block, or, when that is unreadable, what mkswap writes
 * (zeros and SWAPSPACE2). */
static void
original_tail(const uint8_t *pg, uint8_t *ret)
{
	struct bd_index ix;
	uint64_t at;

	memset(ret, 0, TAIL_LEN);
	memcpy(ret + TAIL_LEN - 10, SWAP_SIG, 10);
	if (decode_tail(pg, &at) < 0 || bd_index_read(&dev, at, INDEX_MAGIC, &ix) < 0)
		return;
	if (memcmp(ix.saved + TAIL_LEN - 10, SWAP_SIG, 10) == 0)
		memcpy(ret, ix.saved, TAIL_LEN);
	bd_map_clear(&ix.header);
}

static bool
has_record(const uint8_t *t)
{
	return memcmp(t, USED_MAGIC, 8) == 0;
}

static void
encode_record(uint8_t *t, uint64_t index_phys, const uint8_t uuid[16])
{
	memset(t, 0, USED_LEN);
	memcpy(t, USED_MAGIC, 8);
	torpor_put_le32(t + 8, USED_VERSION);
	torpor_put_le64(t + 16, index_phys);
	memcpy(t + 24, uuid, 16);
	torpor_put_le32(t + USED_CRC_AT, bd_crc_without(t, USED_LEN, USED_CRC_AT));
}

/* -ENOENT: no record; -EBADMSG: a damaged one. */
static int
decode_record(const uint8_t *t, uint64_t *ret_index, uint8_t *ret_uuid)
{
	if (!has_record(t))
		return -ENOENT;
	if (bd_crc_without(t, USED_LEN, USED_CRC_AT) !=
	    torpor_get_le32(t + USED_CRC_AT) ||
	    torpor_get_le32(t + 8) != USED_VERSION)
		return -EBADMSG;
	*ret_index = torpor_get_le64(t + 16);
	memcpy(ret_uuid, t + 24, 16);
	return 0;
}

/* The tail to put back over torpor's signature: the original one (a
 * consumed-image record in it is an old one: cleared), and with uuid a
 * record of that image when the bytes it takes were zero and unused. */
static void
tail_to_restore(const uint8_t *pg, const uint8_t *uuid, uint8_t *tail)
{
	uint64_t at;

	if (img.found && !img.corrupt)
		memcpy(tail, img.ix.saved, TAIL_LEN);
	else
		original_tail(pg, tail);
	if (memcmp(tail + TAIL_LEN - 10, SWAP_SIG, 10) != 0) {
		memset(tail, 0, TAIL_LEN);
		memcpy(tail + TAIL_LEN - 10, SWAP_SIG, 10);
	}
	if (has_record(tail))
		memset(tail, 0, USED_LEN);
	if (!uuid || decode_tail(pg, &at) < 0)
		return;
	if (torpor_get_le32(pg + 1032) != 0 || !bd_all_zero(tail, USED_LEN)) {
		torpor_log(host, NAME, TORPOR_LOG_INFO, "no room for a consumed-image record on %s (bad pages or other data there): the resumed system cannot read the resume figures",
		    spec);
		return;
	}
	encode_record(tail, at, uuid);
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
	t = pg + page - TAIL_LEN;
	if (memcmp(pg + page - 10, TORPOR_SIG, 10) == 0) {
		uint8_t tail[TAIL_LEN];

		tail_to_restore(pg, uuid, tail);
		memcpy(t, tail, TAIL_LEN);
		r = write_page0(pg);
	} else if (memcmp(pg + page - 10, SWAP_SIG, 10) == 0 && has_record(t)) {
		memset(t, 0, USED_LEN);
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

/* The bytes of the pages a swap header page (pg) leaves free: pages
 * 1..last_page, the bad ones taken off. */
static uint64_t
header_free_bytes(const uint8_t *pg)
{
	uint32_t last = torpor_get_le32(pg + 1028);
	uint32_t nbad = torpor_get_le32(pg + 1032);

	return last > nbad ? (uint64_t)(last - nbad) * page : 0;
}

/* The area as it is now: open, its logical space known, its header
 * page read, still the one initialise() chose.  st: the area's inode. */
static int
open_area(struct stat *st)
{
	const char *what = file_path[0] ? file_path : dev_path;
	char uuid[40];
	int r;

	if (stat(what, st) < 0) {
		r = -errno;
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s has disappeared: %s: %m", spec,
		    what);
		return r;
	}
	r = open_dev(true);
	if (r < 0)
		return r;
	if (!file_path[0]) {
		bd_map_clear(&area);
		r = bd_map_add(&area, 0, dev.size / page * page);
		if (r < 0)
			return r;
	}
	r = read_page0(&hdr_page);
	if (r < 0)
		return r;
	if (area_uuid[0] && (bd_uuid_of(what, uuid, sizeof(uuid)) < 0 ||
			     strcmp(uuid, area_uuid) != 0)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s has changed since it was chosen (UUID %s is gone)",
		    spec, area_uuid);
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

	if (memcmp(hdr_page + page - 10, TORPOR_SIG, 10) == 0) {
		/* An image nobody resumed: it must not survive a cycle that
		 * fails half-way, and its pages are about to be reused. */
		torpor_log(host, NAME, TORPOR_LOG_NOTICE, "discarding an older image on %s", spec);
		original_tail(hdr_page, saved_tail);
		memcpy(hdr_page + page - TAIL_LEN, saved_tail, TAIL_LEN);
		r = write_page0(hdr_page);
		if (r < 0)
			return r;
	} else if (memcmp(hdr_page + page - 10, SWAP_SIG, 10) != 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "%s is not a swap area (no %s signature); run mkswap on it first",
		    spec, SWAP_SIG);
		return -EINVAL;
	}
	memcpy(saved_tail, hdr_page + page - TAIL_LEN, TAIL_LEN);
	/* The last resume's record goes with this image's signature, and
	 * is never put back. */
	if (has_record(saved_tail))
		memset(saved_tail, 0, USED_LEN);
	last_page = torpor_get_le32(hdr_page + 1028);
	nr_bad = torpor_get_le32(hdr_page + 1032);
	if (torpor_get_le32(hdr_page + 1024) != 1 ||
	    (uint64_t)BADPAGES_AT + 4ull * nr_bad > page - TAIL_LEN) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap header of %s is not version 1 or its bad-page list reaches torpor's tail",
		    spec);
		return -EINVAL;
	}
	if (nr_bad) {
		bad = calloc(nr_bad, sizeof(*bad));
		if (!bad)
			return -ENOMEM;
		for (uint32_t i = 0; i < nr_bad; i++)
			bad[i] = torpor_get_le32(hdr_page + BADPAGES_AT + 4 * i);
	}
	if ((uint64_t)last_page + 1 > area.total / page) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap header of %s says %u pages, the area holds %" PRIu64,
		    spec, last_page + 1, area.total / page);
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
	const char *what = file_path[0] ? file_path : dev_path;
	int active = scan_proc_swaps(st, NULL, 0);
	int64_t a;
	int r;

	source_alloc = false;
	r = host->swap_set_area(bd_kernel_dev(dev_rdev), hdr_phys);
	if (r == -EOPNOTSUPP && active == 0) {
		*ret = header_free_bytes(hdr_page);
		return 0;
	}
	if (r == -EOPNOTSUPP) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s is %s: only the running kernel knows which of its pages are free, and this snapshot device does not hand them out; run swapoff %s first",
		    spec, active > 0 ? "in use by the kernel" : "perhaps in use by the kernel (/proc/swaps cannot be read)",
		    what);
		return -EBUSY;
	}
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "the snapshot device refused swap area %s (%s at byte %" PRIu64 ")%s: %m",
		    spec, dev_path, hdr_phys,
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

	if (stat(file_path[0] ? file_path : dev_path, &st) < 0)
		return -errno;
	*ret = 0;
	r = scan_proc_swaps_free(&st, NULL, 0, ret);
	if (r != 0 || host->snapshot_kind() == TORPOR_SNAPSHOT_KERNEL)
		return r < 0 ? r : 0;
	r = open_dev(false);
	if (r == 0)
		r = read_page0(&pg);
	if (r < 0)
		return r;
	*ret = header_free_bytes(pg);
	free(pg);
	return 0;
}

static int
swap_free_space(uint64_t *ret)
{
	uint64_t avail = 0, overhead = TORPOR_IMAGE_MAX_HEADER + page;
	int r;

	if (!have_area)
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
	fd = open(file_path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		int r = -errno;

		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot open swap file %s: %m",
				 file_path);
		return r;
	}
	if (fstat(fd, &now) < 0 || now.st_dev != st->st_dev ||
	    now.st_ino != st->st_ino) {
		close(fd);
		torpor_log(host, NAME, TORPOR_LOG_ERR, "swap file %s was replaced while it was being opened",
			   file_path);
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
	if (!have_area) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "no swap area to write to (initialise found none)");
		return -ENODEV;
	}
	r = open_area(&st);
	if (r == 0 && file_path[0])
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
		    (need + (1 << 20) - 1) >> 20, avail >> 20, spec);
		return -ENOSPC;
	}
	torpor_log(host, NAME, TORPOR_LOG_INFO, "image of %" PRIu64 " bytes expected: need %" PRIu64 " MiB, %" PRIu64 " MiB free on %s",
	    expected, (need + (1 << 20) - 1) >> 20, avail >> 20, spec);
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
				torpor_log(host, NAME, TORPOR_LOG_ERR, "the kernel has no free page left in %s", spec);
				return -ENOSPC;
			}
			if (off < 0) {
				torpor_log_errno(host, NAME, TORPOR_LOG_ERR, (int)off, "the kernel gave no swap page of %s: %m",
				    spec);
				return (int)off;
			}
			if ((uint64_t)off % page || (uint64_t)off == hdr_phys)
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
			torpor_log(host, NAME, TORPOR_LOG_ERR, "swap area %s is full", spec);
			return -ENOSPC;
		}
		/* Contiguous logical pages up to the next bad one. */
		{
			uint64_t n = 1;

			while (n < count && cursor + n <= last_page &&
			       !is_bad_page(cursor + n))
				n++;
			r = bd_map_slice(&area, cursor * page, n * page, m);
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
			    dev_path, runs.runs[i].phys);
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
		    stream.n, spec);
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
	memcpy(ix.saved, saved_tail, TAIL_LEN);
	/* Everything the signature points at is on the disk (synced)
	 * before the signature is. */
	r = bd_index_write(&dev, index_at.runs[0].phys, INDEX_MAGIC, &ix);
	if (r < 0)
		goto out;
	encode_tail(hdr_page, index_at.runs[0].phys);
	r = write_page0(hdr_page);
	if (r < 0)
		goto out;
	torpor_log(host, NAME, TORPOR_LOG_INFO, "early flushes of %s while writing: %u",
	    dev_path, bd_flusher_take_begun(&dev.flusher));
	bd_image_committed(&img, &ix, &stream, out.written);
	reserved = false;
out:
	if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "commit to %s failed: %m", spec);
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
	if (memcmp(pg + page - 10, TORPOR_SIG, 10) != 0) {
		if (memcmp(pg + page - 10, SWAP_SIG, 10) != 0)
			torpor_log(host, NAME, TORPOR_LOG_WARNING, "%s at byte %" PRIu64 " holds neither a swap nor a torpor signature",
			    dev_path, hdr_phys);
		else if (has_record(pg + page - TAIL_LEN))
			torpor_log(host, NAME, TORPOR_LOG_NOTICE, "%s holds only the record of an image that was already resumed (consumed): it is never resumed again",
			    spec);
		r = 0;
		goto out;
	}
	img.found = true;
	r = decode_tail(pg, &at);
	if (r == 0)
		r = bd_index_read(&dev, at, INDEX_MAGIC, &img.ix);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "%s carries torpor's signature, but what it points at is corrupt (%m)",
		    spec);
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
		    spec);
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
		    dev_path, why);
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
	if (memcmp(pg + page - 10, SWAP_SIG, 10) != 0)
		r = -ENOENT;
	else
		r = decode_record(pg + page - TAIL_LEN, &at, got);
	free(pg);
	if (r == 0 && memcmp(got, uuid, 16) != 0)
		r = -ESTALE;
	if (r < 0)
		return r;
	r = bd_index_read(&dev, at, INDEX_MAGIC, &im.ix);
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
		torpor_log(host, NAME, TORPOR_LOG_NOTICE, "restored the swap signature of %s", spec);
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
	bool own = !have_area;
	const char *s;
	int r = 0;

	if (own) {
		s = configured_area(picked, sizeof(picked));
		if (!s) {
			torpor_log(host, NAME, TORPOR_LOG_ERR, "no [swap] device= configured and no active swap area to name");
			return -ENODEV;
		}
		snprintf(spec, sizeof(spec), "%s", s);
		r = locate(s);
	}
	if (r == 0)
		r = hdr_phys % page ? -EINVAL :
		    bd_resume_words(dev_path, hdr_phys, page, buf, size);
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
	memset(&area, 0, sizeof(area));
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
