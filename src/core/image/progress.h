/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The figures of a stream's progress that people are shown (torpor's bar,
 * torpord's progress events): percent, MiB/s and the time left; and the
 * lines hibernate, resume and verify print about their run.
 */
#ifndef TORPOR_PROGRESS_H
#define TORPOR_PROGRESS_H

#include <stddef.h>
#include <stdint.h>

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

/* The one-line summary of hibernate, resume and verify, on stdout:
 * "WHAT: N pages, X MiB image, Y MiB stored (R%), S s, M MiB/s". */
void progress_print_summary(const char *what, uint64_t pages,
			    size_t page_size, uint64_t stored, double seconds);

/* A stream_progress_fn (ctx unused) that logs a line at each tenth of the
 * stream: "hibernate: 40% (N of M chunks, X MiB of pages, Y MiB
 * stored)". */
void progress_print(void *ctx, const struct stream_progress *p);

/* Logs one line: "WHAT: phases (s): NAME S, NAME S, ..." for the n phases
 * whose seconds are not negative (a negative one did not run in this
 * process), then "WHAT: peak RSS N KiB": the most this process has held
 * in memory so far (VmHWM), which the phase lines are printed late enough
 * to cover (before the power-off, before the restore). */
void progress_print_phases(const char *what, const char *const *names,
			   const double *seconds, size_t n);

/* Logs one line: what this process holds in memory ("RssAnon", "VmLck",
 * ... of /proc/self/status), and so adds to a snapshot taken now.
 * Prefixed with WHAT. */
void progress_print_footprint(const char *what);

#endif
