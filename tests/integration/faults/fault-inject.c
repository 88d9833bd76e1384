/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An LD_PRELOAD library that makes the writes to one device fail, for the
 * fault tests on hosts without device-mapper (where dm-error and
 * dm-flakey over a loop device would do the same in the kernel).
 *
 *   TORPOR_FAULT_DEV=PATH       the device or file (matched by st_rdev for
 *                               a block device, else by st_dev/st_ino)
 *   TORPOR_FAULT_FROM=BYTES     every pwrite that reaches this offset or
 *                               beyond fails with EIO, as a linear table
 *                               followed by an error target would
 *   TORPOR_FAULT_TO=BYTES       ... and starts below this one (default:
 *                               the end of the device)
 *   TORPOR_FAULT_SYNC=N         the Nth fsync or fdatasync of the device
 *                               and every later one fail with EIO (a
 *                               failed flush at the commit)
 *   TORPOR_FAULT_ENOSPC=1       the failing writes say ENOSPC instead (a
 *                               file on a filesystem that filled up)
 *
 * Each fault injected is counted on stderr ("fault-inject: ...") so the
 * test can tell that the fault really happened.
 */
/* Both names, pwrite and pwrite64, are defined below: no redirection. */
#undef _FILE_OFFSET_BITS
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

typedef ssize_t (*pwrite_fn)(int, const void *, size_t, off_t);
typedef int (*sync_fn)(int);

static struct stat target;
static int have_target;
static uint64_t fault_from = UINT64_MAX;
static uint64_t fault_to = UINT64_MAX;
static unsigned long fault_sync;
static unsigned long syncs;
static int fault_errno = EIO;

__attribute__((constructor)) static void
fault_setup(void)
{
	const char *dev = getenv("TORPOR_FAULT_DEV");
	const char *v;

	if (!dev || stat(dev, &target) < 0)
		return;
	have_target = 1;
	v = getenv("TORPOR_FAULT_FROM");
	if (v)
		fault_from = strtoull(v, NULL, 0);
	v = getenv("TORPOR_FAULT_TO");
	if (v)
		fault_to = strtoull(v, NULL, 0);
	v = getenv("TORPOR_FAULT_SYNC");
	if (v)
		fault_sync = strtoul(v, NULL, 0);
	v = getenv("TORPOR_FAULT_ENOSPC");
	if (v && *v == '1')
		fault_errno = ENOSPC;
}

static int
is_target(int fd)
{
	struct stat st;

	if (!have_target || fstat(fd, &st) < 0)
		return 0;
	if (S_ISBLK(target.st_mode))
		return S_ISBLK(st.st_mode) && st.st_rdev == target.st_rdev;
	return st.st_dev == target.st_dev && st.st_ino == target.st_ino;
}

static int
write_fails(int fd, size_t len, off_t off)
{
	uint64_t start = (uint64_t)off, end = start + len;

	if (fault_from == UINT64_MAX || !is_target(fd))
		return 0;
	if (end <= fault_from || start >= fault_to)
		return 0;
	fprintf(stderr, "fault-inject: %s for %zu bytes at %llu\n",
		fault_errno == EIO ? "EIO" : "ENOSPC", len,
		(unsigned long long)start);
	return 1;
}

static ssize_t
do_pwrite(const char *name, int fd, const void *buf, size_t len, off_t off)
{
	pwrite_fn real = (pwrite_fn)dlsym(RTLD_NEXT, name);

	if (write_fails(fd, len, off)) {
		errno = fault_errno;
		return -1;
	}
	return real(fd, buf, len, off);
}

ssize_t
pwrite(int fd, const void *buf, size_t len, off_t off)
{
	return do_pwrite("pwrite", fd, buf, len, off);
}

ssize_t
pwrite64(int fd, const void *buf, size_t len, off_t off)
{
	return do_pwrite("pwrite64", fd, buf, len, off);
}

static int
do_sync(const char *name, int fd)
{
	sync_fn real = (sync_fn)dlsym(RTLD_NEXT, name);

	if (fault_sync && is_target(fd) && ++syncs >= fault_sync) {
		fprintf(stderr, "fault-inject: EIO for %s\n", name);
		errno = EIO;
		return -1;
	}
	return real(fd);
}

int
fsync(int fd)
{
	return do_sync("fsync", fd);
}

int
fdatasync(int fd)
{
	return do_sync("fdatasync", fd);
}
