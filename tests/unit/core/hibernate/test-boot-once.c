/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The next boot judged against the running kernel, and the one-shot of
 * the running kernel's entry (src/core/hibernate/next-boot.c and
 * boot-once.c) in a fake root: GRUB's grubenv written in place and put
 * back byte for byte, systemd-boot's LoaderEntryOneShot in an efivarfs
 * made of plain files; a grubenv made hostile between the check and the
 * write (a symbolic link, another owner or mode, another size, another
 * link, other bytes) never written.  Root only: grubenv must be root's.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../inspect/fake-boot.h"
#include "boot-once.h"
#include "next-boot.h"
#include "unit.h"

#define NEW "6.12.43+bpo-amd64"
#define OLD "6.1.0-28-amd64"
#define GUID FAKE_BOOT_GUID
#define ONESHOT "sys/firmware/efi/efivars/LoaderEntryOneShot-" GUID

static char why[512];

static void
path_of(char *buf, size_t size, const char *rel)
{
	snprintf(buf, size, "%s/%s", root, rel);
}

/* The file's bytes into buf: how many, -1 when it is not there. */
static ssize_t
get(const char *rel, void *buf, size_t size)
{
	char path[PATH_MAX];
	ssize_t n;
	int fd;

	path_of(path, sizeof(path), rel);
	fd = open(path, O_RDONLY);
	if (fd < 0)
		return -1;
	n = read(fd, buf, size);
	close(fd);
	return n;
}

/* Debian 12's grub.cfg (the inspect tests' fixture): 6.12.43+bpo is
 * the default, 6.1.0-28 is in the "Advanced options" submenu. */
static void
put_grub(const char *env_lines)
{
	put_fixture("boot/grub/grub.cfg", "debian12.cfg");
	put_grubenv(env_lines);
}

static void
put_sd_boot(void)
{
	put_text("efi/loader/entries/abc-" OLD ".conf",
		 "title Debian (" OLD ")\nversion " OLD "\n"
		 "linux /abc/" OLD "/linux\n");
	put_text("efi/loader/entries/abc-" NEW ".conf",
		 "title Debian (" NEW ")\nversion " NEW "\n"
		 "linux /abc/" NEW "/linux\n");
	put_efivar("LoaderInfo", "systemd-boot 257.9-1~deb13u1");
}

static struct next_boot *
plan(const char *running, enum next_boot_verdict expect)
{
	struct next_boot *p = malloc(sizeof(*p));

	ck_assert_ptr_nonnull(p);
	next_boot_plan(root, running, p);
	ck_assert_msg(p->verdict == expect, "verdict %s, not %s: %s",
		      next_boot_verdict_name(p->verdict),
		      next_boot_verdict_name(expect), p->line);
	return p;
}

/* The one-shot the plan for the running OLD sets. */
static void
set_once(struct boot_once *o)
{
	struct next_boot *p = plan(OLD, NEXT_BOOT_REDIRECT);

	ck_assert_msg(boot_once_set(p, o, why, sizeof(why)) == 0, "%s", why);
	free(p);
}

/* grubenv's next_entry now. */
static void
next_entry(char *out, size_t size)
{
	char b[GRUBENV_SIZE], msg[128];
	struct grubenv env;

	ck_assert_int_eq(get("boot/grub/grubenv", b, sizeof(b)), GRUBENV_SIZE);
	ck_assert_int_eq(grubenv_parse(b, sizeof(b), &env, msg, sizeof(msg)), 0);
	snprintf(out, size, "%s", env.next_entry);
}

START_TEST(verdicts)
{
	struct next_boot *p;

	/* No boot loader: cannot tell, nothing refused. */
	p = plan(OLD, NEXT_BOOT_UNKNOWN);
	ck_assert_msg(strstr(p->line, "cannot tell: no boot loader torpor knows"),
		      "%s", p->line);
	free(p);

	put_grub("");
	p = plan(NEW, NEXT_BOOT_RUNNING);
	ck_assert_str_eq(p->line, NEW " (GRUB default), the running kernel: an image written now resumes");
	free(p);
	p = plan(OLD, NEXT_BOOT_REDIRECT);
	ck_assert_str_eq(p->release, NEW);
	ck_assert_msg(strstr(p->once_id, ">gnulinux-" OLD "-advanced-"), "%s",
		      p->once_id);
	ck_assert_msg(strstr(p->line, NEW " (GRUB default); the running kernel is " OLD ": torpor hibernate sets a one-shot boot of"),
		      "%s", p->line);
	free(p);

	/* No entry of the running kernel: nothing to redirect to. */
	p = plan("5.10.0-1-amd64", NEXT_BOOT_REFUSE);
	ck_assert_msg(strstr(p->line, "no entry starts 5.10.0-1-amd64"), "%s", p->line);
	ck_assert_msg(strstr(p->fix, "--force"), "%s", p->fix);
	free(p);

	/* A grubenv others may write: refused, and said what to do. */
	ck_assert_int_eq(chmod(strcat(strcpy((char[PATH_MAX]){ 0 }, root),
				      "/boot/grub/grubenv"), 0666), 0);
	p = plan(OLD, NEXT_BOOT_REFUSE);
	ck_assert_msg(strstr(p->line, "an image written now would be refused"), "%s", p->line);
	ck_assert_msg(strstr(p->fix, "pick \"Debian GNU/Linux, with Linux " OLD "\" in the GRUB menu"),
		      "%s", p->fix);
	free(p);

	/* grubenv of another size: the boot loader's files unreadable,
	 * cannot tell. */
	put("boot/grub/grubenv", "# GRUB Environment Block\n", 25);
	p = plan(OLD, NEXT_BOOT_UNKNOWN);
	ck_assert_msg(strstr(p->line, "cannot tell: GRUB: "), "%s", p->line);
	free(p);
}
END_TEST

START_TEST(grub_set_and_restore)
{
	char before[GRUBENV_SIZE], now[GRUBENV_SIZE], v[BOOT_NAME_SIZE];
	struct boot_once o;
	struct next_boot *p;

	put_grub("saved_entry=0\n");
	ck_assert_int_eq(get("boot/grub/grubenv", before, sizeof(before)),
			 GRUBENV_SIZE);
	p = plan(OLD, NEXT_BOOT_REDIRECT);
	ck_assert_msg(boot_once_set(p, &o, why, sizeof(why)) == 0, "%s", why);
	next_entry(v, sizeof(v));
	ck_assert_str_eq(v, p->once_id);
	free(p);
	/* The boot loader now starts the running kernel once; its default
	 * is what it was. */
	p = plan(OLD, NEXT_BOOT_RUNNING);
	ck_assert_str_eq(p->b.next_by, "GRUB one-shot (grubenv next_entry)");
	ck_assert_str_eq(p->b.menu.e[p->b.by_default].release, NEW);
	free(p);
	/* Failed, cancelled, or resumed without GRUB using it: the block
	 * byte for byte as it was. */
	ck_assert_msg(boot_once_restore(&o, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(get("boot/grub/grubenv", now, sizeof(now)), GRUBENV_SIZE);
	ck_assert_mem_eq(now, before, GRUBENV_SIZE);
	/* Once only. */
	ck_assert_int_eq(boot_once_restore(&o, why, sizeof(why)), 0);
}
END_TEST

START_TEST(grub_used_at_boot)
{
	char v[BOOT_NAME_SIZE];
	struct boot_once o;
	struct next_boot *p;

	/* The user's own one-shot (grub-reboot 0) names the new kernel. */
	put_grub("next_entry=0\n");
	p = plan(OLD, NEXT_BOOT_REDIRECT);
	ck_assert_str_eq(p->b.next_by, "GRUB one-shot (grubenv next_entry)");
	ck_assert_msg(boot_once_set(p, &o, why, sizeof(why)) == 0, "%s", why);
	free(p);
	/* GRUB used torpor's at the boot that resumed: its next_entry is
	 * empty; the user's comes back. */
	put_grubenv("next_entry=\n");
	ck_assert_msg(boot_once_restore(&o, why, sizeof(why)) == 0, "%s", why);
	next_entry(v, sizeof(v));
	ck_assert_str_eq(v, "0");

	/* None before: none after. */
	put_grubenv("");
	set_once(&o);
	put_grubenv("next_entry=\n");
	ck_assert_msg(boot_once_restore(&o, why, sizeof(why)) == 0, "%s", why);
	next_entry(v, sizeof(v));
	ck_assert_str_eq(v, "");

	/* Someone else's one-shot set since: left alone. */
	put_grubenv("");
	set_once(&o);
	put_grubenv("next_entry=1\n");
	ck_assert_int_eq(boot_once_restore(&o, why, sizeof(why)), -EBUSY);
	ck_assert_msg(strstr(why, "left as it is"), "%s", why);
	next_entry(v, sizeof(v));
	ck_assert_str_eq(v, "1");
}
END_TEST

/* Made hostile after the plan: never written. */
static void
hostile(const char *what, const char *cmd, int expect)
{
	char before[GRUBENV_SIZE], now[GRUBENV_SIZE], full[512];
	struct boot_once o;
	struct next_boot *p;
	int r;

	snprintf(full, sizeof(full), "rm -rf '%s/boot'", root);
	ck_assert_int_eq(system(full), 0);
	put_grub("");
	p = plan(OLD, NEXT_BOOT_REDIRECT);
	snprintf(full, sizeof(full), "cd '%s/boot/grub' && %s", root, cmd);
	ck_assert_int_eq(system(full), 0);
	ck_assert_int_eq(get("boot/grub/grubenv", before, sizeof(before)),
			 GRUBENV_SIZE);
	r = boot_once_set(p, &o, why, sizeof(why));
	ck_assert_msg(r == expect, "%s: %d (%s), not %d", what, r, why, expect);
	ck_assert_int_eq(o.loader, BOOT_LOADER_UNKNOWN);
	ck_assert_int_eq(get("boot/grub/grubenv", now, sizeof(now)), GRUBENV_SIZE);
	ck_assert_msg(!memcmp(now, before, GRUBENV_SIZE), "%s: written", what);
	free(p);
}

START_TEST(grub_hostile)
{
	hostile("a symbolic link", "cp grubenv other && ln -sf other grubenv",
		-ELOOP);
	ck_assert_msg(strstr(why, "symbolic link"), "%s", why);
	hostile("another owner", "chown 65534 grubenv", -EPERM);
	hostile("writable by others", "chmod 666 grubenv", -EPERM);
	hostile("a folder writable by others", "chmod 777 .", -EPERM);
	hostile("another link", "ln grubenv ../grubenv-link", -EPERM);
	hostile("changed since the check",
		"printf 'saved_entry=1\\n' | dd of=grubenv bs=1 seek=25 conv=notrunc status=none",
		-ESTALE);
	ck_assert_msg(strstr(why, "changed since it was checked"), "%s", why);
	/* Another size: the 1024 bytes read are those of the plan, the
	 * size is not. */
	hostile("another size", "head -c 1024 grubenv >x && cat x x >grubenv",
		-EPERM);
	{
		char b[2 * GRUBENV_SIZE];

		ck_assert_int_eq(get("boot/grub/grubenv", b, sizeof(b)),
				 2 * GRUBENV_SIZE);
	}
}
END_TEST

START_TEST(sd_set_and_restore)
{
	unsigned char v[BOOT_ONCE_EFIVAR_MAX], prev[BOOT_ONCE_EFIVAR_MAX];
	static const unsigned char want[] = {
		7, 0, 0, 0, 'a', 0, 'b', 0, 'c', 0, '-', 0, '6', 0, '.', 0,
		'1', 0, '.', 0, '0', 0, '-', 0, '2', 0, '8', 0, '-', 0, 'a', 0,
		'm', 0, 'd', 0, '6', 0, '4', 0, '.', 0, 'c', 0, 'o', 0, 'n', 0,
		'f', 0, 0, 0,
	};
	struct boot_once o;
	struct next_boot *p;
	ssize_t n;

	put_sd_boot();
	p = plan(OLD, NEXT_BOOT_REDIRECT);
	ck_assert_str_eq(p->once_id, "abc-" OLD ".conf");
	ck_assert_msg(boot_once_set(p, &o, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(get(ONESHOT, v, sizeof(v)), sizeof(want));
	ck_assert_mem_eq(v, want, sizeof(want));
	free(p);
	/* Cancelled: no one-shot, as before. */
	ck_assert_msg(boot_once_restore(&o, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(get(ONESHOT, v, sizeof(v)), -1);

	/* The user's one-shot of the new kernel: put back exactly, also
	 * when systemd-boot removed torpor's at boot. */
	put_efivar("LoaderEntryOneShot", "abc-" NEW ".conf");
	n = get(ONESHOT, prev, sizeof(prev));
	set_once(&o);
	ck_assert_msg(boot_once_restore(&o, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(get(ONESHOT, v, sizeof(v)), n);
	ck_assert_mem_eq(v, prev, (size_t)n);
	set_once(&o);
	{
		char path[PATH_MAX];

		path_of(path, sizeof(path), ONESHOT);
		ck_assert_int_eq(unlink(path), 0);
	}
	ck_assert_msg(boot_once_restore(&o, why, sizeof(why)) == 0, "%s", why);
	ck_assert_int_eq(get(ONESHOT, v, sizeof(v)), n);
	ck_assert_mem_eq(v, prev, (size_t)n);

	/* A symbolic link put where the variable goes after the plan: not
	 * followed. */
	{
		char path[PATH_MAX], target[PATH_MAX];

		path_of(path, sizeof(path), ONESHOT);
		path_of(target, sizeof(target), "elsewhere");
		ck_assert_int_eq(unlink(path), 0);
		p = plan(OLD, NEXT_BOOT_REDIRECT);
		ck_assert_int_eq(symlink(target, path), 0);
	}
	ck_assert_int_eq(boot_once_set(p, &o, why, sizeof(why)), -ELOOP);
	ck_assert_int_eq(get("elsewhere", v, sizeof(v)), -1);
	free(p);
}
END_TEST

Suite *boot_once_root_suite(void);

Suite *
boot_once_root_suite(void)
{
	Suite *s = suite_create("boot-once");
	TCase *tc = tcase_create("next boot");

	if (geteuid() != 0)
		unit_skip("boot-once: grubenv must be root's: run as root");
	tcase_add_checked_fixture(tc, fake_boot_setup, fake_boot_teardown);
	tcase_add_test(tc, verdicts);
	tcase_add_test(tc, grub_set_and_restore);
	tcase_add_test(tc, grub_used_at_boot);
	tcase_add_test(tc, grub_hostile);
	tcase_add_test(tc, sd_set_and_restore);
	suite_add_tcase(s, tc);
	return s;
}
