/* SPDX-License-Identifier: GPL-2.0-or-later */
/* btrfs superblocks (btrfs-super.c), for the root-filesystem guard. */
#ifndef TORPOR_BD_BTRFS_SUPER_H
#define TORPOR_BD_BTRFS_SUPER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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

#endif
