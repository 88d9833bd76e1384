/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The words of small kernel text files (src/util/text.c): whole words, the
 * value of KEY=, and reading a file with a bound.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "text.h"

START_TEST(has_word_whole_words_only)
{
	ck_assert(text_has_word("freeze mem disk", "disk"));
	ck_assert(text_has_word("disk", "disk"));
	ck_assert(text_has_word("quiet\tnoresume\n", "noresume"));
	ck_assert(!text_has_word("freeze mem disks", "disk"));
	ck_assert(!text_has_word("xdisk mem", "disk"));
	/* A later whole word after a partial one is still found. */
	ck_assert(text_has_word("disks disk", "disk"));
	ck_assert(!text_has_word("", "disk"));
}
END_TEST

START_TEST(word_value_first_key)
{
	char v[16];

	ck_assert_int_eq(text_word_value("ro resume=UUID=ab-cd quiet", "resume=", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "UUID=ab-cd");
	/* resume_offset= is not resume=, and a tab or newline ends a word. */
	ck_assert_int_eq(text_word_value("resume_offset=34816\tresume=/dev/vdb\n", "resume=", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "/dev/vdb");
	ck_assert_int_eq(text_word_value("resume_offset=34816\tresume=/dev/vdb\n", "resume_offset=", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "34816");
	/* Absent, or empty: "". */
	ck_assert_int_eq(text_word_value("ro quiet", "resume=", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "");
	ck_assert_int_eq(text_word_value("resume= ro", "resume=", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "");
	/* Only a word that starts with the key: xresume= is not resume=. */
	ck_assert_int_eq(text_word_value("xresume=/dev/sda", "resume=", v, sizeof(v)), 0);
	ck_assert_str_eq(v, "");
	/* A value that does not fit is an error, not a cut value. */
	ck_assert_int_eq(text_word_value("resume=/dev/disk/by-uuid/0123456789", "resume=", v, sizeof(v)),
			 -ENAMETOOLONG);
}
END_TEST

START_TEST(read_small_bounded)
{
	char path[] = "/tmp/torpor-text.XXXXXX", buf[8];
	int fd = mkstemp(path);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, "0123456789", 10), 10);
	close(fd);
	ck_assert_int_eq(text_read_small(path, buf, sizeof(buf)), 7);
	ck_assert_str_eq(buf, "0123456");
	unlink(path);
	ck_assert_int_eq(text_read_small(path, buf, sizeof(buf)), -ENOENT);
}
END_TEST

Suite *text_suite(void);

Suite *
text_suite(void)
{
	Suite *s = suite_create("text");
	TCase *tc = tcase_create("text");

	tcase_add_test(tc, has_word_whole_words_only);
	tcase_add_test(tc, word_value_first_key);
	tcase_add_test(tc, read_small_bounded);
	suite_add_tcase(s, tc);
	return s;
}
