/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files on btrfs (see btrfs.h).  FIEMAP on btrfs gives
 * btrfs logical addresses: one address space over all the filesystem's
 * devices, cut into chunks, each placed on one or more devices by the
 * chunk tree.  A file can hold an image only where that placement is one
 * copy on one device: a filesystem of one device, data chunks of the
 * single profile, and a file that is written in place (NOCOW, so neither
 * copy-on-write nor compression moves or encodes its blocks).  Then each
 * logical run maps to one physical run of that device.
 */
#include <errno.h>
#include <inttypes.h>
#include <linux/btrfs.h>
#include <linux/btrfs_tree.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>

#include <torpor/plugin-util.h>

#include "btrfs.h"
#include "run-list.h"

/* A filesystem with more chunks than this is refused rather than read
 * whole: 1 GiB data chunks make it 64 TiB of data. */
#define BTRFS_MAX_CHUNKS 65536

struct chunk {
	uint64_t logical, len, type, devid, phys;
	uint16_t num_stripes;
};

struct chunks {
	struct chunk *c;
	size_t n, cap;
};

static int
chunks_add(struct chunks *cs, const struct chunk *c)
{
	if (cs->n == cs->cap) {
		size_t cap = cs->cap ? cs->cap * 2 : 64;
		struct chunk *n;

		if (cs->n >= BTRFS_MAX_CHUNKS)
			return -E2BIG;
		n = realloc(cs->c, cap * sizeof(*n));
		if (!n)
			return -ENOMEM;
		cs->c = n;
		cs->cap = cap;
	}
	cs->c[cs->n++] = *c;
	return 0;
}

/* One chunk item (a struct btrfs_chunk with its stripes) at logical. */
static int
parse_chunk(uint64_t logical, const uint8_t *item, uint32_t len,
	    struct chunk *c)
{
	const size_t head = offsetof(struct btrfs_chunk, stripe);
	const size_t stripe = sizeof(struct btrfs_stripe);

	if (len < head + stripe)
		return -EBADMSG;
	c->logical = logical;
	c->len = torpor_get_le64(item + offsetof(struct btrfs_chunk, length));
	c->type = torpor_get_le64(item + offsetof(struct btrfs_chunk, type));
	c->num_stripes = torpor_get_le16(item + offsetof(struct btrfs_chunk, num_stripes));
	if (c->num_stripes == 0 || len < head + (size_t)c->num_stripes * stripe)
		return -EBADMSG;
	c->devid = torpor_get_le64(item + head + offsetof(struct btrfs_stripe, devid));
	c->phys = torpor_get_le64(item + head + offsetof(struct btrfs_stripe, offset));
	return 0;
}

/* Every chunk of the filesystem of fd, in logical order (the chunk tree's
 * key order).  Needs CAP_SYS_ADMIN. */
static int
read_chunks(int fd, struct chunks *cs, char *why, size_t why_size)
{
	struct btrfs_ioctl_search_args *args;
	int r = 0;

	args = calloc(1, sizeof(*args));
	if (!args)
		return -ENOMEM;
	args->key.tree_id = BTRFS_CHUNK_TREE_OBJECTID;
	args->key.min_objectid = BTRFS_FIRST_CHUNK_TREE_OBJECTID;
	args->key.max_objectid = BTRFS_FIRST_CHUNK_TREE_OBJECTID;
	args->key.min_type = BTRFS_CHUNK_ITEM_KEY;
	args->key.max_type = BTRFS_CHUNK_ITEM_KEY;
	args->key.min_offset = 0;
	args->key.max_offset = UINT64_MAX;
	args->key.max_transid = UINT64_MAX;
	for (;;) {
		size_t pos = 0;
		uint64_t last = 0;

		args->key.nr_items = 4096;
		if (ioctl(fd, BTRFS_IOC_TREE_SEARCH, args) < 0) {
			r = -errno;
			snprintf(why, why_size, "its btrfs chunk map cannot be read (TREE_SEARCH: %s)",
				 strerror(errno));
			break;
		}
		if (args->key.nr_items == 0)
			break;
		for (uint32_t i = 0; i < args->key.nr_items; i++) {
			struct btrfs_ioctl_search_header h;
			struct chunk c;

			if (pos + sizeof(h) > sizeof(args->buf))
				break;
			memcpy(&h, args->buf + pos, sizeof(h));
			pos += sizeof(h);
			if (h.len > sizeof(args->buf) - pos) {
				r = -EBADMSG;
				break;
			}
			if (h.type == BTRFS_CHUNK_ITEM_KEY) {
				r = parse_chunk(h.offset, (const uint8_t *)args->buf + pos,
						h.len, &c);
				if (r == 0)
					r = chunks_add(cs, &c);
				if (r < 0)
					break;
			}
			pos += h.len;
			last = h.offset;
		}
		if (r < 0) {
			snprintf(why, why_size, r == -E2BIG ?
				 "its btrfs filesystem has more than %d chunks" :
				 "its btrfs chunk map does not parse (%d)",
				 r == -E2BIG ? BTRFS_MAX_CHUNKS : r);
			break;
		}
		if (last == UINT64_MAX)
			break;
		args->key.min_offset = last + 1;
	}
	free(args);
	return r;
}

static const struct chunk *
find_chunk(const struct chunks *cs, uint64_t logical)
{
	size_t lo = 0, hi = cs->n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (cs->c[mid].logical + cs->c[mid].len <= logical)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (lo < cs->n && cs->c[lo].logical <= logical)
		return &cs->c[lo];
	return NULL;
}

/* Why data in chunk c cannot be written in place on one device, or NULL. */
static const char *
chunk_refusal(const struct chunk *c)
{
	if (!(c->type & BTRFS_BLOCK_GROUP_DATA))
		return "lies in a chunk that does not hold data";
	if (c->type & BTRFS_BLOCK_GROUP_DUP)
		return "lies in a data chunk of the dup profile (two copies on one device; torpor would write one)";
	if (c->type & BTRFS_BLOCK_GROUP_PROFILE_MASK)
		return "lies in a data chunk of a RAID profile (raid0/1/10/5/6 spread or copy it over several devices); only the single profile can hold an image";
	if (c->num_stripes != 1)
		return "lies in a data chunk with several stripes";
	return NULL;
}

int
bd_btrfs_device(int fd, uint64_t *ret_devid, char *node, size_t node_size,
		char *why, size_t why_size)
{
	struct btrfs_ioctl_fs_info_args fi = { 0 };
	struct btrfs_ioctl_dev_info_args di = { 0 };

	if (ioctl(fd, BTRFS_IOC_FS_INFO, &fi) < 0) {
		int e = errno;

		snprintf(why, why_size, "its btrfs filesystem cannot be inspected (FS_INFO: %s)",
			 strerror(e));
		return -e;
	}
	if (fi.num_devices != 1) {
		snprintf(why, why_size,
			 "is on a btrfs filesystem of %llu devices: an image needs one device it can name at boot",
			 (unsigned long long)fi.num_devices);
		return -EXDEV;
	}
	/* The one device's id: 1 unless it was replaced (max_id then). */
	for (uint64_t id = 1; id <= fi.max_id; id++) {
		memset(&di, 0, sizeof(di));
		di.devid = id;
		if (ioctl(fd, BTRFS_IOC_DEV_INFO, &di) < 0)
			continue;
		if ((size_t)snprintf(node, node_size, "%s", (const char *)di.path) >=
		    node_size)
			return -ENAMETOOLONG;
		*ret_devid = id;
		return 0;
	}
	snprintf(why, why_size, "its btrfs filesystem names no device (DEV_INFO)");
	return -ENODEV;
}

int
bd_btrfs_file_check(int fd, char *why, size_t why_size)
{
	int flags = 0;

	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) < 0) {
		int e = errno;

		snprintf(why, why_size, "its btrfs attributes cannot be read (GETFLAGS: %s)",
			 strerror(e));
		return -e;
	}
	if (flags & FS_COMPR_FL) {
		snprintf(why, why_size,
			 "is compressed on btrfs (remove it and run 'torpor file-setup', which creates it NOCOW and so uncompressed)");
		return -EXDEV;
	}
	if (!(flags & FS_NOCOW_FL)) {
		snprintf(why, why_size,
			 "is copy-on-write on btrfs, so a write would move its blocks: it must be NOCOW from its creation (remove it and run 'torpor file-setup', which creates it so; chattr +C works only on an empty file)");
		return -EXDEV;
	}
	return 0;
}

int
bd_btrfs_to_physical(int fd, uint64_t devid, const struct bd_map *logical,
		     struct bd_map *ret, char *why, size_t why_size)
{
	struct chunks cs = { 0 };
	struct bd_map m = { 0 };
	int r;

	r = read_chunks(fd, &cs, why, why_size);
	for (size_t i = 0; r == 0 && i < logical->n; i++) {
		uint64_t at = logical->runs[i].phys, left = logical->runs[i].len;

		while (r == 0 && left) {
			const struct chunk *c = find_chunk(&cs, at);
			const char *no = c ? chunk_refusal(c) : "lies outside every btrfs chunk";
			uint64_t n;

			if (!no && c->devid != devid)
				no = "lies on another device of the filesystem";
			if (no) {
				snprintf(why, why_size, "%s (logical byte %" PRIu64 ")", no, at);
				r = -EXDEV;
				break;
			}
			n = c->logical + c->len - at;
			if (n > left)
				n = left;
			r = bd_map_add(&m, c->phys + (at - c->logical), n);
			at += n;
			left -= n;
		}
	}
	free(cs.c);
	if (r < 0) {
		bd_map_clear(&m);
		return r;
	}
	*ret = m;
	return 0;
}

int
bd_btrfs_make_nocow(int fd, char *why, size_t why_size)
{
	struct statfs sf;
	struct stat st;
	int flags = 0, e;

	if (fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0) {
		e = errno;
		snprintf(why, why_size, "cannot be inspected: %s", strerror(e));
		return -e;
	}
	if ((unsigned long)sf.f_type != BTRFS_SUPER_MAGIC || st.st_size != 0)
		return 0;
	if (ioctl(fd, FS_IOC_GETFLAGS, &flags) == 0) {
		if (flags & FS_NOCOW_FL)
			return 0;
		flags = (flags | FS_NOCOW_FL) & ~FS_COMPR_FL;
		if (ioctl(fd, FS_IOC_SETFLAGS, &flags) == 0)
			return 0;
	}
	e = errno;
	snprintf(why, why_size, "cannot be made NOCOW on btrfs (chattr +C): %s",
		 strerror(e));
	return -e;
}
