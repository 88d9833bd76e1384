/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Naming block devices: a specification (path, UUID=, LABEL=, PARTUUID=,
 * PARTLABEL=, MAJ:MIN) to a /dev node, a device number to its node, and
 * the UUID of what a device holds.  See device-names.h.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include <torpor/plugin-util.h>

#include "device-io.h"
#include "device-names.h"
#include "text.h"

uint32_t
bd_kernel_dev(dev_t dev)
{
	uint32_t ma = major(dev), mi = minor(dev);

	return (mi & 0xff) | (ma << 8) | ((mi & ~0xffu) << 12);
}

int
bd_devnode(dev_t dev, char *buf, size_t size)
{
	char path[64], text[1024], *p, *e;
	struct stat st;
	int r;

	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u/uevent",
		 major(dev), minor(dev));
	r = text_read_small(path, text, sizeof(text));
	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	p = strstr(text, "DEVNAME=");
	if (!p)
		return -ENODEV;
	p += strlen("DEVNAME=");
	e = strchr(p, '\n');
	if (e)
		*e = '\0';
	if ((size_t)snprintf(buf, size, "/dev/%s", p) >= size)
		return -ENAMETOOLONG;
	if (stat(buf, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode) || st.st_rdev != dev)
		return -ENODEV;
	return 0;
}

void
bd_format_uuid(const uint8_t u[16], char *buf, size_t size)
{
	snprintf(buf, size,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

bool
bd_all_zero(const uint8_t *p, size_t n)
{
	while (n--)
		if (*p++)
			return false;
	return true;
}

struct probe {
	char uuid[40];
	char label[257];
};

#define PROBE_LEN (65536 + 4096)

/* Identify what a device holds from its first PROBE_LEN bytes. */
static void
probe_buffer(const uint8_t *b, size_t len, struct probe *p)
{
	long page = sysconf(_SC_PAGESIZE);

	memset(p, 0, sizeof(*p));
	if (page > 0 && (size_t)page <= len &&
	    (memcmp(b + page - 10, "SWAPSPACE2", 10) == 0 ||
	     memcmp(b + page - 10, "TORPOR0001", 10) == 0)) {
		/* A swap area keeps its UUID and label under torpor's
		 * signature too: resume=UUID= must find it. */
		if (!bd_all_zero(b + 1036, 16))
			bd_format_uuid(b + 1036, p->uuid, sizeof(p->uuid));
		memcpy(p->label, b + 1052, 16);
		return;
	}
	if (len >= 2048 && b[1024 + 0x38] == 0x53 && b[1024 + 0x39] == 0xef) {
		bd_format_uuid(b + 1024 + 0x68, p->uuid, sizeof(p->uuid));
		memcpy(p->label, b + 1024 + 0x78, 16);
		return;
	}
	if (memcmp(b, "XFSB", 4) == 0) {
		bd_format_uuid(b + 32, p->uuid, sizeof(p->uuid));
		memcpy(p->label, b + 108, 12);
		return;
	}
	if (len >= 65536 + 0x12b + 256 &&
	    memcmp(b + 65536 + 0x40, "_BHRfS_M", 8) == 0) {
		bd_format_uuid(b + 65536 + 0x20, p->uuid, sizeof(p->uuid));
		memcpy(p->label, b + 65536 + 0x12b, 255);
	}
}

static int
probe_device(const char *path, struct probe *p)
{
	uint8_t *b;
	ssize_t n;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	b = calloc(1, PROBE_LEN);
	if (!b) {
		close(fd);
		return -ENOMEM;
	}
	n = pread(fd, b, PROBE_LEN, 0);
	if (n < 0)
		r = -errno;
	else
		probe_buffer(b, (size_t)n, p);
	free(b);
	close(fd);
	return r;
}

int
bd_uuid_of(const char *path, char *buf, size_t size)
{
	struct probe p;
	int r = probe_device(path, &p);

	if (r < 0)
		return r;
	if (!p.uuid[0])
		return -ENOENT;
	if ((size_t)snprintf(buf, size, "%s", p.uuid) >= size)
		return -ENAMETOOLONG;
	return 0;
}

/* GPT partition GUIDs print their first three fields little-endian. */
static void
format_guid(const uint8_t g[16], char *buf, size_t size)
{
	const uint8_t u[16] = { g[3], g[2], g[1], g[0], g[5], g[4], g[7], g[6],
				g[8], g[9], g[10], g[11], g[12], g[13], g[14],
				g[15] };

	bd_format_uuid(u, buf, size);
}

/* The PARTUUID of partition number partno of the disk at disk_path. */
static int
partuuid_of(const char *disk_path, unsigned partno, char *buf, size_t size)
{
	uint8_t sec[512], entry[128];
	uint64_t lba, at;
	uint32_t n, esize;
	int fd, r;

	fd = open(disk_path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	/* GPT: header at LBA 1, assuming 512-byte sectors (loop, virtio). */
	r = bd_pread_full(fd, sec, sizeof(sec), 512);
	if (r == 0 && memcmp(sec, "EFI PART", 8) == 0) {
		lba = torpor_get_le64(sec + 72);
		n = torpor_get_le32(sec + 80);
		esize = torpor_get_le32(sec + 84);
		if (partno == 0 || partno > n || esize < 128 || esize > 4096) {
			close(fd);
			return -ENOENT;
		}
		at = lba * 512 + (uint64_t)(partno - 1) * esize;
		r = bd_pread_full(fd, entry, sizeof(entry), at);
		close(fd);
		if (r < 0)
			return r;
		format_guid(entry + 16, buf, size);
		return 0;
	}
	/* MBR: the disk signature and the partition number. */
	r = bd_pread_full(fd, sec, sizeof(sec), 0);
	close(fd);
	if (r < 0)
		return r;
	if (sec[510] != 0x55 || sec[511] != 0xaa)
		return -ENOENT;
	snprintf(buf, size, "%08x-%02x", torpor_get_le32(sec + 440), partno);
	return 0;
}

/* Scan /sys/class/block for a device whose tag (UUID, LABEL, PARTUUID)
 * equals value. */
static int
scan_block_devices(const char *tag, const char *value, char *buf,
		   size_t size)
{
	DIR *d = opendir("/sys/class/block");
	struct dirent *de;
	int r = -ENODEV;

	if (!d)
		return -errno;
	while ((de = readdir(d))) {
		char path[PATH_MAX], text[64], node[256];
		unsigned ma, mi;
		struct probe p;

		if (de->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/sys/class/block/%s/dev", de->d_name);
		if (text_read_small(path, text, sizeof(text)) < 0 ||
		    sscanf(text, "%u:%u", &ma, &mi) != 2)
			continue;
		if (bd_devnode(makedev(ma, mi), node, sizeof(node)) < 0)
			continue;
		if (strcmp(tag, "PARTUUID") == 0) {
			char link[PATH_MAX], disk[PATH_MAX + 8], uuid[40], *slash;
			unsigned partno;
			ssize_t n;

			snprintf(path, sizeof(path), "/sys/class/block/%s/partition",
				 de->d_name);
			if (text_read_small(path, text, sizeof(text)) < 0 ||
			    sscanf(text, "%u", &partno) != 1)
				continue;
			snprintf(path, sizeof(path), "/sys/class/block/%s", de->d_name);
			n = readlink(path, link, sizeof(link) - 1);
			if (n < 0)
				continue;
			link[n] = '\0';
			slash = strrchr(link, '/');
			if (!slash)
				continue;
			*slash = '\0';
			slash = strrchr(link, '/');
			snprintf(disk, sizeof(disk), "/dev/%s", slash ? slash + 1 : link);
			if (partuuid_of(disk, partno, uuid, sizeof(uuid)) < 0 ||
			    strcasecmp(uuid, value) != 0)
				continue;
		} else {
			if (probe_device(node, &p) < 0)
				continue;
			if (strcmp(tag, "UUID") == 0 ? strcasecmp(p.uuid, value) != 0 :
			    strcmp(p.label, value) != 0)
				continue;
		}
		if ((size_t)snprintf(buf, size, "%s", node) >= size)
			r = -ENAMETOOLONG;
		else
			r = 0;
		break;
	}
	closedir(d);
	return r;
}

int
bd_resolve(const char *spec, char *buf, size_t size)
{
	static const struct { const char *tag, *dir; } tags[] = {
		{ "UUID", "/dev/disk/by-uuid/" },
		{ "LABEL", "/dev/disk/by-label/" },
		{ "PARTUUID", "/dev/disk/by-partuuid/" },
		{ "PARTLABEL", "/dev/disk/by-partlabel/" },
	};
	unsigned ma, mi;
	char extra;

	if (!spec || !*spec)
		return -EINVAL;
	if (spec[0] == '/') {
		if ((size_t)snprintf(buf, size, "%s", spec) >= size)
			return -ENAMETOOLONG;
		return 0;
	}
	if (sscanf(spec, "%u:%u%c", &ma, &mi, &extra) == 2)
		return bd_devnode(makedev(ma, mi), buf, size);
	for (size_t i = 0; i < sizeof(tags) / sizeof(tags[0]); i++) {
		size_t n = strlen(tags[i].tag);
		char link[PATH_MAX], *real;

		if (strncmp(spec, tags[i].tag, n) != 0 || spec[n] != '=')
			continue;
		snprintf(link, sizeof(link), "%s%s", tags[i].dir, spec + n + 1);
		real = realpath(link, NULL);
		if (real) {
			int r = 0;

			if ((size_t)snprintf(buf, size, "%s", real) >= size)
				r = -ENAMETOOLONG;
			free(real);
			return r;
		}
		/* No udev (initramfs without it, containers): look
		 * ourselves. */
		if (strcmp(tags[i].tag, "PARTLABEL") == 0)
			return -ENODEV;
		return scan_block_devices(tags[i].tag, spec + n + 1, buf, size);
	}
	return -EINVAL;
}

int
bd_resolve_uuid(const uint8_t uuid[16], char *buf, size_t size)
{
	char spec[48], text[40];
	int r;

	bd_format_uuid(uuid, text, sizeof(text));
	snprintf(spec, sizeof(spec), "UUID=%s", text);
	r = bd_resolve(spec, buf, size);
	return r == -ENOENT ? -ENODEV : r;
}

int
bd_resolve_dev(const char *spec, char *buf, size_t size, dev_t *ret)
{
	struct stat st;
	int r = bd_resolve(spec, buf, size);

	if (r < 0)
		return r;
	if (stat(buf, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	*ret = st.st_rdev;
	return 0;
}
