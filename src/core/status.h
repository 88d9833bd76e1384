/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What `torpor status` and `torpor plugins` print, for the CLI and for
 * torpord alike: both call these with an open session.
 */
#ifndef TORPOR_STATUS_H
#define TORPOR_STATUS_H

#include <stdbool.h>
#include <stdio.h>

#include "session.h"

/* Whether hibernation would work with session s, and where the image
 * goes, as text or JSON on out.  0 when it would work, 1 when not. */
int status_report(struct torpor_session *s, FILE *out, bool json);

/* The plugins loaded in s (and each one's own status) on out. */
void plugins_report(struct torpor_session *s, FILE *out, bool json);

#endif
