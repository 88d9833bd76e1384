/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the swap and file writers share (writer-common.c): the page unit,
 * the resume location, the page cache of a file written below it. */
#ifndef TORPOR_BD_WRITER_COMMON_H
#define TORPOR_BD_WRITER_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <torpor/plugin.h>

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

#endif
