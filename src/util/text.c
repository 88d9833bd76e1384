/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Small text files and their words (see text.h). */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "text.h"

ssize_t
text_read_small(const char *path, char *buf, size_t size)
{
	ssize_t n;
	int fd;

	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	do
		n = read(fd, buf, size - 1);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		n = -errno;
	else
		buf[n] = '\0';
	close(fd);
	return n;
}

bool
text_has_word(const char *s, const char *word)
{
	size_t len = strlen(word);
	const char *p = s;

	while ((p = strstr(p, word))) {
		bool start = p == s || isspace((unsigned char)p[-1]);
		char end = p[len];

		if (start && (end == '\0' || isspace((unsigned char)end)))
			return true;
		p += len;
	}
	return false;
}

int
text_word_value(const char *s, const char *key, char *buf, size_t size)
{
	size_t klen = strlen(key);
	const char *p = s;

	buf[0] = '\0';
	while (*p) {
		size_t n;

		while (isspace((unsigned char)*p))
			p++;
		n = strcspn(p, " \t\n");
		if (n > klen && strncmp(p, key, klen) == 0) {
			if (n - klen >= size)
				return -ENAMETOOLONG;
			memcpy(buf, p + klen, n - klen);
			buf[n - klen] = '\0';
			return 0;
		}
		p += n;
	}
	return 0;
}

int
text_fail(int r, char *why, size_t size, const char *fmt, ...)
{
	va_list ap;

	if (why && size) {
		va_start(ap, fmt);
		vsnprintf(why, size, fmt, ap);
		va_end(ap);
	}
	return r;
}
