/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_LOGIND_VIEW_H
#define TORPOR_LOGIND_VIEW_H

#include <stdbool.h>

/* What logind answers to CanHibernate, and torpor's reading of why. */
struct logind_view {
	char answer[32];	/* yes, no, challenge, na, unknown, not running */
	char why[768];
};

/* root: the root of /sys, /proc and /run ("" but in tests); location: the
 * configuration's resume words (resume=/dev/...), or NULL. */
void logind_view(struct logind_view *v, const char *root, const char *location);

#endif
