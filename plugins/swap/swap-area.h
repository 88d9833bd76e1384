/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Where the swap writer's area is: the configured one or the active one
 * with the most room, a swap partition or a swap file (whose blocks lie
 * on the device under it, mapped with FIEMAP), or at resume the one the
 * kernel command line names; and what /proc/swaps says of an area.
 */
#ifndef TORPOR_SWAP_AREA_H
#define TORPOR_SWAP_AREA_H

#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include <torpor/plugin.h>

#include "blockdev.h"

/* The plugin's name, its section and the prefix of its log lines. */
#define SWAP_NAME "swap"

struct swap_area {
	char spec[PATH_MAX];		/* as configured, for messages */
	char dev_path[PATH_MAX];	/* the block device written */
	char file_path[PATH_MAX];	/* the swap file, or "" */
	dev_t rdev;			/* dev_path's number */
	uint64_t hdr_phys;		/* page 0 of the area on dev_path */
	/* The area's bytes, logical -> physical (a partition's once it is
	 * open). */
	struct bd_map map;
	bool known;			/* found, not just named by resume= */
	char uuid[40];			/* its UUID when found, or "" */
};

/* Forget the area (a's memory is the caller's; it may be unset). */
void swap_area_clear(struct swap_area *a);

/* What to look at for the area: the swap file, or the partition. */
const char *swap_area_path(const struct swap_area *a);

/*
 * Find where the swap area spec (a path, UUID=, LABEL=, ...) lives: its
 * device, the header's byte there, and for a swap file its block map,
 * with pages of page bytes.  A swap file must be root's, 0600, on a
 * filesystem whose block map stays put.  Logs why not, through host.
 */
int swap_area_locate(struct swap_area *a, const struct torpor_host *host,
		     const char *spec, uint32_t page);

/* At resume: the device and the header's byte that resume= and
 * resume_offset= name.  1 when they name one, 0 when not, -errno. */
int swap_area_from_cmdline(struct swap_area *a,
			   const struct torpor_host *host);

/* [swap] device=, else the active non-zram swap area with the most free
 * space (into picked), else NULL. */
const char *swap_area_configured(const struct torpor_host *host,
				 char *picked, size_t size);

/* Whether the area at st (a block device or a swap file) is active swap:
 * 1, with its free bytes in *ret_free when that is not NULL, 0 when not,
 * -errno when /proc/swaps cannot be read. */
int swap_area_active(const struct stat *st, uint64_t *ret_free);

#endif
