/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor status: a pre-flight a user can trust.  Whether hibernation
 * would work now and, when not, the exact reason; what is stored and what
 * a resume would do with it; the figures of the last cycle.  The CLI and
 * the daemon both call status_report().
 */
#ifndef TORPOR_STATUS_H
#define TORPOR_STATUS_H

#include <stdbool.h>
#include <stdio.h>

#include "session.h"

/* Where torpord listens (torpord.socket). */
#define STATUS_DAEMON_SOCKET "/run/torpor/torpord.sock"

/* Which daemon the report speaks of. */
struct status_daemon {
	const char *socket;	/* NULL: STATUS_DAEMON_SOCKET */
	bool self;		/* the report is that daemon's: it runs */
};

/*
 * Write the report on s to out: text, or with json one JSON object whose
 * keys torpor(8) documents; daemon says which daemon's socket it names
 * (NULL: the default one, where a connect says whether a daemon runs).
 * s is a session as session_open() left it, arranged or not; s->config
 * may be NULL (the configuration did not load: the report says so).  The
 * registry is left arranged for hibernation.  Returns 0 when hibernation
 * would work now, 1 when it would fail (the exit status of `torpor
 * status`), -errno on an internal error (out of memory).  Quick: the
 * image's data is never read.
 */
int status_report(struct torpor_session *s, FILE *out, bool json,
		  const struct status_daemon *daemon);

/*
 * The same for a session the caller opened itself: config_path is the
 * file it asked for (NULL: the default), open_error the first error that
 * opening gave (its text, "FILE:LINE: ..." for a configuration error;
 * "" or NULL when none), so that a configuration that did not load is
 * reported with its reason.
 */
int status_report_opened(struct torpor_session *s, const char *config_path,
			 const char *open_error, FILE *out, bool json,
			 const struct status_daemon *daemon);

/* The plugins loaded in s (and each one's own status) on out. */
void plugins_report(struct torpor_session *s, FILE *out, bool json);

#endif
