/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The CLI through torpord: one request per connection, then the events
 * and the result.  Ctrl-C during a hibernation sends a cancel on the same
 * connection and waits for the result, which says whether it came in
 * time (before the commit) or not.  Nothing written to the socket raises
 * SIGPIPE (MSG_NOSIGNAL): a connection torpord dropped is a message and
 * an exit status, never a death by signal.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/un.h>
#include <unistd.h>

#include "client.h"
#include "json.h"
#include "log.h"
#include "protocol.h"
#include "view.h"

/* How long a non-hibernating request may take to be answered. */
#define CLIENT_TIMEOUT_MS (10 * 60 * 1000)
/* How long a connect or a send may wait for room in torpord's socket
 * (its queue of connections full: a flood of connects, or a daemon that
 * takes none). */
#define CLIENT_SEND_TIMEOUT_S 5

static int
connect_daemon(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	struct timeval tv = { .tv_sec = CLIENT_SEND_TIMEOUT_S };
	size_t len = strlen(path);
	int fd;

	if (len >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, len);
	fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return -errno;
	/* Bounds connect() too: it waits as a send does (EAGAIN after). */
	if (setsockopt(fd, SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) < 0 ||
	    connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int r = -errno;

		close(fd);
		return r;
	}
	return fd;
}

static int
send_request(int fd, const struct client_request *rq, const char *request)
{
	struct proto_msg m;
	int r;

	/* Requests carry "request" where replies carry "type". */
	r = proto_msg_begin(&m, "request");
	if (r < 0)
		return r;
	proto_msg_string(&m, "request", request);
	if (rq && rq->test)
		proto_msg_bool(&m, "test", true);
	if (rq && rq->after)
		proto_msg_string(&m, "after", rq->after);
	if (rq && rq->force)
		proto_msg_bool(&m, "force", true);
	if (rq && rq->s2h)
		proto_msg_string(&m, "sleep", "suspend-then-hibernate");
	if (rq && rq->json)
		proto_msg_bool(&m, "json", true);
	r = proto_msg_end(&m);
	if (r >= 0)
		r = proto_write_all(fd, m.text, m.len);
	proto_msg_free(&m);
	return r;
}

static void
show_event(struct view *v, const struct json_object *o, const char *type)
{
	const char *phase = json_get_string(o, "phase");
	struct progress_figures f;

	if (strcmp(type, "phase") == 0 && phase) {
		bool done = strcmp(json_get_string(o, "state") ?: "", "end") == 0;

		view_phase(v, phase, done, json_get_int(o, "ms", 0));
		if (done && strcmp(phase, "sync") == 0)
			view_committed = 1;
	} else if (strcmp(type, "progress") == 0 && phase) {
		f.percent = (int)json_get_int(o, "percent", 0);
		f.mib_per_s = json_get_int(o, "mib_per_s", 0);
		f.eta_s = json_get_int(o, "eta_s", -1);
		f.done_mib = json_get_int(o, "done_mib", 0);
		f.stored_mib = json_get_int(o, "stored_mib", 0);
		view_progress(v, phase, &f);
	} else if (strcmp(type, "notice") == 0 && !log_quiet()) {
		fprintf(stderr, "torpor: torpord: %s\n",
			json_get_string(o, "message") ?: "");
	}
}

/* The result: output on stdout, the daemon's log lines on stderr.  With
 * -q (errors only) a hibernation's summary and a success's log stay out:
 * the daemon logs at its own level. */
static int
show_result(const struct json_object *o, bool hibernate)
{
	const char *error = json_get_string(o, "error");
	int status = (int)json_get_int(o, "exit", 1);
	bool quiet = log_quiet();

	if (!(quiet && hibernate))
		fputs(json_get_string(o, "output") ?: "", stdout);
	fflush(stdout);
	if (!(quiet && status == 0))
		fputs(json_get_string(o, "log") ?: "", stderr);
	if (error && *error)
		fprintf(stderr, "torpor: torpord: %s\n", error);
	return status;
}

/* One message: the exit status once it is the last, else -1;
 * CLIENT_NOT_TAKEN, why said in why, when torpord refused the
 * connection at its limits without reading the request. */
static int
handle_message(struct view *v, struct proto_in *in, bool hibernate,
	       char *why, size_t why_size)
{
	struct json_object o;
	const char *type;
	char err[128];
	int r = -1;

	if (json_parse_object(in->buf, in->len, &o, err, sizeof(err)) < 0) {
		log_error("torpord sent a malformed message (%s)", err);
		return EXIT_FAILURE;
	}
	type = json_get_string(&o, "type");
	if (!type) {
		log_error("torpord sent a message without a type");
		r = EXIT_FAILURE;
	} else if (strcmp(type, "result") == 0) {
		r = show_result(&o, hibernate);
	} else if (strcmp(type, "error") == 0 &&
		   json_get_bool(&o, "limit", false)) {
		snprintf(why, why_size, "%s",
			 json_get_string(&o, "error") ?: "refused");
		r = CLIENT_NOT_TAKEN;
	} else if (strcmp(type, "error") == 0) {
		log_error("torpord: %s", json_get_string(&o, "error") ?: "error");
		r = EXIT_FAILURE;
	} else {
		show_event(v, &o, type);
	}
	json_object_free(&o);
	return r;
}

/* The replies to the request sent (or, sent < 0, that could not be
 * sent whole: torpord may have said why before it closed). */
static int
read_replies(int fd, const struct client_request *rq, int sent, char *why,
	     size_t why_size)
{
	struct proto_in *in = malloc(sizeof(*in));
	bool hibernate = strcmp(rq->request, "hibernate") == 0;
	bool cancel_sent = false;
	unsigned got = 0;
	struct view v;
	int r;

	if (!in)
		return EXIT_FAILURE;
	view_init(&v);
	for (;;) {
		r = proto_read_message(in, fd, hibernate ? -1 : CLIENT_TIMEOUT_MS);
		if (r == -EINTR && view_cancel && !cancel_sent) {
			fprintf(stderr, "\ntorpor: cancelling\n");
			cancel_sent = true;
			r = send_request(fd, NULL, "cancel");
			if (r >= 0)
				continue;
			/* Gone: which cancels a cycle before its commit. */
			log_error_errno(r, "could not send the cancel to torpord (%m): it dropped the connection");
			r = EXIT_FAILURE;
			break;
		}
		if (r == -EINTR)
			continue;
		if (r < 0 && !got && r != -ETIMEDOUT) {
			/* Nothing read, so no cycle of it began: a hibernate
			 * request is answered "accepted" before its cycle. */
			snprintf(why, why_size, "it closed the connection before any reply (%s)",
				 strerror(sent < 0 ? -sent : -r));
			r = CLIENT_NOT_TAKEN;
			break;
		}
		if (r < 0) {
			log_error("torpord closed the connection without a result (%s)",
				  strerror(-r));
			r = EXIT_FAILURE;
			break;
		}
		got++;
		r = handle_message(&v, in, hibernate, why, why_size);
		if (r >= 0 || r == CLIENT_NOT_TAKEN)
			break;
	}
	free(in);
	return r;
}

int
client_run(const char *path, const struct client_request *rq, char *why,
	   size_t why_size)
{
	int fd = connect_daemon(path), r;

	if (fd == -EACCES) {
		log_error("torpord on %s refused uid %u: only root and the members "
			  "of the group its group= names may use it (usermod -aG "
			  "GROUP USER, then log in again; or sudo)", path,
			  (unsigned)geteuid());
		return EXIT_FAILURE;
	}
	if (fd == -EAGAIN) {
		snprintf(why, why_size, "its socket took no connection within %d s (its queue is full)",
			 CLIENT_SEND_TIMEOUT_S);
		return CLIENT_NOT_TAKEN;
	}
	if (fd < 0)
		return CLIENT_NO_DAEMON;
	log_notice("through torpord on %s", path);
	if (strcmp(rq->request, "hibernate") == 0)
		view_catch_signals();
	r = send_request(fd, rq, rq->request);
	if (r < 0 && r != -EPIPE && r != -ECONNRESET) {
		/* Not whole: torpord drops what it has of it. */
		snprintf(why, why_size, "the request could not be sent (%s)",
			 strerror(-r));
		close(fd);
		return CLIENT_NOT_TAKEN;
	}
	r = read_replies(fd, rq, r, why, why_size);
	close(fd);
	return r;
}
