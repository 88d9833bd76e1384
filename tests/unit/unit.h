/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Helpers every unit test executable has (main.c). */
#ifndef TORPOR_TEST_UNIT_H
#define TORPOR_TEST_UNIT_H

/*
 * Bytes this process has read so far (/proc/self/io rchar), to show that
 * a bound stops reading; 0 when the kernel does not say.
 */
unsigned long long unit_bytes_read(void);

#endif
