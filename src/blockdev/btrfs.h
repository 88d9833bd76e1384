/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Files on btrfs (btrfs.c): the chunk tree, NOCOW. */
#ifndef TORPOR_BD_BTRFS_H
#define TORPOR_BD_BTRFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "run-list.h"

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

#endif
