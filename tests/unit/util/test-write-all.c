/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Writing a whole buffer (src/util/write-all.c): across a pipe that takes
 * it in pieces, and the error of a descriptor that takes nothing. */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "write-all.h"

/* More than a pipe holds: the writes come back short while the reader
 * drains it. */
#define BIG (1024 * 1024)

START_TEST(whole_buffer_through_a_pipe)
{
	char *buf = malloc(BIG), *got = malloc(BIG);
	size_t have = 0;
	int p[2], status;
	pid_t pid;

	ck_assert_ptr_nonnull(buf);
	ck_assert_ptr_nonnull(got);
	for (size_t i = 0; i < BIG; i++)
		buf[i] = (char)(i * 7);
	ck_assert_int_eq(pipe(p), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		close(p[0]);
		_exit(write_all(p[1], buf, BIG) == 0 ? 0 : 1);
	}
	close(p[1]);
	while (have < BIG) {
		ssize_t n = read(p[0], got + have, BIG - have);

		ck_assert_int_gt(n, 0);
		have += (size_t)n;
	}
	close(p[0]);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
	ck_assert_int_eq(memcmp(buf, got, BIG), 0);
	free(buf);
	free(got);
}
END_TEST

START_TEST(error_said)
{
	int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write_all(fd, "x", 1), -EBADF);
	close(fd);
	ck_assert_int_eq(write_all(fd, "", 0), 0);
}
END_TEST

Suite *write_all_suite(void);

Suite *
write_all_suite(void)
{
	Suite *s = suite_create("write-all");
	TCase *tc = tcase_create("write-all");

	tcase_add_test(tc, whole_buffer_through_a_pipe);
	tcase_add_test(tc, error_said);
	suite_add_tcase(s, tc);
	return s;
}
