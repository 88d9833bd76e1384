/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "proc.h"

uint64_t
proc_meminfo(const char *key)
{
	return proc_meminfo_at("/proc/meminfo", key);
}

uint64_t
proc_meminfo_at(const char *path, const char *key)
{
	uint64_t value = 0, v;
	char name[64];
	size_t n = strlen(key);
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fscanf(f, "%63s %" SCNu64 " kB", name, &v) == 2)
		if (strncmp(name, key, n) == 0 && name[n] == ':')
			value = v * 1024;
	fclose(f);
	return value;
}

int
proc_self_status(const char *key, uint64_t *ret)
{
	FILE *f = fopen("/proc/self/status", "re");
	size_t n = strlen(key);
	char line[128];
	int r = -ENOENT;

	if (!f)
		return -errno;
	while (r < 0 && fgets(line, sizeof(line), f))
		if (strncmp(line, key, n) == 0 && line[n] == ':' &&
		    sscanf(line + n + 1, " %" SCNu64, ret) == 1)
			r = 0;
	fclose(f);
	return r;
}

unsigned
proc_thread_count(void)
{
	uint64_t n;

	return proc_self_status("Threads", &n) == 0 ? (unsigned)n : 0;
}

double
proc_process_age(void)
{
	unsigned long long start = 0;
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);
	char buf[1024], *p;
	FILE *f = fopen("/proc/self/stat", "re");
	size_t n;
	int field;

	if (!f)
		return -1;
	n = fread(buf, 1, sizeof(buf) - 1, f);
	fclose(f);
	buf[n] = '\0';
	/* The name (field 2) may hold spaces and parentheses: count from
	 * the last ')'.  starttime is field 22. */
	p = strrchr(buf, ')');
	for (field = 2; p && field < 22; field++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p, " %llu", &start) != 1 || hz <= 0 ||
	    clock_gettime(CLOCK_BOOTTIME, &ts) < 0)
		return -1;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9 -
	       (double)start / (double)hz;
}

int
proc_footprint(char *buf, size_t size)
{
	static const char *const keys[] = {
		"RssAnon", "RssFile", "RssShmem", "VmLck", "VmPTE",
	};
	FILE *f = fopen("/proc/self/status", "re");
	char line[128], name[32];
	unsigned long kib;
	size_t i, len = 0;

	if (size)
		buf[0] = '\0';
	if (!f)
		return -errno;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "%31[^:]: %lu kB", name, &kib) != 2)
			continue;
		for (i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
			int n;

			if (strcmp(name, keys[i]) != 0 || len >= size)
				continue;
			n = snprintf(buf + len, size - len, " %s %lu KiB",
				     name, kib);
			len = n < 0 ? size : len + (size_t)n;
		}
	}
	fclose(f);
	return 0;
}
