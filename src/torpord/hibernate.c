/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The cycle, run in torpord's own thread for one client at a time.  From
 * the freeze to the thaw user space is frozen, the client too: events
 * are written without waiting and a progress event the client has not
 * taken is dropped.  Between events the other clients are served with a
 * zero timeout (every request is "busy" then), so that nobody waits on
 * the cycle and the cycle waits on nobody.
 */
#include <errno.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "config.h"
#include "cycle.h"
#include "last-cycle.h"
#include "json.h"
#include "log.h"
#include "progress.h"
#include "torpord.h"

/* SIGTERM, SIGINT, or a cancel from the client: before the commit the
 * cycle stops; after it there is nothing to stop. */
static void
check_signals(struct torpord *d)
{
	if (torpord_got_term && !d->committed)
		torpord_cancel = 1;
}

static void
on_phase(void *ctx, enum cycle_phase p, bool done)
{
	struct torpord *d = ctx;
	double now = clock_now();
	struct proto_msg m;

	if (d->client && proto_msg_begin(&m, "phase") == 0) {
		proto_msg_string(&m, "phase", cycle_phase_name(p));
		proto_msg_string(&m, "state", done ? "end" : "begin");
		if (done)
			proto_msg_int(&m, "ms", (int64_t)((now - d->phase_t0) * 1000));
		if (proto_msg_end(&m) >= 0)
			conn_send(d->client, &m, false);
		proto_msg_free(&m);
	}
	if (!done) {
		d->phase_t0 = now;
		if (p == CYCLE_PHASE_WRITE) {
			d->stream_t0 = now;
			d->last_percent = -1;
		}
	}
	/* -v: what the daemon holds when user space is frozen (it is in the
	 * image), as torpor hibernate -v says it. */
	if (p == CYCLE_PHASE_FREEZE && !done &&
	    log_get_max_level() >= TORPOR_LOG_INFO)
		progress_print_footprint("torpord: this process before the freeze");
	if (p == CYCLE_PHASE_SYNC && done)
		d->committed = true;
	/* The phase times up to the commit, on stderr (the journal), as
	 * torpor hibernate -v prints them: the client is frozen now, and
	 * the machine is off before anyone could ask. */
	if (p == CYCLE_PHASE_POWEROFF && !done && d->times)
		cycle_print_times("torpord: hibernate", -1, d->times,
				  CYCLE_PHASE_POWEROFF);
	check_signals(d);
	conn_serve(d, 0);
}

static void
on_progress(void *ctx, const struct stream_progress *p)
{
	struct torpord *d = ctx;
	struct progress_figures f;
	struct proto_msg m;

	progress_figures(p, d->stream_t0, clock_now(), &f);
	if (d->client && f.percent != d->last_percent &&
	    proto_msg_begin(&m, "progress") == 0) {
		d->last_percent = f.percent;
		proto_msg_string(&m, "phase", "write");
		proto_msg_int(&m, "percent", f.percent);
		proto_msg_int(&m, "mib_per_s", f.mib_per_s);
		proto_msg_int(&m, "eta_s", f.eta_s);
		proto_msg_int(&m, "done_mib", f.done_mib);
		proto_msg_int(&m, "stored_mib", f.stored_mib);
		if (proto_msg_end(&m) >= 0)
			conn_send(d->client, &m, true);
		proto_msg_free(&m);
	}
	check_signals(d);
	conn_serve(d, 0);
}

void
request_during_cycle(struct torpord *d, struct conn *c, int r)
{
	struct json_object o;
	char err[128];
	bool cancel = false;

	if (r == 0)
		return;
	if (r == 1) {
		cancel = json_parse_object(c->in.buf, c->in.len, &o, err,
					   sizeof(err)) == 0;
		if (cancel) {
			const char *what = json_get_string(&o, "request");

			cancel = what && strcmp(what, "cancel") == 0;
			json_object_free(&o);
		}
		proto_in_reset(&c->in);
		if (!cancel)
			return;
	}
	if (!cancel)
		conn_close(d, c);	/* a cancel too, before the commit */
	else if (d->committed)
		request_event(c, "notice", "message",
			      "too late to cancel: the image is committed");
	else {
		log_notice("pid %d: cancel asked: cancelling the cycle",
			   (int)c->pid);
		torpord_cancel = 1;
	}
}

/* Phase times of the cycle, in ms, as result members. */
static void
add_times(struct proto_msg *m, const struct cycle_times *t)
{
	char key[32];
	int p;

	for (p = 0; p < CYCLE_N_PHASES; p++) {
		snprintf(key, sizeof(key), "ms_%s", cycle_phase_name(p));
		proto_msg_int(m, key, (int64_t)(t->phase[p] * 1000));
	}
}

static void
send_cycle_result(struct conn *c, int r, const struct cycle_times *t,
		  struct capture *cap)
{
	struct proto_msg m;

	if (proto_msg_begin(&m, "result") < 0)
		return;
	proto_msg_bool(&m, "ok", r >= 0);
	proto_msg_int(&m, "exit", r < 0 ? 1 : 0);
	proto_msg_string(&m, "error", r == -ECANCELED ?
		"cancelled before the image was committed: processes thawed, nothing kept" :
		r < 0 ? strerror(-r) : "");
	proto_msg_string(&m, "output", bounded(cap->out_text));
	proto_msg_string(&m, "log", bounded(cap->log_text));
	add_times(&m, t);
	request_send_last(c, &m);
}

void
request_run_cycle(struct torpord *d)
{
	struct cycle_times times;
	struct cycle_options o = {
		.test = d->pending_test,
		.force = d->pending_force,
		.progress = on_progress, .progress_ctx = d,
		.phase = on_phase, .phase_ctx = d,
		.cancel = &torpord_cancel,
		.times = &times,
		.sleep_action = d->pending_s2h ? CYCLE_SLEEP_S2H_HIBERNATE :
						 NULL,
	};
	struct torpor_config *conf = d->s->config;
	enum config_after after = conf->after;
	uint64_t started = (uint64_t)time(NULL);
	struct capture cap;
	int r;

	memset(&times, 0, sizeof(times));
	d->client = d->pending;
	d->pending = NULL;
	d->busy = true;
	d->committed = false;
	torpord_cancel = 0;
	if (d->pending_after >= 0)
		conf->after = (enum config_after)d->pending_after;
	log_notice("pid %d uid %u: hibernating%s%s", (int)d->client->pid,
		   (unsigned)d->client->uid, o.test ? " (test)" : "",
		   o.force ? " (force)" : "");
	d->times = &times;
	capture_begin(&cap, true);
	/* Prepared at load (or after the last cycle): straight to the
	 * freeze.  Else the cycle prepares it, and says why it cannot. */
	r = d->pre.ready ? 0 : session_arrange_hibernate(d->s);
	if (r >= 0) {
		r = cycle_hibernate_prepared(d->s, &d->pre, &o);
		last_cycle_record(d->s, o.times, o.test, r, started);
	}
	capture_end(&cap);
	d->times = NULL;
	conf->after = after;
	d->busy = false;
	if (d->client)
		send_cycle_result(d->client, r, &times, &cap);
	else
		log_notice("the client of the cycle went away: no result sent");
	d->client = NULL;
	capture_free(&cap);
	/* The cycle spent what was prepared: the next one is prepared now,
	 * while nothing waits. */
	torpord_prepare(d);
}
