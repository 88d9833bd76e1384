/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The root-filesystem guard.  A mount of an ext filesystem read-write
 * sets its last mount time and adds one to its mount count, on disk; a
 * resume mounts nothing, so after a genuine resume both are what they
 * were at hibernation, and after a normal boot in between they are not.
 * btrfs keeps no mount count: its generation, which every transaction
 * commit raises, stands for it, read again after the snapshot (the
 * freeze's sync commits) and compared exactly.
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

#include "btrfs-super.h"
#include "device-names.h"
#include "ext-super.h"
#include "root-guard.h"

/* A recorded guard; its device into why. */
static int
guard_set(struct image_root_guard *g, uint32_t kind, const uint8_t uuid[16],
	  uint64_t stamp, uint32_t count, const char *dev, char *why,
	  size_t why_size)
{
	g->kind = kind;
	memcpy(g->fs_uuid, uuid, sizeof(g->fs_uuid));
	g->stamp = stamp;
	g->count = count;
	snprintf(why, why_size, "%s", dev);
	return 0;
}

/* The btrfs filesystem at path, when the root is one. */
static int
record_btrfs(const char *path, struct image_root_guard *ret, char *why,
	     size_t why_size)
{
	struct bd_btrfs_super sb;
	char dev[256];
	int r = bd_btrfs_super_of_path(path, dev, sizeof(dev), &sb);

	if (r == -EMEDIUMTYPE)
		snprintf(why, why_size, "the filesystem on %s is neither ext2/3/4 nor btrfs",
			 path);
	else if (r == -EXDEV)
		snprintf(why, why_size, "the btrfs filesystem on %s has several devices",
			 path);
	else if (r < 0)
		snprintf(why, why_size, "the btrfs superblock of %s cannot be read: %s",
			 path, strerror(-r));
	if (r < 0)
		return r;
	return guard_set(ret, IMAGE_GUARD_BTRFS, sb.fsid, sb.generation,
			 sb.log_pending, dev, why, why_size);
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
		return record_btrfs(path, ret, why, why_size);
	if (r == -ENODEV)
		snprintf(why, why_size, "the filesystem on %s is not on a block device",
			 path);
	else if (r < 0)
		snprintf(why, why_size, "the superblock of %s (on %s) cannot be read: %s",
			 path, dev, strerror(-r));
	if (r < 0)
		return r;
	return guard_set(ret, IMAGE_GUARD_EXT, sb.uuid, sb.mtime, sb.mnt_count,
			 dev, why, why_size);
}

int
root_guard_refresh(struct image_root_guard *g, const char *dev, char *why,
		   size_t why_size)
{
	struct bd_btrfs_super sb;
	int r;

	if (g->kind != IMAGE_GUARD_BTRFS)
		return 0;
	r = bd_btrfs_super_read(dev, &sb);
	if (r == 0 && memcmp(sb.fsid, g->fs_uuid, sizeof(sb.fsid)) != 0)
		r = -ENODEV;
	if (r < 0) {
		snprintf(why, why_size, "the btrfs superblock on %s cannot be read again: %s",
			 dev, r == -ENODEV ? "another filesystem is there now" : strerror(-r));
		memset(g, 0, sizeof(*g));
		return r;
	}
	g->stamp = sb.generation;
	g->count = sb.log_pending;
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

/* Not visible: the guard cannot judge. */
static int
not_visible(const char *uuid, int r, char *msg, size_t msg_size)
{
	snprintf(msg, msg_size,
		 "the root filesystem UUID=%s recorded in the image is not visible (%s): whether it was mounted since cannot be told; resuming",
		 uuid, r == -ENODEV ? "no such device" : strerror(-r));
	return -ENODEV;
}

/* A btrfs root: any commit since (a read-write mount makes one at the
 * latest when it is unmounted), or an fsync's tree log, makes it stale. */
static int
check_btrfs(const struct image_root_guard *g, const char *uuid, char *msg,
	    size_t msg_size)
{
	struct bd_btrfs_super sb;
	char dev[256];
	int r = bd_btrfs_super_find(g->fs_uuid, dev, sizeof(dev), &sb);

	if (r < 0)
		return not_visible(uuid, r, msg, msg_size);
	if (sb.generation == g->stamp && sb.log_pending == (g->count != 0))
		return 0;
	snprintf(msg, msg_size,
		 "the root filesystem (btrfs) UUID=%s on %s was written since this image was written (generation %" PRIu64 "%s; the image expects %" PRIu64 "%s): the image is stale",
		 uuid, dev, sb.generation, sb.log_pending ? " with a tree log" : "",
		 g->stamp, g->count ? " with a tree log" : "");
	return -ESTALE;
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
	if (g->kind == IMAGE_GUARD_BTRFS)
		return check_btrfs(g, uuid, msg, msg_size);
	r = bd_ext_super_find(g->fs_uuid, dev, sizeof(dev), &sb);
	if (r < 0)
		return not_visible(uuid, r, msg, msg_size);
	if (sb.mtime == g->stamp && sb.mnt_count == g->count)
		return 0;
	format_time(sb.mtime, now, sizeof(now));
	format_time(g->stamp, then, sizeof(then));
	snprintf(msg, msg_size,
		 "the root filesystem UUID=%s on %s was mounted since this image was written (mounted at %s, mount count %u; the image expects %s, count %u): the image is stale",
		 uuid, dev, now, sb.mnt_count, then, g->count);
	return -ESTALE;
}
