/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers every unit test executable has (main.c). */
#ifndef TORPOR_TEST_UNIT_H
#define TORPOR_TEST_UNIT_H

#include <check.h>

/*
 * Bytes this process has read so far (/proc/self/io rchar), to show that
 * a bound stops reading; 0 when the kernel does not say.
 */
unsigned long long unit_bytes_read(void);

/*
 * Say why this group of tests cannot run here and end the executable with
 * exit status 77, which meson reports as SKIP.  For a suite function to
 * call before it adds any test (a tool that is missing, say): Check has
 * no skip of its own, and a test that returns early counts as passed.
 */
__attribute__((noreturn, format(printf, 1, 2)))
void unit_skip(const char *fmt, ...);

/* A suite called name of one case, with setup and teardown as a checked
 * fixture, that runs test: a root group of a single test. */
Suite *unit_one_test_suite(const char *name, SFun setup, SFun teardown,
			   const TTest *test);

#endif
