/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The figures of the last hibernation cycle, kept in a small state file
 * (STATE_DIR/last-cycle) for `torpor status`.  The file is root's (mode
 * 0600), replaced whole (written under another name with O_EXCL, then
 * renamed), and read strictly: a bounded size, known keys only, decimal
 * numbers only, owned by the reader and writable by nobody else.
 */
#ifndef TORPOR_LAST_CYCLE_H
#define TORPOR_LAST_CYCLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "config.h"
#include "cycle-phase.h"
#include "image-format.h"
#include "session.h"

/* The most bytes the file may have; a longer one is refused unread. */
#define LAST_CYCLE_MAX_SIZE 4096

#define LAST_CYCLE_FILE "last-cycle"

/* A figure that is 0 is not known (the phase was not reached, or its
 * figure was lost with the memory of the snapshotted system). */
struct last_cycle {
	uint64_t started;		/* unix time the cycle began */
	bool test;			/* hibernate --test */
	uint32_t error;			/* errno of a cycle that failed, 0: ok */
	uint64_t phase_usec[CYCLE_N_PHASES];
	uint64_t pages;			/* pages in the image */
	uint64_t page_size;
	uint64_t stored_bytes;		/* the data stream, framing included */
	/* From the header's resume-stats slot, when it was read back. */
	uint64_t resumed_at;
	uint64_t resume_usec;
	uint64_t resume_pages;
	/* The last torpor verify of an image (verified_at 0: none). */
	uint64_t verified_at;
	bool verify_intact;		/* else refused */
	uint8_t verify_uuid[16];	/* the image it read */
};

/* The state directory: [torpor] state_dir, else the built-in one. */
const char *last_cycle_dir(const struct torpor_config *c);

/* Stored bytes per 1000 image bytes, or 0 when the file does not say. */
uint32_t last_cycle_ratio(const struct last_cycle *lc);

/* The figures of a cycle that just returned r (cycle_hibernate's). */
void last_cycle_from(struct last_cycle *lc, const struct cycle_times *t,
		     bool test, int r, uint64_t started);

/* Replace dir/last-cycle with lc.  dir is created (0700) when missing;
 * a dir that others may write to is refused (-EPERM). */
/* Keep the figures of a cycle (its times t, test for --test; it
 * returned r, started at time started) for `torpor status`, where the
 * session's state directory says (a sim cycle only with [torpor]
 * state_dir); a failure is a warning. */
void last_cycle_record(const struct torpor_session *s,
		       const struct cycle_times *t, bool test, int r,
		       uint64_t started);

/* Keep the verdict of a verify (o as run_resume() left it, r its exit
 * status) for status, when it read a valid header. */
struct resume_options;
void last_cycle_record_verify_result(const struct torpor_session *s,
				     const struct resume_options *o, int r);

int last_cycle_write(const char *dir, const struct last_cycle *lc);

/* Add what a resume recorded (the header's resume-stats slot) to
 * dir/last-cycle, which is created when there is none. */
int last_cycle_record_resume(const char *dir,
			     const struct image_resume_stats *stats);

/* Add the outcome of a torpor verify of the image uuid (intact, or
 * refused) to dir/last-cycle, which is created when there is none. */
int last_cycle_record_verify(const char *dir, const uint8_t uuid[16],
			     bool intact);

/* Read dir/last-cycle: 0, -ENOENT when there is none, -EPERM when it is
 * not the reader's own file or others may write it, -EFBIG when larger
 * than LAST_CYCLE_MAX_SIZE, -EBADMSG when it does not parse. */
int last_cycle_read(const char *dir, struct last_cycle *ret);

#endif
