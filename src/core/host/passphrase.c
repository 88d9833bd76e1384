/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Asking for a passphrase: from a file, through systemd-ask-password in a
 * systemd initrd (so that Plymouth or the console agent shows the prompt),
 * or on the controlling terminal with echo off.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <termios.h>
#include <unistd.h>

#include <gcrypt.h>

#include "log.h"
#include "passphrase.h"

#define ASK_PASSWORD "systemd-ask-password"
#define INITRD_MARKER "/etc/initrd-release"

/* What is read past a too long answer so that a terminal or an agent's
 * pipe is left clean, at most. */
#define DRAIN_MAX (64 * 1024)

static const char *passphrase_file;
static const char *initrd_marker = INITRD_MARKER;

void
passphrase_set_file(const char *path)
{
	passphrase_file = path;
}

bool
passphrase_from_file(void)
{
	return passphrase_file != NULL;
}

void
passphrase_set_initrd_marker(const char *path)
{
	initrd_marker = path ? path : INITRD_MARKER;
}

/*
 * Read one line from fd into buf, without the newline (and a carriage
 * return before it).  Returns its length; -ECANCELED at end of input
 * before anything was read; -EMSGSIZE when the line does not fit.  Only a
 * terminal or an agent's pipe (drain) has the rest of a too long line read
 * and dropped, up to DRAIN_MAX bytes, so that it is left clean; a file is
 * never read past size bytes.
 */
static int
read_line(int fd, char *buf, size_t size, bool eof_is_end, bool drain)
{
	size_t len = 0, dropped = 0;
	bool too_long = false, got = false;
	char c;

	for (;;) {
		ssize_t n = read(fd, &c, 1);

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			int r = -errno;

			explicit_bzero(buf, size);
			return r;
		}
		if (n == 0) {
			if (!got && !eof_is_end) {
				explicit_bzero(buf, size);
				return -ECANCELED;
			}
			break;
		}
		got = true;
		if (c == '\n')
			break;
		if (len + 1 >= size) {
			too_long = true;
			if (!drain || ++dropped > DRAIN_MAX)
				break;
			continue;
		}
		buf[len++] = c;
	}
	c = 0;
	if (too_long) {
		explicit_bzero(buf, size);
		return -EMSGSIZE;
	}
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	buf[len] = '\0';
	return (int)len;
}

/*
 * A passphrase file must be one only its reader can read: a regular file
 * (or a pipe, from a program) owned by the user reading it and with no
 * permission for group or others, and of at most PASSPHRASE_MAX_FILE
 * bytes.  Each refusal is logged, naming the file.
 */
static int
check_file(int fd, const char *path)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return log_error_errno(-errno, "passphrase file %s: %m", path);
	if (S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode))
		return 0;
	if (!S_ISREG(st.st_mode)) {
		log_error("passphrase file %s: not a regular file or a pipe: "
			  "refusing it", path);
		return -EINVAL;
	}
	if (st.st_uid != geteuid()) {
		log_error("passphrase file %s: owned by uid %u, not by uid %u "
			  "who reads it: refusing it", path,
			  (unsigned)st.st_uid, (unsigned)geteuid());
		return -EPERM;
	}
	if (st.st_mode & 0077) {
		log_error("passphrase file %s: others may read or change it "
			  "(mode %04o): refusing it (chmod 600 %s)", path,
			  (unsigned)(st.st_mode & 07777), path);
		return -EPERM;
	}
	if (st.st_size > PASSPHRASE_MAX_FILE) {
		log_error("passphrase file %s: %jd bytes, more than a "
			  "passphrase file may hold (%d): refusing it", path,
			  (intmax_t)st.st_size, PASSPHRASE_MAX_FILE);
		return -EFBIG;
	}
	return 0;
}

static int
ask_file(const char *path, char *buf, size_t size)
{
	int fd, r;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	r = check_file(fd, path);
	/* A pipe is read blocking, as its writer may be slow. */
	if (r >= 0 && fcntl(fd, F_SETFL, 0) < 0)
		r = -errno;
	/* An empty file is an empty passphrase, not a cancelled prompt. */
	if (r >= 0)
		r = read_line(fd, buf, size, true, false);
	close(fd);
	if (r < 0)
		explicit_bzero(buf, size);
	if (r == -EMSGSIZE)
		log_error("passphrase file %s: the passphrase is longer than "
			  "%zu bytes", path, size - 1);
	return r;
}

/* Whether name is an executable in one of PATH's directories. */
static bool
on_path(const char *name)
{
	const char *path = getenv("PATH");
	char *copy, *dir, *save = NULL;
	bool found = false;

	if (!path || !*path)
		path = "/usr/bin:/bin:/usr/sbin:/sbin";
	copy = strdup(path);
	if (!copy)
		return false;
	for (dir = strtok_r(copy, ":", &save); dir && !found;
	     dir = strtok_r(NULL, ":", &save)) {
		char *full;

		if (asprintf(&full, "%s/%s", *dir ? dir : ".", name) < 0)
			break;
		found = access(full, X_OK) == 0;
		free(full);
	}
	free(copy);
	return found;
}

static bool
in_systemd_initrd(void)
{
	return access(initrd_marker, F_OK) == 0 && on_path(ASK_PASSWORD);
}

/* systemd-ask-password prints the answer and a newline on stdout. */
static int
ask_systemd(const char *prompt, char *buf, size_t size)
{
	int pipefd[2], status, r;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	pid = fork();
	if (pid < 0) {
		r = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return r;
	}
	if (pid == 0) {
		/* dup2() clears FD_CLOEXEC on the new descriptor. */
		if (dup2(pipefd[1], STDOUT_FILENO) < 0)
			_exit(127);
		execlp(ASK_PASSWORD, ASK_PASSWORD, "--id=torpor:resume",
		       "--icon=drive-harddisk", "--timeout=0", "--", prompt,
		       (char *)NULL);
		_exit(127);
	}
	close(pipefd[1]);
	r = read_line(pipefd[0], buf, size, false, true);
	close(pipefd[0]);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR) {
			explicit_bzero(buf, size);
			return -errno;
		}
	}
	if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
		explicit_bzero(buf, size);
		return WIFEXITED(status) && WEXITSTATUS(status) == 127 ?
			-ENOKEY : -ECANCELED;
	}
	return r;
}

static int
ask_tty(const char *prompt, char *buf, size_t size)
{
	struct termios old, quiet;
	int fd, r;

	fd = open("/dev/tty", O_RDWR | O_CLOEXEC | O_NOCTTY);
	if (fd < 0)
		return -ENOKEY;
	if (tcgetattr(fd, &old) < 0) {
		close(fd);
		return -ENOKEY;
	}
	quiet = old;
	quiet.c_lflag &= ~(tcflag_t)(ECHO | ECHOE | ECHOK);
	quiet.c_lflag |= ECHONL | ICANON;
	if (write(fd, prompt, strlen(prompt)) < 0 ||
	    tcsetattr(fd, TCSAFLUSH, &quiet) < 0) {
		r = -errno;
		close(fd);
		return r;
	}
	r = read_line(fd, buf, size, false, true);
	(void)tcsetattr(fd, TCSAFLUSH, &old);
	close(fd);
	return r;
}

int
passphrase_ask(const char *prompt, char *buf, size_t size)
{
	if (!buf || size < 2)
		return -EINVAL;
	if (!prompt)
		prompt = "Passphrase: ";
	if (passphrase_file)
		return ask_file(passphrase_file, buf, size);
	if (in_systemd_initrd())
		return ask_systemd(prompt, buf, size);
	return ask_tty(prompt, buf, size);
}

int
passphrase_ask_new(const char *prompt, char *buf, size_t size)
{
	char *again;
	int r, n;

	r = passphrase_ask(prompt, buf, size);
	if (r < 0)
		return r;
	if (r == 0) {
		explicit_bzero(buf, size);
		return -EINVAL;
	}
	if (passphrase_file)
		return r;
	again = gcry_calloc_secure(1, size);
	if (!again) {
		explicit_bzero(buf, size);
		return -ENOMEM;
	}
	n = passphrase_ask("Repeat the passphrase: ", again, size);
	if (n < 0)
		r = n;
	else if (n != r || memcmp(buf, again, (size_t)r) != 0)
		r = -ENOTUNIQ;
	explicit_bzero(again, size);
	gcry_free(again);
	if (r < 0)
		explicit_bzero(buf, size);
	return r;
}
