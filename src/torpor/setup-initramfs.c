/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The initramfs torpor setup rebuilds: the distribution's generator, and
 * the check that the new initramfs holds what a resume needs.
 */
#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "initramfs-check.h"
#include "log.h"
#include "setup.h"
#include "sysroot.h"

/* update-initramfs (initramfs-tools) first, else dracut; for the running
 * kernel (the image resumes with no other), where update-initramfs -u
 * alone would rebuild the newest one's. */
int
find_generator(struct setup *st, bool required)
{
	static const struct { const char *path, *arg, *kernel; } gens[] = {
		{ "/usr/sbin/update-initramfs", "-u", "-k" },
		{ "/usr/bin/dracut", "-f", "--kver" },
		{ "/usr/sbin/dracut", "-f", "--kver" },
	};
	size_t i;

	if (uname(&st->uts) < 0)
		return log_error_errno(-errno, "setup: uname: %m");
	for (i = 0; i < sizeof(gens) / sizeof(gens[0]); i++) {
		sysroot_path(gens[i].path, st->generator_path,
			     sizeof(st->generator_path));
		if (access(st->generator_path, X_OK) == 0) {
			st->generator[0] = st->generator_path;
			st->generator[1] = gens[i].arg;
			st->generator[2] = gens[i].kernel;
			st->generator[3] = st->uts.release;
			st->generator[4] = NULL;
			return 0;
		}
	}
	if (required)
		log_error("setup: no initramfs generator (update-initramfs or dracut) is installed: the next boot must run torpor-resume from its initramfs");
	return -ENOENT;
}

/* The new initramfs against the configuration just written. */
int
setup_check_initramfs(const struct setup *st)
{
	char boot[PATH_MAX];
	struct torpor_session s;
	int r;

	r = session_open(&s, st->conf_path, st->plugin_dir, true);
	if (r >= 0)
		r = session_arrange_hibernate(&s);
	if (r >= 0 && strcmp(s.config->initramfs, CONFIG_INITRAMFS_NONE) == 0)
		printf("setup: [torpor] initramfs = none: the initramfs is not checked\n");
	else if (r >= 0) {
		r = initramfs_check(&s, &(struct initramfs_check_options){
			.boot_dir = sysroot_path("/boot", boot, sizeof(boot)),
			.required = true });
		if (r >= 0)
			printf("setup: the new initramfs holds what a resume needs\n");
	}
	session_close(&s);
	return r;
}
