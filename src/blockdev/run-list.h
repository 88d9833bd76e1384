/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run lists (run-list.c): where a stream lies on a device, as physical
 * byte ranges, read and written through a struct bd_dev.
 */
#ifndef TORPOR_BD_RUN_LIST_H
#define TORPOR_BD_RUN_LIST_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "device-io.h"

struct bd_run {
	uint64_t phys;		/* byte offset on the device */
	uint64_t len;		/* bytes */
};

struct bd_map {
	struct bd_run *runs;
	size_t n, cap;
	uint64_t total;		/* sum of len */
};

void bd_map_clear(struct bd_map *m);

/* Append [phys, phys + len), merging with the last run when contiguous. */
int bd_map_add(struct bd_map *m, uint64_t phys, uint64_t len);

/* Physical runs of logical bytes [off, off + len) of m, appended to out. */
int bd_map_slice(const struct bd_map *m, uint64_t off, uint64_t len,
		 struct bd_map *out);

/* Read or write logical bytes [off, off + len) of m through d.  Writes
 * need every run boundary they cross on a 512-byte boundary. */
int bd_map_read(struct bd_dev *d, const struct bd_map *m, uint64_t off,
		void *buf, size_t len);
int bd_map_write(struct bd_dev *d, const struct bd_map *m, uint64_t off,
		 const void *buf, size_t len);

/* Check that every run lies inside a device of dev_size bytes. */
bool bd_map_inside(const struct bd_map *m, uint64_t dev_size);
/* The first run of m that does not; m->n when every run does. */
size_t bd_map_first_outside(const struct bd_map *m, uint64_t dev_size);

#endif
