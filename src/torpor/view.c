/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "log.h"
#include "view.h"

#define BAR_WIDTH 24

volatile sig_atomic_t view_cancel, view_committed;

static void
on_signal(int sig)
{
	static const char late[] =
		"\ntorpor: Ctrl-C ignored: the image is committed, the machine is going down\n";
	int saved = errno;

	if (view_committed) {
		ssize_t k = write(STDERR_FILENO, late, sizeof(late) - 1);

		(void)k;	/* nothing to do about it in a handler */
	} else {
		view_cancel = 1;
	}
	errno = saved;
}

void
view_catch_signals(void)
{
	struct sigaction sa = { .sa_handler = on_signal };

	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
}

void
view_init(struct view *v)
{
	memset(v, 0, sizeof(*v));
	v->tty = isatty(STDERR_FILENO);
	v->last_percent = -5;
}

void
view_phase(struct view *v, const char *phase, bool done, int64_t ms)
{
	if (!done) {
		v->last_percent = -5;
		v->last_rate = -1;
		return;
	}
	if (log_quiet())
		return;
	if (v->bar_drawn)
		fputc('\n', stderr);
	v->bar_drawn = false;
	if (v->last_rate >= 0)
		fprintf(stderr, "torpor: %-9s %7.2f s, %" PRId64 " MiB/s\n",
			phase, (double)ms / 1000.0, v->last_rate);
	else
		fprintf(stderr, "torpor: %-9s %7.2f s\n", phase,
			(double)ms / 1000.0);
	fflush(stderr);
}

void
view_progress(struct view *v, const char *phase,
	      const struct progress_figures *f)
{
	char bar[BAR_WIDTH + 1];
	int fill = f->percent * BAR_WIDTH / 100;

	v->last_rate = f->mib_per_s;
	if (!v->tty || log_quiet() || f->percent / 5 == v->last_percent / 5)
		return;
	v->last_percent = f->percent;
	memset(bar, '#', (size_t)fill);
	memset(bar + fill, ' ', (size_t)(BAR_WIDTH - fill));
	bar[BAR_WIDTH] = '\0';
	fprintf(stderr, "\rtorpor: %-9s [%s] %3d%% %5" PRId64 " MiB/s",
		phase, bar, f->percent, f->mib_per_s);
	if (f->eta_s >= 0)
		fprintf(stderr, "  ETA %" PRId64 " s ", f->eta_s);
	fflush(stderr);
	v->bar_drawn = true;
}
