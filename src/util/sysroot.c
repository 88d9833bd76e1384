/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The root of the system's files (see sysroot.h). */
#include <stdio.h>

#include "sysroot.h"
#include "test-hook.h"
#include "text.h"

static const char *set_root;

const char *
sysroot(void)
{
	if (set_root)
		return set_root;
	return test_hook_path("TORPOR_TEST_SYSROOT", "");
}

void
sysroot_set(const char *root)
{
	set_root = root;
}

const char *
sysroot_path(const char *path, char *buf, size_t size)
{
	snprintf(buf, size, "%s%s", sysroot(), path);
	return buf;
}

ssize_t
sysroot_read(const char *path, char *buf, size_t size)
{
	char p[4096];

	return text_read_small(sysroot_path(path, p, sizeof(p)), buf, size);
}
