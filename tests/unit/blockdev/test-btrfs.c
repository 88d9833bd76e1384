/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Files on btrfs (src/blockdev/btrfs.c) on real btrfs filesystems made on
 * loop devices: a NOCOW file's logical runs mapped through the chunk tree
 * give exactly the file's bytes when read from the device; a copy-on-write
 * file, a compressed one, dup data chunks and a filesystem of two devices
 * are refused with their reason.  All root (meson test btrfs-root), SKIP
 * without mkfs.btrfs or a kernel with btrfs.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "btrfs.h"
#include "file-map.h"
#include "run-list.h"
#include "unit.h"

#define MiB (1024 * 1024ULL)

static char work[4096];

/* Run a shell command; its exit status. */
static int
sh(const char *fmt, ...) __attribute__((format(printf, 1, 2)));

static int
sh(const char *fmt, ...)
{
	char cmd[8192];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(cmd, sizeof(cmd), fmt, ap);
	va_end(ap);
	return system(cmd);
}

/* A loop device over a new file of mib MiB in work; its path in dev. */
static void
make_loop(const char *name, unsigned mib, char *dev, size_t size)
{
	char cmd[8400];
	FILE *p;

	snprintf(cmd, sizeof(cmd), "truncate -s %uM %s/%s.img && losetup -f --show %s/%s.img",
		 mib, work, name, work, name);
	p = popen(cmd, "re");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(fgets(dev, (int)size, p));
	dev[strcspn(dev, "\n")] = '\0';
	pclose(p);
	ck_assert_msg(strncmp(dev, "/dev/loop", 9) == 0, "losetup gave '%s'", dev);
}

static void
setup(void)
{
	const char *dir = getenv("TORPOR_BUILD_ROOT");

	snprintf(work, sizeof(work), "%s/test-btrfs.%ld", dir ? dir : "/tmp",
		 (long)getpid());
	ck_assert_int_eq(sh("mkdir -p %s/mnt", work), 0);
}

static void
teardown(void)
{
	/* Whatever a test left: unmount, detach every loop device over its
	 * files, remove them, and make btrfs forget the devices it scanned
	 * (a later filesystem on the same loop device is another one). */
	if (sh("umount %s/mnt 2>/dev/null; for f in %s/*.img; do "
	       "losetup -j \"$f\" -O NAME -n | xargs -r -n1 losetup -d; done; "
	       "rm -rf %s; btrfs device scan --forget >/dev/null 2>&1",
	       work, work, work) != 0)
		fprintf(stderr, "test-btrfs: cleaning %s failed\n", work);
}

/* Open path and map its first len bytes to the physical runs of its one
 * device; returns what bd_btrfs_* returned, with why. */
static int
map_file(const char *path, uint64_t len, char *node, size_t node_size,
	 struct bd_map *phys, char *why, size_t why_size)
{
	struct bd_map logical = { 0 };
	uint64_t devid = 0;
	int fd = open(path, O_RDONLY | O_CLOEXEC), r;

	ck_assert_int_ge(fd, 0);
	r = bd_btrfs_file_check(fd, why, why_size);
	if (r == 0)
		r = bd_btrfs_device(fd, &devid, node, node_size, why, why_size);
	if (r == 0)
		r = bd_file_map(fd, len, &logical, why, why_size);
	if (r == 0)
		r = bd_btrfs_to_physical(fd, devid, &logical, phys, why, why_size);
	bd_map_clear(&logical);
	close(fd);
	return r;
}

START_TEST(nocow_file_maps_to_its_bytes)
{
	char dev[256], node[4096], path[4200], why[512] = "";
	struct bd_map phys = { 0 }, logical = { 0 };
	uint8_t *want = malloc(16 * MiB), *got = NULL;
	uint64_t off = 0;
	int fd;

	/* O_DIRECT reads below: an aligned buffer. */
	ck_assert_int_eq(posix_memalign((void **)&got, 4096, 16 * MiB), 0);

	make_loop("one", 300, dev, sizeof(dev));
	ck_assert_int_eq(sh("mkfs.btrfs -q -f -d single -m dup %s >/dev/null && mount %s %s/mnt",
			    dev, dev, work), 0);
	/* Some other data first, so that the file does not start at the
	 * first data chunk's first byte. */
	ck_assert_int_eq(sh("head -c 3M /dev/urandom >%s/mnt/before && sync", work), 0);
	snprintf(path, sizeof(path), "%s/mnt/image", work);
	ck_assert_int_eq(sh("touch %s && chattr +C %s && head -c 16M /dev/urandom >%s && sync",
			    path, path, path), 0);
	ck_assert_msg(map_file(path, 16 * MiB, node, sizeof(node), &phys, why, sizeof(why)) == 0,
		      "map: %s", why);
	ck_assert_str_eq(node, dev);
	ck_assert_uint_eq(phys.total, 16 * MiB);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	ck_assert_int_eq(read(fd, want, 16 * MiB), (ssize_t)(16 * MiB));
	/* The chunk map moved it: btrfs's logical addresses are not the
	 * device's (a copy of FIEMAP's answer would read other bytes). */
	ck_assert_int_eq(bd_file_map(fd, 16 * MiB, &logical, why, sizeof(why)), 0);
	ck_assert_uint_ne(logical.runs[0].phys, phys.runs[0].phys);
	bd_map_clear(&logical);
	close(fd);
	/* The same bytes, read from the device at the mapped places. */
	fd = open(dev, O_RDONLY | O_CLOEXEC | O_DIRECT);
	ck_assert_int_ge(fd, 0);
	for (size_t i = 0; i < phys.n; i++) {
		ck_assert_uint_eq(phys.runs[i].phys % 4096, 0);
		ck_assert_int_eq(pread(fd, got + off, phys.runs[i].len, (off_t)phys.runs[i].phys),
				 (ssize_t)phys.runs[i].len);
		off += phys.runs[i].len;
	}
	close(fd);
	ck_assert_msg(memcmp(want, got, 16 * MiB) == 0,
		      "the device at the mapped runs does not hold the file's bytes");
	bd_map_clear(&phys);
	free(want);
	free(got);
}
END_TEST

/* A 1 MiB file work/mnt/name made with attribute attr ("" for none, "+C"
 * NOCOW, "+c" compressed) is refused with a reason containing want. */
static void
expect_refused(const char *name, const char *attr, const char *want)
{
	char node[4096], path[4200], why[512] = "";
	struct bd_map phys = { 0 };

	snprintf(path, sizeof(path), "%s/mnt/%s", work, name);
	ck_assert_int_eq(sh("touch %s && { [ -z '%s' ] || chattr %s %s; } && "
			    "head -c 1M /dev/urandom >%s && sync",
			    path, attr, attr, path, path), 0);
	ck_assert_int_eq(map_file(path, MiB, node, sizeof(node), &phys, why, sizeof(why)),
			 -EXDEV);
	ck_assert_msg(strstr(why, want), "why: %s", why);
}

START_TEST(cow_and_compressed_refused)
{
	char dev[256];

	make_loop("one", 300, dev, sizeof(dev));
	ck_assert_int_eq(sh("mkfs.btrfs -q -f %s >/dev/null && mount %s %s/mnt",
			    dev, dev, work), 0);
	expect_refused("cow", "", "copy-on-write");
	expect_refused("compressed", "+c", "compressed");
}
END_TEST

START_TEST(dup_data_refused)
{
	char dev[256];

	make_loop("one", 300, dev, sizeof(dev));
	ck_assert_int_eq(sh("mkfs.btrfs -q -f -d dup -m dup %s >/dev/null && mount %s %s/mnt",
			    dev, dev, work), 0);
	expect_refused("image", "+C", "dup profile");
}
END_TEST

START_TEST(two_devices_refused)
{
	char a[256], b[256];

	make_loop("a", 300, a, sizeof(a));
	make_loop("b", 300, b, sizeof(b));
	ck_assert_int_eq(sh("mkfs.btrfs -q -f -d single -m raid1 %s %s >/dev/null && "
			    "btrfs device scan %s %s >/dev/null && mount %s %s/mnt",
			    a, b, a, b, a, work), 0);
	expect_refused("image", "+C", "of 2 devices");
}
END_TEST

Suite *btrfs_root_suite(void);

Suite *
btrfs_root_suite(void)
{
	Suite *s = suite_create("btrfs-root");
	TCase *tc = tcase_create("btrfs");

	if (system("command -v losetup mkfs.btrfs chattr >/dev/null 2>&1") != 0)
		unit_skip("the btrfs tests need losetup, mkfs.btrfs (btrfs-progs) and chattr");
	if (system("grep -qw btrfs /proc/filesystems || modprobe btrfs 2>/dev/null") != 0)
		unit_skip("this kernel has no btrfs");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, nocow_file_maps_to_its_bytes);
	tcase_add_test(tc, cow_and_compressed_refused);
	tcase_add_test(tc, dup_data_refused);
	tcase_add_test(tc, two_devices_refused);
	suite_add_tcase(s, tc);
	return s;
}
