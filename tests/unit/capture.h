/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the core logs, caught for a test to read: the one capture helper of
 * the unit tests, built on log.c's capture hooks rather than on fd 2.
 */
#ifndef TORPOR_TEST_CAPTURE_H
#define TORPOR_TEST_CAPTURE_H

#include <stddef.h>

/* Start catching every line the logger prints, as it prints it
 * ("torpor: ...\n").  The lines still reach stderr, for the test's log. */
void capture_start(void);

/* Stop; what was caught goes into buf (size bytes, cut to fit, always
 * terminated).  Returns buf. */
char *capture_end(char *buf, size_t size);

/* Number of lines in s. */
unsigned capture_lines(const char *s);

#endif
