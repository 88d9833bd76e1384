/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The few facts of an ext2/3/4 superblock that say whether a filesystem
 * was mounted since a moment: its UUID, last mount time and mount count
 * (the root-filesystem guard, doc/image-format.md).  Read-only, one
 * bounded read of BD_EXT_SUPER_END bytes.  See ext-super.h.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <unistd.h>

#include <torpor/plugin-util.h>

#include "device-names.h"
#include "ext-super.h"

/* The superblock starts 1024 bytes into the device; offsets from there
 * (the kernel's struct ext4_super_block). */
#define EXT_SB_OFFSET		1024
#define EXT_MTIME		0x2c	/* le32, low 32 bits */
#define EXT_MNT_COUNT		0x34	/* le16 */
#define EXT_MAGIC		0x38	/* le16 */
#define EXT_UUID		0x68	/* 16 bytes */
#define EXT_MTIME_HI		0x275	/* u8, bits 32-39 */
#define EXT_MAGIC_VALUE		0xef53

_Static_assert(EXT_SB_OFFSET + 1024 == BD_EXT_SUPER_END, "superblock end");

int
bd_ext_super_parse(const uint8_t *buf, size_t len, struct bd_ext_super *ret)
{
	const uint8_t *sb = buf + EXT_SB_OFFSET;

	if (!buf || len < BD_EXT_SUPER_END)
		return -ENODATA;
	if (torpor_get_le16(sb + EXT_MAGIC) != EXT_MAGIC_VALUE)
		return -ENOENT;
	memcpy(ret->uuid, sb + EXT_UUID, sizeof(ret->uuid));
	ret->mtime = (uint64_t)sb[EXT_MTIME_HI] << 32 |
		     torpor_get_le32(sb + EXT_MTIME);
	ret->mnt_count = torpor_get_le16(sb + EXT_MNT_COUNT);
	return 0;
}

int
bd_ext_super_read(const char *dev_path, struct bd_ext_super *ret)
{
	uint8_t buf[BD_EXT_SUPER_END];
	ssize_t n;
	int fd;

	fd = open(dev_path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	/* Buffered: the mounted filesystem's superblock is in the same
	 * page cache, so this is what the filesystem last wrote. */
	n = pread(fd, buf, sizeof(buf), 0);
	close(fd);
	if (n < 0)
		return -errno;
	return bd_ext_super_parse(buf, (size_t)n, ret);
}

int
bd_ext_super_of_path(const char *path, char *dev_buf, size_t dev_size,
		     struct bd_ext_super *ret)
{
	struct statfs sfs;
	struct stat st;
	int r;

	if (statfs(path, &sfs) < 0 || stat(path, &st) < 0)
		return -errno;
	if ((unsigned long)sfs.f_type != EXT_MAGIC_VALUE)
		return -EMEDIUMTYPE;
	/* Not a block device (major 0: an anonymous device) has no entry
	 * under /sys/dev/block. */
	r = bd_devnode(st.st_dev, dev_buf, dev_size);
	if (r < 0)
		return r;
	r = bd_ext_super_read(dev_buf, ret);
	return r == -ENOENT ? -EMEDIUMTYPE : r;
}

int
bd_ext_super_find(const uint8_t uuid[16], char *dev_buf, size_t dev_size,
		  struct bd_ext_super *ret)
{
	struct bd_ext_super sb;
	int r;

	r = bd_resolve_uuid(uuid, dev_buf, dev_size);
	if (r < 0)
		return r;
	r = bd_ext_super_read(dev_buf, &sb);
	/* Another kind of filesystem (or a swap area) with that UUID is
	 * not the one recorded. */
	if (r == -ENOENT || (r == 0 && memcmp(sb.uuid, uuid, 16) != 0))
		return -ENODEV;
	if (r < 0)
		return r;
	*ret = sb;
	return 0;
}
