/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How much memory this process may still take: the system's MemAvailable,
 * and the memory limit of every cgroup from its own up to the root (v2
 * memory.max / memory.current, v1 memory.limit_in_bytes /
 * memory.usage_in_bytes).  torpor-resume under a 1 GiB limit must size its
 * pool from that limit, not from the host's free memory.
 */
#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "memroom.h"
#include "proc.h"

/* v1 reports "no limit" as a huge page-aligned number. */
#define V1_NO_LIMIT (UINT64_C(1) << 60)

/* A number (or "max") from a one-line file; false when unreadable. */
static bool
read_value(const char *dir, const char *name, uint64_t *ret)
{
	char path[PATH_MAX + 32], line[64], *end;
	unsigned long long v;
	FILE *f;
	bool ok;

	if ((size_t)snprintf(path, sizeof(path), "%s/%s", dir, name) >= sizeof(path))
		return false;
	f = fopen(path, "re");
	if (!f)
		return false;
	ok = fgets(line, sizeof(line), f) != NULL;
	fclose(f);
	if (!ok)
		return false;
	if (strncmp(line, "max", 3) == 0) {
		*ret = UINT64_MAX;
		return true;
	}
	errno = 0;
	v = strtoull(line, &end, 10);
	if (errno || end == line || (*end != '\n' && *end != '\0'))
		return false;
	*ret = v >= V1_NO_LIMIT ? UINT64_MAX : (uint64_t)v;
	return true;
}

/*
 * The cgroup of this process in one hierarchy: v2 ("0::PATH") when v1 is
 * false, else the v1 hierarchy holding the memory controller
 * ("N:...memory...:PATH").  Returns the path, or false.
 */
static bool
own_cgroup(bool v1, char *path, size_t size)
{
	char line[PATH_MAX + 128];
	bool found = false;
	FILE *f = fopen("/proc/self/cgroup", "re");

	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		char *ctl = strchr(line, ':'), *p, *tok, *save = NULL;

		if (!ctl || !(p = strchr(ctl + 1, ':')))
			continue;
		*p++ = '\0';
		p[strcspn(p, "\n")] = '\0';
		ctl++;
		if (!v1) {
			found = strcmp(line, "0") == 0 && ctl[0] == '\0';
		} else {
			for (tok = strtok_r(ctl, ",", &save); tok && !found;
			     tok = strtok_r(NULL, ",", &save))
				found = strcmp(tok, "memory") == 0;
		}
		if (found && (size_t)snprintf(path, size, "%s", p) >= size)
			found = false;
	}
	fclose(f);
	return found;
}

/* The least room left under the limits of dir and its parents down to
 * base; UINT64_MAX when none is set. */
static uint64_t
hierarchy_room(const char *base, const char *rel, const char *max_name,
	       const char *cur_name, char *where, size_t where_size)
{
	char dir[PATH_MAX + 1];
	uint64_t room = UINT64_MAX, max, cur;
	size_t base_len = strlen(base);
	char *slash;

	if ((size_t)snprintf(dir, sizeof(dir), "%s%s", base, rel) >= sizeof(dir))
		return UINT64_MAX;
	for (;;) {
		if (read_value(dir, max_name, &max) && max != UINT64_MAX &&
		    read_value(dir, cur_name, &cur)) {
			uint64_t left = max > cur ? max - cur : 0;

			if (left < room) {
				room = left;
				snprintf(where, where_size, "%s", dir);
			}
		}
		slash = strrchr(dir, '/');
		if (!slash || (size_t)(slash - dir) < base_len)
			break;
		*slash = '\0';
	}
	return room;
}

uint64_t
memroom_cgroup(char *where, size_t where_size)
{
	char rel[PATH_MAX];
	uint64_t room = UINT64_MAX, r;

	if (where_size)
		where[0] = '\0';
	if (own_cgroup(false, rel, sizeof(rel))) {
		r = hierarchy_room("/sys/fs/cgroup", rel, "memory.max",
				   "memory.current", where, where_size);
		room = r < room ? r : room;
	}
	if (own_cgroup(true, rel, sizeof(rel))) {
		r = hierarchy_room("/sys/fs/cgroup/memory", rel,
				   "memory.limit_in_bytes",
				   "memory.usage_in_bytes", where, where_size);
		room = r < room ? r : room;
	}
	return room;
}

uint64_t
memroom_available(char *where, size_t where_size)
{
	uint64_t avail = proc_meminfo("MemAvailable");
	uint64_t cg = memroom_cgroup(where, where_size);

	if (avail && avail <= cg) {
		if (where_size)
			where[0] = '\0';
		return avail;
	}
	return cg == UINT64_MAX ? 0 : cg;
}
