/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_UTIL_SYSROOT_H
#define TORPOR_UTIL_SYSROOT_H

#include <stddef.h>
#include <sys/types.h>

/*
 * The root under which torpor reads the system's files (/proc, /sys,
 * /etc, /boot, /run): "" for the running system.  What sysroot_set() set
 * (`torpor setup --root DIR`), else in a test build (-Dtests=enabled)
 * $TORPOR_TEST_SYSROOT when it is absolute: how the tests give any
 * command a lockdown, a command line or a boot loader this machine does
 * not have.  A build for use never reads the variable.
 */
const char *sysroot(void);

/* From now on, root (absolute; "" or NULL: the running system again). */
void sysroot_set(const char *root);

/* path (absolute) under sysroot(), into buf; returns buf. */
const char *sysroot_path(const char *path, char *buf, size_t size);

/* text_read_small() of path under sysroot(): its length, or -errno. */
ssize_t sysroot_read(const char *path, char *buf, size_t size);

#endif
