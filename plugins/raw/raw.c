/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * raw: the image on a dedicated block device (or, with the simulated
 * snapshot source only, a regular file).
 *
 * Layout: block 0 holds the signature (written last, wiped by invalidate),
 * the data stream starts at RAW_STREAM_OFFSET, and the image header follows
 * the stream at the next block boundary.  Writes go through O_DIRECT where
 * the device allows it, in the core's large pieces.
 *
 * The device is opened for writing with O_EXCL and refused while it is
 * mounted, held by another device (device-mapper, md) or an active swap
 * area: the writer overwrites it from block 0 on.  A regular file (the
 * tests and the demo) holds a copy of memory and must be private: owned
 * by the user torpor runs as, mode 0600 (no group or other bits); the
 * writer never creates one.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <linux/fs.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <torpor/plugin.h>
#include <torpor/plugin-util.h>

#include "device-io.h"
#include "device-names.h"
#include "image-layout.h"
#include "in-use.h"

#include "raw-format.h"

#define NAME "raw"

struct raw_signature {
	uint64_t stream_offset;
	uint64_t stream_length;
	uint64_t header_offset;
	uint64_t header_length;
};

static const struct torpor_host *host;
static char device[4096];
static int fd = -1;
static struct bd_flusher flusher;	/* early flushes of the stream */
static bool direct;
static bool is_regular;
static uint64_t device_size;
static uint64_t written;		/* stream bytes written */
static uint8_t *bounce;			/* one aligned block for tails */
static struct raw_signature found;	/* from find() */
static bool have_found;

static const struct torpor_config_key raw_keys[] = {
	{ .name = "device", .type = TORPOR_CONFIG_PATH,
	  .help = "block device (or, with the sim source, a file) that holds the image" },
	{ .name = NULL },
};

static int
raw_initialise(int starting_cycle)
{
	const char *spec;
	uint64_t offset;
	int r;

	/* At resume the command line names the device. */
	r = TORPOR_HOST_HAS(host, resume_location) ?
	    host->resume_location(device, sizeof(device), &offset) : 0;
	if (r != 0)
		return r < 0 ? r : 0;
	spec = host->config_get("raw", "device");
	if (!spec || !*spec) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "no device configured ([raw] device=)");
		return -EINVAL;
	}
	r = bd_resolve(spec, device, sizeof(device));
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot find the device %s: %m",
			  spec);
		return r;
	}
	return 0;
}

static void
raw_close(void)
{
	bd_flusher_close(&flusher);
	if (fd >= 0)
		close(fd);
	fd = -1;
	free(bounce);
	bounce = NULL;
}

static void
raw_cleanup(int finishing_cycle)
{
	raw_close();
}

/* Open device: for writing exclusively (O_EXCL), refusing a device that
 * is mounted, held or an active swap area.  fd, or -errno (logged). */
static int
open_device(bool for_writing)
{
	int flags = for_writing ? O_RDWR : O_RDONLY;
	char why[512] = "";
	int f;

	if (!for_writing) {
		f = open(device, flags | O_CLOEXEC);
		direct = false;
	} else {
		f = bd_open_excl(device, flags | O_DIRECT, why, sizeof(why));
		direct = f >= 0;
		if (f == -EINVAL)	/* tmpfs: no O_DIRECT */
			f = bd_open_excl(device, flags, why, sizeof(why));
	}
	if (f == -EBUSY) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "refusing %s: it %s; the raw writer overwrites the whole device, so it must be one nobody uses (end that use: umount, swapoff; or name another device in [raw] device=)",
			  device, why);
		return f;
	}
	if (f < 0 && !for_writing)
		f = -errno;
	if (f == -ENOENT)
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			   "device %s does not exist: name a partition or an image file in [raw] device= (a new image file: umask 077; truncate -s SIZE %s)",
			   device, device);
	else if (f < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, f, "cannot open %s: %m", device);
	return f;
}

/* A regular file holds a copy of memory: it must be private.  Opened to
 * read, it may hold a stored session, which rm would throw away: then the
 * advice is to make it private and read it again. */
static int
check_regular(const struct stat *st, bool for_writing)
{
	const char *owner = geteuid() == 0 ? "root" : "this user";
	char why[512];
	int r = bd_check_private(st, why, sizeof(why));

	if (r < 0 && for_writing)
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "refusing image file %s: it %s; the image holds the whole memory, so it must be private to %s: remove it and create it again private (rm %s; umask 077; truncate -s SIZE %s), as chmod does not shut out a user who already has it open",
			  device, why, owner, device, device);
	else if (r < 0)
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "refusing image file %s: it %s; the image holds the whole memory, so it must be private to %s. It may hold a stored session: to keep it, make the file private (chmod 600 %s, and chown it to %s when another user owns it) and run this again; rm would throw the session away. Once it is resumed, create the file again private (rm %s; umask 077; truncate -s SIZE %s): chmod does not shut out a user who already has it open",
			  device, why, owner, device, owner, device, device);
	return r;
}

static int
raw_open(bool for_writing)
{
	struct stat st;
	int r;

	if (fd >= 0)
		return 0;
	fd = open_device(for_writing);
	if (fd < 0) {
		r = fd;
		fd = -1;
		return r;
	}
	if (fstat(fd, &st) < 0)
		goto fail;
	is_regular = S_ISREG(st.st_mode);
	if (S_ISBLK(st.st_mode)) {
		if (ioctl(fd, BLKGETSIZE64, &device_size) < 0)
			goto fail;
	} else if (is_regular) {
		device_size = (uint64_t)st.st_size;
		r = check_regular(&st, for_writing);
		if (r < 0) {
			raw_close();
			return r;
		}
	} else {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "%s is neither a block device nor a regular file",
			  device);
		raw_close();
		return -ENOTBLK;
	}
	if (posix_memalign((void **)&bounce, RAW_BLOCK, RAW_BLOCK) != 0) {
		bounce = NULL;
		raw_close();
		return -ENOMEM;
	}
	return 0;
fail:
	r = -errno;
	torpor_log(host, NAME, TORPOR_LOG_ERR, "cannot size %s: %m", device);
	raw_close();
	return r;
}

/* raw_open(), first closing an fd that does not suit: a read-only one for
 * writing, an O_DIRECT one for reading into the core's unaligned buffers
 * (the hibernating side reads its header back once the system resumed). */
static int
raw_reopen(bool for_writing)
{
	if (fd >= 0 && (for_writing ?
			!(fcntl(fd, F_GETFL) & (O_RDWR | O_WRONLY)) : direct))
		raw_close();
	return raw_open(for_writing);
}

/* Write len bytes at off (a block boundary); an unaligned tail goes
 * through the bounce block, zero-padded. */
static int
write_blocks(const void *buf, size_t len, uint64_t off)
{
	size_t whole = len / RAW_BLOCK * RAW_BLOCK;
	bool aligned = ((uintptr_t)buf % RAW_BLOCK) == 0;
	int r;

	if (whole && aligned) {
		r = bd_pwrite_full(fd, buf, whole, off);
		if (r < 0)
			return r;
	} else {
		for (size_t i = 0; i < whole; i += RAW_BLOCK) {
			memcpy(bounce, (const uint8_t *)buf + i, RAW_BLOCK);
			r = bd_pwrite_full(fd, bounce, RAW_BLOCK, off + i);
			if (r < 0)
				return r;
		}
	}
	if (len > whole) {
		memset(bounce, 0, RAW_BLOCK);
		memcpy(bounce, (const uint8_t *)buf + whole, len - whole);
		r = bd_pwrite_full(fd, bounce, RAW_BLOCK, off + whole);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Block 0: sig under magic (uuid: a consumed image's), or zeros. */
static int
write_block0(const struct raw_signature *sig, const char *magic,
	     const uint8_t *uuid)
{
	uint8_t *b = bounce;
	int r;

	memset(b, 0, RAW_BLOCK);
	if (sig) {
		memcpy(b, magic, 16);
		if (uuid)
			memcpy(b + RAW_USED_UUID_AT, uuid, 16);
		torpor_put_le32(b + RAW_SIG_VERSION_AT, RAW_SIG_VERSION);
		torpor_put_le64(b + RAW_SIG_STREAM_OFFSET_AT, sig->stream_offset);
		torpor_put_le64(b + RAW_SIG_STREAM_LENGTH_AT, sig->stream_length);
		torpor_put_le64(b + RAW_SIG_HEADER_OFFSET_AT, sig->header_offset);
		torpor_put_le64(b + RAW_SIG_HEADER_LENGTH_AT, sig->header_length);
		torpor_put_le32(b + RAW_SIG_CRC_AT,
				bd_crc_without(b, RAW_BLOCK, RAW_SIG_CRC_AT));
	}
	r = bd_pwrite_full(fd, b, RAW_BLOCK, 0);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	return r;
}

static int
write_signature(const struct raw_signature *sig)
{
	return write_block0(sig, RAW_MAGIC, NULL);
}

/* The bytes there are for the image: the device, or a file and the free
 * space of its filesystem (it may grow into it). */
static uint64_t
raw_room(void)
{
	uint64_t avail = device_size;
	struct statvfs sv;

	if (is_regular && fstatvfs(fd, &sv) == 0)
		avail += (uint64_t)sv.f_bavail * sv.f_frsize;
	return avail;
}

static int
raw_free_space(uint64_t *ret)
{
	uint64_t overhead = RAW_STREAM_OFFSET + TORPOR_IMAGE_MAX_HEADER, avail;
	int r = raw_reopen(false);

	if (r < 0)
		return r;
	avail = raw_room();
	*ret = avail > overhead ? avail - overhead : 0;
	return 0;
}

static int
raw_reserve(uint64_t expected)
{
	uint64_t need = RAW_STREAM_OFFSET + bd_round_up(expected, RAW_BLOCK) +
			TORPOR_IMAGE_MAX_HEADER;
	uint64_t avail;
	int r;

	r = raw_reopen(true);
	if (r < 0)
		return r;
	if (is_regular && host->snapshot_kind() == TORPOR_SNAPSHOT_KERNEL) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "%s is a regular file: after a real snapshot its filesystem must not be written, so the raw writer refuses it (use the file writer)",
			  device);
		return -EINVAL;
	}
	avail = raw_room();
	if (need > avail) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "need %" PRIu64 " MiB, %" PRIu64 " MiB free on %s",
			  (need + (1 << 20) - 1) >> 20, avail >> 20, device);
		return -ENOSPC;
	}
	/* An older image must not survive a cycle that fails half-way. */
	r = write_signature(NULL);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot write to %s: %m", device);
		return r;
	}
	written = 0;
	(void)bd_flusher_take_begun(&flusher);
	return 0;
}

static int
raw_write(const void *buf, size_t len)
{
	uint64_t off = RAW_STREAM_OFFSET + written;
	int r;

	/* The core writes in whole blocks until the last piece. */
	if (written % RAW_BLOCK) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "unaligned stream write after %" PRIu64 " bytes",
			  written);
		return -EINVAL;
	}
	if (!is_regular && off + len > device_size)
		return -ENOSPC;
	r = write_blocks(buf, len, off);
	if (r < 0) {
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "write to %s at %" PRIu64 " failed: %m",
			  device, off);
		return r;
	}
	written += len;
	bd_flusher_wrote(&flusher, fd, len);
	return 0;
}

static int
raw_commit(const void *header, size_t len)
{
	struct raw_signature sig = {
		.stream_offset = RAW_STREAM_OFFSET,
		.stream_length = written,
		.header_offset = bd_round_up(RAW_STREAM_OFFSET + written, RAW_BLOCK),
		.header_length = len,
	};
	int r;

	r = write_blocks(header, len, sig.header_offset);
	if (r == 0)
		r = bd_flusher_sync(&flusher, fd);
	/* Only a complete, synced image gets a signature. */
	if (r == 0)
		r = write_signature(&sig);
	if (r < 0)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "commit to %s failed: %m", device);
	else
		torpor_log(host, NAME, TORPOR_LOG_INFO, "early flushes of %s while writing: %u",
			  device, bd_flusher_take_begun(&flusher));
	found = sig;
	have_found = r == 0;
	if (is_regular)
		device_size = sig.header_offset + bd_round_up(len, RAW_BLOCK);
	return r;
}

static void
raw_abort(void)
{
	if (fd >= 0)
		write_signature(NULL);
	written = 0;
}

/* The pointers of a signature (or consumed) block; -EBADMSG when its
 * checksum or version is wrong. */
static int
decode_block0(const uint8_t *b, struct raw_signature *ret)
{
	ret->stream_offset = torpor_get_le64(b + RAW_SIG_STREAM_OFFSET_AT);
	ret->stream_length = torpor_get_le64(b + RAW_SIG_STREAM_LENGTH_AT);
	ret->header_offset = torpor_get_le64(b + RAW_SIG_HEADER_OFFSET_AT);
	ret->header_length = torpor_get_le64(b + RAW_SIG_HEADER_LENGTH_AT);
	if (torpor_get_le32(b + RAW_SIG_CRC_AT) !=
	    bd_crc_without(b, RAW_BLOCK, RAW_SIG_CRC_AT) ||
	    torpor_get_le32(b + RAW_SIG_VERSION_AT) != RAW_SIG_VERSION)
		return -EBADMSG;
	return 0;
}

static int
raw_find(void)
{
	uint8_t *b;
	int r;

	have_found = false;
	r = raw_reopen(false);
	if (r < 0)
		return r;
	if (device_size < RAW_BLOCK) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "%s is %" PRIu64 " bytes: too small to hold an image",
			  device, device_size);
		return -EINVAL;
	}
	b = bounce;
	r = bd_pread_full(fd, b, RAW_BLOCK, 0);
	if (r < 0)
		return r;
	if (memcmp(b, RAW_USED_MAGIC, 16) == 0)
		torpor_log(host, NAME, TORPOR_LOG_NOTICE, "%s holds only the record of an image that was already resumed (consumed): it is never resumed again",
			  device);
	if (memcmp(b, RAW_MAGIC, 16) != 0)
		return 0;
	if (decode_block0(b, &found) < 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "signature block of %s is corrupt (checksum or version)",
			  device);
		return 1;	/* an image is there: read_header refuses it */
	}
	have_found = true;
	return 1;
}

static bool
in_device(uint64_t off, uint64_t len)
{
	return off <= device_size && len <= device_size - off;
}

/*
 * Read from the read-only fd, O_DIRECT when the request allows it: the
 * stream's pieces (aligned, whole blocks, into aligned memory) then go
 * from the device to the caller without a copy through the page cache.
 * Anything else (the header, the stream's tail) is read through the page
 * cache, and so is everything where O_DIRECT is refused (tmpfs).
 */
static int
read_at(void *buf, size_t len, uint64_t off)
{
	bool want = off % RAW_BLOCK == 0 && len % RAW_BLOCK == 0 &&
		    (uintptr_t)buf % RAW_BLOCK == 0;
	int fl = fcntl(fd, F_GETFL), r;

	if (fl < 0)
		return -errno;
	if (!!(fl & O_DIRECT) != want &&
	    fcntl(fd, F_SETFL, want ? fl | O_DIRECT : fl & ~O_DIRECT) < 0) {
		if (!want)
			return -errno;
		want = false;
	}
	r = bd_pread_full(fd, buf, len, off);
	if (r == -EINVAL && want) {
		/* A logical block larger than ours: the page cache then. */
		if (fcntl(fd, F_SETFL, fl & ~O_DIRECT) < 0)
			return -errno;
		r = bd_pread_full(fd, buf, len, off);
	}
	return r;
}

static int
raw_read_header(void *buf, size_t size, size_t *ret_len)
{
	if (!have_found)
		return -EBADMSG;
	if (found.header_length == 0 || found.header_length > size ||
	    !in_device(found.header_offset, found.header_length) ||
	    !in_device(found.stream_offset, found.stream_length) ||
	    found.stream_offset < RAW_BLOCK) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "signature of %s points outside the device (header %" PRIu64 "+%" PRIu64 ", stream %" PRIu64 "+%" PRIu64 ", device %" PRIu64 " bytes)",
			  device, found.header_offset, found.header_length,
			  found.stream_offset, found.stream_length, device_size);
		return -EBADMSG;
	}
	if (raw_reopen(false) < 0)
		return -EIO;
	*ret_len = found.header_length;
	return read_at(buf, found.header_length, found.header_offset);
}

static int
raw_read(uint64_t offset, void *buf, size_t len)
{
	if (!have_found || offset > found.stream_length ||
	    len > found.stream_length - offset)
		return -ENODATA;
	if (raw_reopen(false) < 0)
		return -EIO;
	return read_at(buf, len, found.stream_offset + offset);
}

static int
raw_invalidate(void)
{
	int r;

	r = raw_reopen(true);
	if (r < 0)
		return r;
	/* found stays known: the resume side rewrites the header's
	 * statistics slot after invalidating. */
	return write_signature(NULL);
}

/* The image found at resume stays readable under a consumed block. */
static int
raw_consume(const uint8_t uuid[16])
{
	int r = raw_reopen(true);

	if (r < 0)
		return r;
	return write_block0(have_found ? &found : NULL, RAW_USED_MAGIC, uuid);
}

/* Block 0's consumed record of uuid, then the header it points at, both
 * read O_DIRECT (aligned, whole blocks): past the page cache. */
static int
raw_read_consumed(const uint8_t uuid[16], void *buf, size_t size,
		  size_t *ret_len)
{
	struct raw_signature sig;
	uint8_t *hb;
	size_t n;
	int r = raw_reopen(false);

	if (r == 0)
		r = read_at(bounce, RAW_BLOCK, 0);
	if (r < 0)
		return r;
	if (memcmp(bounce, RAW_USED_MAGIC, 16) != 0)
		return -ENOENT;
	if (decode_block0(bounce, &sig) < 0)
		return -EBADMSG;
	if (memcmp(bounce + RAW_USED_UUID_AT, uuid, 16) != 0)
		return -ESTALE;
	if (sig.header_length == 0 || sig.header_offset % RAW_BLOCK ||
	    !in_device(sig.header_offset, sig.header_length))
		return -EBADMSG;
	if (sig.header_length > size)
		return -EMSGSIZE;
	n = bd_round_up(sig.header_length, RAW_BLOCK);
	if (posix_memalign((void **)&hb, RAW_BLOCK, n) != 0)
		return -ENOMEM;
	r = in_device(sig.header_offset, n) ?
	    read_at(hb, n, sig.header_offset) :
	    read_at(hb, sig.header_length, sig.header_offset);
	if (r == 0) {
		memcpy(buf, hb, sig.header_length);
		*ret_len = sig.header_length;
	}
	free(hb);
	return r;
}

static int
raw_rewrite_header(const void *header, size_t len)
{
	int r;

	if (!have_found || len != found.header_length)
		return -EINVAL;
	r = raw_reopen(true);
	if (r < 0)
		return r;
	r = write_blocks(header, len, found.header_offset);
	if (r == 0 && fdatasync(fd) < 0)
		r = -errno;
	return r;
}

static int
raw_resume_args(char *buf, size_t size)
{
	int n = snprintf(buf, size, "resume=%s", device);

	return n < 0 || (size_t)n >= size ? -ENOBUFS : 0;
}

static int
raw_print_debug_info(char *buf, size_t size)
{
	return torpor_filter_print(buf, size, "device %s",
				   device[0] ? device : "(unset)");
}

static int
raw_load(const struct torpor_host *h)
{
	host = h;
	return 0;
}

static const struct torpor_writer raw_plugin = {
	.plugin = {
		.name = NAME,
		.description = "writes the image to a dedicated block device",
		.config_keys = raw_keys,
		.load = raw_load,
		.initialise = raw_initialise,
		.cleanup = raw_cleanup,
		.print_debug_info = raw_print_debug_info,
	},
	.reserve = raw_reserve,
	.write = raw_write,
	.commit = raw_commit,
	.abort = raw_abort,
	.find = raw_find,
	.read_header = raw_read_header,
	.read = raw_read,
	.invalidate = raw_invalidate,
	.rewrite_header = raw_rewrite_header,
	.resume_args = raw_resume_args,
	.free_space = raw_free_space,
	.consume = raw_consume,
	.read_consumed = raw_read_consumed,
};

TORPOR_WRITER_REGISTER(raw_plugin)
