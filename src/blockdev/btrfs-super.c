/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The few facts of a btrfs superblock that say whether the filesystem was
 * written since a moment (the root-filesystem guard, doc/image-format.md):
 * its fsid, its generation (the last committed transaction: every commit
 * adds one, and a read-write mount commits at the latest when it is
 * unmounted) and whether a tree log waits to be replayed (an fsync since
 * the last commit).  Read-only, one bounded O_DIRECT read of the primary
 * copy at 64 KiB.  See btrfs-super.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <torpor/plugin-util.h>

#include "btrfs-super.h"
#include "btrfs.h"
#include "device-names.h"

/* Offsets in the superblock (the kernel's struct btrfs_super_block). */
#define BTRFS_SB_OFFSET		65536
#define BTRFS_SB_FSID		0x20	/* 16 bytes */
#define BTRFS_SB_BYTENR		0x30	/* le64: where this copy lies */
#define BTRFS_SB_MAGIC		0x40	/* 8 bytes */
#define BTRFS_SB_GENERATION	0x48	/* le64 */
#define BTRFS_SB_LOG_ROOT	0x60	/* le64, 0: no tree log */

int
bd_btrfs_super_parse(const uint8_t *buf, size_t len,
		     struct bd_btrfs_super *ret)
{
	if (!buf || len < BD_BTRFS_SUPER_LEN)
		return -ENODATA;
	if (memcmp(buf + BTRFS_SB_MAGIC, "_BHRfS_M", 8) != 0 ||
	    torpor_get_le64(buf + BTRFS_SB_BYTENR) != BTRFS_SB_OFFSET)
		return -ENOENT;
	memcpy(ret->fsid, buf + BTRFS_SB_FSID, sizeof(ret->fsid));
	ret->generation = torpor_get_le64(buf + BTRFS_SB_GENERATION);
	ret->log_pending = torpor_get_le64(buf + BTRFS_SB_LOG_ROOT) != 0;
	return 0;
}

int
bd_btrfs_super_read(const char *dev_path, struct bd_btrfs_super *ret)
{
	void *buf = NULL;
	ssize_t n;
	int fd, r;

	/* O_DIRECT: what the disk holds, whatever the page cache of the
	 * device has (btrfs writes its superblock where it likes). */
	fd = open(dev_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_DIRECT);
	if (fd < 0)
		return -errno;
	r = posix_memalign(&buf, BD_BTRFS_SUPER_LEN, BD_BTRFS_SUPER_LEN);
	if (r != 0) {
		close(fd);
		return -r;
	}
	n = pread(fd, buf, BD_BTRFS_SUPER_LEN, BTRFS_SB_OFFSET);
	r = n < 0 ? -errno : bd_btrfs_super_parse(buf, (size_t)n, ret);
	close(fd);
	free(buf);
	return r;
}

int
bd_btrfs_super_of_path(const char *path, char *dev_buf, size_t dev_size,
		       struct bd_btrfs_super *ret)
{
	struct statfs sfs;
	uint64_t devid;
	char why[256];
	int fd, r;

	if (statfs(path, &sfs) < 0)
		return -errno;
	if ((unsigned long)sfs.f_type != BTRFS_SUPER_MAGIC)
		return -EMEDIUMTYPE;
	fd = open(path, O_RDONLY | O_CLOEXEC | O_DIRECTORY);
	if (fd < 0)
		return -errno;
	/* The filesystem's device: st_dev is btrfs's anonymous number. */
	r = bd_btrfs_device(fd, &devid, dev_buf, dev_size, why, sizeof(why));
	close(fd);
	if (r < 0)
		return r;
	r = bd_btrfs_super_read(dev_buf, ret);
	return r == -ENOENT ? -EMEDIUMTYPE : r;
}

int
bd_btrfs_super_find(const uint8_t fsid[16], char *dev_buf, size_t dev_size,
		    struct bd_btrfs_super *ret)
{
	struct bd_btrfs_super sb;
	int r;

	r = bd_resolve_uuid(fsid, dev_buf, dev_size);
	if (r < 0)
		return r;
	r = bd_btrfs_super_read(dev_buf, &sb);
	if (r == -ENOENT || (r == 0 && memcmp(sb.fsid, fsid, 16) != 0))
		return -ENODEV;
	if (r < 0)
		return r;
	*ret = sb;
	return 0;
}
