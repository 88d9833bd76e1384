/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The root-filesystem guard (doc/image-format.md, format 3): at
 * hibernation, the filesystem mounted on / is recorded in the image header
 * (ext2/3/4: UUID, last mount time, mount count; btrfs: fsid, generation,
 * a pending tree log); at resume, an image whose root filesystem was
 * mounted or written since is stale and must not be restored over it.
 */
#ifndef TORPOR_ROOT_GUARD_H
#define TORPOR_ROOT_GUARD_H

#include <stddef.h>

#include "image-format.h"

/*
 * Record the filesystem mounted at path into *ret.  0 with a guard of
 * kind EXT or BTRFS (why: its device); otherwise a negative errno
 * (-EMEDIUMTYPE: neither ext2/3/4 nor btrfs, -ENODEV: not on a block
 * device, -EXDEV: a btrfs of several devices, or the device's error),
 * *ret of kind NONE and the reason, for the one line the caller logs, in
 * why.  A btrfs generation moves with every commit: root_guard_refresh()
 * reads it again after the snapshot, whose freeze synced the filesystems.
 */
int root_guard_record(const char *path, struct image_root_guard *ret,
		      char *why, size_t why_size);

/*
 * A guard of kind BTRFS read again from dev (its device, from
 * root_guard_record()), reading the device only.  0, or a negative errno,
 * *g of kind NONE and the reason in why.  Other kinds are left as they are.
 */
int root_guard_refresh(struct image_root_guard *g, const char *dev,
		       char *why, size_t why_size);

/*
 * Compare the filesystem a guard names with what the storage holds now.
 * 0: no guard, or the filesystem is as recorded.  -ESTALE: it was mounted
 * (ext) or written (btrfs) since (msg says what and where).  -ENODEV: no filesystem with that UUID
 * is visible, or another error reading it: the guard cannot judge (msg
 * says so).  Reads only.
 */
int root_guard_check(const struct image_root_guard *g, char *msg,
		     size_t msg_size);

#endif
