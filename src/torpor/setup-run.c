/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The programs torpor setup runs: the initramfs generator, and torpor
 * itself for its resume-args and its test hibernation.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <sys/wait.h>
#include <unistd.h>

#include "log.h"
#include "setup.h"

size_t
read_bounded(int fd, char *buf, size_t size)
{
	size_t used = 0;

	while (used + 1 < size) {
		ssize_t k = read(fd, buf + used, size - 1 - used);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			break;
		used += (size_t)k;
	}
	buf[used] = '\0';
	return used;
}

/* Run argv (argv[0] a path) and wait; with out, its standard output is
 * kept there (bounded, NUL-terminated).  Its exit status, or -errno. */
int
run_program(const char *const *argv, char *out, size_t out_size)
{
	int p[2] = { -1, -1 }, status;
	pid_t pid;

	fflush(stdout);
	if (out && pipe2(p, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid == 0) {
		if (out && dup2(p[1], 1) < 0)
			_exit(127);
		execv(argv[0], (char *const *)argv);
		_exit(127);
	}
	if (out) {
		close(p[1]);
		if (pid > 0)
			read_bounded(p[0], out, out_size);
		else
			out[0] = '\0';
		close(p[0]);
	}
	if (pid < 0)
		return -errno;
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* This program with the configuration conf: `torpor --config conf WORDS`. */
int
setup_run_self(const struct setup *st, const char *conf,
	       const char *const *words, char *out, size_t out_size)
{
	const char *argv[16] = { "/proc/self/exe", "--config", conf };
	size_t n = 3;

	if (st->plugin_dir) {
		argv[n++] = "--plugin-dir";
		argv[n++] = st->plugin_dir;
	}
	while (*words && n < 15)
		argv[n++] = *words++;
	argv[n] = NULL;
	return run_program(argv, out, out_size);
}
