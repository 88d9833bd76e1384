/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The phases of a hibernation cycle and the seconds each took: the cycle
 * (cycle.h) measures them, and the state file both sides write
 * (last-cycle.h: the hibernating system, then torpor-resume) keeps them,
 * so they sit on the resume side, which a resume links.
 */
#ifndef TORPOR_CYCLE_PHASE_H
#define TORPOR_CYCLE_PHASE_H

#include <stdint.h>

/* The phases of a cycle, in order; the names are cycle_phase_name()'s
 * (they appear in `hibernate -v`, in status and in the daemon's progress
 * events).  A cycle that aborts ends the phase it was in and skips the rest;
 * one that comes back from the image (resumed) reports CYCLE_PHASE_RESUMED. */
enum cycle_phase {
	CYCLE_PHASE_STARTUP,	/* plugins initialised, memory reserved */
	CYCLE_PHASE_FREEZE,	/* tasks frozen */
	CYCLE_PHASE_SNAPSHOT,	/* the kernel's atomic copy */
	CYCLE_PHASE_WRITE,	/* the stream through the chain to the writer */
	CYCLE_PHASE_SYNC,	/* the writer's commit: the image becomes valid */
	CYCLE_PHASE_POWEROFF,	/* power off / reboot / suspend, or --test's
				 * drop of the image */
	CYCLE_PHASE_RESUMED,	/* back: thaw and clean up */
	CYCLE_N_PHASES
};

const char *cycle_phase_name(enum cycle_phase p);

/* Seconds each phase took in the last cycle; a phase not reached is 0.
 * In a system resumed from the kernel's image, only what was measured
 * before the snapshot (and the resumed phase) is known: the rest happened
 * in the memory that was powered off. */
struct cycle_times {
	double phase[CYCLE_N_PHASES];
	/* The image written, as this process knows it (0: not known). */
	uint64_t pages;
	uint64_t page_size;
	uint64_t stored_bytes;
	/* Chunks whose pages the source read straight into the write
	 * buffers (no filters: stream.h). */
	uint64_t chunks_in_place;
	/* What torpor-resume left in the header's resume-stats slot, when the
	 * resumed system could read it back (resumed_at 0: it could not). */
	uint64_t resumed_at;
	uint64_t resume_usec;
	uint64_t resume_pages;
};

#endif
