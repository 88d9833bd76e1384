/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The root of the system's files (src/util/sysroot.c): the running
 * system's, a test build's $TORPOR_TEST_SYSROOT, and what sysroot_set()
 * (torpor setup --root) set, which comes first.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "sysroot.h"

START_TEST(root_from_variable_then_set)
{
	char buf[256];

	unsetenv("TORPOR_TEST_SYSROOT");
	sysroot_set(NULL);
	ck_assert_str_eq(sysroot(), "");
	ck_assert_str_eq(sysroot_path("/proc/cmdline", buf, sizeof(buf)),
			 "/proc/cmdline");
	/* A relative path is no root. */
	setenv("TORPOR_TEST_SYSROOT", "relative", 1);
	ck_assert_str_eq(sysroot(), "");
	setenv("TORPOR_TEST_SYSROOT", "/fake", 1);
	ck_assert_str_eq(sysroot(), "/fake");
	ck_assert_str_eq(sysroot_path("/proc/cmdline", buf, sizeof(buf)),
			 "/fake/proc/cmdline");
	/* --root wins over the variable, until it is taken back. */
	sysroot_set("/other");
	ck_assert_str_eq(sysroot(), "/other");
	sysroot_set(NULL);
	ck_assert_str_eq(sysroot(), "/fake");
	unsetenv("TORPOR_TEST_SYSROOT");
}
END_TEST

START_TEST(read_under_root)
{
	char root[] = "/tmp/torpor-sysroot.XXXXXX", path[512], buf[64];
	FILE *f;

	ck_assert_ptr_nonnull(mkdtemp(root));
	snprintf(path, sizeof(path), "%s/proc", root);
	ck_assert_int_eq(mkdir(path, 0755), 0);
	snprintf(path, sizeof(path), "%s/proc/cmdline", root);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("quiet nohibernate\n", f);
	fclose(f);
	sysroot_set(root);
	ck_assert_int_eq(sysroot_read("/proc/cmdline", buf, sizeof(buf)), 18);
	ck_assert_str_eq(buf, "quiet nohibernate\n");
	ck_assert_int_eq(sysroot_read("/proc/swaps", buf, sizeof(buf)), -ENOENT);
	sysroot_set(NULL);
	unlink(path);
	snprintf(path, sizeof(path), "%s/proc", root);
	rmdir(path);
	rmdir(root);
}
END_TEST

Suite *sysroot_suite(void);

Suite *
sysroot_suite(void)
{
	Suite *s = suite_create("sysroot");
	TCase *tc = tcase_create("sysroot");

	tcase_add_test(tc, root_from_variable_then_set);
	tcase_add_test(tc, read_under_root);
	suite_add_tcase(s, tc);
	return s;
}
