/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <sys/resource.h>
#include <time.h>

#include "clock.h"

double
clock_seconds(clockid_t id)
{
	struct timespec ts;

	if (clock_gettime(id, &ts) < 0)
		return 0;
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

double
clock_now(void)
{
	return clock_seconds(CLOCK_MONOTONIC);
}

double
clock_thread_cpu(void)
{
	return clock_seconds(CLOCK_THREAD_CPUTIME_ID);
}

double
clock_process_cpu(void)
{
	struct rusage ru;

	if (getrusage(RUSAGE_SELF, &ru) < 0)
		return 0;
	return (double)(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
	       (double)(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
}
