/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_UTIL_TEST_HOOK_H
#define TORPOR_UTIL_TEST_HOOK_H

/*
 * path, or in a test build (-Dtests=enabled, not one to install) the
 * absolute path in the environment variable when it is set: how the
 * integration tests give torpor a fake /sys and /proc
 * (TORPOR_TEST_SYSROOT: see sysroot.h) or a fake busctl
 * (TORPOR_TEST_BUSCTL).
 */
const char *test_hook_path(const char *variable, const char *path);

#endif
