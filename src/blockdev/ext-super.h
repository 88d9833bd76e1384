/* SPDX-License-Identifier: GPL-2.0-or-later */
/* ext2/3/4 superblocks (ext-super.c), for the root-filesystem guard. */
#ifndef TORPOR_BD_EXT_SUPER_H
#define TORPOR_BD_EXT_SUPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
