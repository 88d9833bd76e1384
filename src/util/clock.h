/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_CLOCK_H
#define TORPOR_CLOCK_H

#include <time.h>

/* Seconds since an arbitrary point (CLOCK_MONOTONIC): what every phase,
 * rate and deadline of torpor is measured with. */
double clock_now(void);

/* Clock id's reading in seconds (clock_gettime()); 0 when it cannot be
 * read. */
double clock_seconds(clockid_t id);

/* CPU seconds the calling thread has run (CLOCK_THREAD_CPUTIME_ID); 0
 * when unknown. */
double clock_thread_cpu(void);

/* CPU seconds, user and system, this process has run (all its threads,
 * getrusage()); 0 when unknown. */
double clock_process_cpu(void);

#endif
