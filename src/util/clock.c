/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <time.h>

#include "clock.h"

double
clock_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}
