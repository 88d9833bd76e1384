/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Block-device helpers of the swap and file writers; see blockdev.h.
 */
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <linux/fiemap.h>
#include <linux/fs.h>
#include <linux/magic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "blockdev.h"
#include "crc32c.h"

/* ---- small helpers --------------------------------------------------------- */

void
bd_put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

void
bd_put64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

uint32_t
bd_get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	       (uint32_t)p[3] << 24;
}

uint64_t
bd_get64(const uint8_t *p)
{
	return (uint64_t)bd_get32(p) | (uint64_t)bd_get32(p + 4) << 32;
}

uint64_t
bd_round_up(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

static int
read_text(const char *path, char *buf, size_t size)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	if (fd < 0)
		return -errno;
	n = read(fd, buf, size - 1);
	if (n < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	close(fd);
	buf[n] = '\0';
	return 0;
}

static int
full_pread(int fd, void *buf, size_t len, uint64_t off)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t k = pread(fd, p, len, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -ENODATA;
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

static int
full_pwrite(int fd, const void *buf, size_t len, uint64_t off)
{
	const uint8_t *p = buf;

	while (len > 0) {
		ssize_t k = pwrite(fd, p, len, (off_t)off);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		p += k;
		len -= (size_t)k;
		off += (uint64_t)k;
	}
	return 0;
}

/* ---- naming devices ---------------------------------------------------- */

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
	r = read_text(path, text, sizeof(text));
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

static void
format_uuid(const uint8_t u[16], char *buf, size_t size)
{
	snprintf(buf, size,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8], u[9],
		 u[10], u[11], u[12], u[13], u[14], u[15]);
}

static bool
all_zero(const uint8_t *p, size_t n)
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
		if (!all_zero(b + 1036, 16))
			format_uuid(b + 1036, p->uuid, sizeof(p->uuid));
		memcpy(p->label, b + 1052, 16);
		return;
	}
	if (len >= 2048 && b[1024 + 0x38] == 0x53 && b[1024 + 0x39] == 0xef) {
		format_uuid(b + 1024 + 0x68, p->uuid, sizeof(p->uuid));
		memcpy(p->label, b + 1024 + 0x78, 16);
		return;
	}
	if (memcmp(b, "XFSB", 4) == 0) {
		format_uuid(b + 32, p->uuid, sizeof(p->uuid));
		memcpy(p->label, b + 108, 12);
		return;
	}
	if (len >= 65536 + 0x12b + 256 &&
	    memcmp(b + 65536 + 0x40, "_BHRfS_M", 8) == 0) {
		format_uuid(b + 65536 + 0x20, p->uuid, sizeof(p->uuid));
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

	format_uuid(u, buf, size);
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
	r = full_pread(fd, sec, sizeof(sec), 512);
	if (r == 0 && memcmp(sec, "EFI PART", 8) == 0) {
		lba = bd_get64(sec + 72);
		n = bd_get32(sec + 80);
		esize = bd_get32(sec + 84);
		if (partno == 0 || partno > n || esize < 128 || esize > 4096) {
			close(fd);
			return -ENOENT;
		}
		at = lba * 512 + (uint64_t)(partno - 1) * esize;
		r = full_pread(fd, entry, sizeof(entry), at);
		close(fd);
		if (r < 0)
			return r;
		format_guid(entry + 16, buf, size);
		return 0;
	}
	/* MBR: the disk signature and the partition number. */
	r = full_pread(fd, sec, sizeof(sec), 0);
	close(fd);
	if (r < 0)
		return r;
	if (sec[510] != 0x55 || sec[511] != 0xaa)
		return -ENOENT;
	snprintf(buf, size, "%08x-%02x", bd_get32(sec + 440), partno);
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
		if (read_text(path, text, sizeof(text)) < 0 ||
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
			if (read_text(path, text, sizeof(text)) < 0 ||
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

/* ---- I/O --------------------------------------------------------------- */

void
bd_init(struct bd_dev *d)
{
	memset(d, 0, sizeof(*d));
	d->fd = -1;
}

int
bd_open(struct bd_dev *d, const char *path, bool writable)
{
	struct stat st;
	void *b = NULL;
	int fd, r;

	fd = open(path, (writable ? O_RDWR : O_RDONLY) | O_DIRECT | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISBLK(st.st_mode)) {
		r = -ENOTBLK;
		goto fail;
	}
	if (ioctl(fd, BLKGETSIZE64, &d->size) < 0) {
		r = -errno;
		goto fail;
	}
	if (d->size == 0) {
		r = -ENXIO;
		goto fail;
	}
	if (posix_memalign(&b, BD_BLOCK, BD_IO_MAX) != 0) {
		r = -ENOMEM;
		goto fail;
	}
	d->fd = fd;
	d->bounce = b;
	d->writable = writable;
	snprintf(d->path, sizeof(d->path), "%s", path);
	return 0;
fail:
	close(fd);
	d->size = 0;
	return r;
}

void
bd_close(struct bd_dev *d)
{
	if (d->fd >= 0)
		close(d->fd);
	free(d->bounce);
	d->fd = -1;
	d->bounce = NULL;
	d->size = 0;
	d->writable = false;
}

static bool
aligned(uintptr_t v, uintptr_t to)
{
	return v % to == 0;
}

int
bd_read(struct bd_dev *d, uint64_t off, void *buf, size_t len)
{
	uint8_t *out = buf;
	int r;

	if (off > d->size || len > d->size - off)
		return -ENODATA;
	while (len > 0) {
		uint64_t start, end;
		size_t n;

		if (aligned((uintptr_t)out, BD_BLOCK) && aligned(off, BD_BLOCK) &&
		    len >= BD_BLOCK) {
			n = len > BD_IO_MAX ? BD_IO_MAX : len / BD_BLOCK * BD_BLOCK;
			r = full_pread(d->fd, out, n, off);
			if (r < 0)
				return r;
		} else {
			/* Through the bounce buffer, widened to blocks. */
			start = off / BD_BLOCK * BD_BLOCK;
			end = bd_round_up(off + len, BD_BLOCK);
			if (end - start > BD_IO_MAX)
				end = start + BD_IO_MAX;
			if (end > d->size)
				end = bd_round_up(d->size, 512);
			r = full_pread(d->fd, d->bounce, end - start, start);
			if (r < 0)
				return r;
			n = end - off < len ? end - off : len;
			memcpy(out, d->bounce + (off - start), n);
		}
		out += n;
		off += n;
		len -= n;
	}
	return 0;
}

int
bd_write(struct bd_dev *d, uint64_t off, const void *buf, size_t len)
{
	const uint8_t *in = buf;
	int r;

	if (!d->writable)
		return -EBADF;
	if (!aligned(off, 512))
		return -EINVAL;
	if (off > d->size || bd_round_up(len, 512) > d->size - off)
		return -ENOSPC;
	if (aligned((uintptr_t)in, BD_BLOCK) && aligned(len, 512))
		return full_pwrite(d->fd, in, len, off);
	while (len > 0) {
		size_t n = len > BD_IO_MAX ? BD_IO_MAX : len;
		size_t padded = bd_round_up(n, 512);

		memcpy(d->bounce, in, n);
		memset(d->bounce + n, 0, padded - n);
		r = full_pwrite(d->fd, d->bounce, padded, off);
		if (r < 0)
			return r;
		in += n;
		off += n;
		len -= n;
	}
	return 0;
}

int
bd_sync(struct bd_dev *d)
{
	return fsync(d->fd) < 0 ? -errno : 0;
}

/* ---- run lists ----------------------------------------------------------- */

void
bd_map_clear(struct bd_map *m)
{
	free(m->runs);
	memset(m, 0, sizeof(*m));
}

int
bd_map_add(struct bd_map *m, uint64_t phys, uint64_t len)
{
	if (len == 0)
		return 0;
	if (m->n && m->runs[m->n - 1].phys + m->runs[m->n - 1].len == phys) {
		m->runs[m->n - 1].len += len;
		m->total += len;
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct bd_run *runs = realloc(m->runs, cap * sizeof(*runs));

		if (!runs)
			return -ENOMEM;
		m->runs = runs;
		m->cap = cap;
	}
	m->runs[m->n].phys = phys;
	m->runs[m->n].len = len;
	m->n++;
	m->total += len;
	return 0;
}

int
bd_map_slice(const struct bd_map *m, uint64_t off, uint64_t len,
	     struct bd_map *out)
{
	uint64_t at = 0;
	int r;

	if (off > m->total || len > m->total - off)
		return -ENODATA;
	for (size_t i = 0; i < m->n && len > 0; i++) {
		const struct bd_run *run = &m->runs[i];
		uint64_t skip, n;

		if (off >= at + run->len) {
			at += run->len;
			continue;
		}
		skip = off - at;
		n = run->len - skip < len ? run->len - skip : len;
		r = bd_map_add(out, run->phys + skip, n);
		if (r < 0)
			return r;
		off += n;
		len -= n;
		at += run->len;
	}
	return 0;
}

static int
map_io(struct bd_dev *d, const struct bd_map *m, uint64_t off, void *buf,
       size_t len, bool write)
{
	uint8_t *p = buf;
	uint64_t at = 0;
	int r;

	if (off > m->total || len > m->total - off)
		return -ENODATA;
	for (size_t i = 0; i < m->n && len > 0; i++) {
		const struct bd_run *run = &m->runs[i];
		uint64_t skip, n;

		if (off >= at + run->len) {
			at += run->len;
			continue;
		}
		skip = off - at;
		n = run->len - skip < len ? run->len - skip : len;
		r = write ? bd_write(d, run->phys + skip, p, n) :
			    bd_read(d, run->phys + skip, p, n);
		if (r < 0)
			return r;
		p += n;
		off += n;
		len -= n;
		at += run->len;
	}
	return len ? -ENODATA : 0;
}

int
bd_map_read(struct bd_dev *d, const struct bd_map *m, uint64_t off,
	    void *buf, size_t len)
{
	return map_io(d, m, off, buf, len, false);
}

int
bd_map_write(struct bd_dev *d, const struct bd_map *m, uint64_t off,
	     const void *buf, size_t len)
{
	return map_io(d, m, off, (void *)buf, len, true);
}

bool
bd_map_inside(const struct bd_map *m, uint64_t dev_size)
{
	for (size_t i = 0; i < m->n; i++)
		if (m->runs[i].phys > dev_size ||
		    m->runs[i].len > dev_size - m->runs[i].phys)
			return false;
	return true;
}

size_t
bd_map_blob_size(size_t n_runs)
{
	return 24 + 16 * n_runs;
}

int
bd_map_save(const struct bd_map *m, uint64_t stream_len, uint8_t *buf,
	    size_t size)
{
	size_t need = bd_map_blob_size(m->n);

	if (size < need)
		return -ENOBUFS;
	if (need > INT_MAX)
		return -E2BIG;
	memset(buf, 0, need);
	memcpy(buf, "TPRM", 4);
	bd_put32(buf + 4, 1);
	bd_put64(buf + 8, stream_len);
	bd_put32(buf + 16, (uint32_t)m->n);
	for (size_t i = 0; i < m->n; i++) {
		bd_put64(buf + 24 + 16 * i, m->runs[i].phys);
		bd_put64(buf + 32 + 16 * i, m->runs[i].len);
	}
	bd_put32(buf + 20, crc32c(0, buf, need));
	return (int)need;
}

int
bd_map_load(const uint8_t *buf, size_t len, struct bd_map *ret,
	    uint64_t *ret_stream_len)
{
	struct bd_map m = { 0 };
	uint8_t *copy;
	uint64_t stream_len;
	uint32_t n, crc;
	int r;

	if (len < 24 || memcmp(buf, "TPRM", 4) != 0 || bd_get32(buf + 4) != 1)
		return -EBADMSG;
	n = bd_get32(buf + 16);
	if (len != bd_map_blob_size(n))
		return -EBADMSG;
	copy = malloc(len);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, buf, len);
	bd_put32(copy + 20, 0);
	crc = crc32c(0, copy, len);
	free(copy);
	if (crc != bd_get32(buf + 20))
		return -EBADMSG;
	stream_len = bd_get64(buf + 8);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t phys = bd_get64(buf + 24 + 16 * (size_t)i);
		uint64_t rl = bd_get64(buf + 32 + 16 * (size_t)i);

		if (rl == 0 || phys + rl < phys) {
			bd_map_clear(&m);
			return -EBADMSG;
		}
		r = bd_map_add(&m, phys, rl);
		if (r < 0) {
			bd_map_clear(&m);
			return r;
		}
	}
	if (stream_len > m.total) {
		bd_map_clear(&m);
		return -EBADMSG;
	}
	*ret = m;
	*ret_stream_len = stream_len;
	return 0;
}

/* ---- the index block ------------------------------------------------------ */

void
bd_index_encode(const struct bd_index *ix, const char magic[8],
		uint8_t *block)
{
	memset(block, 0, BD_BLOCK);
	memcpy(block, magic, 8);
	bd_put32(block + 8, 1);
	bd_put64(block + 16, ix->header_len);
	bd_put32(block + 24, (uint32_t)ix->header.n);
	memcpy(block + 32, ix->saved, BD_INDEX_SAVED);
	for (size_t i = 0; i < ix->header.n && i < BD_INDEX_MAX_RUNS; i++) {
		bd_put64(block + 128 + 16 * i, ix->header.runs[i].phys);
		bd_put64(block + 136 + 16 * i, ix->header.runs[i].len);
	}
	bd_put32(block + 12, crc32c(0, block, BD_BLOCK));
}

int
bd_index_decode(const uint8_t *block, const char magic[8],
		struct bd_index *ret)
{
	struct bd_index ix;
	uint8_t *copy;
	uint32_t n, crc;
	int r;

	if (memcmp(block, magic, 8) != 0)
		return -ENOENT;
	copy = malloc(BD_BLOCK);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, block, BD_BLOCK);
	bd_put32(copy + 12, 0);
	crc = crc32c(0, copy, BD_BLOCK);
	free(copy);
	n = bd_get32(block + 24);
	if (crc != bd_get32(block + 12) || bd_get32(block + 8) != 1 ||
	    n > BD_INDEX_MAX_RUNS)
		return -EBADMSG;
	memset(&ix, 0, sizeof(ix));
	ix.header_len = bd_get64(block + 16);
	memcpy(ix.saved, block + 32, BD_INDEX_SAVED);
	for (uint32_t i = 0; i < n; i++) {
		uint64_t phys = bd_get64(block + 128 + 16 * (size_t)i);
		uint64_t len = bd_get64(block + 136 + 16 * (size_t)i);

		if (len == 0 || phys + len < phys) {
			bd_map_clear(&ix.header);
			return -EBADMSG;
		}
		r = bd_map_add(&ix.header, phys, len);
		if (r < 0) {
			bd_map_clear(&ix.header);
			return r;
		}
	}
	if (ix.header_len == 0 || ix.header_len > ix.header.total) {
		bd_map_clear(&ix.header);
		return -EBADMSG;
	}
	*ret = ix;
	return 0;
}

/* ---- files ----------------------------------------------------------------- */

static const struct {
	uint32_t flag;
	const char *why;
} untrusted_extents[] = {
	{ FIEMAP_EXTENT_UNKNOWN, "has an extent whose location is unknown" },
	{ FIEMAP_EXTENT_DELALLOC, "has an extent not yet allocated (delayed allocation)" },
	{ FIEMAP_EXTENT_ENCODED, "has an encoded (compressed) extent" },
	{ FIEMAP_EXTENT_DATA_ENCRYPTED, "has an encrypted extent" },
	{ FIEMAP_EXTENT_NOT_ALIGNED, "has an extent that is not block aligned" },
	{ FIEMAP_EXTENT_DATA_INLINE, "keeps data inline in its metadata" },
	{ FIEMAP_EXTENT_DATA_TAIL, "packs its tail with other files' data" },
	{ FIEMAP_EXTENT_UNWRITTEN, "has an unwritten extent (allocated by fallocate, never written): run 'torpor file-setup' to write it once" },
	{ FIEMAP_EXTENT_SHARED, "shares an extent with another file (reflink or snapshot): writing it would change the other file too" },
};

int
bd_file_map(int fd, uint64_t len, struct bd_map *ret, char *why,
	    size_t why_size)
{
	const unsigned count = 256;
	struct fiemap *fm;
	struct bd_map m = { 0 };
	uint64_t next = 0;
	bool last = false;
	int r = 0;

	fm = calloc(1, sizeof(*fm) + count * sizeof(struct fiemap_extent));
	if (!fm)
		return -ENOMEM;
	while (next < len && !last) {
		memset(fm, 0, sizeof(*fm));
		fm->fm_start = next;
		fm->fm_length = len - next;
		fm->fm_flags = FIEMAP_FLAG_SYNC;
		fm->fm_extent_count = count;
		if (ioctl(fd, FS_IOC_FIEMAP, fm) < 0) {
			r = -errno;
			snprintf(why, why_size, "its block map cannot be read (FIEMAP: %s)",
				 strerror(errno));
			goto out;
		}
		if (fm->fm_mapped_extents == 0)
			break;
		for (unsigned i = 0; i < fm->fm_mapped_extents && next < len; i++) {
			const struct fiemap_extent *e = &fm->fm_extents[i];
			uint64_t skip, n;

			for (size_t k = 0; k < sizeof(untrusted_extents) /
			     sizeof(untrusted_extents[0]); k++) {
				if (e->fe_flags & untrusted_extents[k].flag) {
					snprintf(why, why_size, "%s (at byte %llu)",
						 untrusted_extents[k].why,
						 (unsigned long long)e->fe_logical);
					r = -EBADFD;
					goto out;
				}
			}
			if (e->fe_logical > next) {
				snprintf(why, why_size,
					 "has a hole at byte %" PRIu64 ": run 'torpor file-setup' to allocate and write it",
					 next);
				r = -EBADFD;
				goto out;
			}
			if (e->fe_logical + e->fe_length <= next)
				continue;
			skip = next - e->fe_logical;
			n = e->fe_length - skip;
			if (n > len - next)
				n = len - next;
			r = bd_map_add(&m, e->fe_physical + skip, n);
			if (r < 0)
				goto out;
			next += n;
			if (e->fe_flags & FIEMAP_EXTENT_LAST)
				last = true;
		}
	}
	if (next < len) {
		snprintf(why, why_size,
			 "has a hole at byte %" PRIu64 ": run 'torpor file-setup' to allocate and write it",
			 next);
		r = -EBADFD;
	}
out:
	free(fm);
	if (r < 0) {
		bd_map_clear(&m);
		return r;
	}
	*ret = m;
	return 0;
}

#ifndef BCACHEFS_SUPER_MAGIC
#define BCACHEFS_SUPER_MAGIC 0xca451a4e
#endif
#ifndef ZFS_SUPER_MAGIC
#define ZFS_SUPER_MAGIC 0x2fc12fc1
#endif
#ifndef FUSE_SUPER_MAGIC
#define FUSE_SUPER_MAGIC 0x65735546
#endif

int
bd_check_fs(int fd, char *why, size_t why_size)
{
	static const struct {
		unsigned long magic;
		const char *why;
	} refused[] = {
		{ TMPFS_MAGIC, "is on tmpfs: its pages live in memory and have no place on a disk" },
		{ RAMFS_MAGIC, "is on ramfs: its pages live in memory and have no place on a disk" },
		{ BTRFS_SUPER_MAGIC, "is on btrfs, where copy-on-write, compression and balancing can move its blocks after the block map was taken; torpor refuses btrfs (use a swap partition or another filesystem)" },
		{ BCACHEFS_SUPER_MAGIC, "is on bcachefs, whose copy-on-write moves blocks" },
		{ ZFS_SUPER_MAGIC, "is on ZFS, whose copy-on-write moves blocks" },
		{ OVERLAYFS_SUPER_MAGIC, "is on overlayfs: name the file on its underlying filesystem" },
		{ NFS_SUPER_MAGIC, "is on NFS: it has no local block device" },
		{ FUSE_SUPER_MAGIC, "is on a FUSE filesystem: it has no block map" },
		{ SQUASHFS_MAGIC, "is on squashfs, which is read-only and compressed" },
	};
	struct statfs sf;
	struct stat st;
	char node[256];

	if (fstatfs(fd, &sf) < 0 || fstat(fd, &st) < 0) {
		snprintf(why, why_size, "cannot be inspected: %s", strerror(errno));
		return -errno;
	}
	for (size_t i = 0; i < sizeof(refused) / sizeof(refused[0]); i++) {
		if ((unsigned long)sf.f_type == refused[i].magic) {
			snprintf(why, why_size, "%s", refused[i].why);
			return -EXDEV;
		}
	}
	if (!S_ISREG(st.st_mode)) {
		snprintf(why, why_size, "is not a regular file");
		return -EXDEV;
	}
	if (bd_devnode(st.st_dev, node, sizeof(node)) < 0) {
		snprintf(why, why_size,
			 "lives on device %u:%u, which is not a block device with a node in /dev",
			 major(st.st_dev), minor(st.st_dev));
		return -EXDEV;
	}
	return 0;
}

/* ---- writing a stream in whole blocks ------------------------------------- */

int
bd_stream_init(struct bd_stream *s, size_t unit)
{
	void *p = NULL;

	memset(s, 0, sizeof(*s));
	if (posix_memalign(&p, BD_BLOCK, unit) != 0)
		return -ENOMEM;
	s->pend = p;
	s->unit = unit;
	return 0;
}

void
bd_stream_free(struct bd_stream *s)
{
	free(s->pend);
	memset(s, 0, sizeof(*s));
}

int
bd_stream_write(struct bd_stream *s, const void *buf, size_t len,
		bd_emit_fn emit, void *ctx)
{
	const uint8_t *p = buf;
	size_t whole;
	int r;

	if (s->pend_len) {
		size_t n = s->unit - s->pend_len;

		if (n > len)
			n = len;
		memcpy(s->pend + s->pend_len, p, n);
		s->pend_len += n;
		p += n;
		len -= n;
		s->written += n;
		if (s->pend_len < s->unit)
			return 0;
		r = emit(ctx, s->pend, s->unit);
		if (r < 0)
			return r;
		s->pend_len = 0;
	}
	whole = len / s->unit * s->unit;
	if (whole) {
		r = emit(ctx, p, whole);
		if (r < 0)
			return r;
		p += whole;
		len -= whole;
		s->written += whole;
	}
	if (len) {
		memcpy(s->pend, p, len);
		s->pend_len = len;
		s->written += len;
	}
	return 0;
}

int
bd_stream_flush(struct bd_stream *s, bd_emit_fn emit, void *ctx)
{
	int r;

	if (!s->pend_len)
		return 0;
	memset(s->pend + s->pend_len, 0, s->unit - s->pend_len);
	r = emit(ctx, s->pend, s->unit);
	if (r == 0)
		s->pend_len = 0;
	return r;
}

/* ---- reading an image back ------------------------------------------------ */

void
bd_image_clear(struct bd_image *im)
{
	bd_map_clear(&im->ix.header);
	bd_map_clear(&im->stream);
	memset(im, 0, sizeof(*im));
}

int
bd_image_read_header(struct bd_dev *d, const struct bd_image *im, void *buf,
		     size_t size, size_t *ret_len)
{
	int r;

	if (!im->found || im->corrupt)
		return -EBADMSG;
	if (!bd_map_inside(&im->ix.header, d->size))
		return -EBADMSG;
	if (im->ix.header_len > size)
		return -EMSGSIZE;
	r = bd_map_read(d, &im->ix.header, 0, buf, im->ix.header_len);
	if (r < 0)
		return r;
	*ret_len = im->ix.header_len;
	return 0;
}

int
bd_image_load_config(struct bd_image *im, const uint8_t *buf, size_t len)
{
	struct bd_map m;
	uint64_t stream_len;
	int r;

	r = bd_map_load(buf, len, &m, &stream_len);
	if (r < 0)
		return r;
	bd_map_clear(&im->stream);
	im->stream = m;
	im->stream_len = stream_len;
	im->have_stream = true;
	return 0;
}

int
bd_image_read(struct bd_dev *d, const struct bd_image *im, uint64_t off,
	      void *buf, size_t len)
{
	if (!im->have_stream || off > im->stream_len ||
	    len > im->stream_len - off)
		return -ENODATA;
	if (!bd_map_inside(&im->stream, d->size))
		return -EBADMSG;
	return bd_map_read(d, &im->stream, off, buf, len);
}

int
bd_image_rewrite_header(struct bd_dev *d, const struct bd_image *im,
			const void *header, size_t len)
{
	int r;

	if (!im->found || im->corrupt || len != im->ix.header_len)
		return -EINVAL;
	r = bd_map_write(d, &im->ix.header, 0, header, len);
	return r < 0 ? r : bd_sync(d);
}
