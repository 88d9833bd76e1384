/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hibernation cycle (DESIGN.md "The cycle"): one function for the
 * daemon and for `torpor hibernate --direct`.
 */
#ifndef TORPOR_CYCLE_H
#define TORPOR_CYCLE_H

#include <stdbool.h>

#include "session.h"

struct cycle_options {
	bool test;		/* write the image, then thaw and return */
};

/* Run one cycle with the arranged session.  Returns 0 once the system is
 * back (resumed, or --test done), -errno when it aborted (everything undone:
 * image invalidated, tasks thawed). */
int cycle_hibernate(struct torpor_session *s, const struct cycle_options *o);

/* Expected bytes of the data stream for raw_bytes of pages through the
 * session's chain (the writer reserves this much before the freeze). */
uint64_t cycle_expected_stream(const struct torpor_session *s,
			       uint64_t raw_bytes, size_t page_size,
			       uint32_t chunk_pages);

#endif
