/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The block-device library (src/blockdev) through its API: run lists, the
 * writer blob and the index block (with corruption), the stream in whole
 * units, FIEMAP on a real file, naming devices and aligned I/O on a loop
 * device; whether a device is someone else's (a fake sysfs, mountinfo and
 * swaps; then a real loop device held exclusively, active as swap and
 * mounted) and whether a file is private.
 *
 * FIEMAP runs on a file in the build directory (or /var/tmp, where the
 * build directory's filesystem has none).  The loop device tests are the root group
 * (meson test blockdev-root), which says SKIP without root, losetup or
 * mkfs.ext4; each makes and removes its own loop device.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include "block-stream.h"
#include "btrfs-super.h"
#include "device-io.h"
#include "device-names.h"
#include "dm-stack.h"
#include "ext-super.h"
#include "file-map.h"
#include "image-layout.h"
#include "in-use.h"
#include "run-list.h"
#include "unit.h"

#define MiB (1u << 20)

/* ---- run lists ----------------------------------------------------------- */

START_TEST(map_add_merges)
{
	struct bd_map m = { 0 };

	ck_assert_int_eq(bd_map_add(&m, 4096, 4096), 0);
	ck_assert_int_eq(bd_map_add(&m, 8192, 8192), 0);	/* contiguous */
	ck_assert_int_eq(bd_map_add(&m, 65536, 0), 0);		/* nothing */
	ck_assert_int_eq(bd_map_add(&m, 65536, 4096), 0);
	ck_assert_uint_eq(m.n, 2);
	ck_assert_uint_eq(m.runs[0].phys, 4096);
	ck_assert_uint_eq(m.runs[0].len, 12288);
	ck_assert_uint_eq(m.total, 16384);
	for (int i = 0; i < 100; i++)		/* grows past its first 16 */
		ck_assert_int_eq(bd_map_add(&m, 1000000 + 8192 * (uint64_t)i, 4096), 0);
	ck_assert_uint_eq(m.n, 102);
	bd_map_clear(&m);
	ck_assert_uint_eq(m.n, 0);
	ck_assert_ptr_null(m.runs);
}
END_TEST

START_TEST(map_slice_and_inside)
{
	struct bd_map m = { 0 }, s = { 0 };

	ck_assert_int_eq(bd_map_add(&m, 1000, 100), 0);
	ck_assert_int_eq(bd_map_add(&m, 5000, 100), 0);
	ck_assert_int_eq(bd_map_add(&m, 9000, 100), 0);
	/* Logical 50..250 crosses all three runs. */
	ck_assert_int_eq(bd_map_slice(&m, 50, 200, &s), 0);
	ck_assert_uint_eq(s.n, 3);
	ck_assert_uint_eq(s.runs[0].phys, 1050);
	ck_assert_uint_eq(s.runs[0].len, 50);
	ck_assert_uint_eq(s.runs[1].phys, 5000);
	ck_assert_uint_eq(s.runs[1].len, 100);
	ck_assert_uint_eq(s.runs[2].phys, 9000);
	ck_assert_uint_eq(s.runs[2].len, 50);
	ck_assert_uint_eq(s.total, 200);
	bd_map_clear(&s);
	ck_assert_int_eq(bd_map_slice(&m, 300, 0, &s), 0);
	ck_assert_uint_eq(s.n, 0);
	ck_assert_int_eq(bd_map_slice(&m, 250, 51, &s), -ENODATA);
	ck_assert_int_eq(bd_map_slice(&m, 301, 0, &s), -ENODATA);
	ck_assert(bd_map_inside(&m, 9100));
	ck_assert(!bd_map_inside(&m, 9099));
	bd_map_clear(&s);
	bd_map_clear(&m);
}
END_TEST

/* ---- the writer blob ----------------------------------------------------- */

static int
save_blob(uint8_t *buf, size_t size, uint64_t stream_len)
{
	struct bd_map m = { 0 };
	int n;

	ck_assert_int_eq(bd_map_add(&m, 1 << 20, 3 * 4096), 0);
	ck_assert_int_eq(bd_map_add(&m, 7 << 20, 4096), 0);
	n = bd_map_save(&m, stream_len, buf, size);
	bd_map_clear(&m);
	return n;
}

START_TEST(blob_roundtrip)
{
	uint8_t buf[256];
	struct bd_map m;
	uint64_t len = 0;
	int n = save_blob(buf, sizeof(buf), 4 * 4096 - 5);

	ck_assert_int_eq(n, (int)bd_map_blob_size(2));
	ck_assert_mem_eq(buf, "TPRM", 4);
	ck_assert_int_eq(bd_map_load(buf, (size_t)n, &m, &len), 0);
	ck_assert_uint_eq(len, 4 * 4096 - 5);
	ck_assert_uint_eq(m.n, 2);
	ck_assert_uint_eq(m.runs[1].phys, 7 << 20);
	ck_assert_uint_eq(m.total, 4 * 4096);
	bd_map_clear(&m);
	ck_assert_int_eq(save_blob(buf, bd_map_blob_size(2) - 1, 1), -ENOBUFS);
}
END_TEST

START_TEST(blob_corrupt)
{
	uint8_t buf[256], bad[256];
	struct bd_map m;
	uint64_t len;
	int n = save_blob(buf, sizeof(buf), 100);

	/* Every flipped bit is noticed (magic, version, CRC or content). */
	for (int i = 0; i < n * 8; i++) {
		memcpy(bad, buf, (size_t)n);
		bad[i / 8] ^= (uint8_t)(1u << (i % 8));
		ck_assert_int_eq(bd_map_load(bad, (size_t)n, &m, &len), -EBADMSG);
	}
	ck_assert_int_eq(bd_map_load(buf, (size_t)n - 1, &m, &len), -EBADMSG);
	ck_assert_int_eq(bd_map_load(buf, 10, &m, &len), -EBADMSG);
	/* A stream longer than its runs, though the CRC is right. */
	n = save_blob(buf, sizeof(buf), 4 * 4096 + 1);
	ck_assert_int_eq(bd_map_load(buf, (size_t)n, &m, &len), -EBADMSG);
}
END_TEST

/* ---- the index block ----------------------------------------------------- */

static void
make_index(uint8_t *block, uint64_t header_len)
{
	struct bd_index ix = { .header_len = header_len };

	memset(ix.saved, 0xa5, sizeof(ix.saved));
	ck_assert_int_eq(bd_map_add(&ix.header, 40960, 8192), 0);
	ck_assert_int_eq(bd_map_add(&ix.header, 409600, 4096), 0);
	bd_index_encode(&ix, "TESTIDX1", block);
	bd_map_clear(&ix.header);
}

START_TEST(index_roundtrip)
{
	uint8_t block[BD_BLOCK];
	struct bd_index ix;

	make_index(block, 12000);
	ck_assert_int_eq(bd_index_decode(block, "TESTIDX1", &ix), 0);
	ck_assert_uint_eq(ix.header_len, 12000);
	ck_assert_uint_eq(ix.header.n, 2);
	ck_assert_uint_eq(ix.header.runs[1].phys, 409600);
	ck_assert_uint_eq(ix.saved[0], 0xa5);
	ck_assert_uint_eq(ix.saved[BD_INDEX_SAVED - 1], 0xa5);
	bd_map_clear(&ix.header);
	ck_assert_int_eq(bd_index_decode(block, "OTHERIDX", &ix), -ENOENT);
}
END_TEST

START_TEST(index_corrupt)
{
	uint8_t block[BD_BLOCK], bad[BD_BLOCK];
	struct bd_index ix;
	const size_t at[] = { 8, 12, 16, 24, 32, 95, 128, 150, 4095 };

	make_index(block, 12000);
	for (size_t i = 0; i < sizeof(at) / sizeof(at[0]); i++) {
		memcpy(bad, block, sizeof(bad));
		bad[at[i]] ^= 0x10;
		ck_assert_int_eq(bd_index_decode(bad, "TESTIDX1", &ix), -EBADMSG);
	}
	/* Well-formed but pointing nowhere: a header longer than its runs,
	 * and an empty header. */
	make_index(block, 12289);
	ck_assert_int_eq(bd_index_decode(block, "TESTIDX1", &ix), -EBADMSG);
	make_index(block, 0);
	ck_assert_int_eq(bd_index_decode(block, "TESTIDX1", &ix), -EBADMSG);
}
END_TEST

START_TEST(crc_without_field)
{
	uint8_t a[64], b[64];

	for (int i = 0; i < 64; i++)
		a[i] = (uint8_t)(i * 7);
	memcpy(b, a, sizeof(b));
	memset(b + 12, 0, 4);
	memset(a + 12, 0xff, 4);
	/* The field's own bytes do not count; every other byte does. */
	ck_assert_uint_eq(bd_crc_without(a, 64, 12), bd_crc_without(b, 64, 12));
	b[13] = 1;
	ck_assert_uint_eq(bd_crc_without(a, 64, 12), bd_crc_without(b, 64, 12));
	b[11] ^= 1;
	ck_assert_uint_ne(bd_crc_without(a, 64, 12), bd_crc_without(b, 64, 12));
}
END_TEST

/* ---- the stream in whole units ------------------------------------------- */

struct sink {
	uint8_t *data;
	size_t len;
	int calls;
	int copied;		/* calls whose bytes did not come from the input */
	const uint8_t *in;
	size_t in_len;
};

static int
sink_emit(void *ctx, const uint8_t *p, size_t n)
{
	struct sink *k = ctx;

	ck_assert_uint_eq(n % 4096, 0);
	memcpy(k->data + k->len, p, n);
	k->len += n;
	k->calls++;
	if (p < k->in || p >= k->in + k->in_len)
		k->copied++;
	return 0;
}

static uint8_t *
pattern(size_t len)
{
	uint8_t *p;

	ck_assert_int_eq(posix_memalign((void **)&p, 4096, len), 0);
	for (size_t i = 0; i < len; i++)
		p[i] = (uint8_t)(i * 131 + i / 4096);
	return p;
}

START_TEST(stream_contract_no_copy)
{
	const size_t len = 3 * MiB + 1000;
	uint8_t *in = pattern(len);
	struct sink k = { .data = malloc(len + 4096), .in = in, .in_len = len };
	struct bd_stream s;

	/* As the core writes: aligned whole MiBs, then the last piece. */
	bd_stream_start(&s, 4096);
	for (size_t off = 0; off < len; off += MiB) {
		size_t n = len - off < MiB ? len - off : MiB;

		ck_assert_int_eq(bd_stream_write(&s, in + off, n, sink_emit, &k), 0);
	}
	ck_assert_int_eq(k.copied, 0);
	ck_assert_uint_eq(s.written, len);
	ck_assert_int_eq(bd_stream_flush(&s, sink_emit, &k), 0);
	ck_assert_int_eq(k.copied, 1);		/* only the padded tail */
	ck_assert_uint_eq(k.len, (len + 4095) / 4096 * 4096);
	ck_assert_mem_eq(k.data, in, len);
	for (size_t i = len; i < k.len; i++)
		ck_assert_uint_eq(k.data[i], 0);
	ck_assert_int_eq(bd_stream_flush(&s, sink_emit, &k), 0);
	ck_assert_uint_eq(k.len, (len + 4095) / 4096 * 4096);
	bd_stream_free(&s);
	free(k.data);
	free(in);
}
END_TEST

START_TEST(stream_uneven_pieces)
{
	static const size_t pieces[] = { 777, 3 * 4096 + 5, 4096, 1, MiB, 100 };
	const size_t len = 2 * MiB;
	uint8_t *in = pattern(len);
	struct sink k = { .data = malloc(len + 4096), .in = in, .in_len = len };
	struct bd_stream s;
	size_t off = 0;

	/* Input that breaks the contract still comes out right. */
	bd_stream_start(&s, 4096);
	for (size_t i = 0; off < len; i++) {
		size_t n = pieces[i % (sizeof(pieces) / sizeof(pieces[0]))];

		if (n > len - off)
			n = len - off;
		ck_assert_int_eq(bd_stream_write(&s, in + off, n, sink_emit, &k), 0);
		off += n;
	}
	ck_assert_int_eq(bd_stream_flush(&s, sink_emit, &k), 0);
	ck_assert_uint_eq(s.written, len);
	ck_assert_uint_eq(k.len, len);
	ck_assert_mem_eq(k.data, in, len);
	bd_stream_free(&s);
	free(k.data);
	free(in);
}
END_TEST

/* ---- files --------------------------------------------------------------- */

/* A file of len bytes in the build directory: written, or sparse. */
static int
build_file_in(const char *dir, char *path, size_t size, uint64_t len,
	      bool written)
{
	uint8_t *b = pattern(MiB);
	int fd;

	snprintf(path, size, "%s/test-blockdev.%ld.%d", dir, (long)getpid(),
		 written);
	fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	unlink(path);
	if (written)
		for (uint64_t off = 0; off < len; off += MiB)
			ck_assert_int_eq(bd_pwrite_full(fd, b, MiB, off), 0);
	else
		ck_assert_int_eq(ftruncate(fd, (off_t)len), 0);
	free(b);
	return fd;
}

/*
 * FIEMAP on a real file: in the build directory, or in /var/tmp when the
 * build directory's filesystem has none (tmpfs, some overlays).  A machine
 * with neither fails the test, saying so: a test that returned early would
 * count as passed.
 */
START_TEST(file_map_real_file)
{
	const char *build = getenv("TORPOR_BUILD_ROOT");
	const char *dirs[] = { build ? build : ".", "/var/tmp" };
	char path[4096], why[512] = "";
	struct bd_map m = { 0 };
	int fd = -1, r = -EOPNOTSUPP;
	size_t i;

	for (i = 0; i < 2; i++) {
		if (fd >= 0)
			close(fd);
		fd = build_file_in(dirs[i], path, sizeof(path), 4 * MiB, true);
		r = bd_file_map(fd, 4 * MiB, &m, why, sizeof(why));
		if (r != -EOPNOTSUPP && r != -ENOTTY)
			break;
	}
	ck_assert_msg(r == 0, "bd_file_map in %s and in /var/tmp: %d (%s)",
		      dirs[0], r, why);
	ck_assert_uint_eq(m.total, 4 * MiB);
	ck_assert_uint_ge(m.n, 1);
	for (size_t k = 0; k < m.n; k++)
		ck_assert_uint_eq(m.runs[k].phys % 512, 0);
	bd_map_clear(&m);
	close(fd);

	/* A file with holes is refused, with the reason. */
	fd = build_file_in(dirs[i], path, sizeof(path), 4 * MiB, false);
	ck_assert_int_eq(bd_file_map(fd, 4 * MiB, &m, why, sizeof(why)), -EBADFD);
	ck_assert_msg(strstr(why, "hole at byte 0"), "why: %s", why);
	close(fd);
}
END_TEST

START_TEST(check_fs_refuses_tmpfs)
{
	char why[512] = "";
	int fd = open("/dev/shm", O_RDWR | O_TMPFILE | O_CLOEXEC, 0600);

	ck_assert_msg(fd >= 0, "a tmpfs file at /dev/shm: %s", strerror(errno));
	ck_assert_int_eq(bd_check_fs(fd, why, sizeof(why)), -EXDEV);
	ck_assert_msg(strstr(why, "tmpfs"), "why: %s", why);
	close(fd);
}
END_TEST

/* ---- in use by someone else; private files ------------------------------ */

/* Write text to dir/rel, making the directories on the way. */
static void
put(const char *dir, const char *rel, const char *text)
{
	char path[4096], cmd[8400];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	snprintf(cmd, sizeof(cmd), "mkdir -p \"$(dirname '%s')\"", path);
	ck_assert_int_eq(system(cmd), 0);
	f = fopen(path, "we");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	fclose(f);
}

static void
fake_tree(char *dir, size_t size)
{
	snprintf(dir, size, "/tmp/test-blockdev-sys.%ld", (long)getpid());
	put(dir, "sys/dev/block/7:100/size", "2048\n");
	put(dir, "sys/dev/block/7:100/loop100p1/partition", "1\n");
	put(dir, "sys/dev/block/7:100/loop100p1/dev", "259:5\n");
	put(dir, "sys/dev/block/259:5/size", "1024\n");
	put(dir, "mountinfo",
	    "22 1 0:21 / /proc rw - proc proc rw\n"
	    "23 1 8:1 / / rw - ext4 /dev/sda1 rw\n");
	put(dir, "swaps", "Filename\tType\tSize\tUsed\tPriority\n");
}

static void
rm_tree(const char *dir)
{
	char cmd[4200];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}

START_TEST(in_use_fake_sysfs)
{
	char dir[256], sys[300], mi[300], sw[300], why[512], file[300], text[400];
	struct bd_sys_paths p = { sys, mi, sw };
	struct stat st = { .st_mode = S_IFBLK | 0660, .st_rdev = makedev(7, 100) };
	struct stat fst;

	fake_tree(dir, sizeof(dir));
	snprintf(sys, sizeof(sys), "%s/sys", dir);
	snprintf(mi, sizeof(mi), "%s/mountinfo", dir);
	snprintf(sw, sizeof(sw), "%s/swaps", dir);
	ck_assert_int_eq(bd_in_use_at(&p, &st, why, sizeof(why)), 0);

	/* Mounted itself, with a blank in the mount point. */
	put(dir, "mountinfo", "23 1 8:1 / / rw - ext4 /dev/sda1 rw\n"
			      "40 23 7:100 / /mnt/a\\040b rw - ext4 /dev/loop100 rw\n");
	ck_assert_int_eq(bd_in_use_at(&p, &st, why, sizeof(why)), 1);
	ck_assert_str_eq(why, "is mounted on /mnt/a b");
	/* A partition of it mounted. */
	put(dir, "mountinfo", "41 23 259:5 / /srv rw - xfs /dev/loop100p1 rw\n");
	ck_assert_int_eq(bd_in_use_at(&p, &st, why, sizeof(why)), 1);
	ck_assert_str_eq(why, "partition loop100p1 is mounted on /srv");
	put(dir, "mountinfo", "");

	/* Held: device-mapper on top, of the disk or of a partition. */
	put(dir, "sys/dev/block/7:100/holders/dm-3", "");
	ck_assert_int_eq(bd_in_use_at(&p, &st, why, sizeof(why)), 1);
	ck_assert_msg(strstr(why, "is held by dm-3"), "why: %s", why);
	rm_tree(sys);
	put(dir, "sys/dev/block/7:100/loop100p1/partition", "1\n");
	put(dir, "sys/dev/block/7:100/loop100p1/dev", "259:5\n");
	put(dir, "sys/dev/block/259:5/holders/md0", "");
	ck_assert_int_eq(bd_in_use_at(&p, &st, why, sizeof(why)), 1);
	ck_assert_msg(strstr(why, "partition loop100p1 is held by md0"), "why: %s", why);
	rm_tree(sys);
	put(dir, "sys/dev/block/7:100/size", "2048\n");
	ck_assert_int_eq(bd_in_use_at(&p, &st, why, sizeof(why)), 0);

	/* An active swap file: a regular file named in swaps. */
	snprintf(file, sizeof(file), "%s/swap file", dir);
	put(dir, "swap file", "x");
	ck_assert_int_eq(stat(file, &fst), 0);
	ck_assert_int_eq(bd_in_use_at(&p, &fst, why, sizeof(why)), 0);
	snprintf(text, sizeof(text), "Filename Type Size Used Priority\n%s/swap\\040file file 4 0 -2\n", dir);
	put(dir, "swaps", text);
	ck_assert_int_eq(bd_in_use_at(&p, &fst, why, sizeof(why)), 1);
	ck_assert_str_eq(why, "is an active swap file");
	/* Nothing to read: not in use. */
	rm_tree(dir);
	ck_assert_int_eq(bd_in_use_at(&p, &st, why, sizeof(why)), 0);
}
END_TEST

START_TEST(private_files)
{
	struct stat st = { .st_mode = S_IFREG | 0600, .st_uid = geteuid() };
	char why[512];

	ck_assert_int_eq(bd_check_private(&st, why, sizeof(why)), 0);
	st.st_mode = S_IFREG | 0400;
	ck_assert_int_eq(bd_check_private(&st, why, sizeof(why)), 0);
	st.st_mode = S_IFREG | 0644;
	ck_assert_int_eq(bd_check_private(&st, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "mode 0644"), "why: %s", why);
	st.st_mode = S_IFREG | 0620;
	ck_assert_int_eq(bd_check_private(&st, why, sizeof(why)), -EPERM);
	st.st_mode = S_IFREG | 0601;
	ck_assert_int_eq(bd_check_private(&st, why, sizeof(why)), -EPERM);
	st.st_mode = S_IFREG | 0600;
	st.st_uid = geteuid() + 1;
	ck_assert_int_eq(bd_check_private(&st, why, sizeof(why)), -EPERM);
	ck_assert_msg(strstr(why, "is owned by uid"), "why: %s", why);
	st.st_uid = geteuid();
	st.st_mode = S_IFLNK | 0600;
	ck_assert_int_eq(bd_check_private(&st, why, sizeof(why)), -EINVAL);
}
END_TEST

/* ---- a loop device ------------------------------------------------------- */

static char loop[64];
static char backing[4096];

/* A 16 MiB loop device over a file in the build directory, or "" when
 * losetup failed (each test then fails, saying so). */
static void
loop_setup(void)
{
	const char *dir = getenv("TORPOR_BUILD_ROOT");
	char cmd[8400];
	FILE *p;

	loop[0] = '\0';
	snprintf(backing, sizeof(backing), "%s/test-blockdev.%ld.img",
		 dir ? dir : ".", (long)getpid());
	snprintf(cmd, sizeof(cmd), "truncate -s 16M %s && losetup -f --show %s",
		 backing, backing);
	p = popen(cmd, "re");
	if (p) {
		if (fgets(loop, sizeof(loop), p))
			loop[strcspn(loop, "\n")] = '\0';
		pclose(p);
	}
	if (strncmp(loop, "/dev/loop", 9) != 0)
		loop[0] = '\0';
}

static void
loop_teardown(void)
{
	char cmd[8400];

	if (loop[0]) {
		/* After a test that failed half-way: not active, not mounted. */
		snprintf(cmd, sizeof(cmd), "swapoff %s 2>/dev/null; umount %s.mnt 2>/dev/null; rmdir %s.mnt 2>/dev/null",
			 loop, backing, backing);
		if (system(cmd) != 0)
			fprintf(stderr, "cleanup of %s incomplete\n", loop);
		snprintf(cmd, sizeof(cmd), "losetup -d %s", loop);
		if (system(cmd) != 0)
			fprintf(stderr, "cannot detach %s\n", loop);
	}
	if (backing[0])
		unlink(backing);
}

#define REQUIRE_LOOP() \
	ck_assert_msg(loop[0], "no loop device over %s: losetup failed", backing)

START_TEST(resolve_path_and_number)
{
	char buf[256], spec[64];
	struct stat st;

	REQUIRE_LOOP();
	ck_assert_int_eq(bd_resolve(loop, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, loop);
	ck_assert_int_eq(stat(loop, &st), 0);
	snprintf(spec, sizeof(spec), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	ck_assert_int_eq(bd_resolve(spec, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, loop);
	ck_assert_int_eq(bd_devnode(st.st_rdev, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, loop);
	ck_assert_int_eq(bd_resolve(spec, buf, 5), -ENAMETOOLONG);
	ck_assert_int_eq(bd_resolve("UUID=00000000-0000-0000-0000-00000000dead",
				    buf, sizeof(buf)), -ENODEV);
	ck_assert_int_eq(bd_resolve("", buf, sizeof(buf)), -EINVAL);
	ck_assert_int_eq(bd_resolve("nonsense", buf, sizeof(buf)), -EINVAL);
}
END_TEST

START_TEST(aligned_io)
{
	uint8_t *in = pattern(2 * MiB), *out = malloc(2 * MiB + 1);
	struct bd_dev d;
	struct bd_map m = { 0 };

	REQUIRE_LOOP();
	bd_init(&d);
	ck_assert_int_eq(bd_open(&d, loop, BD_RDONLY, NULL, 0), 0);
	ck_assert_uint_eq(d.size, 16 * MiB);
	ck_assert_int_eq(bd_write(&d, 0, in, 4096), -EBADF);
	ck_assert_int_eq(bd_reopen(&d, loop, BD_SHARED, NULL, 0), 0);
	ck_assert(d.writable);
	/* Aligned and straight; unaligned through the bounce buffer. */
	ck_assert_int_eq(bd_write(&d, 4096, in, 2 * MiB), 0);
	ck_assert_int_eq(bd_write(&d, 4 * MiB, in + 1, 1000), 0);
	ck_assert_int_eq(bd_write(&d, 4 * MiB + 1, in, 512), -EINVAL);
	ck_assert_int_eq(bd_write(&d, 16 * MiB - 512, in, 513), -ENOSPC);
	ck_assert_int_eq(bd_sync(&d), 0);
	ck_assert_int_eq(bd_read(&d, 4096 + 3, out + 1, 2 * MiB - 3), 0);
	ck_assert_mem_eq(out + 1, in + 3, 2 * MiB - 3);
	ck_assert_int_eq(bd_read(&d, 4 * MiB, out, 1024), 0);
	ck_assert_mem_eq(out, in + 1, 1000);
	ck_assert_uint_eq(out[1000], 0);	/* padded with zeros */
	ck_assert_int_eq(bd_read(&d, 16 * MiB - 1, out, 2), -ENODATA);
	/* Through a run list: logical 0.. maps to 4096.. backwards. */
	ck_assert_int_eq(bd_map_add(&m, 4096 + MiB, MiB), 0);
	ck_assert_int_eq(bd_map_add(&m, 4096, MiB), 0);
	ck_assert_int_eq(bd_map_read(&d, &m, MiB - 10, out, 20), 0);
	ck_assert_mem_eq(out, in + 2 * MiB - 10, 10);
	ck_assert_mem_eq(out + 10, in, 10);
	ck_assert_int_eq(bd_map_write(&d, &m, 0, in, MiB), 0);
	ck_assert_int_eq(bd_read(&d, 4096 + MiB, out, MiB), 0);
	ck_assert_mem_eq(out, in, MiB);
	bd_map_clear(&m);
	bd_close(&d);
	ck_assert_int_eq(bd_open(&d, backing, BD_RDONLY, NULL, 0), -ENOTBLK);
	free(in);
	free(out);
}
END_TEST

/* Exclusive opens: refused while another opener holds the device
 * exclusively, while it is an active swap area, while it is mounted. */
START_TEST(exclusive_open)
{
	char why[512] = "", mnt[4200], cmd[8600];
	struct bd_dev d, e;

	REQUIRE_LOOP();
	bd_init(&d);
	bd_init(&e);
	ck_assert_int_eq(bd_open(&d, loop, BD_EXCL, why, sizeof(why)), 0);
	ck_assert_int_eq(bd_open(&e, loop, BD_EXCL, why, sizeof(why)), -EBUSY);
	ck_assert_msg(strstr(why, "exclusively"), "why: %s", why);
	/* A shared writer does not claim it; a stronger mode is kept. */
	ck_assert_int_eq(bd_open(&e, loop, BD_SHARED, NULL, 0), 0);
	bd_close(&e);
	ck_assert_int_eq(bd_reopen(&d, loop, BD_SHARED, NULL, 0), 0);
	ck_assert_int_eq(d.mode, BD_EXCL);
	bd_close(&d);

	snprintf(cmd, sizeof(cmd), "mkswap %s >/dev/null && swapon %s", loop, loop);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(bd_open(&d, loop, BD_EXCL, why, sizeof(why)), -EBUSY);
	snprintf(cmd, sizeof(cmd), "swapoff %s", loop);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_str_eq(why, "is an active swap area");

	snprintf(mnt, sizeof(mnt), "%s.mnt", backing);
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F %s && mkdir -p %s && mount %s %s",
		 loop, mnt, loop, mnt);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_int_eq(bd_open(&d, loop, BD_EXCL, why, sizeof(why)), -EBUSY);
	snprintf(cmd, sizeof(cmd), "umount %s && rmdir %s", mnt, mnt);
	ck_assert_int_eq(system(cmd), 0);
	ck_assert_msg(strncmp(why, "is mounted on ", 14) == 0 && strstr(why, mnt),
		      "why: %s", why);
	ck_assert_int_eq(bd_open(&d, loop, BD_EXCL, why, sizeof(why)), 0);
	bd_close(&d);
}
END_TEST

/*
 * Early flushes: one begun each time `every` bytes were written since the
 * last one began, never two at once; bd_sync() waits for the one under way
 * and returns its error.  The error is a real one: a file on an ext4
 * filesystem shut down (EXT4_IOC_SHUTDOWN), whose fsync the kernel's AIO
 * worker then fails with EIO.  An fd without fsync (a pipe) is refused at
 * submission, and nothing is flushed early.
 */
START_TEST(flush_behind)
{
	char mnt[4200], file[4300], cmd[8600];
	uint8_t *in = pattern(MiB);
	struct bd_flusher f = { 0 };
	struct bd_dev d;
	unsigned begun;
	int p[2], fd;
	uint32_t how = 2;	/* EXT4_GOING_FLAGS_NOLOGFLUSH */
	/* EXT4_IOC_SHUTDOWN (linux/ext4.h is not in every libc's headers). */
	const unsigned long shutdown = _IOR('X', 125, uint32_t);

	REQUIRE_LOOP();
	bd_init(&d);
	ck_assert_int_eq(bd_open(&d, loop, BD_SHARED, NULL, 0), 0);
	d.flusher.every = 2 * MiB;
	for (unsigned i = 0; i < 8; i++) {
		ck_assert_int_eq(bd_write(&d, (uint64_t)i * MiB, in, MiB), 0);
		bd_flush_behind(&d, MiB);
		/* Due and not begun only while one is under way. */
		ck_assert(d.flusher.unflushed < 2 * MiB || d.flusher.busy);
		ck_assert_uint_le(d.flusher.begun, (i + 1) / 2);
	}
	begun = d.flusher.begun;
	/* At least the first one: none was under way then. */
	ck_assert_uint_ge(begun, 1);
	ck_assert(!d.flusher.refused);
	ck_assert_int_eq(bd_sync(&d), 0);
	ck_assert(!d.flusher.busy);
	ck_assert_uint_eq(d.flusher.unflushed, 0);
	/* Less than `every` since the sync: no more. */
	bd_flush_behind(&d, MiB);
	ck_assert_uint_eq(d.flusher.begun, begun);
	/* A cycle's count, then the next one's. */
	ck_assert_uint_eq(bd_flusher_take_begun(&d.flusher), begun);
	ck_assert_uint_eq(bd_flusher_take_begun(&d.flusher), 0);
	bd_close(&d);
	ck_assert_uint_eq(d.flusher.ctx, 0);

	ck_assert_int_eq(pipe(p), 0);
	f.every = 1;
	bd_flusher_wrote(&f, p[1], 1);
	ck_assert(f.refused);
	ck_assert(!f.busy);
	ck_assert_uint_eq(f.begun, 0);
	ck_assert_int_eq(bd_flusher_wait(&f), 0);
	bd_flusher_close(&f);
	close(p[0]);
	close(p[1]);

	snprintf(mnt, sizeof(mnt), "%s.mnt", backing);
	snprintf(file, sizeof(file), "%s/image", mnt);
	snprintf(cmd, sizeof(cmd), "mkfs.ext4 -q -F %s && mkdir -p %s && mount %s %s",
		 loop, mnt, loop, mnt);
	ck_assert_int_eq(system(cmd), 0);
	fd = open(file, O_RDWR | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(bd_pwrite_full(fd, in, MiB, 0), 0);
	f.every = MiB;
	bd_flusher_wrote(&f, fd, MiB);
	ck_assert_int_eq(f.begun, 1);
	ck_assert_int_eq(bd_flusher_wait(&f), 0);
	ck_assert_int_eq(ioctl(fd, shutdown, &how), 0);
	bd_flusher_wrote(&f, fd, MiB);
	ck_assert_int_eq(f.begun, 2);
	ck_assert_int_eq(bd_flusher_wait(&f), -EIO);
	/* Said once. */
	ck_assert_int_eq(bd_flusher_wait(&f), 0);
	bd_flusher_close(&f);
	close(fd);
	snprintf(cmd, sizeof(cmd), "umount %s && rmdir %s", mnt, mnt);
	ck_assert_int_eq(system(cmd), 0);
	free(in);
}
END_TEST

/* ---- ext superblocks (the root-filesystem guard) ------------------------ */

static void
put_le(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

START_TEST(ext_super_parse)
{
	uint8_t buf[BD_EXT_SUPER_END + 10];
	struct bd_ext_super sb, untouched;

	memset(buf, 0, sizeof(buf));
	put_le(buf + 1024 + 0x38, 0xef53, 2);
	for (int i = 0; i < 16; i++)
		buf[1024 + 0x68 + i] = (uint8_t)(0x10 + i);
	put_le(buf + 1024 + 0x2c, 0x89abcdef, 4);
	buf[1024 + 0x275] = 0x12;		/* s_mtime_hi: past 2106 */
	put_le(buf + 1024 + 0x34, 65535, 2);
	ck_assert_int_eq(bd_ext_super_parse(buf, sizeof(buf), &sb), 0);
	ck_assert_uint_eq(sb.mtime, 0x1289abcdefull);
	ck_assert_uint_eq(sb.mnt_count, 65535);
	ck_assert_uint_eq(sb.uuid[0], 0x10);
	ck_assert_uint_eq(sb.uuid[15], 0x1f);
	/* Exactly the superblock's end is enough; one byte less is not. */
	ck_assert_int_eq(bd_ext_super_parse(buf, BD_EXT_SUPER_END, &sb), 0);
	memset(&untouched, 0x5a, sizeof(untouched));
	sb = untouched;
	ck_assert_int_eq(bd_ext_super_parse(buf, BD_EXT_SUPER_END - 1, &sb),
			 -ENODATA);
	ck_assert_int_eq(bd_ext_super_parse(buf, 0, &sb), -ENODATA);
	ck_assert_int_eq(bd_ext_super_parse(NULL, sizeof(buf), &sb), -ENODATA);
	/* Not ext: another magic (a swap area, xfs, nothing). */
	buf[1024 + 0x38] = 0x54;
	ck_assert_int_eq(bd_ext_super_parse(buf, sizeof(buf), &sb), -ENOENT);
	ck_assert_mem_eq(&sb, &untouched, sizeof(sb));
}
END_TEST

/* Debian's encrypted LVM: the swap volume on the volume group on the LUKS
 * mapping on the partition; and crypttab's random-key swap. */
START_TEST(dm_stack_fake_sysfs)
{
	char dir[256], entry[640];
	struct bd_dm_stack st;

	fake_tree(dir, sizeof(dir));
	bd_dm_stack(dir, makedev(253, 2), &st);
	ck_assert_uint_eq(st.n_crypt + st.n_lvm, 0);

	put(dir, "sys/dev/block/253:2/dm/uuid", "LVM-Abc123\n");
	put(dir, "sys/dev/block/253:2/dm/name", "vg-swap_1\n");
	put(dir, "sys/dev/block/253:2/slaves/dm-0", "");
	put(dir, "sys/block/dm-0/dm/uuid", "CRYPT-LUKS2-0e90821b3f7e49fc8ef5c4bdbd35c3a3-vda2_crypt\n");
	put(dir, "sys/block/dm-0/dm/name", "vda2_crypt\n");
	put(dir, "sys/block/dm-0/slaves/vda2", "");
	put(dir, "sys/block/vda2/dev", "254:2\n");
	bd_dm_stack(dir, makedev(253, 2), &st);
	ck_assert_uint_eq(st.n_lvm, 1);
	ck_assert_str_eq(st.lvm[0], "vg-swap_1");
	ck_assert_uint_eq(st.n_crypt, 1);
	ck_assert_str_eq(st.crypt[0], "vda2_crypt");

	/* A LUKS swap, then the same name with a random key. */
	ck_assert_int_eq(bd_random_key_swap(dir, "/dev/dm-0", entry, sizeof(entry)), 0);
	put(dir, "etc/crypttab", "# <target> <source> <key> <options>\n"
				  "vda2_crypt UUID=0e90821b none luks,discard\n");
	ck_assert_int_eq(bd_random_key_swap(dir, "/dev/dm-0", entry, sizeof(entry)), 0);
	put(dir, "etc/crypttab", "vda2_crypt /dev/vda2 /dev/urandom swap,cipher=aes-xts-plain64\n");
	ck_assert_int_eq(bd_random_key_swap(dir, "/dev/dm-0", entry, sizeof(entry)), 1);
	ck_assert_str_eq(entry, "vda2_crypt /dev/vda2 /dev/urandom");
	ck_assert_int_eq(bd_random_key_swap(dir, "/dev/mapper/vda2_crypt", entry, sizeof(entry)), 1);
	/* Not a mapping, or another mapping's line. */
	ck_assert_int_eq(bd_random_key_swap(dir, "/dev/vda2", entry, sizeof(entry)), 0);
	ck_assert_int_eq(bd_random_key_swap(dir, "/dev/mapper/other", entry, sizeof(entry)), 0);
	rm_tree(dir);
}
END_TEST

START_TEST(btrfs_super_parse)
{
	uint8_t buf[BD_BTRFS_SUPER_LEN];
	struct bd_btrfs_super sb, untouched;

	memset(buf, 0, sizeof(buf));
	for (int i = 0; i < 16; i++)
		buf[0x20 + i] = (uint8_t)(0x40 + i);
	put_le(buf + 0x30, 65536, 8);		/* this copy's own offset */
	memcpy(buf + 0x40, "_BHRfS_M", 8);
	put_le(buf + 0x48, 0x123456789ull, 8);
	ck_assert_int_eq(bd_btrfs_super_parse(buf, sizeof(buf), &sb), 0);
	ck_assert_uint_eq(sb.generation, 0x123456789ull);
	ck_assert(!sb.log_pending);
	ck_assert_uint_eq(sb.fsid[0], 0x40);
	ck_assert_uint_eq(sb.fsid[15], 0x4f);
	/* An fsync since the last commit left a tree log. */
	put_le(buf + 0x60, 30572544, 8);
	ck_assert_int_eq(bd_btrfs_super_parse(buf, sizeof(buf), &sb), 0);
	ck_assert(sb.log_pending);
	memset(&untouched, 0x5a, sizeof(untouched));
	sb = untouched;
	ck_assert_int_eq(bd_btrfs_super_parse(buf, sizeof(buf) - 1, &sb), -ENODATA);
	ck_assert_int_eq(bd_btrfs_super_parse(NULL, sizeof(buf), &sb), -ENODATA);
	/* A backup copy (at 64 MiB) read at 64 KiB, or no magic: not it. */
	put_le(buf + 0x30, 64ull << 20, 8);
	ck_assert_int_eq(bd_btrfs_super_parse(buf, sizeof(buf), &sb), -ENOENT);
	put_le(buf + 0x30, 65536, 8);
	buf[0x40] = 'x';
	ck_assert_int_eq(bd_btrfs_super_parse(buf, sizeof(buf), &sb), -ENOENT);
	ck_assert_mem_eq(&sb, &untouched, sizeof(sb));
}
END_TEST

/* A real mkfs.ext4 image (a regular file: no root needed), a swap area,
 * and a truncated image, read through bd_ext_super_read(). */
START_TEST(ext_super_read_files)
{
	char path[64], cmd[256];
	struct bd_ext_super sb;
	int r;

	snprintf(path, sizeof(path), "/tmp/test-blockdev-ext.%ld", (long)getpid());
	snprintf(cmd, sizeof(cmd),
		 "mkfs.ext4 -q -F -U 01234567-89ab-cdef-0123-456789abcdef %s 4M 2>/dev/null",
		 path);
	/* e2fsprogs is one of the packages scripts/install-deps installs. */
	ck_assert_msg(system(cmd) == 0, "mkfs.ext4 on the file %s", path);
	ck_assert_int_eq(bd_ext_super_read(path, &sb), 0);
	ck_assert_uint_eq(sb.uuid[0], 0x01);
	ck_assert_uint_eq(sb.uuid[15], 0xef);
	ck_assert_uint_eq(sb.mnt_count, 0);	/* never mounted */
	snprintf(cmd, sizeof(cmd), "mkswap %s >/dev/null 2>&1", path);
	if (system(cmd) == 0)
		ck_assert_int_eq(bd_ext_super_read(path, &sb), -ENOENT);
	ck_assert_int_eq(truncate(path, 1500), 0);
	ck_assert_int_eq(bd_ext_super_read(path, &sb), -ENODATA);
	unlink(path);
	r = bd_ext_super_read(path, &sb);
	ck_assert_int_eq(r, -ENOENT);
}
END_TEST

START_TEST(ext_super_of_tmpfs)
{
	char dev[256];
	struct bd_ext_super sb;
	struct statfs sfs;

	ck_assert_msg(statfs("/dev/shm", &sfs) == 0, "no /dev/shm: %s",
		      strerror(errno));
	ck_assert_int_eq(bd_ext_super_of_path("/dev/shm", dev, sizeof(dev), &sb),
			 -EMEDIUMTYPE);
	ck_assert_int_eq(bd_ext_super_of_path("/no/such/path", dev, sizeof(dev), &sb),
			 -ENOENT);
}
END_TEST

Suite *blockdev_suite(void);
Suite *blockdev_root_suite(void);

Suite *
blockdev_suite(void)
{
	Suite *s = suite_create("blockdev");
	TCase *tc = tcase_create("formats");

	tcase_add_test(tc, map_add_merges);
	tcase_add_test(tc, map_slice_and_inside);
	tcase_add_test(tc, blob_roundtrip);
	tcase_add_test(tc, blob_corrupt);
	tcase_add_test(tc, index_roundtrip);
	tcase_add_test(tc, index_corrupt);
	tcase_add_test(tc, crc_without_field);
	tcase_add_test(tc, stream_contract_no_copy);
	tcase_add_test(tc, stream_uneven_pieces);
	tcase_add_test(tc, file_map_real_file);
	tcase_add_test(tc, check_fs_refuses_tmpfs);
	tcase_add_test(tc, in_use_fake_sysfs);
	tcase_add_test(tc, private_files);
	tcase_add_test(tc, ext_super_parse);
	tcase_add_test(tc, btrfs_super_parse);
	tcase_add_test(tc, dm_stack_fake_sysfs);
	tcase_add_test(tc, ext_super_read_files);
	tcase_add_test(tc, ext_super_of_tmpfs);
	suite_add_tcase(s, tc);
	return s;
}

Suite *
blockdev_root_suite(void)
{
	Suite *s = suite_create("blockdev-root");
	TCase *dev = tcase_create("devices");

	if (system("command -v losetup mkswap swapon mkfs.ext4 >/dev/null 2>&1") != 0)
		unit_skip("the loop device tests need losetup, mkswap, swapon and mkfs.ext4");
	tcase_add_unchecked_fixture(dev, loop_setup, loop_teardown);
	tcase_set_timeout(dev, 60);
	tcase_add_test(dev, resolve_path_and_number);
	tcase_add_test(dev, aligned_io);
	tcase_add_test(dev, exclusive_open);
	tcase_add_test(dev, flush_behind);
	suite_add_tcase(s, dev);
	return s;
}
