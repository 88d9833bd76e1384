/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Reading an initramfs (src/core/initramfs-list.c) from archives built
 * here byte by byte: entries, captures and their bounds, archives back to
 * back, and every malformed header refused; and the DT_NEEDED reader
 * (src/core/elf-needed.c) on a built plugin and on broken copies of it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "elf-needed.h"
#include "initramfs-list.h"

struct buf {
	char *p;
	size_t len;
};

static void
put(struct buf *b, const void *data, size_t n)
{
	b->p = realloc(b->p, b->len + n);
	ck_assert_ptr_nonnull(b->p);
	memcpy(b->p + b->len, data, n);
	b->len += n;
}

static void
pad4(struct buf *b)
{
	static const char zeros[4];

	put(b, zeros, (4 - b->len % 4) % 4);
}

/* One newc entry; namesize as given (0: the name's length + 1). */
static void
entry(struct buf *b, const char *name, unsigned mode, const char *data,
      size_t len, unsigned namesize)
{
	char h[111];

	if (!namesize)
		namesize = (unsigned)strlen(name) + 1;
	snprintf(h, sizeof(h), "070701%08X%08X%08X%08X%08X%08X%08zX%08X%08X%08X%08X%08X%08X",
		 1u, mode, 0u, 0u, 1u, 0u, len, 0u, 0u, 0u, 0u, namesize, 0u);
	put(b, h, 110);
	put(b, name, strlen(name) + 1);
	pad4(b);
	put(b, data, len);
	pad4(b);
}

static void
trailer(struct buf *b)
{
	entry(b, "TRAILER!!!", 0, "", 0, 0);
}

static char path[64];

static const char *
write_file(const struct buf *b)
{
	int fd;

	snprintf(path, sizeof(path), "/tmp/torpor-unit-initramfs.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, b->p, b->len), (ssize_t)b->len);
	close(fd);
	return path;
}

/* List b; the result, the listing left for the caller to check. */
static int
list(const struct buf *b, struct initramfs_listing *l, char *why, size_t size)
{
	int r = initramfs_list(write_file(b), l, why, size);

	unlink(path);
	return r;
}

START_TEST(initramfs_archives_back_to_back)
{
	struct initramfs_capture caps[2] = { { .name = "etc/torpor/torpor.conf" },
					      { .name = "absent" } };
	struct initramfs_listing l = { .captures = caps, .n_captures = 2 };
	struct buf b = { 0 };
	char why[256];

	entry(&b, "kernel", S_IFDIR | 0755, "", 0, 0);
	entry(&b, "kernel/x86/microcode/GenuineIntel.bin", S_IFREG | 0644, "ucode", 5, 0);
	trailer(&b);
	put(&b, "\0\0\0\0\0\0\0\0", 8);		/* padding between archives */
	entry(&b, "./etc/torpor/torpor.conf", S_IFREG | 0644, "old", 3, 0);
	entry(&b, "/sbin/torpor-resume", S_IFREG | 0755, "x", 1, 0);
	trailer(&b);
	entry(&b, "etc/torpor/torpor.conf", S_IFREG | 0644, "[torpor]\n", 9, 0);
	trailer(&b);
	ck_assert_int_eq(list(&b, &l, why, sizeof(why)), 0);
	ck_assert_uint_eq(l.n_entries, 5);
	ck_assert_ptr_nonnull(initramfs_find(&l, "/sbin/torpor-resume"));
	ck_assert_ptr_nonnull(initramfs_find(&l, "kernel/x86/microcode/GenuineIntel.bin"));
	ck_assert_ptr_null(initramfs_find(&l, "sbin/torpor"));
	/* The later copy wins, as when unpacked. */
	ck_assert_uint_eq(caps[0].len, 9);
	ck_assert_mem_eq(caps[0].data, "[torpor]\n", 9);
	ck_assert_ptr_null(caps[1].data);
	initramfs_listing_clear(&l);
	ck_assert_ptr_null(caps[0].data);
	free(b.p);
}
END_TEST

START_TEST(initramfs_capture_bound)
{
	struct initramfs_capture cap = { .name = "big" };
	struct initramfs_listing l = { .captures = &cap, .n_captures = 1 };
	size_t len = INITRAMFS_MAX_CAPTURE + 1;
	char *data = calloc(1, len), why[256];
	struct buf b = { 0 };

	ck_assert_ptr_nonnull(data);
	entry(&b, "big", S_IFREG | 0644, data, len, 0);
	trailer(&b);
	ck_assert_int_eq(list(&b, &l, why, sizeof(why)), 0);
	ck_assert_ptr_nonnull(initramfs_find(&l, "big"));
	ck_assert_ptr_null(cap.data);
	initramfs_listing_clear(&l);
	free(data);
	free(b.p);
}
END_TEST

/* Each malformed archive: refused with -EBADMSG and a reason. */
static void
expect_bad(struct buf *b, const char *reason)
{
	struct initramfs_listing l = { 0 };
	char why[256] = "";

	ck_assert_int_eq(list(b, &l, why, sizeof(why)), -EBADMSG);
	ck_assert_msg(strstr(why, reason), "why: '%s', expected '%s'", why, reason);
	initramfs_listing_clear(&l);
	free(b->p);
	*b = (struct buf){ 0 };
}

START_TEST(initramfs_malformed)
{
	struct buf b = { 0 };
	char *name = malloc(INITRAMFS_MAX_NAME + 2);

	ck_assert_ptr_nonnull(name);
	memset(name, 'a', INITRAMFS_MAX_NAME + 1);
	name[INITRAMFS_MAX_NAME + 1] = '\0';
	entry(&b, name, S_IFREG | 0644, "", 0, 0);
	expect_bad(&b, "bad or truncated entry");
	free(name);

	/* A name whose size leaves out its NUL. */
	entry(&b, "abc", S_IFREG | 0644, "", 0, 3);
	expect_bad(&b, "bad or truncated entry");

	entry(&b, "a", S_IFREG | 0644, "", 0, 0);
	b.p[20] = 'g';		/* mode: not hex */
	expect_bad(&b, "bad or truncated entry");

	entry(&b, "a", S_IFREG | 0644, "0123456789", 10, 0);
	b.len -= 8;		/* the data runs past the end */
	expect_bad(&b, "bad or truncated entry");

	entry(&b, "a", S_IFREG | 0644, "", 0, 0);
	trailer(&b);
	put(&b, "garbage!", 8);
	expect_bad(&b, "neither a cpio archive nor a compressed one");

	put(&b, "\0\0\0\0", 4);
	expect_bad(&b, "holds no files");
}
END_TEST

START_TEST(initramfs_not_a_file)
{
	struct initramfs_listing l = { 0 };
	char why[256];

	ck_assert_int_eq(initramfs_list("/nonexistent/initrd", &l, why, sizeof(why)), -ENOENT);
	ck_assert_ptr_nonnull(strstr(why, "cannot be opened"));
	ck_assert_int_eq(initramfs_list("/dev/null", &l, why, sizeof(why)), -EFBIG);
}
END_TEST

static char *
plugin_path(const char *name)
{
	const char *dir = getenv("TORPOR_BUILD_PLUGINDIR");
	char *p;

	ck_assert_ptr_nonnull(dir);
	ck_assert_int_gt(asprintf(&p, "%s/%s.so", dir, name), 0);
	return p;
}

/* A copy of the file at from, cut to len bytes (0: whole) into path. */
static void
copy_cut(const char *from, size_t len)
{
	struct buf b = { 0 };
	char chunk[65536];
	ssize_t n;
	int fd = open(from, O_RDONLY);

	ck_assert_int_ge(fd, 0);
	while ((n = read(fd, chunk, sizeof(chunk))) > 0)
		put(&b, chunk, (size_t)n);
	close(fd);
	if (len && len < b.len)
		b.len = len;
	write_file(&b);
	free(b.p);
}

START_TEST(elf_needed_of_a_plugin)
{
	struct elf_needed *n = malloc(sizeof(*n));
	char *p = plugin_path("checksum");
	bool gcrypt = false;
	size_t i;

	ck_assert_ptr_nonnull(n);
	ck_assert_int_eq(elf_needed(p, n), 0);
	/* Its digests come from libgcrypt (libc is not named in every
	 * build: not with the sanitizers' -Db_lundef=false). */
	for (i = 0; i < n->n; i++)
		gcrypt |= strncmp(n->names[i], "libgcrypt.so.", 13) == 0;
	ck_assert_msg(gcrypt, "checksum.so does not name libgcrypt");

	/* Cut inside the program headers, then a text file. */
	copy_cut(p, 100);
	ck_assert_int_eq(elf_needed(path, n), -ENOEXEC);
	unlink(path);
	ck_assert_int_eq(elf_needed("/proc/self/status", n), -ENOEXEC);
	ck_assert_int_eq(elf_needed("/nonexistent.so", n), -ENOENT);
	free(p);
	free(n);
}
END_TEST

Suite *initramfs_suite(void);

Suite *
initramfs_suite(void)
{
	Suite *s = suite_create("initramfs");
	TCase *tc = tcase_create("initramfs");

	tcase_add_test(tc, initramfs_archives_back_to_back);
	tcase_add_test(tc, initramfs_capture_bound);
	tcase_add_test(tc, initramfs_malformed);
	tcase_add_test(tc, initramfs_not_a_file);
	tcase_add_test(tc, elf_needed_of_a_plugin);
	suite_add_tcase(s, tc);
	return s;
}
