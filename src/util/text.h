/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_UTIL_TEXT_H
#define TORPOR_UTIL_TEXT_H

#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>

/* A number macro as a string literal, for messages and arguments. */
#define TEXT_OF_(x) #x
#define TEXT_OF(x) TEXT_OF_(x)

/* A small file (the kernel's /proc and /sys files) into buf, NUL
 * terminated, at most size - 1 bytes: its length, or -errno. */
ssize_t text_read_small(const char *path, char *buf, size_t size);

/* word as a whole word of s (words are separated by white space). */
bool text_has_word(const char *s, const char *word);

/* The value of the first word "KEY=VALUE" of s (key includes its '=')
 * into buf: 0 ("" when there is none), or -ENAMETOOLONG. */
int text_word_value(const char *s, const char *key, char *buf, size_t size);

/* printf into why when the caller gave room (why may be NULL); returns r,
 * so that an error path is one statement: return text_fail(-EINVAL, ...). */
int text_fail(int r, char *why, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));

#endif
