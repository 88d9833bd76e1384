/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpord's state, shared by its parts: torpord.c (start-up, the socket,
 * systemd, signals, the poll loop), conn.c (clients: reading, writing,
 * permissions), requests.c (what each request does) and load.c (the
 * configuration and plugins, kept as last loaded good).
 *
 * The daemon is one thread (the cycle adds its pool): everything is done
 * from the poll loop, and during a cycle from the cycle's callbacks, which
 * never wait on another process.
 */
#ifndef TORPORD_H
#define TORPORD_H

#include <signal.h>
#include <stdio.h>
#include <stdbool.h>
#include <stddef.h>
#include <sys/types.h>
#include <sys/un.h>
#include <time.h>

#include "cycle.h"
#include "protocol.h"
#include "session.h"

/* How long a client may take to send its request, and to take a reply. */
#define TORPORD_REQUEST_TIMEOUT_S 5

/*
 * Connections at once (torpord(8) states these numbers).  Unprivileged
 * users together hold at most TORPORD_MAX_CONNS - TORPORD_RESERVED_CONNS:
 * the rest is kept for root and [torpor] group, so that no other user can
 * keep them from hibernating.  Every user but root and the daemon's own
 * holds at most TORPORD_MAX_CONNS_PER_USER.
 */
#define TORPORD_MAX_CONNS 64
#define TORPORD_RESERVED_CONNS 16
#define TORPORD_MAX_CONNS_PER_USER 8

struct conn {
	int fd;
	pid_t pid;
	uid_t uid;
	bool privileged;	/* root, or in [torpor] group */
	bool unlimited;		/* root or the daemon's user: no per-user cap */
	unsigned long serial;	/* order of arrival: the oldest goes first */
	double deadline;	/* clock_now() by which it must be done */
	bool answered;		/* the last reply is queued: close once sent */
	bool hibernating;	/* the client of the (coming) cycle */
	bool dead;		/* closed: freed by conn_serve() */
	struct proto_in in;
	char *out;		/* framed messages not yet sent */
	size_t out_len, out_off;
	struct conn *next;
};

struct torpord {
	const char *config_path;	/* --config, or NULL: the default */
	const char *plugin_dir;		/* --plugin-dir, or NULL */
	const char *socket_path;	/* where it listens (status says it) */
	/* systemd's socket's path */
	char socket_name[sizeof(((struct sockaddr_un *)0)->sun_path) + 1];
	bool socket_created;		/* by us: removed at exit */
	int listen_fd;
	int signal_pipe[2];
	struct conn *conns;
	unsigned long conn_serial;	/* the last conn's */
	/* What unprivileged clients make the daemon log, bounded
	 * (conn_log()): lines in the window that began at quiet_t0, and
	 * those left out. */
	double quiet_t0;
	unsigned quiet_lines, quiet_skipped;

	struct torpor_session *s;	/* the last good configuration */
	char *good_text;		/* its file's bytes (NULL: none) */
	size_t good_len;
	gid_t group;
	bool has_group;
	time_t loaded_at;
	/* What the next cycle needs, built from s (ready: false when the
	 * last build failed; the next cycle then builds it). */
	struct cycle_prepared pre;

	/* The coming cycle, asked for by pending (NULL: none). */
	struct conn *pending;
	bool pending_test;
	bool pending_force;		/* past a failed initramfs check */
	int pending_after;		/* enum config_after, -1: configured */
	bool pending_s2h;		/* suspend-then-hibernate's 2nd step */
	/* The running cycle. */
	bool busy;
	struct conn *client;		/* NULL once it went away */
	bool committed;			/* past the point of no return */
	double phase_t0, stream_t0;
	int last_percent;
	const struct cycle_times *times;	/* the running cycle's */
};

/* Signals the poll loop acts on (set by the handlers); torpord_cancel
 * is the running cycle's cycle_options.cancel (SIGTERM, SIGINT, or the
 * client's cancel). */
extern volatile sig_atomic_t torpord_got_hup, torpord_got_term, torpord_cancel;

/* load.c */
/* Load and check the configuration and every plugin, initialise them
 * once; on success the new session replaces the old one, on failure the
 * old one is kept.  Errors are logged (and so reach a tee).  -errno. */
int torpord_load(struct torpord *d);
void torpord_unload(struct torpord *d);
/* Build d->pre for d->s (hibernation's arrangement made again), after a
 * cycle and after a request that used the plugins otherwise; a failure is
 * logged, and the next cycle tries again.  -errno. */
int torpord_prepare(struct torpord *d);
/* Give d->pre back, before a request that uses the plugins otherwise
 * (status, verify, invalidate). */
void torpord_unprepare(struct torpord *d);

/* conn.c */
/* Accept the clients waiting, as far as the limits above let them in. */
void conn_accept_all(struct torpord *d);
/* A warning about what client c did, "pid P uid U: " first; an
 * unprivileged client's are bounded in number, so that no user can fill
 * the journal through the daemon. */
void conn_log(struct torpord *d, const struct conn *c, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* Queue a framed message; a droppable one (a progress event) is dropped
 * when the client has not taken the last one yet. */
void conn_send(struct conn *c, const struct proto_msg *m, bool droppable);
/* Write what can be written without waiting. */
void conn_flush(struct torpord *d, struct conn *c);
void conn_close(struct torpord *d, struct conn *c);
/* Read what each client sent, handle whole requests, drop the stalled,
 * oversized and malformed; timeout 0 does not wait. */
void conn_serve(struct torpord *d, int timeout_ms);
/* The poll timeout until the next client deadline (-1: none). */
int conn_next_timeout(const struct torpord *d);

/* requests.c */
/* Handle one whole request from c (its message in c->in). */
void request_handle(struct torpord *d, struct conn *c);
/* During a cycle: a message from the cycle's client (a cancel), or its
 * end of stream. */
void request_during_cycle(struct torpord *d, struct conn *c, int r);
/* Send {type: error, error: what} and close once sent. */
void request_error(struct conn *c, const char *what);
/* The one reply that ends a request: {type: result, ok, exit, error,
 * output, log}. */
void request_result(struct conn *c, int exit_status, const char *error,
		    const char *output, char *log_text);
/* End m, queue it as the last message of c's request (closed once
 * sent), and free it. */
void request_send_last(struct conn *c, struct proto_msg *m);
/* {type: TYPE, KEY: VALUE}, never dropped. */
void request_event(struct conn *c, const char *type, const char *key,
		   const char *value);

/* A request's output: its log lines, and (with_stdout) what the core
 * prints on stdout, echoed there too at the end. */
struct capture {
	FILE *log;
	char *log_text;
	size_t log_len;
	int saved_stdout;
	int memfd;
	char *out_text;
};
void capture_begin(struct capture *cap, bool with_stdout);
void capture_end(struct capture *cap);
void capture_free(struct capture *cap);
/* text cut to what fits a message beside the rest ("" for NULL). */
const char *bounded(char *text);

/* hibernate.c */
/* Run the cycle d->pending asked for. */
void request_run_cycle(struct torpord *d);

/* torpord.c */
void torpord_notify(const char *state);

#endif
