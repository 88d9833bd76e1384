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
/* A daemon is there but did not take the request: refused at its
 * limits, its socket full, or the connection ended before any reply.
 * Nothing of the request was started (a hibernate request is answered
 * "accepted" before its cycle begins). */
#define CLIENT_NOT_TAKEN (-1001)

/*
 * Send rq to the torpord listening at path and show what it answers:
 * events on stderr, the result's output on stdout, its log on stderr.
 * Returns the command's exit status, CLIENT_NO_DAEMON, or
 * CLIENT_NOT_TAKEN with the reason in why (why_size bytes).
 */
int client_run(const char *path, const struct client_request *rq, char *why,
	       size_t why_size);

#endif
