/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * How torpor shows a cycle on stderr, run directly or through torpord: on
 * a terminal a bar per phase (percent, MiB/s, time left), elsewhere one
 * line per phase.  Ctrl-C cancels before the commit (cycle_options.cancel)
 * and is ignored, with a word why, after it.
 */
#ifndef TORPOR_VIEW_H
#define TORPOR_VIEW_H

#include <signal.h>
#include <stdbool.h>

#include "progress.h"

struct view {
	bool tty;
	bool bar_drawn;		/* a bar is on the current line */
	int last_percent;
	int64_t last_rate;
};

void view_init(struct view *v);
/* A phase begins or ends (after ms milliseconds). */
void view_phase(struct view *v, const char *phase, bool done, int64_t ms);
/* The stream's figures; the bar moves by 5 % at a time, so that a
 * terminal whose reader is frozen is never written much. */
void view_progress(struct view *v, const char *phase,
		   const struct progress_figures *f);

/* SIGINT and SIGTERM set view_cancel; once view_committed is set they
 * say on stderr that it is too late.  Installed without SA_RESTART, so a
 * blocked read returns EINTR. */
extern volatile sig_atomic_t view_cancel, view_committed;
void view_catch_signals(void);

#endif
