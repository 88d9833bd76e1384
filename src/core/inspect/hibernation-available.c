/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Whether the kernel lets anyone hibernate now (hibernation-available.h). */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hibernation-available.h"
#include "snapshot.h"
#include "sysroot.h"
#include "text.h"

/* The processes looked at for secretmem, at most. */
#define MAX_PROCESSES 65536

/* A process that holds secretmem (a mapping or a descriptor); its pid,
 * 0 when none was seen. */
static long
secretmem_user(void)
{
	char path[PATH_MAX], line[512];
	struct dirent *d;
	long pid = 0;
	unsigned n = 0;
	DIR *dir;

	sysroot_path("/proc", path, sizeof(path));
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!pid && (d = readdir(dir)) && n++ < MAX_PROCESSES) {
		FILE *f;

		if (d->d_name[0] < '1' || d->d_name[0] > '9')
			continue;
		snprintf(path, sizeof(path), "%s/proc/%s/maps", sysroot(),
			 d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		while (fgets(line, sizeof(line), f))
			if (strstr(line, "/secretmem")) {
				pid = strtol(d->d_name, NULL, 10);
				break;
			}
		fclose(f);
	}
	closedir(dir);
	return pid;
}

/* Lockdown and the command line first: with either, /sys/power/state has
 * no "disk" either, and they are what to fix. */
enum hibernation_available
hibernation_available(char *why, size_t size)
{
	char lockdown[PATH_MAX], cmdline[PATH_MAX], state[PATH_MAX];
	char text[256];
	long pid;

	sysroot_path("/sys/kernel/security/lockdown", lockdown,
		     sizeof(lockdown));
	sysroot_path("/proc/cmdline", cmdline, sizeof(cmdline));
	switch (snapshot_kernel_block(lockdown, cmdline, why, size)) {
	case SNAPSHOT_BLOCK_LOCKDOWN:
		return HIBERNATION_LOCKDOWN;
	case SNAPSHOT_BLOCK_CMDLINE:
		return HIBERNATION_CMDLINE;
	case SNAPSHOT_BLOCK_NONE:
		break;
	}
	sysroot_path("/sys/power/state", state, sizeof(state));
	if (text_read_small(state, text, sizeof(text)) < 0)
		return HIBERNATION_STATE_UNREAD;
	if (strstr(text, "disk"))
		return HIBERNATION_AVAILABLE;
	pid = secretmem_user();
	if (pid) {
		snprintf(why, size, "hibernation is disabled while secretmem is in use (process %ld holds memfd_secret memory)",
			 pid);
		return HIBERNATION_SECRETMEM;
	}
	snprintf(why, size, "the kernel offers no hibernation now (%s has no 'disk': a kernel without CONFIG_HIBERNATION, or secretmem in use by a process this user cannot see)",
		 state);
	return HIBERNATION_NO_DISK;
}
