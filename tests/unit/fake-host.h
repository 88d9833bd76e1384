/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The torpor_host that tests and benchmarks hand to plugins they dlopen()
 * themselves.  A test sets only the methods it means plugins to call; every
 * other method aborts with a message naming it, so that a call nobody
 * planned for, or a method the ABI gains later, fails loudly instead of
 * jumping through NULL.
 */
#ifndef TORPOR_TEST_FAKE_HOST_H
#define TORPOR_TEST_FAKE_HOST_H

#include <torpor/plugin.h>

/*
 * Fill *host: struct_size and abi_version of this ABI, the methods that
 * are set (not NULL) in methods, and the aborting stand-in for every other
 * one.  Returns host, for plugin->load().
 */
const struct torpor_host *fake_host_init(struct torpor_host *host,
					 const struct torpor_host *methods);

#endif
