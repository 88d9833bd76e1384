/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The root-filesystem guard.  A mount of an ext filesystem read-write
 * sets its last mount time and adds one to its mount count, on disk; a
 * resume mounts nothing, so after a genuine resume both are what they
 * were at hibernation, and after a normal boot in between they are not.
 * That catches the one case torpor-stale-image.service cannot: an image
 * whose storage was absent for a whole boot, during which the root
 * filesystem was written.  See root-guard.h.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "blockdev.h"
#include "root-guard.h"

const char *
root_guard_path(enum torpor_snapshot_kind kind)
{
	const char *p;

	if (kind == TORPOR_SNAPSHOT_SIM) {
		p = getenv(ROOT_GUARD_TEST_ENV);
		if (p && *p)
			return p;
	}
	return "/";
}

int
root_guard_record(const char *path, struct image_root_guard *ret,
		  char *why, size_t why_size)
{
	struct bd_ext_super sb;
	char dev[256];
	int r;

	memset(ret, 0, sizeof(*ret));
	r = bd_ext_super_of_path(path, dev, sizeof(dev), &sb);
	if (r == -EMEDIUMTYPE)
		snprintf(why, why_size, "the filesystem on %s is not ext2/3/4",
			 path);
	else if (r == -ENODEV)
		snprintf(why, why_size, "the filesystem on %s is not on a block device",
			 path);
	else if (r < 0)
		snprintf(why, why_size, "the superblock of %s (on %s) cannot be read: %s",
			 path, dev, strerror(-r));
	if (r < 0)
		return r;
	ret->kind = IMAGE_GUARD_EXT;
	memcpy(ret->fs_uuid, sb.uuid, sizeof(ret->fs_uuid));
	ret->mtime = sb.mtime;
	ret->mnt_count = sb.mnt_count;
	snprintf(why, why_size, "%s", dev);
	return 0;
}

/* A unix time as UTC text. */
static void
format_time(uint64_t t, char *buf, size_t size)
{
	time_t tt = (time_t)t;
	struct tm tm;

	if (!gmtime_r(&tt, &tm) ||
	    strftime(buf, size, "%Y-%m-%d %H:%M:%S UTC", &tm) == 0)
		snprintf(buf, size, "%" PRIu64, t);
}

int
root_guard_check(const struct image_root_guard *g, char *msg,
		 size_t msg_size)
{
	char uuid[40], dev[256], now[40], then[40];
	struct bd_ext_super sb;
	int r;

	if (msg_size)
		msg[0] = '\0';
	if (g->kind == IMAGE_GUARD_NONE)
		return 0;
	bd_format_uuid(g->fs_uuid, uuid, sizeof(uuid));
	r = bd_ext_super_find(g->fs_uuid, dev, sizeof(dev), &sb);
	if (r < 0) {
		snprintf(msg, msg_size,
			 "the root filesystem UUID=%s recorded in the image is not visible (%s): whether it was mounted since cannot be told; resuming",
			 uuid, r == -ENODEV ? "no such device" : strerror(-r));
		return -ENODEV;
	}
	if (sb.mtime == g->mtime && sb.mnt_count == g->mnt_count)
		return 0;
	format_time(sb.mtime, now, sizeof(now));
	format_time(g->mtime, then, sizeof(then));
	snprintf(msg, msg_size,
		 "the root filesystem UUID=%s on %s was mounted since this image was written (mounted at %s, mount count %u; the image expects %s, count %u): the image is stale",
		 uuid, dev, now, sb.mnt_count, then, g->mnt_count);
	return -ESTALE;
}
