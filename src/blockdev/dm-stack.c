/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Device-mapper stacks under the image's device: the dm-crypt mappings
 * and LVM volumes the initramfs must unlock and activate before
 * torpor-resume can read the image, and encrypted swap with a new random
 * key at every boot (/etc/crypttab's key file /dev/urandom), which can
 * never hold one.  Read from sysfs; root prefixes it for the tests.
 */
#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "dm-stack.h"
#include "text.h"

int
bd_random_key_swap(const char *root, const char *dev, char *entry, size_t size)
{
	char path[PATH_MAX], name[128], text[65536], *line, *save = NULL;
	const char *base = strrchr(dev, '/');

	base = base ? base + 1 : dev;
	/* The mapping's name: /dev/mapper/NAME, or /dev/dm-N's dm/name. */
	if (strncmp(dev, "/dev/mapper/", 12) == 0) {
		snprintf(name, sizeof(name), "%s", dev + 12);
	} else if (strncmp(base, "dm-", 3) == 0) {
		snprintf(path, sizeof(path), "%s/sys/block/%s/dm/name", root, base);
		if (text_read_small(path, text, sizeof(text)) < 0 ||
		    sscanf(text, "%127s", name) != 1)
			return 0;
	} else {
		return 0;
	}
	snprintf(path, sizeof(path), "%s/etc/crypttab", root);
	if (text_read_small(path, text, sizeof(text)) < 0)
		return 0;
	for (line = strtok_r(text, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		char target[128], source[256], key[256] = "";

		if (sscanf(line, " %127s %255s %255s", target, source, key) < 2 ||
		    target[0] == '#' || strcmp(target, name) != 0)
			continue;
		if (strcmp(key, "/dev/urandom") != 0 && strcmp(key, "/dev/random") != 0 &&
		    strcmp(key, "/dev/hw_random") != 0)
			return 0;
		snprintf(entry, size, "%s %s %s", target, source, key);
		return 1;
	}
	return 0;
}

/* Add the dm mapping at dir (a sysfs block device directory) to st by
 * its dm/uuid's kind, then everything under it (slaves/), depth-first. */
static void
dm_walk(const char *root, const char *dir, struct bd_dm_stack *st, int depth)
{
	char path[PATH_MAX], uuid[160], name[128], text[64];
	struct dirent *de;
	DIR *d;

	snprintf(path, sizeof(path), "%s/dm/uuid", dir);
	if (text_read_small(path, uuid, sizeof(uuid)) >= 0) {
		snprintf(path, sizeof(path), "%s/dm/name", dir);
		if (text_read_small(path, text, sizeof(text)) < 0 ||
		    sscanf(text, "%127s", name) != 1)
			name[0] = '\0';
		if (strncmp(uuid, "CRYPT-", 6) == 0 && st->n_crypt < BD_DM_STACK_MAX)
			snprintf(st->crypt[st->n_crypt++], sizeof(st->crypt[0]), "%s", name);
		else if (strncmp(uuid, "LVM-", 4) == 0 && st->n_lvm < BD_DM_STACK_MAX)
			snprintf(st->lvm[st->n_lvm++], sizeof(st->lvm[0]), "%s", name);
	}
	if (depth >= 8)
		return;
	snprintf(path, sizeof(path), "%s/slaves", dir);
	d = opendir(path);
	if (!d)
		return;
	while ((de = readdir(d))) {
		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "%s/sys/block/%s", root, de->d_name);
		dm_walk(root, path, st, depth + 1);
	}
	closedir(d);
}

void
bd_dm_stack(const char *root, dev_t dev, struct bd_dm_stack *st)
{
	char dir[PATH_MAX];

	memset(st, 0, sizeof(*st));
	snprintf(dir, sizeof(dir), "%s/sys/dev/block/%u:%u", root, major(dev),
		 minor(dev));
	dm_walk(root, dir, st, 0);
}
