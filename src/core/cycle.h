/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hibernation cycle (DESIGN.md "The cycle"): one function for the
 * daemon and for `torpor hibernate --direct`.
 */
#ifndef TORPOR_CYCLE_H
#define TORPOR_CYCLE_H

#include <stdbool.h>

#include "session.h"
#include "stream.h"

struct cycle_options {
	bool test;		/* write the image, then thaw and return */
	/* Told after each chunk of the stream (NULL: nobody listens);
	 * session_print_progress() prints it on stderr. */
	stream_progress_fn progress;
	void *progress_ctx;
};

/* Run one cycle with the arranged session.  Returns 0 once the system is
 * back (resumed, or --test done), -errno when it aborted (everything undone:
 * image invalidated, tasks thawed).  Refuses before freezing anything when
 * the plugins and buffers need more memory than is available, when their
 * saved configurations would not fit the image header, or when the writer
 * has no room. */
int cycle_hibernate(struct torpor_session *s, const struct cycle_options *o);

#endif
