/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The root-filesystem guard (doc/image-format.md, format 3): at
 * hibernation, the ext2/3/4 filesystem mounted on / is recorded in the
 * image header (UUID, last mount time, mount count); at resume, an image
 * whose root filesystem was mounted since is stale and must not be
 * restored over it.
 */
#ifndef TORPOR_ROOT_GUARD_H
#define TORPOR_ROOT_GUARD_H

#include <stddef.h>

#include <torpor/plugin.h>

#include "image-format.h"

/* The environment variable naming the path whose filesystem is guarded
 * instead of "/": honoured on the sim source only (the tests). */
#define ROOT_GUARD_TEST_ENV "TORPOR_SIM_ROOT_GUARD"

/* The path whose filesystem a cycle on a source of this kind guards. */
const char *root_guard_path(enum torpor_snapshot_kind kind);

/*
 * Record the filesystem mounted at path into *ret.  0 with a guard of
 * kind EXT; otherwise a negative errno (-EMEDIUMTYPE: not ext2/3/4,
 * -ENODEV: not on a block device, or the device's error), *ret of kind
 * NONE and the reason, for the one line the caller logs, in why.
 */
int root_guard_record(const char *path, struct image_root_guard *ret,
		      char *why, size_t why_size);

/*
 * Compare the filesystem a guard names with what the storage holds now.
 * 0: no guard, or the filesystem is as recorded.  -ESTALE: it was mounted
 * since (msg says what and where).  -ENODEV: no filesystem with that UUID
 * is visible, or another error reading it: the guard cannot judge (msg
 * says so).  Reads only.
 */
int root_guard_check(const struct image_root_guard *g, char *msg,
		     size_t msg_size);

#endif
