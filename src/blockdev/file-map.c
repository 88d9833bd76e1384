/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files whose blocks hold an image: their block map (FIEMAP) and the
 * filesystems whose block maps cannot be trusted; see file-map.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>

#include "btrfs.h"
#include "device-names.h"
#include "file-map.h"
#include "run-list.h"


static const struct {
	uint32_t flag;
	const char *why;
} untrusted_extents[] = {
	{ FIEMAP_EXTENT_UNKNOWN, "has an extent whose location is unknown" },
	{ FIEMAP_EXTENT_DELALLOC, "has an extent not yet allocated (delayed allocation)" },
	{ FIEMAP_EXTENT_ENCODED, "has an encoded (compressed) extent" },
	{ FIEMAP_EXTENT_DATA_ENCRYPTED, "has an encrypted extent" },
	{ FIEMAP_EXTENT_NOT_ALIGNED, "has an extent that is not block aligned" },
	{ FIEMAP_EXTENT_DATA_INLINE, "keeps data inline in its metadata" },
	{ FIEMAP_EXTENT_DATA_TAIL, "packs its tail with other files' data" },
	{ FIEMAP_EXTENT_UNWRITTEN, "has an unwritten extent (allocated by fallocate, never written): run 'torpor file-setup' to write it once" },
	{ FIEMAP_EXTENT_SHARED, "shares an extent with another file (reflink or snapshot): writing it would change the other file too" },
};

static int
file_map(int fd, uint64_t len, bool allow_unwritten, struct bd_map *ret,
	 char *why, size_t why_size)
{
	const unsigned count = 256;
	struct fiemap *fm;
	struct bd_map m = { 0 };
	uint64_t next = 0;
	bool last = false;
	int r = 0;

	fm = calloc(1, sizeof(*fm) + count * sizeof(struct fiemap_extent));
	if (!fm)
		return -ENOMEM;
	while (next < len && !last) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = next;
		fm->fm_length = len - next;
		fm->fm_flags = FIEMAP_FLAG_SYNC;
		fm->fm_extent_count = count;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
			r = -errno;
			snprintf(why, why_size, "its block map cannot be read (FIEMAP: %s)",
				 strerror(errno));
			goto out;
		}
		if (fm->fm_mapped_extents == 0)
			break;
		for (unsigned i = 0; i < fm->fm_mapped_extents && next < len; i++) {
			const struct fiemap_extent *e = &fm->fm_extents[i];
			uint64_t skip, n;

			for (size_t k = 0; k < sizeof(untrusted_extents) /
			     sizeof(untrusted_extents[0]); k++) {
				if (allow_unwritten && untrusted_extents[k].flag ==
				    FIEMAP_EXTENT_UNWRITTEN)
					continue;
				if (e->fe_flags & untrusted_extents[k].flag) {
					snprintf(why, why_size, "%s (at byte %llu)",
						 untrusted_extents[k].why,
						 (unsigned long long)e->fe_logical);
					r = -EBADFD;
					goto out;
				}
			}
			if (e->fe_logical > next) {
				snprintf(why, why_size,
					 "has a hole at byte %" PRIu64 ": run 'torpor file-setup' to allocate and write it",
					 next);
				r = -EBADFD;
				goto out;
			}
			if (e->fe_logical + e->fe_length <= next)
				continue;
			skip = next - e->fe_logical;
			n = e->fe_length - skip;
			if (n > len - next)
				n = len - next;
			r = bd_map_add(&m, e->fe_physical + skip, n);
			if (r < 0)
				goto out;
			next += n;
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
		}
	}
	if (next < len) {
		snprintf(why, why_size,
			 "has a hole at byte %" PRIu64 ": run 'torpor file-setup' to allocate and write it",
			 next);
		r = -EBADFD;
	}
out:
	free(fm);
	if (r < 0) {
		bd_map_clear(&m);
		return r;
	}
	*ret = m;
	return 0;
}

int
bd_file_map(int fd, uint64_t len, struct bd_map *ret, char *why,
	    size_t why_size)
{
	return file_map(fd, len, false, ret, why, why_size);
}

#ifndef BCACHEFS_SUPER_MAGIC
#define BCACHEFS_SUPER_MAGIC 0xca451a4e
#endif
#ifndef ZFS_SUPER_MAGIC
#define ZFS_SUPER_MAGIC 0x2fc12fc1
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

int
bd_check_fs_type(unsigned long f_type, char *why, size_t why_size)
{
	static const struct {
		unsigned long magic;
		const char *why;
	} refused[] = {
		{ TMPFS_MAGIC, "is on tmpfs: its pages live in memory and have no place on a disk" },
		{ RAMFS_MAGIC, "is on ramfs: its pages live in memory and have no place on a disk" },
		{ BCACHEFS_SUPER_MAGIC, "is on bcachefs, whose copy-on-write moves blocks" },
		{ ZFS_SUPER_MAGIC, "is on ZFS, whose copy-on-write moves blocks" },
		{ OVERLAYFS_SUPER_MAGIC, "is on overlayfs: name the file on its underlying filesystem" },
		{ NFS_SUPER_MAGIC, "is on NFS: it has no local block device" },
		{ FUSE_SUPER_MAGIC, "is on a FUSE filesystem: it has no block map" },
		{ SQUASHFS_MAGIC, "is on squashfs, which is read-only and compressed" },
	};

	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if (f_type == refused[i].magic) {
			snprintf(why, why_size, "%s", refused[i].why);
			return -EXDEV;
		}
	}
	return 0;
}

int
bd_check_fs(int fd, char *why, size_t why_size)
{
	struct statfs sf;
	struct stat st;
	char node[256];
	int r;

	if (fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0) {
		int e = errno;

		snprintf(why, why_size, "cannot be inspected: %s", strerror(e));
		return -e;
	}
	r = bd_check_fs_type((unsigned long)sf.f_type, why, why_size);
	if (r < 0)
		return r;
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "is not a regular file");
		return -EXDEV;
	}
	if ((unsigned long)sf.f_type == BTRFS_SUPER_MAGIC) {
		uint64_t devid;

		r = bd_btrfs_file_check(fd, why, why_size);
		if (r == 0)
			r = bd_btrfs_device(fd, &devid, node, sizeof(node), why,
					    why_size);
		return r;
	}
	if (bd_devnode(st.st_dev, node, sizeof(node)) < 0) {
		snprintf(why, why_size,
			 "lives on device %u:%u, which is not a block device with a node in /dev",
			 major(st.st_dev), minor(st.st_dev));
		return -EXDEV;
	}
	return 0;
}

int
bd_file_place(int fd, uint64_t len, bool allow_unwritten, struct bd_map *ret,
	      char *node, size_t node_size, dev_t *ret_dev, char *why,
	      size_t why_size)
{
	struct bd_map logical = { 0 };
	struct statfs sf;
	struct stat st;
	uint64_t devid;
	int r;

	if (fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0) {
		int e = errno;

		snprintf(why, why_size, "cannot be inspected: %s", strerror(e));
		return -e;
	}
	if ((unsigned long)sf.f_type != BTRFS_SUPER_MAGIC) {
		r = bd_devnode(st.st_dev, node, node_size);
		if (r < 0) {
			snprintf(why, why_size,
				 "lives on device %u:%u, which is not a block device with a node in /dev",
				 major(st.st_dev), minor(st.st_dev));
			return r;
		}
		*ret_dev = st.st_dev;
		return file_map(fd, len, allow_unwritten, ret, why, why_size);
	}
	/* btrfs: st_dev is the filesystem's own number, FIEMAP's addresses
	 * are its logical ones; the chunk tree names the device and the
	 * places on it. */
	r = bd_btrfs_file_check(fd, why, why_size);
	if (r == 0)
		r = bd_btrfs_device(fd, &devid, node, node_size, why, why_size);
	if (r == 0 && stat(node, &st) < 0) {
		r = -errno;
		snprintf(why, why_size, "is on btrfs device %s, which cannot be examined: %s",
			 node, strerror(errno));
	}
	if (r == 0)
		r = file_map(fd, len, allow_unwritten, &logical, why, why_size);
	if (r == 0)
		r = bd_btrfs_to_physical(fd, devid, &logical, ret, why, why_size);
	bd_map_clear(&logical);
	if (r == 0)
		*ret_dev = st.st_rdev;
	return r;
}
