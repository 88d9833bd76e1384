/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor-blockdev: the block-device library.  The swap, file and raw
 * writers link it (a static, position-independent library), and so do
 * `torpor file-setup` and the core, whose resolve_device and
 * resume_location host services are bd_resolve().  Nothing here logs:
 * functions return -errno and, where the reason is not obvious from the
 * errno, write one into a caller's buffer; the caller decides what to say.
 *
 * Each source file declares what it offers in a header of its own name;
 * a user includes the ones it calls.  This header includes them all, for
 * a writer that uses nearly the whole library:
 *
 *   device-names.h   a device specification to a /dev node, UUIDs
 *   device-io.h      O_DIRECT I/O on a device, early flushes
 *   run-list.h       where a stream lies on a device (struct bd_map)
 *   image-layout.h   the writer blob, the index block, an image read back
 *   block-stream.h   the data stream handed on in whole blocks
 *   file-map.h       where a file's bytes lie, and whether they stay put
 *   btrfs.h          files on btrfs: the chunk tree, NOCOW
 *   in-use.h         someone else's device or file; private files
 *   writer-common.h  what the swap and file writers share
 *   ext-super.h, btrfs-super.h   superblocks, for the root guard
 *   dm-stack.h       device-mapper under a device (dm-crypt, LVM)
 *
 * The swap and file writers keep the image at physical byte offsets of
 * one block device, described by a run list (struct bd_map); the resume
 * side follows the pointers image-layout.h describes.
 */
#ifndef TORPOR_BLOCKDEV_H
#define TORPOR_BLOCKDEV_H

#include "block-stream.h"
#include "btrfs-super.h"
#include "btrfs.h"
#include "device-io.h"
#include "device-names.h"
#include "dm-stack.h"
#include "ext-super.h"
#include "file-map.h"
#include "image-layout.h"
#include "in-use.h"
#include "run-list.h"
#include "writer-common.h"

#endif
