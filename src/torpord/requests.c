/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What each request of doc/protocol.md does.  A request's log lines (and,
 * for verify, invalidate and hibernate, what the core prints on stdout)
 * are captured and sent back in its result, so the client shows what the
 * journal shows.
 */
#include <errno.h>
#include <grp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "clock.h"
#include "config.h"
#include "cycle.h"
#include "json.h"
#include "log.h"
#include "progress.h"
#include "resume.h"
#include "status.h"
#include "torpord.h"

void
capture_begin(struct capture *cap, bool with_stdout)
{
	memset(cap, 0, sizeof(*cap));
	cap->saved_stdout = cap->memfd = -1;
	cap->log = open_memstream(&cap->log_text, &cap->log_len);
	log_set_tee(cap->log);
	if (!with_stdout)
		return;
	fflush(stdout);
	cap->memfd = memfd_create("torpord-stdout", MFD_CLOEXEC);
	cap->saved_stdout = cap->memfd >= 0 ? dup(STDOUT_FILENO) : -1;
	if (cap->saved_stdout >= 0)
		dup2(cap->memfd, STDOUT_FILENO);
}

/* Stop capturing; cap->log_text and cap->out_text hold the text (or are
 * NULL); capture_free() frees them. */
void
capture_end(struct capture *cap)
{
	off_t len;

	log_set_tee(NULL);
	if (cap->log)
		fclose(cap->log);
	cap->log = NULL;
	if (cap->saved_stdout < 0)
		return;
	fflush(stdout);
	dup2(cap->saved_stdout, STDOUT_FILENO);
	close(cap->saved_stdout);
	len = lseek(cap->memfd, 0, SEEK_END);
	if (len > PROTOCOL_MAX_MESSAGE / 2)
		len = PROTOCOL_MAX_MESSAGE / 2;
	cap->out_text = len >= 0 ? calloc(1, (size_t)len + 1) : NULL;
	if (cap->out_text && pread(cap->memfd, cap->out_text, (size_t)len, 0) < 0)
		cap->out_text[0] = '\0';
	close(cap->memfd);
	/* Echo it where it would have gone. */
	if (cap->out_text)
		fputs(cap->out_text, stdout);
	fflush(stdout);
}

void
capture_free(struct capture *cap)
{
	free(cap->log_text);
	free(cap->out_text);
}

/* Cut text to what fits a message beside the rest. */
const char *
bounded(char *text)
{
	if (text && strlen(text) > PROTOCOL_MAX_MESSAGE / 4)
		text[PROTOCOL_MAX_MESSAGE / 4] = '\0';
	return text ? text : "";
}

void
request_send_last(struct conn *c, struct proto_msg *m)
{
	if (proto_msg_end(m) >= 0)
		conn_send(c, m, false);
	proto_msg_free(m);
	c->answered = true;
	c->hibernating = false;
	c->deadline = clock_now() + TORPORD_REQUEST_TIMEOUT_S;
}

/* The one reply that ends a request. */
void
request_result(struct conn *c, int exit_status, const char *error,
	    const char *output, char *log_text)
{
	struct proto_msg m;

	if (proto_msg_begin(&m, "result") < 0)
		return;
	proto_msg_bool(&m, "ok", exit_status == 0);
	proto_msg_int(&m, "exit", exit_status);
	proto_msg_string(&m, "error", error);
	proto_msg_string(&m, "output", output);
	proto_msg_string(&m, "log", bounded(log_text));
	request_send_last(c, &m);
}

void
request_error(struct conn *c, const char *what)
{
	struct proto_msg m;

	if (proto_msg_begin(&m, "error") < 0)
		return;
	proto_msg_string(&m, "error", what);
	request_send_last(c, &m);
}

void
request_event(struct conn *c, const char *type, const char *key,
	   const char *value)
{
	struct proto_msg m;

	if (!c || proto_msg_begin(&m, type) < 0)
		return;
	proto_msg_string(&m, key, value);
	if (proto_msg_end(&m) >= 0)
		conn_send(c, &m, false);
	proto_msg_free(&m);
}

/* Text a report function wrote to a memory stream. */
typedef int (*report_fn)(struct torpord *d, FILE *out, bool json);

static void
run_report(struct torpord *d, struct conn *c, report_fn fn, bool json)
{
	struct capture cap;
	char *text = NULL;
	size_t len = 0;
	FILE *f;
	int r = 1;

	capture_begin(&cap, false);
	f = open_memstream(&text, &len);
	if (f) {
		if (!json)
			fprintf(f, "daemon:     torpord, pid %d, configuration loaded %s",
				(int)getpid(), ctime(&d->loaded_at));
		r = fn(d, f, json);
		fclose(f);
	}
	capture_end(&cap);
	request_result(c, r, "", bounded(text), cap.log_text);
	free(text);
	capture_free(&cap);
}

static int
plugins_fn(struct torpord *d, FILE *out, bool json)
{
	plugins_report(d->s, out, json);
	return 0;
}

/* The socket named is the one this client came through. */
static int
status_fn(struct torpord *d, FILE *out, bool json)
{
	const struct status_daemon self = {
		.socket = d->socket_path, .self = true,
	};

	return status_report(d->s, out, json, &self);
}

/* status, verify and invalidate initialise and arrange the plugins their
 * own way: what was prepared for the next cycle is given back first and
 * prepared again after. */
static void
do_status(struct torpord *d, struct conn *c, const struct json_object *o)
{
	torpord_unprepare(d);
	run_report(d, c, status_fn, json_get_bool(o, "json", false));
	torpord_prepare(d);
}

static void
do_plugins(struct torpord *d, struct conn *c, const struct json_object *o)
{
	run_report(d, c, plugins_fn, json_get_bool(o, "json", false));
}

static void
do_reload(struct torpord *d, struct conn *c, const struct json_object *o)
{
	struct capture cap;
	int r;

	torpord_notify("RELOADING=1");
	capture_begin(&cap, false);
	r = torpord_load(d);
	capture_end(&cap);
	torpord_notify("READY=1");
	request_result(c, r < 0 ? 1 : 0,
		    r < 0 ? "the configuration was refused: the last good one is kept" : "",
		    r < 0 ? "" : "configuration reloaded\n", cap.log_text);
	capture_free(&cap);
}

/* verify and invalidate act on the writer alone; hibernation's
 * arrangement is made again before each cycle. */
static void
do_verify(struct torpord *d, struct conn *c, const struct json_object *o)
{
	struct resume_options ro = { .mode = RESUME_VERIFY };
	struct capture cap;
	int r;

	torpord_unprepare(d);
	capture_begin(&cap, true);
	r = session_arrange_writer_only(d->s);
	if (r >= 0)
		r = resume_run(d->s, &ro);
	capture_end(&cap);
	torpord_prepare(d);
	request_result(c, r == EXIT_REFUSED ? EXIT_REFUSED : r < 0 ? 1 : 0, "",
		    bounded(cap.out_text), cap.log_text);
	capture_free(&cap);
}

static void
do_invalidate(struct torpord *d, struct conn *c, const struct json_object *o)
{
	struct capture cap;
	int r;

	torpord_unprepare(d);
	capture_begin(&cap, true);
	r = session_arrange_writer_only(d->s);
	if (r >= 0)
		r = session_invalidate(d->s);
	if (r >= 0)
		printf("invalidate: no resumable image remains on writer '%s'\n",
		       d->s->config->writer);
	capture_end(&cap);
	torpord_prepare(d);
	request_result(c, r < 0 ? 1 : 0, "", bounded(cap.out_text), cap.log_text);
	capture_free(&cap);
}

/* Member key is absent, null, true or false; else c is answered. */
static bool
is_bool(struct conn *c, const struct json_object *o, const char *key)
{
	const struct json_member *m = json_get(o, key);
	char what[64];

	if (!m || m->type == JSON_BOOL || m->type == JSON_NULL)
		return true;
	snprintf(what, sizeof(what), "%s: not true or false", key);
	request_error(c, what);
	return false;
}

/* The cycle runs from the poll loop once this request is read
 * (request_run_cycle()), so that no client is being served then. */
static void
do_hibernate(struct torpord *d, struct conn *c, const struct json_object *o)
{
	const struct json_member *after = json_get(o, "after");
	const struct json_member *sleep = json_get(o, "sleep");
	int a = -1;

	if (after && after->type != JSON_NULL) {
		a = after->type == JSON_STRING ?
			config_after_from_name(after->string) : -EINVAL;
		if (a < 0) {
			request_error(c, "after: not one of poweroff, reboot, suspend");
			return;
		}
	}
	if (sleep && (sleep->type != JSON_STRING ||
		      (strcmp(sleep->string, "hibernate") != 0 &&
		       strcmp(sleep->string, "suspend-then-hibernate") != 0))) {
		request_error(c, "sleep: not one of hibernate, suspend-then-hibernate");
		return;
	}
	if (!is_bool(c, o, "test") || !is_bool(c, o, "force"))
		return;
	d->pending = c;
	d->pending_test = json_get_bool(o, "test", false);
	d->pending_force = json_get_bool(o, "force", false);
	d->pending_s2h = sleep && strcmp(sleep->string, "hibernate") != 0;
	d->pending_after = a;
	c->hibernating = true;
	request_event(c, "accepted", "request", "hibernate");
}

struct request_kind {
	const char *name;
	bool privileged;
	void (*run)(struct torpord *d, struct conn *c,
		    const struct json_object *o);
};

static const struct request_kind kinds[] = {
	{ "hibernate", true, do_hibernate },
	{ "status", false, do_status },
	{ "plugins", false, do_plugins },
	{ "reload", true, do_reload },
	{ "verify", true, do_verify },
	{ "invalidate", true, do_invalidate },
};

static const struct request_kind *
find_kind(const char *name)
{
	size_t i;

	for (i = 0; name && i < sizeof(kinds) / sizeof(kinds[0]); i++)
		if (strcmp(kinds[i].name, name) == 0)
			return &kinds[i];
	return NULL;
}

/* The request's kind, or NULL when it is refused (answered, logged). */
static const struct request_kind *
check_request(struct torpord *d, struct conn *c, const struct json_object *o)
{
	const char *name = json_get_string(o, "request");
	const struct request_kind *k = find_kind(name);

	if (json_get_int(o, "v", -1) != PROTOCOL_VERSION) {
		conn_log(d, c, "protocol version is not %d: refused",
			 PROTOCOL_VERSION);
		request_error(c, "unsupported protocol version (torpord speaks 1)");
		return NULL;
	}
	if (!k) {
		conn_log(d, c, "unknown request '%.64s': refused",
			 name ? name : "");
		request_error(c, "unknown request");
		return NULL;
	}
	if (k->privileged && !c->privileged) {
		const struct group *g = d->has_group ? getgrgid(d->group) : NULL;
		char why[256];

		conn_log(d, c, "%s: permission denied", k->name);
		if (g)
			snprintf(why, sizeof(why), "permission denied: '%s' is for root and the members of group %s (usermod -aG %s USER, then log in again)",
				 k->name, g->gr_name, g->gr_name);
		else
			snprintf(why, sizeof(why), "permission denied: '%s' is for root (a group may be let in with group= in torpor.conf's [torpor])",
				 k->name);
		request_error(c, why);
		return NULL;
	}
	if (d->busy || d->pending) {
		request_error(c, "busy");
		return NULL;
	}
	if (!d->s) {
		if (k->run == do_reload)
			return k;
		request_error(c, "torpord has no valid configuration: fix it and reload");
		return NULL;
	}
	return k;
}

void
request_handle(struct torpord *d, struct conn *c)
{
	const struct request_kind *k;
	struct json_object o;
	char err[128];

	if (json_parse_object(c->in.buf, c->in.len, &o, err, sizeof(err)) < 0) {
		conn_log(d, c, "malformed request (%s): dropped", err);
		request_error(c, "malformed request");
		proto_in_reset(&c->in);
		return;
	}
	proto_in_reset(&c->in);
	k = check_request(d, c, &o);
	if (k) {
		log_info("pid %d uid %u: %s", (int)c->pid, (unsigned)c->uid,
			 k->name);
		k->run(d, c, &o);
	}
	json_object_free(&o);
}
