/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "progress.h"

void
progress_figures(const struct stream_progress *p, double t0, double now,
		 struct progress_figures *ret)
{
	double f = p->chunks_total ? (double)p->chunks_done /
				     (double)p->chunks_total : 1.0;
	double elapsed = now - t0;

	ret->percent = (int)(f * 100.0);
	if (ret->percent > 100)
		ret->percent = 100;
	ret->done_mib = (int64_t)(p->raw_bytes >> 20);
	ret->stored_mib = (int64_t)(p->stored_bytes >> 20);
	ret->mib_per_s = elapsed > 0 ?
		(int64_t)((double)p->raw_bytes / 1048576.0 / elapsed) : 0;
	/* The time left at the pace so far. */
	ret->eta_s = f > 0 && elapsed > 0 ?
		(int64_t)(elapsed * (1.0 - f) / f + 0.5) : -1;
}
