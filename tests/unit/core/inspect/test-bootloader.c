/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Which kernel the next boot starts (src/core/inspect/bootloader.c): the
 * grub.cfg files Debian 12, 13 and unstable generate (beside this file in
 * bootloader/, made by bootloader/gen-grub-cfg.sh), grubenv blocks,
 * /etc/default/grub, systemd-boot's entries and EFI variables, all in a
 * fake root; and every hostile or truncated file refused with a reason.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/statfs.h>
#include <unistd.h>

#include "bootloader.h"
#include "fake-boot.h"

#define UUID "3b8b6c5e-2f0a-4d7e-9c41-5a1e2d7f9b20"
#define NEW "6.12.43+bpo-amd64"
#define OLD "6.1.0-28-amd64"
#define GUID FAKE_BOOT_GUID

static char why[512];

static struct boot_next *
inspect(const char *running, int expect)
{
	struct boot_next *b = calloc(1, sizeof(*b));
	int r;

	ck_assert_ptr_nonnull(b);
	why[0] = '\0';
	r = boot_next_inspect(root, running, b, why, sizeof(why));
	ck_assert_msg(r == expect, "boot_next_inspect: %d (%s), not %d", r,
		      why, expect);
	return b;
}

/* The three releases' grub.cfg: entries, submenu, ids, kernels. */
static void
check_debian_menu(const char *name, size_t extra)
{
	struct boot_menu *m = calloc(1, sizeof(*m));
	struct grub_cfg_default d;
	size_t len;
	char *t = fixture(name, &len);
	int i;

	ck_assert_ptr_nonnull(m);
	ck_assert_msg(grub_cfg_parse(t, len, m, &d, why, sizeof(why)) == 0,
		      "%s: %s", name, why);
	/* The simple entry, the submenu and its 4, maybe UEFI settings. */
	ck_assert_uint_eq(m->n, 6 + extra);
	ck_assert(d.set);
	ck_assert_str_eq(d.value, "0");
	ck_assert(d.reads_next_entry);

	ck_assert_str_eq(m->e[0].title, "Debian GNU/Linux");
	ck_assert_str_eq(m->e[0].id, "gnulinux-simple-" UUID);
	ck_assert_str_eq(m->e[0].release, NEW);
	ck_assert_str_eq(m->e[0].path, "0");
	ck_assert(m->e[1].submenu);
	ck_assert_str_eq(m->e[1].title,
			 "Advanced options for Debian GNU/Linux");
	ck_assert_str_eq(m->e[1].id, "gnulinux-advanced-" UUID);
	ck_assert_str_eq(m->e[1].release, "");

	ck_assert_int_eq(grub_menu_find(m, "0"), 0);
	ck_assert_int_eq(grub_menu_find(m, ""), 0);
	i = grub_menu_find(m, "1>2");
	ck_assert_int_ge(i, 0);
	ck_assert_str_eq(m->e[i].release, OLD);
	ck_assert_str_eq(m->e[i].id, "gnulinux-" OLD "-advanced-" UUID);
	ck_assert_str_eq(m->e[i].path, "1>2");
	ck_assert(!m->e[i].recovery);
	ck_assert_int_eq(grub_menu_find(m, "gnulinux-advanced-" UUID
					">gnulinux-" OLD "-advanced-" UUID), i);
	ck_assert_int_eq(grub_menu_find(m,
		"Advanced options for Debian GNU/Linux>"
		"Debian GNU/Linux, with Linux " OLD), i);
	ck_assert_int_eq(grub_menu_find(m, "1>gnulinux-" OLD "-advanced-"
					UUID), i);
	i = grub_menu_find(m, "1>3");
	ck_assert_int_ge(i, 0);
	ck_assert(m->e[i].recovery);
	ck_assert_str_eq(m->e[i].release, OLD);
	i = grub_menu_find(m, "1>0");
	ck_assert_str_eq(m->e[i].release, NEW);
	/* An entry at the top is not found by its id alone in a path. */
	ck_assert_int_eq(grub_menu_find(m, "gnulinux-" OLD "-advanced-" UUID),
			 -ENOENT);
	ck_assert_int_eq(grub_menu_find(m, "1"), -EISDIR);
	ck_assert_int_eq(grub_menu_find(m, "9"), -ENOENT);
	ck_assert_int_eq(grub_menu_find(m, "0>1"), -ENOENT);
	ck_assert_int_eq(grub_menu_find(m, "${saved_entry}"), -EOPNOTSUPP);
	if (extra) {
		ck_assert_str_eq(m->e[6].id, "uefi-firmware");
		ck_assert_str_eq(m->e[6].path, "2");
	}
	free(t);
	free(m);
}

START_TEST(grub_cfg_debian12)
{
	check_debian_menu("debian12.cfg", 0);
}
END_TEST

START_TEST(grub_cfg_debian13)
{
	check_debian_menu("debian13.cfg", 1);
}
END_TEST

START_TEST(grub_cfg_unstable)
{
	check_debian_menu("unstable.cfg", 1);
}
END_TEST

/* After a kernel update: the default is the new kernel, the running one
 * is in the submenu. */
START_TEST(grub_next_is_the_default)
{
	struct boot_next *b;

	put_fixture("boot/grub/grub.cfg", "debian12.cfg");
	put_grubenv("");
	put_text("etc/default/grub", "# comment\nGRUB_DEFAULT=0\n"
		 "GRUB_TIMEOUT=5\n");
	b = inspect(OLD, 0);
	ck_assert_int_eq(b->loader, BOOT_LOADER_GRUB);
	ck_assert_str_eq(boot_loader_name(b->loader), "grub");
	ck_assert_int_eq(b->next, 0);
	ck_assert_int_eq(b->by_default, 0);
	ck_assert_str_eq(b->menu.e[b->next].release, NEW);
	ck_assert_str_eq(b->next_by, "GRUB default");
	ck_assert(!b->one_shot);
	ck_assert_int_ge(b->running, 0);
	ck_assert_str_eq(b->menu.e[b->running].path, "1>2");
	ck_assert_str_eq(b->grub_default, "0");
	if (geteuid() == 0)
		ck_assert_msg(b->can_redirect, "%s", b->cannot_redirect);
	else
		ck_assert(!b->can_redirect);
	free(b);

	/* The running kernel is the default: its simple entry. */
	b = inspect(NEW, 0);
	ck_assert_int_eq(b->running, 0);
	free(b);
	b = inspect("5.10.0-1-amd64", 0);
	ck_assert_int_eq(b->running, -1);
	free(b);
}
END_TEST

START_TEST(grub_next_entry_one_shot)
{
	struct boot_next *b;

	put_fixture("boot/grub/grub.cfg", "debian13.cfg");
	put_grubenv("next_entry=gnulinux-advanced-" UUID ">gnulinux-" OLD
		    "-advanced-" UUID "\n");
	b = inspect(OLD, 0);
	ck_assert(b->one_shot);
	ck_assert_str_eq(b->menu.e[b->next].release, OLD);
	ck_assert_int_eq(b->next, b->running);
	ck_assert_int_eq(b->by_default, 0);
	ck_assert_str_eq(b->next_by, "GRUB one-shot (grubenv next_entry)");
	free(b);

	/* A one-shot naming nothing: refused, not ignored. */
	put_grubenv("next_entry=gone\n");
	free(inspect(OLD, -ENOENT));
	ck_assert_msg(strstr(why, "gone"), "%s", why);
}
END_TEST

START_TEST(grub_saved_default)
{
	struct boot_next *b;

	put_fixture("boot/grub/grub.cfg", "debian12-saved.cfg");
	put_text("etc/default/grub", "GRUB_DEFAULT=saved\n");
	put_grubenv("saved_entry=gnulinux-advanced-" UUID ">gnulinux-" OLD
		    "-advanced-" UUID "\n");
	b = inspect(OLD, 0);
	ck_assert_str_eq(b->menu.e[b->next].release, OLD);
	ck_assert_str_eq(b->next_by, "GRUB default (grubenv saved_entry)");
	ck_assert_str_eq(b->grub_default, "saved");
	free(b);

	/* No saved entry yet: GRUB boots the first. */
	put_grubenv("");
	b = inspect(OLD, 0);
	ck_assert_int_eq(b->next, 0);
	free(b);

	/* No grubenv at all: the same, and nothing to write a one-shot to. */
	{
		char p[PATH_MAX];

		snprintf(p, sizeof(p), "%s/boot/grub/grubenv", root);
		ck_assert_int_eq(unlink(p), 0);
	}
	b = inspect(OLD, 0);
	ck_assert_int_eq(b->next, 0);
	ck_assert(!b->can_redirect);
	ck_assert_msg(strstr(b->cannot_redirect, "grubenv"), "%s",
		      b->cannot_redirect);
	free(b);
}
END_TEST

START_TEST(grub_default_by_id)
{
	struct boot_next *b;

	put_fixture("boot/grub/grub.cfg", "debian13-by-id.cfg");
	put_text("etc/default/grub",
		 "GRUB_DEFAULT=\"gnulinux-advanced-" UUID ">gnulinux-" OLD
		 "-advanced-" UUID "\"\n");
	put_grubenv("");
	b = inspect(OLD, 0);
	ck_assert_str_eq(b->menu.e[b->next].release, OLD);
	ck_assert_int_eq(b->next, b->running);
	ck_assert_str_eq(b->grub_default, "gnulinux-advanced-" UUID
			 ">gnulinux-" OLD "-advanced-" UUID);
	free(b);
}
END_TEST

/* What GRUB cannot clear at boot, torpor must not set. */
START_TEST(grub_cannot_redirect)
{
	struct boot_next *b;
	char p[PATH_MAX];

	put_fixture("boot/grub/grub.cfg", "unstable.cfg");
	put_text("boot/grub/grubenv", "# GRUB Environment Block\n");
	/* grubenv_parse refuses it before anything is said of writing. */
	free(inspect(OLD, -EBADMSG));
	ck_assert_msg(strstr(why, "not 1024"), "%s", why);

	/* A grub.cfg that never reads next_entry. */
	put_text("boot/grub/grub.cfg",
		 "set default=\"0\"\nmenuentry 'A' --id a {\n"
		 "\tlinux /vmlinuz-" NEW " root=/dev/sda1\n}\n");
	put_grubenv("");
	b = inspect(OLD, 0);
	ck_assert(!b->can_redirect);
	ck_assert_str_eq(b->cannot_redirect,
			 "grub.cfg does not read grubenv's next_entry");
	free(b);

	/* A grubenv that is a symbolic link: not followed. */
	put_fixture("boot/grub/grub.cfg", "unstable.cfg");
	put_grubenv("");
	snprintf(p, sizeof(p), "%s/boot/grub/grubenv", root);
	ck_assert_int_eq(rename(p, "/tmp/torpor-unit-grubenv-target") ||
			 symlink("/tmp/torpor-unit-grubenv-target", p), 0);
	free(inspect(OLD, -ELOOP));
	ck_assert_msg(strstr(why, "symbolic link"), "%s", why);
	unlink("/tmp/torpor-unit-grubenv-target");

	/* On a stacked device (its sys/dev/block entry has dm/ or md/):
	 * GRUB reads it, never writes.  Only root owns the files, so only
	 * as root do the checks before this one pass. */
	if (geteuid() == 0) {
		struct stat st;
		char dm[96], md[96];

		put_grubenv("");
		snprintf(p, sizeof(p), "%s/boot/grub/grubenv", root);
		ck_assert_int_eq(stat(p, &st), 0);
		snprintf(dm, sizeof(dm), "sys/dev/block/%u:%u/dm/name",
			 major(st.st_dev), minor(st.st_dev));
		snprintf(md, sizeof(md), "sys/dev/block/%u:%u/md/level",
			 major(st.st_dev), minor(st.st_dev));
		put_text(dm, "vg-root\n");
		b = inspect(OLD, 0);
		ck_assert(!b->can_redirect);
		ck_assert_msg(strstr(b->cannot_redirect, "device-mapper"), "%s",
			      b->cannot_redirect);
		free(b);
		snprintf(p, sizeof(p), "%s/%s", root, dm);
		ck_assert_int_eq(unlink(p), 0);
		*strrchr(p, '/') = '\0';
		ck_assert_int_eq(rmdir(p), 0);
		put_text(md, "raid1\n");
		b = inspect(OLD, 0);
		ck_assert(!b->can_redirect);
		ck_assert_msg(strstr(b->cannot_redirect, "RAID"), "%s",
			      b->cannot_redirect);
		free(b);
	}
}
END_TEST

START_TEST(grub_cfg_hostile)
{
	struct boot_menu *m = calloc(1, sizeof(*m));
	struct grub_cfg_default d;
	size_t len, n;
	char *t = fixture("debian12.cfg", &len), *big;
	const char *p;

	ck_assert_ptr_nonnull(m);
	/* Truncated in the submenu, or in a quote. */
	p = strstr(t, "\tmenuentry 'Debian GNU/Linux, with Linux " OLD "'");
	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(grub_cfg_parse(t, (size_t)(p - t), m, &d, why,
					sizeof(why)), -EBADMSG);
	ck_assert_msg(strstr(why, "truncated"), "%s", why);
	ck_assert_int_eq(grub_cfg_parse(t, (size_t)(p - t) + 20, m, &d, why,
					sizeof(why)), -EBADMSG);
	ck_assert_msg(strstr(why, "quote"), "%s", why);
	/* A NUL byte inside. */
	t[100] = '\0';
	ck_assert_int_eq(grub_cfg_parse(t, len, m, &d, why, sizeof(why)),
			 -EBADMSG);
	ck_assert_msg(strstr(why, "NUL"), "%s", why);

#define REFUSED(text, err, words)                                           \
	do {                                                                \
		ck_assert_int_eq(grub_cfg_parse(text, strlen(text), m, &d,  \
						why, sizeof(why)), err);    \
		ck_assert_msg(strstr(why, words), "%s", why);               \
	} while (0)
	REFUSED("}\n", -EBADMSG, "closes nothing");
	REFUSED("menuentry --class x {\n}\n", -EBADMSG, "without a title");
	REFUSED("menuentry 'x'\n", -EBADMSG, "without its");
	REFUSED("submenu 'a' { submenu 'b' { submenu 'c' { submenu 'd' {\n"
		"submenu 'e' { submenu 'f' { submenu 'g' { submenu 'h' {\n"
		"submenu 'i' {\n", -EBADMSG, "deeper");
#undef REFUSED

	/* More entries than the bound. */
	big = malloc(BOOT_ENTRIES_MAX * 32 + 64);
	ck_assert_ptr_nonnull(big);
	n = 0;
	for (int i = 0; i <= BOOT_ENTRIES_MAX; i++)
		n += (size_t)sprintf(big + n, "menuentry 'e%d' {\n}\n", i);
	ck_assert_int_eq(grub_cfg_parse(big, n, m, &d, why, sizeof(why)),
			 -E2BIG);
	free(big);

	/* A title as long as the bound. */
	big = malloc(2 * BOOT_NAME_SIZE);
	ck_assert_ptr_nonnull(big);
	n = (size_t)sprintf(big, "menuentry '");
	memset(big + n, 'x', BOOT_NAME_SIZE);
	n += BOOT_NAME_SIZE;
	n += (size_t)sprintf(big + n, "' {\n}\n");
	ck_assert_int_eq(grub_cfg_parse(big, n, m, &d, why, sizeof(why)),
			 -ENAMETOOLONG);
	free(big);

	/* Entries in a function are not GRUB's menu; quotes and escapes. */
	p = "function f {\n menuentry 'no' { true\n }\n}\n"
	    "menuentry \"a \\\"b\\\" c\" 'it'\\''s' --id=x\\y {\n"
	    "  linux (hd0,gpt2)/vmlinuz-" OLD " quiet\n}\n"
	    "# set default=9\nset default='x\\y'\n";
	ck_assert_msg(grub_cfg_parse(p, strlen(p), m, &d, why,
				     sizeof(why)) == 0, "%s", why);
	ck_assert_uint_eq(m->n, 1);
	ck_assert_str_eq(m->e[0].title, "a \"b\" c");
	ck_assert_str_eq(m->e[0].id, "xy");
	ck_assert_str_eq(m->e[0].release, OLD);
	ck_assert_str_eq(d.value, "x\\y");
	ck_assert(!d.reads_next_entry);
	free(t);
	free(m);
}
END_TEST

START_TEST(grub_inspect_refuses)
{
	char *big;

	/* Beyond the size bound. */
	big = malloc(GRUB_CFG_MAX + 1);
	ck_assert_ptr_nonnull(big);
	memset(big, '#', GRUB_CFG_MAX);
	big[GRUB_CFG_MAX] = '\n';
	put("boot/grub/grub.cfg", big, GRUB_CFG_MAX + 1);
	free(big);
	free(inspect(OLD, -EFBIG));
	ck_assert_msg(strstr(why, "more than"), "%s", why);

	/* A default that names nothing: refused, never entry 0. */
	put_text("boot/grub/grub.cfg",
		 "set default=\"gone\"\nmenuentry 'A' --id a {\n}\n");
	put_grubenv("");
	free(inspect(OLD, -ENOENT));
	ck_assert_msg(strstr(why, "names no entry"), "%s", why);
	put_text("boot/grub/grub.cfg",
		 "set default=\"${chosen}\"\nmenuentry 'A' --id a {\n}\n");
	free(inspect(OLD, -EOPNOTSUPP));
	put_text("boot/grub/grub.cfg",
		 "set default=\"0\"\nsubmenu 'A' --id a {\n"
		 "menuentry 'B' { }\n}\n");
	free(inspect(OLD, -EISDIR));
}
END_TEST

START_TEST(grubenv_blocks)
{
	char b[GRUBENV_SIZE + 8];
	struct grubenv env;

	grubenv(b, "");
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), 0);
	ck_assert_str_eq(env.saved_entry, "");
	ck_assert_str_eq(env.next_entry, "");

	grubenv(b, "# a comment\nsaved_entry=1>2\nother=x\\\ny\n"
		"next_entry=a\\\\b\\\nc\n");
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), 0);
	ck_assert_str_eq(env.saved_entry, "1>2");
	ck_assert_str_eq(env.next_entry, "a\\b\nc");

	/* Sizes other than 1024. */
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE - 1, &env, why,
				       sizeof(why)), -EBADMSG);
	ck_assert_msg(strstr(why, "1023 bytes"), "%s", why);
	b[GRUBENV_SIZE] = '#';
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE + 1, &env, why,
				       sizeof(why)), -EBADMSG);

	/* The last line without its newline: the padding is its value. */
	grubenv(b, "saved_entry=0");
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), -EBADMSG);
	memset(b + 40, 'x', GRUBENV_SIZE - 40);
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), -EBADMSG);
	ck_assert_msg(strstr(why, "newline"), "%s", why);

	grubenv(b, "no equals sign\n");
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), -EBADMSG);
	grubenv(b, "=value\n");
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), -EBADMSG);
	grubenv(b, "saved_entry=0\n");
	b[0] = 'X';
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), -EBADMSG);
	ck_assert_msg(strstr(why, "header"), "%s", why);
	grubenv(b, "saved_entry=0\n");
	b[30] = '\0';
	ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
				       sizeof(why)), -EBADMSG);
	/* A value longer than any entry id: refused, not cut. */
	{
		char line[BOOT_NAME_SIZE + 32];

		memset(line, 'x', sizeof(line));
		memcpy(line, "saved_entry=", 12);
		line[sizeof(line) - 2] = '\n';
		line[sizeof(line) - 1] = '\0';
		grubenv(b, line);
		ck_assert_int_eq(grubenv_parse(b, GRUBENV_SIZE, &env, why,
					       sizeof(why)), -ENAMETOOLONG);
	}
}
END_TEST

START_TEST(grubenv_next_entry_block)
{
	char in[GRUBENV_SIZE], out[GRUBENV_SIZE], before[GRUBENV_SIZE];
	struct grubenv env;
	char id[GRUBENV_SIZE];

	grubenv(in, "saved_entry=0\n# kept? no: comments go\n"
		"next_entry=old\nrecordfail=1\n");
	ck_assert_int_eq(grubenv_with_next_entry(in, sizeof(in),
			 "gnulinux-advanced-" UUID ">gnulinux-" OLD "-advanced-"
			 UUID, out, why, sizeof(why)), 0);
	ck_assert_int_eq(grubenv_parse(out, sizeof(out), &env, why,
				       sizeof(why)), 0);
	ck_assert_str_eq(env.saved_entry, "0");
	ck_assert_str_eq(env.next_entry, "gnulinux-advanced-" UUID
			 ">gnulinux-" OLD "-advanced-" UUID);
	ck_assert_ptr_nonnull(memmem(out, sizeof(out), "recordfail=1\n", 13));
	ck_assert_ptr_null(memmem(out, sizeof(out), "next_entry=old", 14));
	ck_assert_int_eq(out[GRUBENV_SIZE - 1], '#');

	/* A backslash is escaped, and read back as it was. */
	ck_assert_int_eq(grubenv_with_next_entry(in, sizeof(in), "a\\b", out,
						 why, sizeof(why)), 0);
	ck_assert_int_eq(grubenv_parse(out, sizeof(out), &env, why,
				       sizeof(why)), 0);
	ck_assert_str_eq(env.next_entry, "a\\b");

	/* Exactly full, one byte over: the bound is kept. */
	grubenv(in, "");
	memset(id, 'i', sizeof(id));
	id[GRUBENV_SIZE - 25 - 12] = '\0';	/* header, "next_entry=", \n */
	ck_assert_int_eq(grubenv_with_next_entry(in, sizeof(in), id, out, why,
						 sizeof(why)), 0);
	ck_assert_int_eq(out[GRUBENV_SIZE - 1], '\n');
	memcpy(before, out, sizeof(out));
	id[GRUBENV_SIZE - 25 - 12] = 'i';
	id[GRUBENV_SIZE - 25 - 11] = '\0';
	ck_assert_int_eq(grubenv_with_next_entry(in, sizeof(in), id, out, why,
						 sizeof(why)), -ENOSPC);
	ck_assert_int_eq(memcmp(before, out, sizeof(out)), 0);

	ck_assert_int_eq(grubenv_with_next_entry(in, sizeof(in), "a\nb", out,
						 why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(grubenv_with_next_entry(in, sizeof(in), "", out,
						 why, sizeof(why)), -EINVAL);
	ck_assert_int_eq(grubenv_with_next_entry(in, sizeof(in) - 1, "0", out,
						 why, sizeof(why)), -EBADMSG);
	ck_assert_int_eq(memcmp(before, out, sizeof(out)), 0);
}
END_TEST

START_TEST(grub_default_file)
{
	char v[BOOT_NAME_SIZE];
	const char *t;

	t = "# GRUB_DEFAULT=9\nGRUB_DEFAULT=0\nGRUB_TIMEOUT=5\n";
	ck_assert_int_eq(grub_default_parse(t, strlen(t), v, sizeof(v)), 1);
	ck_assert_str_eq(v, "0");
	t = "GRUB_DEFAULT=0\n  GRUB_DEFAULT=\"1>2\" # the old kernel\n";
	ck_assert_int_eq(grub_default_parse(t, strlen(t), v, sizeof(v)), 1);
	ck_assert_str_eq(v, "1>2");
	t = "GRUB_DEFAULT='Advanced options for Debian GNU/Linux>x'";
	ck_assert_int_eq(grub_default_parse(t, strlen(t), v, sizeof(v)), 1);
	ck_assert_str_eq(v, "Advanced options for Debian GNU/Linux>x");
	t = "GRUB_DEFAULT=saved\n";
	ck_assert_int_eq(grub_default_parse(t, strlen(t), v, sizeof(v)), 1);
	ck_assert_str_eq(v, "saved");
	t = "GRUB_TIMEOUT=5\n";
	ck_assert_int_eq(grub_default_parse(t, strlen(t), v, sizeof(v)), 0);
	t = "GRUB_DEFAULT=\"1>2\n";
	ck_assert_int_eq(grub_default_parse(t, strlen(t), v, sizeof(v)),
			 -EBADMSG);
}
END_TEST

static void
put_sd_boot(void)
{
	put_text("efi/loader/entries/abc-" OLD ".conf",
		 "title      Debian GNU/Linux 12 (bookworm)\n"
		 "version    " OLD "\n"
		 "machine-id abc\n"
		 "sort-key   debian\n"
		 "options    root=/dev/vda2 ro quiet\n"
		 "linux      /abc/" OLD "/linux\n"
		 "initrd     /abc/" OLD "/initrd.img-" OLD "\n");
	put_text("efi/loader/entries/abc-" NEW ".conf",
		 "# kernel-install\n"
		 "title      Debian GNU/Linux 12 (bookworm)\n"
		 "version    " NEW "\n"
		 "sort-key   debian\n"
		 "linux      /abc/" NEW "/linux\n");
	mkdir(root, 0755);
	put_text("sys/firmware/efi/efivars/.keep", "");
}

START_TEST(systemd_boot_entries)
{
	struct boot_next *b;

	put_sd_boot();
	put_efivar("LoaderInfo", "systemd-boot 257.9-1~deb13u1");
	/* No default: the newest first. */
	b = inspect(OLD, 0);
	ck_assert_int_eq(b->loader, BOOT_LOADER_SYSTEMD_BOOT);
	ck_assert_uint_eq(b->menu.n, 2);
	ck_assert_str_eq(b->menu.e[b->next].release, NEW);
	ck_assert_str_eq(b->menu.e[b->running].release, OLD);
	ck_assert_str_eq(b->menu.e[b->running].id, "abc-" OLD ".conf");
	ck_assert(!b->one_shot);
	ck_assert_msg(b->can_redirect, "%s", b->cannot_redirect);
	free(b);

	/* loader.conf's glob, then LoaderEntryDefault over it. */
	put_text("efi/loader/loader.conf", "timeout 3\ndefault abc-6.1.*\n");
	b = inspect(OLD, 0);
	ck_assert_str_eq(b->menu.e[b->next].release, OLD);
	ck_assert_str_eq(b->next_by, "systemd-boot default (loader.conf)");
	free(b);
	put_efivar("LoaderEntryDefault", "abc-" NEW);
	b = inspect(OLD, 0);
	ck_assert_str_eq(b->menu.e[b->next].release, NEW);
	ck_assert_str_eq(b->next_by,
			 "systemd-boot default (LoaderEntryDefault)");
	free(b);

	/* A one-shot already set. */
	put_efivar("LoaderEntryOneShot", "abc-" OLD ".conf");
	b = inspect(OLD, 0);
	ck_assert(b->one_shot);
	ck_assert_str_eq(b->one_shot_entry, "abc-" OLD ".conf");
	ck_assert_int_eq(b->next, b->running);
	ck_assert_str_eq(b->menu.e[b->by_default].release, NEW);
	free(b);
	put_efivar("LoaderEntryOneShot", "nothing-here.conf");
	free(inspect(OLD, -ENOENT));

	/* loader.conf's @saved is not followed: refused, not guessed. */
	put_text("efi/loader/loader.conf", "default @saved\n");
	{
		char p[PATH_MAX];

		snprintf(p, sizeof(p),
			 "%s/sys/firmware/efi/efivars/LoaderEntryDefault-%s",
			 root, GUID);
		unlink(p);
		snprintf(p, sizeof(p),
			 "%s/sys/firmware/efi/efivars/LoaderEntryOneShot-%s",
			 root, GUID);
		unlink(p);
	}
	free(inspect(OLD, -EOPNOTSUPP));
}
END_TEST

START_TEST(systemd_boot_hostile)
{
	unsigned char v[16] = { 7, 0, 0, 0, 'a', 0, 0xe9, 0, 0, 0 };
	char out[BOOT_NAME_SIZE];
	struct boot_entry e;
	const char *t;

	/* EFI variables: non-ASCII, odd, short, bytes after the end. */
	ck_assert_int_eq(efivar_string_parse(v, 10, out, sizeof(out)),
			 -EBADMSG);
	v[6] = 'b';
	ck_assert_int_eq(efivar_string_parse(v, 10, out, sizeof(out)), 0);
	ck_assert_str_eq(out, "ab");
	ck_assert_int_eq(efivar_string_parse(v, 9, out, sizeof(out)),
			 -EBADMSG);
	ck_assert_int_eq(efivar_string_parse(v, 3, out, sizeof(out)),
			 -EBADMSG);
	v[10] = 'c';
	ck_assert_int_eq(efivar_string_parse(v, 12, out, sizeof(out)),
			 -EBADMSG);
	ck_assert_int_eq(efivar_string_parse(v, 8, out, 2), -ENAMETOOLONG);

	/* Entry files. */
	{
		static const char nul[] = "title x\nversion " OLD "\0\n";

		ck_assert_int_eq(loader_entry_parse("a.conf", nul,
						    sizeof(nul) - 1, &e, why,
						    sizeof(why)), -EBADMSG);
	}
	ck_assert_int_eq(loader_entry_parse("a.txt", "", 0, &e, why,
					    sizeof(why)), -EBADMSG);
	t = "linux /vmlinuz-" OLD "\n";
	ck_assert_int_eq(loader_entry_parse("a.conf", t, strlen(t), &e, why,
					    sizeof(why)), 0);
	ck_assert_str_eq(e.release, OLD);
	ck_assert_str_eq(e.title, "a.conf");
	t = "version ../../etc\nlinux /EFI/Linux/x.efi\n";
	ck_assert_int_eq(loader_entry_parse("a.conf", t, strlen(t), &e, why,
					    sizeof(why)), 0);
	ck_assert_str_eq(e.release, "");

	/* Through boot_next_inspect: a bad variable, a bad entry. */
	put_sd_boot();
	put("sys/firmware/efi/efivars/LoaderEntryDefault-" GUID, v, 9);
	free(inspect(OLD, -EBADMSG));
	ck_assert_msg(strstr(why, "LoaderEntryDefault"), "%s", why);
	put_efivar("LoaderEntryDefault", "abc-" NEW ".conf");
	put("efi/loader/entries/bad.conf", "title \0x\n", 9);
	free(inspect(OLD, -EBADMSG));
	ck_assert_msg(strstr(why, "bad.conf"), "%s", why);
}
END_TEST

START_TEST(unknown_loader)
{
	struct boot_next *b = inspect(OLD, 0);

	ck_assert_int_eq(b->loader, BOOT_LOADER_UNKNOWN);
	ck_assert_str_eq(boot_loader_name(b->loader), "unknown");
	ck_assert_int_eq(b->next, -1);
	ck_assert_int_eq(b->running, -1);
	ck_assert(!b->can_redirect);
	free(b);

	/* LoaderInfo says GRUB: GRUB's files, even beside loader entries. */
	put_sd_boot();
	put_efivar("LoaderInfo", "GRUB 2.12");
	put_fixture("boot/grub/grub.cfg", "debian13.cfg");
	put_grubenv("");
	b = inspect(OLD, 0);
	ck_assert_int_eq(b->loader, BOOT_LOADER_GRUB);
	ck_assert_str_eq(b->menu.e[b->next].release, NEW);
	free(b);
}
END_TEST

Suite *bootloader_suite(void);

Suite *
bootloader_suite(void)
{
	Suite *s = suite_create("bootloader");
	TCase *tc = tcase_create("bootloader");

	tcase_add_checked_fixture(tc, fake_boot_setup, fake_boot_teardown);
	tcase_add_test(tc, grub_cfg_debian12);
	tcase_add_test(tc, grub_cfg_debian13);
	tcase_add_test(tc, grub_cfg_unstable);
	tcase_add_test(tc, grub_next_is_the_default);
	tcase_add_test(tc, grub_next_entry_one_shot);
	tcase_add_test(tc, grub_saved_default);
	tcase_add_test(tc, grub_default_by_id);
	tcase_add_test(tc, grub_cannot_redirect);
	tcase_add_test(tc, grub_cfg_hostile);
	tcase_add_test(tc, grub_inspect_refuses);
	tcase_add_test(tc, grubenv_blocks);
	tcase_add_test(tc, grubenv_next_entry_block);
	tcase_add_test(tc, grub_default_file);
	tcase_add_test(tc, systemd_boot_entries);
	tcase_add_test(tc, systemd_boot_hostile);
	tcase_add_test(tc, unknown_loader);
	suite_add_tcase(s, tc);
	return s;
}
