/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fake root of a boot loader's files for the tests of the next boot
 * (fake-boot.h).
 */
#include <check.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "bootloader.h"
#include "fake-boot.h"

char root[64];


char *
fixture(const char *name, size_t *len)
{
	const char *src = getenv("TORPOR_SOURCE_ROOT");
	char path[PATH_MAX];
	struct stat st;
	char *buf;
	FILE *f;

	ck_assert_ptr_nonnull(src);
	snprintf(path, sizeof(path), "%s/tests/unit/core/inspect/bootloader/%s",
		 src, name);
	f = fopen(path, "r");
	ck_assert_msg(f, "%s: %m", path);
	ck_assert_int_eq(fstat(fileno(f), &st), 0);
	buf = malloc((size_t)st.st_size + 1);
	ck_assert_ptr_nonnull(buf);
	*len = fread(buf, 1, (size_t)st.st_size, f);
	ck_assert_uint_eq(*len, (size_t)st.st_size);
	buf[*len] = '\0';
	fclose(f);
	return buf;
}

void
put(const char *rel, const void *data, size_t len)
{
	char path[PATH_MAX], *slash;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	for (slash = strchr(path + strlen(root) + 1, '/'); slash;
	     slash = strchr(slash + 1, '/')) {
		*slash = '\0';
		mkdir(path, 0755);
		*slash = '/';
	}
	unlink(path);
	fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	ck_assert_msg(fd >= 0, "%s: %m", path);
	ck_assert_int_eq(write(fd, data, len), (ssize_t)len);
	close(fd);
}

void
put_text(const char *rel, const char *text)
{
	put(rel, text, strlen(text));
}

void
put_fixture(const char *rel, const char *name)
{
	size_t len;
	char *t = fixture(name, &len);

	put(rel, t, len);
	free(t);
}

/* A grubenv block of the given lines, padded with '#'. */
void
grubenv(char *block, const char *lines)
{
	size_t n = (size_t)snprintf(block, GRUBENV_SIZE + 1,
				    "# GRUB Environment Block\n%s", lines);

	ck_assert_uint_le(n, GRUBENV_SIZE);
	memset(block + n, '#', GRUBENV_SIZE - n);
}

void
put_grubenv(const char *lines)
{
	char b[GRUBENV_SIZE];

	grubenv(b, lines);
	put("boot/grub/grubenv", b, sizeof(b));
}

/* An efivarfs file: attributes, then the UTF-16LE string and its NUL. */
void
put_efivar(const char *name, const char *value)
{
	unsigned char b[4 + 2 * 300] = { 7, 0, 0, 0 };
	size_t n = 4;
	char rel[128];

	for (const char *s = value;; s++) {
		b[n++] = (unsigned char)*s;
		b[n++] = 0;
		if (!*s)
			break;
	}
	snprintf(rel, sizeof(rel), "sys/firmware/efi/efivars/%s-%s", name,
		 FAKE_BOOT_GUID);
	put(rel, b, n);
}

void
fake_boot_setup(void)
{
	snprintf(root, sizeof(root), "/tmp/torpor-unit-boot.XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(root));
}

void
fake_boot_teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", root);
	ck_assert_int_eq(system(cmd), 0);
}
