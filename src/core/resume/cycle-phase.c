/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "cycle-phase.h"

static const char *const phase_names[CYCLE_N_PHASES] = {
	[CYCLE_PHASE_STARTUP] = "start-up",
	[CYCLE_PHASE_FREEZE] = "freeze",
	[CYCLE_PHASE_SNAPSHOT] = "snapshot",
	[CYCLE_PHASE_WRITE] = "write",
	[CYCLE_PHASE_SYNC] = "sync",
	[CYCLE_PHASE_POWEROFF] = "power-off",
	[CYCLE_PHASE_RESUMED] = "resumed",
};

const char *
cycle_phase_name(enum cycle_phase p)
{
	return (unsigned)p < CYCLE_N_PHASES ? phase_names[p] : "unknown";
}

