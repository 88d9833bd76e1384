/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_MEMROOM_H
#define TORPOR_MEMROOM_H

#include <stddef.h>
#include <stdint.h>

/* The least room left under the memory limits of this process's cgroups
 * (its own and every parent; v1 and v2), UINT64_MAX when none is set.
 * where gets the cgroup directory that sets it ("" when none). */
uint64_t memroom_cgroup(char *where, size_t where_size);

/* What this process may still take: the smaller of MemAvailable and its
 * cgroups' room; 0 when neither is known.  where names the cgroup when
 * that is the bound, else "". */
uint64_t memroom_available(char *where, size_t where_size);

#endif
