/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Encrypted swap with a new random key at every boot: /etc/crypttab's key
 * file /dev/urandom (what Debian's and many servers' "encrypted swap"
 * is).  What is written there cannot be read once the power-off has taken
 * the key: never a place for a hibernation image.
 */
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "blockdev.h"

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
		if (bd_read_text(path, text, sizeof(text)) < 0 ||
		    sscanf(text, "%127s", name) != 1)
			return 0;
	} else {
		return 0;
	}
	snprintf(path, sizeof(path), "%s/etc/crypttab", root);
	if (bd_read_text(path, text, sizeof(text)) < 0)
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
