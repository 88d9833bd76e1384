/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The core's passphrase service: from a file, through a stand-in for
 * systemd-ask-password in a (pretend) systemd initrd, on a pseudo-terminal
 * with echo off, and with nobody to ask.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include "capture.h"
#include "passphrase.h"
#include "unit.h"

Suite *passphrase_suite(void);
Suite *passphrase_root_suite(void);

static char tmpdir[64];

static void
setup(void)
{
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/torpor-pass-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	passphrase_set_file(NULL);
	passphrase_set_initrd_marker(NULL);
}

static void
teardown(void)
{
	char cmd[128];

	passphrase_set_file(NULL);
	passphrase_set_initrd_marker(NULL);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

static void
write_file(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static const char *
tmp_path(const char *name)
{
	static char buf[4][128];
	static int i;

	i = (i + 1) % 4;
	snprintf(buf[i], sizeof(buf[i]), "%s/%s", tmpdir, name);
	return buf[i];
}

START_TEST(test_file_first_line)
{
	const char *p = tmp_path("pass");
	char buf[64];

	write_file(p, "open sesame\nsecond line\n", 0600);
	passphrase_set_file(p);
	ck_assert(passphrase_from_file());
	ck_assert_int_eq(passphrase_ask("Passphrase: ", buf, sizeof(buf)), 11);
	ck_assert_str_eq(buf, "open sesame");
	/* Asked again, a file gives the same answer. */
	ck_assert_int_eq(passphrase_ask("Passphrase: ", buf, sizeof(buf)), 11);
	ck_assert_str_eq(buf, "open sesame");
}
END_TEST

START_TEST(test_file_no_newline_and_crlf)
{
	const char *p = tmp_path("pass");
	char buf[64];

	write_file(p, "no newline", 0600);
	passphrase_set_file(p);
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), 10);
	ck_assert_str_eq(buf, "no newline");
	write_file(p, "dos\r\n", 0600);
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), 3);
	ck_assert_str_eq(buf, "dos");
	/* Spaces are part of a passphrase. */
	write_file(p, " spaced \n", 0600);
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), 8);
	ck_assert_str_eq(buf, " spaced ");
}
END_TEST

START_TEST(test_file_empty_and_too_long)
{
	const char *p = tmp_path("pass");
	char buf[8];

	write_file(p, "", 0600);
	passphrase_set_file(p);
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "");
	write_file(p, "much too long for eight\n", 0600);
	memset(buf, 'x', sizeof(buf));
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), -EMSGSIZE);
	/* No part of the answer is left behind. */
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_int_eq(buf[i], 0);
	/* Exactly size - 1 fits. */
	write_file(p, "seven77\n", 0600);
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), 7);
}
END_TEST

START_TEST(test_file_missing)
{
	char buf[16];

	passphrase_set_file(tmp_path("nonexistent"));
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), -ENOENT);
	ck_assert_int_eq(passphrase_ask(NULL, buf, 1), -EINVAL);
}
END_TEST

START_TEST(test_new_from_file)
{
	const char *p = tmp_path("pass");
	char buf[64];

	write_file(p, "fresh\n", 0600);
	passphrase_set_file(p);
	ck_assert_int_eq(passphrase_ask_new("New: ", buf, sizeof(buf)), 5);
	ck_assert_str_eq(buf, "fresh");
	write_file(p, "\n", 0600);
	ck_assert_int_eq(passphrase_ask_new("New: ", buf, sizeof(buf)), -EINVAL);
}
END_TEST

/* ---- bounds and permissions of a passphrase file ---- */

static char captured[4096];

/* Asking with file set gives want, one message naming the file and
 * needle, and no part of an answer in buf. */
static void
expect_file_refused(const char *file, int want, const char *needle)
{
	char buf[64];
	int r;

	memset(buf, 'x', sizeof(buf));
	passphrase_set_file(file);
	capture_start();
	r = passphrase_ask(NULL, buf, sizeof(buf));
	capture_end(captured, sizeof(captured));
	ck_assert_int_eq(r, want);
	ck_assert_msg(strstr(captured, file) && strstr(captured, needle),
		      "'%s' does not name %s and '%s'", captured, file, needle);
	for (size_t i = 0; i < sizeof(buf); i++)
		ck_assert_int_ne(buf[i], 'x');
}

START_TEST(test_file_readable_by_others_refused)
{
	const char *p = tmp_path("pass");
	char buf[64];

	write_file(p, "secret\n", 0644);
	expect_file_refused(p, -EPERM, "chmod 600");
	ck_assert_ptr_nonnull(strstr(captured, "0644"));
	write_file(p, "secret\n", 0640);
	expect_file_refused(p, -EPERM, "mode 0640");
	write_file(p, "secret\n", 0602);
	expect_file_refused(p, -EPERM, "mode 0602");
	/* 0400 is fine (0600: the other tests). */
	write_file(p, "secret\n", 0400);
	ck_assert_int_eq(passphrase_ask(NULL, buf, sizeof(buf)), 6);
}
END_TEST

START_TEST(test_file_of_another_user_refused)
{
	const char *p = tmp_path("pass");

	write_file(p, "secret\n", 0600);
	ck_assert_int_eq(chown(p, 65534, 65534), 0);
	expect_file_refused(p, -EPERM, "owned by uid 65534");
}
END_TEST

START_TEST(test_file_too_large_refused)
{
	const char *p = tmp_path("pass");
	int fd;

	write_file(p, "secret\n", 0600);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(ftruncate(fd, PASSPHRASE_MAX_FILE + 1), 0);
	close(fd);
	expect_file_refused(p, -EFBIG, "65536");
}
END_TEST

START_TEST(test_file_dev_zero_refused)
{
	/* Never ended before: a device is not a passphrase file. */
	expect_file_refused("/dev/zero", -EINVAL, "not a regular file");
}
END_TEST

START_TEST(test_file_endless_pipe_bounded)
{
	unsigned long long before, after;
	char buf[64], path[64];
	int fds[2], status, r;
	pid_t pid;

	/* A pipe that never ends and never holds a newline, as
	 * `--passphrase-file <(cat /dev/zero)` would be: the answer is
	 * refused once the buffer is full, nothing more is read. */
	ck_assert_int_eq(pipe2(fds, O_CLOEXEC), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		static const char zeros[4096];

		close(fds[0]);
		signal(SIGPIPE, SIG_DFL);
		while (write(fds[1], zeros, sizeof(zeros)) > 0)
			;
		_exit(0);
	}
	close(fds[1]);
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fds[0]);
	passphrase_set_file(path);
	capture_start();
	before = unit_bytes_read();
	r = passphrase_ask(NULL, buf, sizeof(buf));
	after = unit_bytes_read();
	capture_end(captured, sizeof(captured));
	close(fds[0]);
	ck_assert_int_eq(r, -EMSGSIZE);
	ck_assert_msg(strstr(captured, "longer than 63 bytes"), "%s",
		      captured);
	ck_assert_msg(after - before <= 4096, "%llu bytes read",
		      after - before);
	/* The writer ends with the pipe. */
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
}
END_TEST

/* A stand-in for systemd-ask-password on PATH, and the initrd marker. */
static void
fake_agent(const char *script_body)
{
	const char *agent = tmp_path("systemd-ask-password");
	const char *marker = tmp_path("initrd-release");
	char script[512], path[256];

	snprintf(script, sizeof(script), "#!/bin/sh\n%s\n", script_body);
	write_file(agent, script, 0755);
	write_file(marker, "NAME=test\n", 0644);
	passphrase_set_initrd_marker(marker);
	snprintf(path, sizeof(path), "%s:/usr/bin:/bin", tmpdir);
	setenv("PATH", path, 1);
}

START_TEST(test_systemd_agent)
{
	char buf[64];

	/* The agent gets the prompt as its last argument. */
	fake_agent("for last; do :; done; printf 'agent-%s\\n' \"$last\"");
	ck_assert_int_eq(passphrase_ask("P?", buf, sizeof(buf)), 8);
	ck_assert_str_eq(buf, "agent-P?");
}
END_TEST

START_TEST(test_systemd_agent_cancelled)
{
	char buf[64];

	fake_agent("exit 1");
	ck_assert_int_eq(passphrase_ask("P?", buf, sizeof(buf)), -ECANCELED);
}
END_TEST

/* Without the initrd marker the agent is not used. */
START_TEST(test_agent_only_in_initrd)
{
	char buf[64];
	pid_t pid;
	int status;

	fake_agent("echo agent");
	passphrase_set_initrd_marker(tmp_path("no-such-marker"));
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		/* No controlling terminal: nobody to ask. */
		setsid();
		_exit(passphrase_ask("P?", buf, sizeof(buf)) == -ENOKEY ? 0 : 1);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
}
END_TEST

/*
 * The terminal path on a pseudo-terminal: the child makes the pty its
 * controlling terminal and asks; the parent types the answer and checks
 * that the prompt was shown and the answer was not echoed.
 */
static int
tty_child(int master, const char *typed, char *echoed, size_t echoed_size,
	  int *ret_status)
{
	char *slave_name;
	pid_t pid;
	size_t got = 0;
	int status;

	slave_name = ptsname(master);
	ck_assert_ptr_nonnull(slave_name);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		char buf[64];
		int fd, n;

		setsid();
		fd = open(slave_name, O_RDWR | O_CLOEXEC);
		if (fd < 0 || ioctl(fd, TIOCSCTTY, 0) < 0)
			_exit(90);
		n = passphrase_ask("Secret? ", buf, sizeof(buf));
		if (n == -ECANCELED)
			_exit(80);
		if (n < 0)
			_exit(91);
		_exit(strcmp(buf, "hunter2") == 0 ? 0 : 92);
	}
	/* Wait for the prompt, then type. */
	for (;;) {
		struct pollfd pfd = { .fd = master, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 5000) <= 0)
			break;
		n = read(master, echoed + got, echoed_size - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		echoed[got] = '\0';
		if (strstr(echoed, "Secret? "))
			break;
	}
	/* Give the child a moment to switch echo off before typing. */
	usleep(200000);
	ck_assert_int_eq(write(master, typed, strlen(typed)), (ssize_t)strlen(typed));
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	for (;;) {
		struct pollfd pfd = { .fd = master, .events = POLLIN };
		ssize_t n;

		if (poll(&pfd, 1, 200) <= 0 || got + 1 >= echoed_size)
			break;
		n = read(master, echoed + got, echoed_size - 1 - got);
		if (n <= 0)
			break;
		got += (size_t)n;
		echoed[got] = '\0';
	}
	*ret_status = status;
	return 0;
}

START_TEST(test_tty_no_echo)
{
	char echoed[512] = "";
	int master, status;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	tty_child(master, "hunter2\n", echoed, sizeof(echoed), &status);
	close(master);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
	ck_assert_msg(strstr(echoed, "Secret? "), "no prompt: '%s'", echoed);
	ck_assert_msg(!strstr(echoed, "hunter2"), "answer echoed: '%s'", echoed);
}
END_TEST

START_TEST(test_tty_end_of_input_cancels)
{
	char echoed[512] = "";
	int master, status;

	master = posix_openpt(O_RDWR | O_NOCTTY | O_CLOEXEC);
	ck_assert_int_ge(master, 0);
	ck_assert_int_eq(grantpt(master), 0);
	ck_assert_int_eq(unlockpt(master), 0);
	/* ^D at the start of a line: end of input. */
	tty_child(master, "\x04", echoed, sizeof(echoed), &status);
	close(master);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 80);
}
END_TEST

Suite *
passphrase_suite(void)
{
	Suite *s = suite_create("passphrase");
	TCase *tc;

	tc = tcase_create("file");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_file_first_line);
	tcase_add_test(tc, test_file_no_newline_and_crlf);
	tcase_add_test(tc, test_file_empty_and_too_long);
	tcase_add_test(tc, test_file_missing);
	tcase_add_test(tc, test_new_from_file);
	tcase_add_test(tc, test_file_readable_by_others_refused);
	tcase_add_test(tc, test_file_too_large_refused);
	tcase_add_test(tc, test_file_dev_zero_refused);
	tcase_add_test(tc, test_file_endless_pipe_bounded);
	suite_add_tcase(s, tc);

	tc = tcase_create("interactive");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_systemd_agent);
	tcase_add_test(tc, test_systemd_agent_cancelled);
	tcase_add_test(tc, test_agent_only_in_initrd);
	tcase_add_test(tc, test_tty_no_echo);
	tcase_add_test(tc, test_tty_end_of_input_cancels);
	suite_add_tcase(s, tc);
	return s;
}

/* Only root can give a file away. */
Suite *
passphrase_root_suite(void)
{
	return unit_one_test_suite("passphrase-root", setup, teardown,
				   test_file_of_another_user_refused);
}
