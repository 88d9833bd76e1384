/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * file: the image in a preallocated file ([file] path=), written through
 * the block device under the file at the physical offsets FIEMAP gives, so
 * that nothing of the filesystem (metadata, journal, timestamps) changes
 * after the snapshot.
 *
 * Layout inside the file: block 0 is the signature, which is an index
 * block saying where the image header lies (written last, zeroed by
 * invalidate); the data stream starts at block 1; the header follows the
 * stream at the next block boundary.  The stream's physical runs travel in
 * the header's writer blob, so the resume side needs only the device and
 * the offset of block 0 (resume= resume_offset=).
 *
 * The block map must stay put: files on tmpfs, btrfs and the like, and
 * files with unwritten, shared, inline or encoded extents are refused;
 * `torpor file-setup` creates a file that passes.
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

#include "block-stream.h"
#include "device-io.h"
#include "file-map.h"
#include "image-layout.h"
#include "in-use.h"
#include "run-list.h"
#include "writer-common.h"

#define SIG_MAGIC "TORPORF1"
/* Block 0 after resume's consume(): the same index block under this magic
 * (never an image: find() reports none), the image UUID in its saved
 * bytes, so that the resumed system finds the header and its resume
 * statistics.  reserve() and invalidate() zero it. */
#define USED_MAGIC "TORPORFC"
#define DEFAULT_PATH "/var/lib/torpor/image"

static const char *const NAME = "file";

static const struct torpor_host *host;
static uint32_t page;

static char path[PATH_MAX];		/* the image file, or "" at resume= */
static char dev_path[PATH_MAX];		/* the block device under it */
/* The image file as mapped again after the freeze, held open to the
 * cycle's end: its page cache is dropped through it after the snapshot,
 * when a path lookup on btrfs can wait forever (bd_drop_cache). */
static int frozen_fd = -1;
static uint64_t sig_phys;		/* block 0 of the file on dev_path */
static struct bd_map space;		/* the file's bytes, logical -> physical */
static bool have_space;

static struct bd_dev dev;
static struct bd_stream out;
static bool reserved;
static bool unmoved;			/* the map checked again since reserve */
static uint64_t next_at;		/* file byte of the next stream block */

static struct bd_image img;

static const struct torpor_config_key file_keys[] = {
	{ .name = "path", .type = TORPOR_CONFIG_PATH, .default_value = DEFAULT_PATH,
	  .help = "the preallocated image file (create it with 'torpor file-setup')" },
	{ .name = "size", .type = TORPOR_CONFIG_SIZE, .min = BD_FILE_MIN_SIZE,
	  .max = INT64_MAX,
	  .help = "size of the image file that 'torpor file-setup' allocates" },
	{ .name = NULL },
};


static void
reset_location(void)
{
	bd_map_clear(&space);
	have_space = false;
	path[0] = dev_path[0] = '\0';
	sig_phys = 0;
	if (frozen_fd >= 0)
		close(frozen_fd);
	frozen_fd = -1;
}

/* The image file holds a copy of memory: private (root's, mode 0600),
 * not an active swap file, on a filesystem whose block map stays put, big
 * enough.  0, or -errno with the reason in why. */
static int
check_file(int fd, const char *p, struct stat *st, char *why, size_t size)
{
	char reason[384];
	int r;

	if (fstat(fd, st) < 0)
		return -errno;
	r = bd_check_private(st, reason, sizeof(reason));
	if (r < 0) {
		snprintf(why, size, "%s; remove it and run 'torpor file-setup' to create it again (chmod and chown do not shut out a user who already has it open)",
			 reason);
		return r;
	}
	r = bd_in_use(st, reason, sizeof(reason));
	if (r > 0) {
		snprintf(why, size, "%s: swapoff %s, or choose another file", reason, p);
		return -EBUSY;
	}
	r = bd_check_fs(fd, why, size);
	if (r == 0 && (uint64_t)st->st_size < 2ull * BD_BLOCK) {
		snprintf(why, size, "is %lld bytes: too small to hold an image; run 'torpor file-setup'",
			 (long long)st->st_size);
		r = -ENOSPC;
	}
	return r;
}

/* Map the file at p: dev_path, sig_phys, space.  Logs why not. */
static int
locate(const char *p)
{
	char why[1024];
	struct stat st;
	dev_t rdev;
	int fd, r;

	snprintf(path, sizeof(path), "%s", p);
	fd = open(p, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		if (errno == ENOENT)
			torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s does not exist: run 'torpor file-setup' to create it",
			    p);
		else if (errno == ELOOP)
			torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s is a symbolic link: name the file itself", p);
		else
			torpor_log(host, NAME, TORPOR_LOG_ERR, "cannot open image file %s: %m", p);
		return r;
	}
	r = check_file(fd, p, &st, why, sizeof(why));
	if (r == 0)
		r = bd_file_place(fd, (uint64_t)st.st_size / BD_BLOCK * BD_BLOCK, false,
				  &space, dev_path, sizeof(dev_path), &rdev,
				  why, sizeof(why));
	close(fd);
	if (r < 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s %s", p, why);
		return r;
	}
	for (size_t i = 0; i < space.n; i++) {
		if (space.runs[i].phys % 512 || space.runs[i].len % 512) {
			torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s has an extent that is not sector aligned",
			    p);
			bd_map_clear(&space);
			return -EBADFD;
		}
	}
	sig_phys = space.runs[0].phys;
	have_space = true;
	return 0;
}

static int
file_initialise(int starting_cycle)
{
	const char *p = host->config_get(NAME, "path");
	dev_t rdev;
	int r;

	reset_location();
	if (!starting_cycle)
		return 0;
	/* At resume the filesystem may not be mounted: the command line
	 * names the device and the file's first block. */
	r = bd_resume_location(host, dev_path, sizeof(dev_path), &rdev,
			       &sig_phys);
	if (r == -ENOTBLK)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "resume= names %s, which is not a block device",
		    dev_path);
	if (r == 0) {
		p = p && *p ? p : DEFAULT_PATH;
		r = locate(p);
		/* Waiting would bring nothing: before the root filesystem is
		 * mounted (torpor-resume in an initramfs) only the command
		 * line can name the file's place. */
		if (r == -ENOENT) {
			torpor_log(host, NAME, TORPOR_LOG_ERR, "the kernel command line names no place for %s either: at boot, before the root filesystem is mounted, only resume= and resume_offset= can (torpor resume-args prints them)",
			    p);
			r = -ENOMEDIUM;
		}
		return r;
	}
	return r < 0 ? r : 0;
}

static void
file_cleanup(int finishing_cycle)
{
	bd_stream_free(&out);
	reserved = false;
	bd_image_clear(&img);
	bd_close(&dev);
	reset_location();
}

static int
open_dev(bool writable)
{
	int r;

	if (!dev_path[0])
		return -ENODEV;
	/* The device under a mounted filesystem: shared, never exclusive. */
	r = bd_reopen(&dev, dev_path, writable ? BD_SHARED : BD_RDONLY, NULL, 0);
	if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot open %s (under %s): %m", dev_path,
		    path[0] ? path : "the image file");
	return r;
}

/* The file's page cache did not see the writes to the device below
 * it: dropped through the file held open since the freeze, else by its
 * path (never looked up after the snapshot: the cycle holds it open by
 * then).  At resume= the file is not known; the configured one, when it
 * exists, may hold the signature block in its cache. */
static int
write_block0(const char *magic, const struct bd_index *ix)
{
	int r = bd_index_write(&dev, sig_phys, magic, ix);

	if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot write the signature block of %s: %m",
		    path[0] ? path : dev_path);
	bd_drop_cache(frozen_fd, path[0] ? path : host->config_get(NAME, "path"));
	return r;
}

static int
write_signature(const struct bd_index *ix)
{
	return write_block0(SIG_MAGIC, ix);
}

static int
file_reserve(uint64_t expected)
{
	uint64_t need, avail;
	int r;

	bd_stream_free(&out);
	reserved = false;
	bd_image_clear(&img);
	if (!have_space) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "no image file to write to ([file] path=)");
		return -ENODEV;
	}
	/* Signature block, stream, header (at most TORPOR_IMAGE_MAX_HEADER). */
	need = BD_BLOCK + bd_round_up(expected, BD_BLOCK) + TORPOR_IMAGE_MAX_HEADER;
	avail = space.total;
	if (need > avail) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "need %" PRIu64 " MiB, %" PRIu64 " MiB free on %s",
		    (need + (1 << 20) - 1) >> 20, avail >> 20, path);
		return -ENOSPC;
	}
	torpor_log(host, NAME, TORPOR_LOG_INFO, "image of %" PRIu64 " bytes expected: need %" PRIu64 " MiB, %" PRIu64 " MiB free on %s",
	    expected, (need + (1 << 20) - 1) >> 20, avail >> 20, path);
	r = open_dev(true);
	if (r < 0)
		return r;
	/* An older image must not survive a cycle that fails half-way. */
	r = write_signature(NULL);
	if (r < 0)
		return r;
	bd_stream_start(&out, BD_BLOCK);
	(void)bd_flusher_take_begun(&dev.flusher);
	next_at = BD_BLOCK;
	reserved = true;
	unmoved = false;
	return 0;
}

static int
file_free_space(uint64_t *ret)
{
	uint64_t overhead = BD_BLOCK + TORPOR_IMAGE_MAX_HEADER;

	if (!have_space)
		return -ENODEV;
	*ret = space.total > overhead ? space.total - overhead : 0;
	return 0;
}

/* Write n bytes (whole blocks) at file byte *ctx and advance it. */
static int
emit_stream(void *ctx, const uint8_t *p, size_t n)
{
	uint64_t at = *(uint64_t *)ctx;
	int r;

	if (at > space.total || n > space.total - at) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s is full", path);
		return -ENOSPC;
	}
	r = bd_map_write(&dev, &space, at, p, n);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "write to %s at file byte %" PRIu64 " failed: %m",
		    dev_path, at);
		return r;
	}
	bd_flush_behind(&dev, n);
	*(uint64_t *)ctx = at + n;
	return 0;
}

/*
 * User space is frozen, the snapshot not yet taken: map the file again and
 * refuse to write when its blocks are no longer where reserve() found them
 * (a defragmenter or a btrfs balance between the map and the freeze, or
 * the file replaced), as the old places may now hold other files.  Not at
 * the first write: that comes after the snapshot, when the kernel's
 * freezable workqueues stay frozen, and btrfs's FIEMAP and tree search
 * wait for them forever once the tree blocks are out of the cache (the
 * snapshot's preallocation drops caches).
 */
static int
check_unmoved(void)
{
	struct bd_map now = { 0 };
	char why[1024], node[PATH_MAX];
	dev_t rdev;
	bool same;
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
	if (fd < 0) {
		r = -errno;
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r,
				 "image file %s cannot be opened again after the freeze: %m", path);
		return r;
	}
	r = bd_file_place(fd, space.total, false, &now, node, sizeof(node),
			  &rdev, why, sizeof(why));
	if (r < 0) {
		close(fd);
		torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s %s (mapped again after the freeze)",
			   path, why);
		return r;
	}
	same = strcmp(node, dev_path) == 0 && now.n == space.n;
	for (size_t i = 0; same && i < now.n; i++)
		same = now.runs[i].phys == space.runs[i].phys &&
		       now.runs[i].len == space.runs[i].len;
	bd_map_clear(&now);
	if (!same) {
		close(fd);
		torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s moved between the start of the cycle and the freeze (defragmented, balanced or replaced): nothing written; hibernate again",
			   path);
		return -ESTALE;
	}
	if (frozen_fd >= 0)
		close(frozen_fd);
	frozen_fd = fd;
	return 0;
}

static int
file_frozen(void)
{
	int r;

	if (!reserved)
		return -EINVAL;
	r = check_unmoved();
	unmoved = r == 0;
	return r;
}

static int
file_write(const void *buf, size_t len)
{
	if (!reserved || !unmoved)
		return -EINVAL;
	return bd_stream_write(&out, buf, len, emit_stream, &next_at);
}

/* The physical runs of the stream, from its place in the file. */
static int
stream_runs(struct bd_map *ret)
{
	uint64_t len = bd_round_up(out.written, BD_BLOCK);

	memset(ret, 0, sizeof(*ret));
	return len ? bd_map_slice(&space, BD_BLOCK, len, ret) : 0;
}

static size_t
file_storage_needed(void)
{
	struct bd_map m;
	size_t need;

	if (!reserved || stream_runs(&m) < 0)
		return bd_map_blob_size(space.n);
	need = bd_map_blob_size(m.n);
	bd_map_clear(&m);
	return need;
}

static int
file_save_config(uint8_t *buf, size_t size)
{
	struct bd_map m;
	int r;

	if (!reserved)
		return -EINVAL;
	r = bd_stream_flush(&out, emit_stream, &next_at);
	if (r == 0)
		r = stream_runs(&m);
	if (r < 0)
		return r;
	r = bd_map_save(&m, out.written, buf, size);
	bd_map_clear(&m);
	return r;
}

static int
file_commit(const void *header, size_t len)
{
	struct bd_index ix = { 0 };
	struct bd_map stream = { 0 };
	uint64_t at;
	int r;

	if (!reserved || !unmoved)
		return -EINVAL;
	r = bd_stream_flush(&out, emit_stream, &next_at);
	if (r < 0)
		return r;
	at = BD_BLOCK + bd_round_up(out.written, BD_BLOCK);
	if (at > space.total || bd_round_up(len, BD_BLOCK) > space.total - at) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "image file %s has no room left for the image header",
		    path);
		return -ENOSPC;
	}
	r = bd_map_slice(&space, at, bd_round_up(len, BD_BLOCK), &ix.header);
	if (r == 0 && ix.header.n > BD_INDEX_MAX_RUNS)
		r = -E2BIG;
	if (r == 0)
		r = bd_map_write(&dev, &ix.header, 0, header, len);
	/* Everything the signature points at is on the disk first. */
	if (r == 0)
		r = bd_sync(&dev);
	ix.header_len = len;
	if (r == 0)
		r = write_signature(&ix);
	if (r == 0)
		r = stream_runs(&stream);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "commit to %s failed: %m", path);
		bd_map_clear(&ix.header);
		return r;
	}
	torpor_log(host, NAME, TORPOR_LOG_INFO, "early flushes of %s while writing: %u",
	    dev_path, bd_flusher_take_begun(&dev.flusher));
	bd_image_committed(&img, &ix, &stream, out.written);
	reserved = false;
	return 0;
}

static void
file_abort(void)
{
	/* reserve() already zeroed the signature; the data is garbage
	 * nobody points at. */
	bd_stream_free(&out);
	reserved = false;
}

/* Block 0 carries a consumed-image record (valid or not). */
static bool
block0_is_consumed(void)
{
	struct bd_index ix;
	int r = bd_index_read(&dev, sig_phys, USED_MAGIC, &ix);

	if (r == 0)
		bd_map_clear(&ix.header);
	return r == 0 || r == -EBADMSG;
}

static int
file_find(void)
{
	int r;

	bd_image_clear(&img);
	r = open_dev(false);
	if (r < 0)
		return r;
	if (sig_phys > dev.size || BD_BLOCK > dev.size - sig_phys) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the signature block at byte %" PRIu64 " lies outside %s",
		    sig_phys, dev_path);
		return -ERANGE;
	}
	r = bd_index_read(&dev, sig_phys, SIG_MAGIC, &img.ix);
	if (r == -ENOENT && block0_is_consumed())
		torpor_log(host, NAME, TORPOR_LOG_NOTICE, "%s holds only the record of an image that was already resumed (consumed): it is never resumed again",
		    path[0] ? path : dev_path);
	if (r == -ENOENT)
		return 0;
	if (r == -EBADMSG) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the signature block of %s is corrupt",
		    path[0] ? path : dev_path);
		img.corrupt = true;
	} else if (r < 0) {
		return r;
	}
	img.found = true;
	return 1;
}

static int
file_read_header(void *buf, size_t size, size_t *ret_len)
{
	int r = open_dev(false);

	if (r < 0)
		return r;
	r = bd_image_read_header(&dev, &img, buf, size, ret_len);
	if (r == -EBADMSG)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the image header in %s lies outside the device or is unreadable",
		    path[0] ? path : dev_path);
	return r;
}

/* Every run of the saved layout is checked against the device before
 * anything is read: a damaged one is an image to refuse. */
static int
file_load_config(const uint8_t *buf, size_t len)
{
	char why[200];
	int r = open_dev(false);

	if (r < 0)
		return r;
	r = bd_image_load_config(&dev, &img, buf, len, why, sizeof(why));
	if (r == -EBADMSG)
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the image's saved layout on %s %s",
		    path[0] ? path : dev_path, why);
	return r;
}

static int
file_read(uint64_t offset, void *buf, size_t len)
{
	int r = open_dev(false);

	return r < 0 ? r : bd_image_read(&dev, &img, offset, buf, len);
}

static int
file_invalidate(void)
{
	struct bd_index ix = { 0 };
	int r;

	r = open_dev(true);
	if (r < 0)
		return r;
	/* Only a block that carries the signature (or a consumed-image
	 * record) is ours to clear. */
	r = bd_index_read(&dev, sig_phys, SIG_MAGIC, &ix);
	bd_map_clear(&ix.header);
	if (r == -ENOENT && block0_is_consumed())
		r = 0;
	if (r == 0 || r == -EBADMSG)
		return write_signature(NULL);
	return r == -ENOENT ? 0 : r;
}

/* The index block of the image found at resume stays, under USED_MAGIC
 * and with the image's UUID. */
static int
file_consume(const uint8_t uuid[16])
{
	struct bd_index ix;
	int r;

	if (!img.found || img.corrupt)
		return file_invalidate();
	r = open_dev(true);
	if (r < 0)
		return r;
	ix = img.ix;
	memset(ix.saved, 0, sizeof(ix.saved));
	memcpy(ix.saved, uuid, 16);
	return write_block0(USED_MAGIC, &ix);
}

/* Block 0's record of uuid and the header it points at (bd_read:
 * O_DIRECT, past the page cache). */
static int
file_read_consumed(const uint8_t uuid[16], void *buf, size_t size,
		   size_t *ret_len)
{
	struct bd_image im = { 0 };
	int r = open_dev(false);

	if (r < 0)
		return r;
	r = bd_index_read(&dev, sig_phys, USED_MAGIC, &im.ix);
	if (r == -ERANGE)
		r = -EBADMSG;
	if (r == 0 && memcmp(im.ix.saved, uuid, 16) != 0)
		r = -ESTALE;
	if (r == 0) {
		im.found = true;
		r = bd_image_read_header(&dev, &im, buf, size, ret_len);
	}
	bd_image_clear(&im);
	return r;
}

static int
file_rewrite_header(const void *header, size_t len)
{
	int r = open_dev(true);

	return r < 0 ? r : bd_image_rewrite_header(&dev, &img, header, len);
}

static int
file_resume_args(char *buf, size_t size)
{
	const char *p = host->config_get(NAME, "path");
	bool own = !have_space;
	int r = 0;

	if (own) {
		r = locate(p && *p ? p : DEFAULT_PATH);
		if (r < 0)
			return r;
	}
	if (sig_phys % page) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the first block of %s is not page aligned on %s; resume_offset cannot name it",
		    path, dev_path);
		r = -EINVAL;
	} else {
		r = bd_resume_words(dev_path, sig_phys, page, buf, size);
	}
	if (own)
		reset_location();
	return r;
}

static int
file_print_debug_info(char *buf, size_t size)
{
	const char *p = host ? host->config_get(NAME, "path") : NULL;

	return torpor_filter_print(buf, size, "path %s",
				   p && *p ? p : DEFAULT_PATH);
}

static int
file_load(const struct torpor_host *h)
{
	host = h;
	page = bd_page_size();
	bd_init(&dev);
	memset(&img, 0, sizeof(img));
	memset(&out, 0, sizeof(out));
	memset(&space, 0, sizeof(space));
	reset_location();
	return 0;
}

static void
file_unload(void)
{
	file_cleanup(1);
}

static const struct torpor_writer file_plugin = {
	.plugin = {
		.name = "file",
		.description = "writes the image into a preallocated file, through the block device under it",
		.config_keys = file_keys,
		.load = file_load,
		.unload = file_unload,
		.initialise = file_initialise,
		.cleanup = file_cleanup,
		.storage_needed = file_storage_needed,
		.save_config = file_save_config,
		.load_config = file_load_config,
		.print_debug_info = file_print_debug_info,
	},
	.reserve = file_reserve,
	.write = file_write,
	.commit = file_commit,
	.abort = file_abort,
	.find = file_find,
	.read_header = file_read_header,
	.read = file_read,
	.invalidate = file_invalidate,
	.rewrite_header = file_rewrite_header,
	.resume_args = file_resume_args,
	.free_space = file_free_space,
	.consume = file_consume,
	.read_consumed = file_read_consumed,
	.frozen = file_frozen,
};

TORPOR_WRITER_REGISTER(file_plugin)
