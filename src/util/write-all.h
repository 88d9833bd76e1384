/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_UTIL_WRITE_ALL_H
#define TORPOR_UTIL_WRITE_ALL_H

#include <stddef.h>

/*
 * Write all len bytes of buf to fd, across short writes and EINTR: 0, or
 * -errno (-EIO when write() wrote nothing and said nothing).  Not for a
 * file of the kernel's (sysfs, efivarfs), where one write() is the value.
 */
int write_all(int fd, const void *buf, size_t len);

#endif
