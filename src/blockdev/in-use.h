/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whether a device or file is someone else's, or private (in-use.c). */
#ifndef TORPOR_BD_IN_USE_H
#define TORPOR_BD_IN_USE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/*
 * Whether the block device or regular file st describes is someone
 * else's: for a block device, when it or (a whole disk) one of its
 * partitions is mounted, has holders (device-mapper, md: holders/ in
 * sysfs) or is an active swap area; for a regular file, when it is an
 * active swap file.  1 with the reason in why ("is mounted on /mnt",
 * "partition loop0p1 is an active swap area", ...), 0 when not, -errno.
 */
int bd_in_use(const struct stat *st, char *why, size_t why_size);

/* bd_in_use() reading other places than /sys, /proc/self/mountinfo and
 * /proc/swaps (the tests). */
struct bd_sys_paths {
	const char *sys, *mountinfo, *swaps;
};
int bd_in_use_at(const struct bd_sys_paths *p, const struct stat *st,
		 char *why, size_t why_size);

/*
 * open(path, flags | O_EXCL | O_CLOEXEC) for writing a device directly:
 * an fd, or -EBUSY with the reason in why when the kernel refuses the
 * exclusive open or bd_in_use() finds a user (mounted, held, active
 * swap), or another -errno from open.  (Without O_CREAT, Linux ignores
 * O_EXCL on anything but a block device.)
 */
int bd_open_excl(const char *path, int flags, char *why, size_t why_size);

/*
 * A file that holds a copy of memory (an image file, a swap file, the raw
 * writer's file) must be a regular file owned by the user torpor runs as
 * (root) without any permission for group or others: 0, else -EPERM (or
 * -EINVAL: not a regular file) with the reason in why.
 */
int bd_check_private(const struct stat *st, char *why, size_t why_size);

#endif
