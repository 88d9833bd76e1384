/* SPDX-License-Identifier: GPL-2.0-or-later */
/* torpor's side of torpord's protocol (doc/protocol.md). */
#ifndef TORPOR_CLIENT_H
#define TORPOR_CLIENT_H

#include <stdbool.h>

struct client_request {
	const char *request;	/* "hibernate", "status", ... */
	bool test;		/* hibernate */
	const char *after;	/* hibernate; NULL: the configured one */
	bool force;		/* hibernate: past a failed initramfs check */
	/* hibernate: the hibernation step of suspend-then-hibernate (the
	 * system-sleep hooks are told so) */
	bool s2h;
	bool json;		/* status, plugins */
};

/* No daemon answers at the socket: the caller runs the command itself. */
#define CLIENT_NO_DAEMON (-1000)

/*
 * Send rq to the torpord listening at path and show what it answers:
 * events on stderr, the result's output on stdout, its log on stderr.
 * Returns the command's exit status, or CLIENT_NO_DAEMON.
 */
int client_run(const char *path, const struct client_request *rq);

#endif
