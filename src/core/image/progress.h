/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The figures of a stream's progress that people are shown (torpor's bar,
 * torpord's progress events): percent, MiB/s and the time left.
 */
#ifndef TORPOR_PROGRESS_H
#define TORPOR_PROGRESS_H

#include <stdint.h>

#include "clock.h"
#include "stream.h"

struct progress_figures {
	int percent;		/* 0..100 */
	int64_t mib_per_s;	/* pages through per second, MiB */
	int64_t eta_s;		/* seconds left; -1: not known yet */
	int64_t done_mib;	/* pages through so far, MiB */
	int64_t stored_mib;	/* bytes stored so far, MiB */
};

/* The figures of p, for a stream that began at t0 (clock_now()). */
void progress_figures(const struct stream_progress *p, double t0, double now,
		      struct progress_figures *ret);

#endif
