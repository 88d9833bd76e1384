/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <inttypes.h>
#include <stdio.h>

#include "log.h"
#include "proc.h"
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

void
progress_print_summary(const char *what, uint64_t pages, size_t page_size,
		       uint64_t stored, double seconds)
{
	double image_mib = (double)pages * (double)page_size / 1048576.0;
	double stored_mib = (double)stored / 1048576.0;

	/* A report, not a result: -q (errors only) leaves it out. */
	if (log_quiet())
		return;
	printf("%s: %" PRIu64 " pages, %.1f MiB image, %.1f MiB stored (%.0f%%), %.2f s, %.0f MiB/s\n",
	       what, pages, image_mib, stored_mib,
	       image_mib > 0 ? stored_mib * 100.0 / image_mib : 0.0, seconds,
	       seconds > 0 ? image_mib / seconds : 0.0);
	fflush(stdout);
}

void
progress_print(void *ctx, const struct stream_progress *p)
{
	uint64_t total = p->chunks_total ? p->chunks_total : 1;
	unsigned step = (unsigned)(p->chunks_done * 10 / total);

	(void)ctx;
	/* Every tenth: the lines must fit a pipe whose reader may be frozen. */
	if (p->chunks_done == 0 || step == (p->chunks_done - 1) * 10 / total)
		return;
	log_line(TORPOR_LOG_NOTICE, "%s: %u%% (%" PRIu64 " of %" PRIu64 " chunks, %.1f MiB of pages, %.1f MiB stored)",
		 p->what, step * 10, p->chunks_done, p->chunks_total,
		 (double)p->raw_bytes / 1048576.0,
		 (double)p->stored_bytes / 1048576.0);
}

void
progress_print_phases(const char *what, const char *const *names,
		      const double *seconds, size_t n)
{
	char line[1024];
	const char *sep = "";
	size_t i, len = 0;
	uint64_t hwm_kib;

	line[0] = '\0';
	for (i = 0; i < n && len < sizeof(line); i++) {
		int k;

		if (seconds[i] < 0)
			continue;
		k = snprintf(line + len, sizeof(line) - len, "%s %s %.3f", sep,
			     names[i], seconds[i]);
		len = k < 0 ? sizeof(line) : len + (size_t)k;
		sep = ",";
	}
	log_line(TORPOR_LOG_NOTICE, "%s: phases (s):%s", what, line);
	if (proc_self_status("VmHWM", &hwm_kib) == 0)
		log_line(TORPOR_LOG_NOTICE, "%s: peak RSS %" PRIu64 " KiB",
			 what, hwm_kib);
}

void
progress_print_footprint(const char *what)
{
	char figures[512];

	if (proc_footprint(figures, sizeof(figures)) < 0)
		return;
	log_line(TORPOR_LOG_NOTICE, "%s:%s", what, figures);
}
