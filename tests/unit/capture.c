/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "capture.h"
#include "log.h"

static FILE *caught;
static char *caught_text;
static size_t caught_len;

/*
 * log_capture() keeps only the first error's text, the reason that status
 * reports; a test also counts lines and reads warnings, so it takes every
 * line from the logger's tee, the hook torpord uses to send a request's
 * log to its client.
 */
void
capture_start(void)
{
	ck_assert_ptr_null(caught);
	caught = open_memstream(&caught_text, &caught_len);
	ck_assert_ptr_nonnull(caught);
	log_set_tee(caught);
}

char *
capture_end(char *buf, size_t size)
{
	ck_assert_ptr_nonnull(caught);
	log_set_tee(NULL);
	ck_assert_int_eq(fclose(caught), 0);
	caught = NULL;
	snprintf(buf, size, "%s", caught_text ? caught_text : "");
	free(caught_text);
	caught_text = NULL;
	return buf;
}

unsigned
capture_lines(const char *s)
{
	unsigned n = 0;

	for (; *s; s++)
		n += *s == '\n';
	return n;
}
