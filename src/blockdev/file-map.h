/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where a file's bytes lie on its device (file-map.c), and whether its
 * filesystem keeps them there.
 */
#ifndef TORPOR_BD_FILE_MAP_H
#define TORPOR_BD_FILE_MAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "run-list.h"

/* The smallest image file: [file] size, file-setup --size and setup
 * --size, as torpor-plugins(7) and torpor(8) say ("at least 1M"). */
#define BD_FILE_MIN_SIZE (1u << 20)

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

#endif
