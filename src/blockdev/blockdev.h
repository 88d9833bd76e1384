/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor-blockdev: the block-device library.  The swap, file and raw
 * writers link it (a static, position-independent library), and so do
 * `torpor file-setup` and the core, whose resolve_device and
 * resume_location host services are bd_resolve().  Nothing here logs:
 * functions return -errno and, where the reason is not obvious from the
 * errno, write one into a caller's buffer; the caller decides what to say.
 *
 * One header for the whole library: its areas share struct bd_dev and
 * struct bd_map, and a writer uses nearly all of them.  The sources are
 * split by area: names.c, io.c, run-list.c, image-layout.c (blob, index,
 * image read back), file-map.c, stream.c and writer.c (what the swap and
 * file writers share).
 *
 * The swap and file writers keep the image at physical byte offsets of
 * one block device, described by a run list (struct bd_map).  The resume
 * side knows only the device and the offset of a signature; everything
 * else is found by following pointers written by the hibernating side:
 *
 *   signature --> index block (one 4 KiB block: where the header lies)
 *             --> image header (its writer blob: the data stream's runs)
 *             --> data stream.
 */
#ifndef TORPOR_BLOCKDEV_H
#define TORPOR_BLOCKDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <torpor/plugin.h>

/* Every offset the writers use is a multiple of this, and so is the unit
 * of O_DIRECT I/O (it covers every logical block size up to 4 KiB). */
#define BD_BLOCK 4096u

/* Largest single transfer, and the size of each device's bounce buffer. */
#define BD_IO_MAX (1u << 20)

/* The smallest image file: [file] size, file-setup --size and setup
 * --size, as torpor-plugins(7) and torpor(8) say ("at least 1M"). */
#define BD_FILE_MIN_SIZE (1u << 20)

/* ---- naming devices ------------------------------------------------------ */

/*
 * Turn a device specification (a path, UUID=, LABEL=, PARTUUID=,
 * PARTLABEL=, or MAJ:MIN) into a /dev path in buf.  Tries /dev/disk/by-*
 * first and otherwise scans /sys/class/block, reading the superblocks of
 * swap areas (including ones that carry torpor's signature), ext2/3/4, xfs
 * and btrfs, and GPT partition entries.  -ENODEV when nothing matches.
 */
int bd_resolve(const char *spec, char *buf, size_t size);

/* bd_resolve() of UUID= with these 16 bytes; -ENODEV when no device has
 * it. */
int bd_resolve_uuid(const uint8_t uuid[16], char *buf, size_t size);

/* bd_resolve(), then the number of the block device it names into *ret:
 * -ENOTBLK when the path is something else. */
int bd_resolve_dev(const char *spec, char *buf, size_t size, dev_t *ret);

/* The /dev path of block device dev (via /sys/dev/block/MAJ:MIN/uevent). */
int bd_devnode(dev_t dev, char *buf, size_t size);

/* The kernel's new_encode_dev() form of dev, as SNAPSHOT_SET_SWAP_AREA
 * wants it. */
uint32_t bd_kernel_dev(dev_t dev);

/*
 * The UUID (swap area or filesystem) of the block device at path, as the
 * kernel's resume= accepts it ("01234567-89ab-..."), into buf.  -ENOENT
 * when the device has none that we recognise.
 */
int bd_uuid_of(const char *path, char *buf, size_t size);

/* A 16-byte UUID as text ("01234567-89ab-..."; buf of 37 bytes or more). */
void bd_format_uuid(const uint8_t u[16], char *buf, size_t size);

/* ---- ext2/3/4 superblocks (the root-filesystem guard) -------------------- */

/* Bytes from the start of the device that hold the superblock. */
#define BD_EXT_SUPER_END 2048u

/* What says whether an ext filesystem was mounted since a moment: the
 * kernel sets both at every read-write mount (a resume does not mount). */
struct bd_ext_super {
	uint8_t uuid[16];
	uint64_t mtime;		/* s_mtime with s_mtime_hi: unix time */
	uint16_t mnt_count;	/* s_mnt_count */
};

/* The superblock in the first len bytes of a device: -ENODATA when len is
 * short of BD_EXT_SUPER_END, -ENOENT when it is not ext2/3/4. */
int bd_ext_super_parse(const uint8_t *buf, size_t len,
		       struct bd_ext_super *ret);

/* Read (read-only, BD_EXT_SUPER_END bytes) and parse the device's. */
int bd_ext_super_read(const char *dev_path, struct bd_ext_super *ret);

/* The ext filesystem mounted at path: its device (found from st_dev via
 * /sys/dev/block) into dev_buf and its superblock.  -EMEDIUMTYPE when the
 * filesystem is not ext2/3/4, -ENODEV when it is not on a block device. */
int bd_ext_super_of_path(const char *path, char *dev_buf, size_t dev_size,
			 struct bd_ext_super *ret);

/* The block device holding the ext filesystem with that UUID (as
 * bd_resolve() finds UUID=, bounded by the devices there are) and its
 * superblock; -ENODEV when no such filesystem is visible. */
int bd_ext_super_find(const uint8_t uuid[16], char *dev_buf, size_t dev_size,
		      struct bd_ext_super *ret);

/* Bytes of a btrfs superblock read (its primary copy, at 64 KiB). */
#define BD_BTRFS_SUPER_LEN 4096u

/* What says whether a btrfs filesystem was written since a moment: its
 * generation (every transaction commit adds one; a read-write mount
 * commits at the latest when unmounted), and whether a tree log (an fsync
 * since the last commit) waits to be replayed.  A resume writes neither. */
struct bd_btrfs_super {
	uint8_t fsid[16];
	uint64_t generation;
	bool log_pending;
};

/* The superblock in buf, BD_BTRFS_SUPER_LEN bytes read at 64 KiB of the
 * device: -ENODATA when len is short, -ENOENT when it is not btrfs's. */
int bd_btrfs_super_parse(const uint8_t *buf, size_t len,
			 struct bd_btrfs_super *ret);

/* Read (read-only, O_DIRECT: what the disk holds) and parse the device's. */
int bd_btrfs_super_read(const char *dev_path, struct bd_btrfs_super *ret);

/* The btrfs filesystem mounted at path: its one device into dev_buf and
 * its superblock.  -EMEDIUMTYPE when it is not btrfs, -EXDEV when it has
 * several devices. */
int bd_btrfs_super_of_path(const char *path, char *dev_buf, size_t dev_size,
			   struct bd_btrfs_super *ret);

/* A block device holding the btrfs filesystem with that fsid (as
 * bd_resolve() finds UUID=) and its superblock; -ENODEV when none is
 * visible. */
int bd_btrfs_super_find(const uint8_t fsid[16], char *dev_buf,
			size_t dev_size, struct bd_btrfs_super *ret);

/* ---- I/O ----------------------------------------------------------------- */

/* How a device is opened: read-only; writable beside others (the device
 * under a mounted filesystem that holds an image file or swap file, or an
 * active swap area the kernel allocates from, whose writes the kernel
 * itself guards); writable and exclusive (O_EXCL: refused while it is
 * mounted, held or an active swap area, see bd_open_excl). */
enum bd_mode { BD_RDONLY, BD_SHARED, BD_EXCL };

/*
 * Early flushes of a long stream of writes to one fd.  Once `every` bytes
 * (0: BD_FLUSH_EVERY) have been written since the last flush began, one
 * more begins without being waited for: an AIO fdatasync, which a kernel
 * worker carries out while the stream goes on, so that the device's write
 * cache drains behind the writes and the flush that makes the image valid
 * has little left to wait for.  Correctness never rests on them: that
 * last flush still covers everything.  Where AIO is refused (no
 * CONFIG_AIO, aio-max-nr reached, an fd without fsync) nothing is flushed
 * early.  All zero is a flusher with nothing under way.
 */
#define BD_FLUSH_EVERY (64u << 20)

struct bd_flusher {
	unsigned long ctx;	/* aio_context_t; 0: none yet */
	bool refused;		/* io_setup or a submission failed */
	bool busy;		/* a flush is under way */
	int err;		/* the first early flush that failed */
	uint64_t unflushed;	/* bytes written since the last one began */
	uint64_t every;
	unsigned begun;		/* early flushes begun */
};

/* n more bytes were written to fd: begin an early flush when it is due. */
void bd_flusher_wrote(struct bd_flusher *f, int fd, uint64_t n);

/* Wait for the early flush under way, if any: 0, or the error of the
 * first one that failed since the last call. */
int bd_flusher_wait(struct bd_flusher *f);

/* The flush that makes a stream durable: wait as above, then fdatasync(fd)
 * (not called when an early flush failed: its error is returned). */
int bd_flusher_sync(struct bd_flusher *f, int fd);

/* The early flushes begun since the last call (a cycle's, for its log). */
unsigned bd_flusher_take_begun(struct bd_flusher *f);

/* Wait as above, release the AIO context, and zero f. */
void bd_flusher_close(struct bd_flusher *f);

struct bd_dev {
	int fd;			/* O_DIRECT */
	bool writable;
	enum bd_mode mode;
	uint64_t size;		/* bytes */
	uint8_t *bounce;	/* BD_IO_MAX bytes, BD_BLOCK aligned */
	char path[256];
	struct bd_flusher flusher; /* bd_flush_behind() */
};

void bd_init(struct bd_dev *d);

/* Open a block device for O_DIRECT I/O in mode.  -ENOTBLK when path is
 * not a block device, -ENXIO when it has size 0 (a detached loop device),
 * -EBUSY (BD_EXCL) when someone else uses it, with the reason in why
 * (why may be NULL). */
int bd_open(struct bd_dev *d, const char *path, enum bd_mode mode,
	    char *why, size_t why_size);

void bd_close(struct bd_dev *d);

/* Keep d when it is open on path in mode or a stronger one, else
 * (re)open it. */
int bd_reopen(struct bd_dev *d, const char *path, enum bd_mode mode,
	      char *why, size_t why_size);

/* Read len bytes at any byte offset into any buffer. */
int bd_read(struct bd_dev *d, uint64_t off, void *buf, size_t len);

/* Write len bytes at off; off must be a multiple of 512.  A length that is
 * not a multiple of 512 is padded with zeros up to the next one. */
int bd_write(struct bd_dev *d, uint64_t off, const void *buf, size_t len);

/* Flush the device's write cache, after the early flush under way (whose
 * error it returns first). */
int bd_sync(struct bd_dev *d);

/* n more bytes of a long stream were written to d: flush early when it is
 * due (struct bd_flusher). */
void bd_flush_behind(struct bd_dev *d, uint64_t n);

/* pread / pwrite all of len bytes at off of any fd, across short
 * transfers and EINTR; -ENODATA when a read meets the end. */
int bd_pread_full(int fd, void *buf, size_t len, uint64_t off);
int bd_pwrite_full(int fd, const void *buf, size_t len, uint64_t off);

/* ---- run lists ----------------------------------------------------------- */

struct bd_run {
	uint64_t phys;		/* byte offset on the device */
	uint64_t len;		/* bytes */
};

struct bd_map {
	struct bd_run *runs;
	size_t n, cap;
	uint64_t total;		/* sum of len */
};

void bd_map_clear(struct bd_map *m);

/* Append [phys, phys + len), merging with the last run when contiguous. */
int bd_map_add(struct bd_map *m, uint64_t phys, uint64_t len);

/* Physical runs of logical bytes [off, off + len) of m, appended to out. */
int bd_map_slice(const struct bd_map *m, uint64_t off, uint64_t len,
		 struct bd_map *out);

/* Read or write logical bytes [off, off + len) of m through d.  Writes
 * need every run boundary they cross on a 512-byte boundary. */
int bd_map_read(struct bd_dev *d, const struct bd_map *m, uint64_t off,
		void *buf, size_t len);
int bd_map_write(struct bd_dev *d, const struct bd_map *m, uint64_t off,
		 const void *buf, size_t len);

/* Check that every run lies inside a device of dev_size bytes. */
bool bd_map_inside(const struct bd_map *m, uint64_t dev_size);
/* The first run of m that does not; m->n when every run does. */
size_t bd_map_first_outside(const struct bd_map *m, uint64_t dev_size);

/*
 * The writer blob: a run list and the stream length, little-endian:
 *   0 magic "TPRM"  4 version u32  8 stream length u64  16 n runs u32
 *   20 crc32c u32 (of the whole blob with this field zero)
 *   24 runs[n] { phys u64, len u64 }
 */
size_t bd_map_blob_size(size_t n_runs);
/* The blob's length in bytes, or -ENOBUFS when size is too small. */
int bd_map_save(const struct bd_map *m, uint64_t stream_len, uint8_t *buf,
		size_t size);
/* 0 and *ret (free with bd_map_clear), or -EBADMSG when the blob is not
 * one or does not check out. */
int bd_map_load(const uint8_t *buf, size_t len, struct bd_map *ret,
		uint64_t *ret_stream_len);

/* ---- the index block ----------------------------------------------------- */

/*
 * One BD_BLOCK block that says where the image header lies.  The swap
 * writer keeps it in a swap page and points at it from the swap header's
 * tail; the file writer keeps it in the file's first block, where it is
 * the signature itself.
 *   0 magic[8]   8 version u32   12 crc32c u32 (of the block, field zero)
 *  16 header length u64   24 n runs u32   28 flags u32
 *  32 saved[64]: the swap header's original tail (restored by invalidate)
 *  96 image uuid[16] (informational)   112 reserved
 * 128 runs[n] { phys u64, len u64 }, at most BD_INDEX_MAX_RUNS
 */
#define BD_INDEX_MAX_RUNS ((BD_BLOCK - 128) / 16)
#define BD_INDEX_SAVED 64

struct bd_index {
	uint64_t header_len;
	uint8_t saved[BD_INDEX_SAVED];
	struct bd_map header;	/* where the header lies */
};

void bd_index_encode(const struct bd_index *ix, const char magic[8],
		     uint8_t *block);

/* 0 and *ret filled (free ret->header with bd_map_clear), -ENOENT when
 * the magic does not match, -EBADMSG when it matches but the block is
 * corrupt. */
int bd_index_decode(const uint8_t *block, const char magic[8],
		    struct bd_index *ret);

/* Read and decode the index block at byte at of d: as bd_index_decode,
 * and -ERANGE when the block does not lie inside d on a 512-byte
 * boundary. */
int bd_index_read(struct bd_dev *d, uint64_t at, const char magic[8],
		  struct bd_index *ret);

/* Encode ix (NULL: a zeroed block) at byte at of d and sync. */
int bd_index_write(struct bd_dev *d, uint64_t at, const char magic[8],
		   const struct bd_index *ix);

/* CRC32C of len bytes of buf, with the 4-byte field at field_at (where
 * the CRC itself is kept) read as zeros. */
uint32_t bd_crc_without(const uint8_t *buf, size_t len, size_t field_at);

/* ---- writing a stream in whole blocks ------------------------------------ */

/*
 * The data stream on its way to the device, in whole units (a page for
 * swap, a block for file): allocation and O_DIRECT both want them.  The
 * core hands write() buffers aligned to TORPOR_WRITE_ALIGN and lengths that
 * are multiples of it until the last call (plugin.h), so whole units go to
 * emit straight from the caller's buffer, without a copy; only a partial
 * unit at the end is kept, in a tail of one unit that bd_stream_flush()
 * zero-pads.  Input that breaks the contract (data after a partial unit,
 * a misaligned buffer) is still written correctly, through the tail and
 * bd_write()'s bounce buffer, only slower.
 */
typedef int (*bd_emit_fn)(void *ctx, const uint8_t *p, size_t n);

struct bd_stream {
	size_t unit;
	uint8_t *tail;		/* unit bytes, aligned, on first need */
	size_t tail_len;
	uint64_t written;	/* bytes accepted */
};

/* Start an empty stream of units of unit bytes (a multiple of BD_BLOCK). */
void bd_stream_start(struct bd_stream *s, size_t unit);
void bd_stream_free(struct bd_stream *s);
int bd_stream_write(struct bd_stream *s, const void *buf, size_t len,
		    bd_emit_fn emit, void *ctx);
/* Emit what is pending, zero-padded to a unit. */
int bd_stream_flush(struct bd_stream *s, bd_emit_fn emit, void *ctx);

/* ---- reading an image back ----------------------------------------------- */

/* What find() located and load_config() restored. */
struct bd_image {
	bool found;		/* a signature is there */
	bool corrupt;		/* ... but what it points at does not parse */
	struct bd_index ix;
	struct bd_map stream;	/* from the writer blob */
	uint64_t stream_len;
	bool have_stream;
};

void bd_image_clear(struct bd_image *im);

/* What commit() just wrote, readable at once (the simulated cycle goes on
 * as after a resume): im takes over ix->header and *stream. */
void bd_image_committed(struct bd_image *im, struct bd_index *ix,
			struct bd_map *stream, uint64_t stream_len);
int bd_image_read_header(struct bd_dev *d, const struct bd_image *im,
			 void *buf, size_t size, size_t *ret_len);
/*
 * The writer blob of a stored image (load_config()), checked whole before
 * anything is read: every run it names must lie inside d.  -EBADMSG (an
 * image to refuse) with why, a phrase for "its saved layout ...", when
 * the blob does not parse or a run lies past the device's end.
 */
int bd_image_load_config(const struct bd_dev *d, struct bd_image *im,
			 const uint8_t *buf, size_t len, char *why,
			 size_t why_size);
int bd_image_read(struct bd_dev *d, const struct bd_image *im,
		  uint64_t off, void *buf, size_t len);
int bd_image_rewrite_header(struct bd_dev *d, const struct bd_image *im,
			    const void *header, size_t len);

/* ---- files --------------------------------------------------------------- */

/*
 * The physical runs of file bytes [0, len) of the open file fd, from
 * FIEMAP (synced first).  Returns -EBADFD when an extent's block map cannot
 * be trusted (unknown, delayed allocation, encoded, inline, not aligned,
 * unwritten, shared) or the file has holes, with the reason in why.
 */
int bd_file_map(int fd, uint64_t len, struct bd_map *ret, char *why,
		size_t why_size);

/*
 * Where the bytes [0, len) of file fd lie: the block device that holds
 * them (its /dev path in node, its number in *ret_dev) and the runs on
 * it.  bd_file_map() and the device under the filesystem; on btrfs the
 * filesystem's one device and the chunk tree's places (btrfs.c).
 * allow_unwritten: take extents allocated and never written (a swap file
 * made with fallocate, which the kernel's swapon takes too: what is
 * written and read back goes through the device, never the filesystem).
 */
int bd_file_place(int fd, uint64_t len, bool allow_unwritten,
		  struct bd_map *ret, char *node, size_t node_size,
		  dev_t *ret_dev, char *why, size_t why_size);

/* Why a file on the filesystem of fd cannot hold an image whose block
 * map must stay put (tmpfs, ZFS, a copy-on-write or compressed file on
 * btrfs, btrfs over several devices, ...): 0 when acceptable, else
 * -EXDEV with the reason in why. */
int bd_check_fs(int fd, char *why, size_t why_size);

/* The same for a filesystem of type f_type (statfs), before any file
 * exists on it. */
int bd_check_fs_type(unsigned long f_type, char *why, size_t why_size);

/* ---- files on btrfs (btrfs.c) ------------------------------------------- */

/*
 * FIEMAP on btrfs gives logical addresses, which the chunk tree places on
 * the filesystem's devices.  A file there can hold an image when the
 * filesystem has one device, the file is NOCOW and not compressed, and
 * its data chunks are of the single profile.
 */

/* The one device of the btrfs filesystem of fd: its id and /dev path.
 * -EXDEV with the reason when it has several. */
int bd_btrfs_device(int fd, uint64_t *ret_devid, char *node, size_t node_size,
		    char *why, size_t why_size);

/* Make the empty file fd NOCOW when it is on btrfs, as a file must be
 * from its creation to be written in place; 0 elsewhere or when it is
 * not empty (bd_check_fs() then says what is wrong). */
int bd_btrfs_make_nocow(int fd, char *why, size_t why_size);

/* 0 when file fd is NOCOW and not compressed, else -EXDEV and why. */
int bd_btrfs_file_check(int fd, char *why, size_t why_size);

/* The physical runs on device devid of the logical runs of *logical
 * (from bd_file_map() on a btrfs file), through the chunk tree (needs
 * CAP_SYS_ADMIN).  -EXDEV and why when a run lies in a chunk that is not
 * single-profile data on that device. */
int bd_btrfs_to_physical(int fd, uint64_t devid, const struct bd_map *logical,
			 struct bd_map *ret, char *why, size_t why_size);

/* ---- in use by someone else; private files ------------------------------ */

/*
 * Whether the block device or regular file st describes is someone
 * else's: for a block device, when it or (a whole disk) one of its
 * partitions is mounted, has holders (device-mapper, md: holders/ in
 * sysfs) or is an active swap area; for a regular file, when it is an
 * active swap file.  1 with the reason in why ("is mounted on /mnt",
 * "partition loop0p1 is an active swap area", ...), 0 when not, -errno.
 */
int bd_in_use(const struct stat *st, char *why, size_t why_size);

/* bd_in_use() reading other places than /sys, /proc/self/mountinfo and
 * /proc/swaps (the tests). */
struct bd_sys_paths {
	const char *sys, *mountinfo, *swaps;
};
int bd_in_use_at(const struct bd_sys_paths *p, const struct stat *st,
		 char *why, size_t why_size);

/*
 * open(path, flags | O_EXCL | O_CLOEXEC) for writing a device directly:
 * an fd, or -EBUSY with the reason in why when the kernel refuses the
 * exclusive open or bd_in_use() finds a user (mounted, held, active
 * swap), or another -errno from open.  (Without O_CREAT, Linux ignores
 * O_EXCL on anything but a block device.)
 */
int bd_open_excl(const char *path, int flags, char *why, size_t why_size);

/*
 * A file that holds a copy of memory (an image file, a swap file, the raw
 * writer's file) must be a regular file owned by the user torpor runs as
 * (root) without any permission for group or others: 0, else -EPERM (or
 * -EINVAL: not a regular file) with the reason in why.
 */
int bd_check_private(const struct stat *st, char *why, size_t why_size);

/* ---- what the swap and file writers share -------------------------------- */

/* The unit of swap pages and of resume_offset=: the page size, at least
 * BD_BLOCK. */
uint32_t bd_page_size(void);

/*
 * The image location the kernel command line gives (the host's
 * resume_location service): 1 with the block device's path in dev, its
 * number in *ret_rdev and the signature's byte offset in *ret_offset; 0
 * when the command line names none; -ENOTBLK when it names something that
 * is not a block device (with the path in dev); another -errno (logged by
 * the host) when it cannot be found.
 */
int bd_resume_location(const struct torpor_host *host, char *dev,
		       size_t size, dev_t *ret_rdev, uint64_t *ret_offset);

/* The kernel command line words that find an image whose signature is at
 * byte offset (a multiple of page) of dev_path: resume=UUID=... when the
 * device has a UUID, else resume=PATH, then resume_offset=PAGES unless
 * offset is 0.  -ENOBUFS when buf is too small. */
int bd_resume_words(const char *dev_path, uint64_t offset, uint32_t page,
		    char *buf, size_t size);

/* swapon, blkid and the filesystem read a file through its page cache,
 * which did not see the writes to the device below: drop it, through fd
 * when it is open (>= 0), else when path names an existing regular file.
 * A path is looked up: never after the snapshot, when the kernel's
 * freezable workqueues stay frozen and a lookup that must read the
 * filesystem (btrfs: its tree blocks, whose reads those workqueues end)
 * waits for them forever; a writer holds the file open from its mapping
 * on and passes that fd. */
void bd_drop_cache(int fd, const char *path);

/* ---- small helpers ------------------------------------------------------- */

uint64_t bd_round_up(uint64_t v, uint64_t to);

/* Whether the n bytes at p are all zero. */
bool bd_all_zero(const uint8_t *p, size_t n);

/* The first size - 1 bytes of a small file (sysfs), NUL-terminated. */
int bd_read_text(const char *path, char *buf, size_t size);

/*
 * Whether dev (/dev/dm-N or /dev/mapper/NAME) is a dm-crypt mapping that
 * /etc/crypttab opens with a new random key at each boot (key file
 * /dev/urandom, /dev/random or /dev/hw_random): 1, with its crypttab
 * words (name, source, key) in entry; else 0.  root prefixes /sys and
 * /etc ("" for the running system; a test root).
 */
int bd_random_key_swap(const char *root, const char *dev, char *entry, size_t size);

/* What lies under a block device (src/blockdev/dm.c): the dm-crypt
 * mappings and the LVM logical volumes, by their device-mapper names, the
 * device's own first, then down its slaves. */
#define BD_DM_STACK_MAX 4
struct bd_dm_stack {
	char crypt[BD_DM_STACK_MAX][128];
	unsigned n_crypt;
	char lvm[BD_DM_STACK_MAX][128];
	unsigned n_lvm;
};

/* Fill st for dev (none found: all zero).  root prefixes /sys ("" for
 * the running system). */
void bd_dm_stack(const char *root, dev_t dev, struct bd_dm_stack *st);

#endif
