/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpord's clients.  Every socket is non-blocking: a client frozen with
 * the rest of user space, or one that never reads, can never hold the
 * daemon; what it does not take in time is dropped (progress events) or
 * ends its connection.
 */
#include <errno.h>
#include <limits.h>
#include <poll.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "torpord.h"

/* Supplementary groups read without allocating; up to the kernel's
 * NGROUPS_MAX otherwise. */
#define PEER_GROUPS_ON_STACK 64
/* Connections taken per turn of the loop: a flood of connects cannot keep
 * it from serving the clients it has. */
#define MAX_ACCEPTS_PER_TURN 32
/* Lines about what unprivileged clients did: at most this many per
 * window, then one line that says how many were left out. */
#define CLIENT_LOG_LINES 20
#define CLIENT_LOG_WINDOW_S 10

static void __attribute__((format(printf, 5, 0)))
client_logv(struct torpord *d, pid_t pid, uid_t uid, bool privileged,
	    const char *fmt, va_list ap)
{
	char text[512];

	if (!privileged) {
		if (d->quiet_lines >= CLIENT_LOG_LINES) {
			d->quiet_skipped++;
			return;
		}
		if (d->quiet_lines++ == 0)
			d->quiet_t0 = clock_now();
	}
	vsnprintf(text, sizeof(text), fmt, ap);
	log_warning("pid %d uid %u: %s", (int)pid, (unsigned)uid, text);
}

static void __attribute__((format(printf, 5, 6)))
client_log(struct torpord *d, pid_t pid, uid_t uid, bool privileged,
	   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	client_logv(d, pid, uid, privileged, fmt, ap);
	va_end(ap);
}

void
conn_log(struct torpord *d, const struct conn *c, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	client_logv(d, c->pid, c->uid, c->privileged, fmt, ap);
	va_end(ap);
}

/* A window of client lines is over: say what was left out of it. */
static void
end_log_window(struct torpord *d)
{
	if (!d->quiet_lines || clock_now() < d->quiet_t0 + CLIENT_LOG_WINDOW_S)
		return;
	if (d->quiet_skipped)
		log_warning("%u more lines about unprivileged clients left out (%d a %d s at most)",
			    d->quiet_skipped, CLIENT_LOG_LINES,
			    CLIENT_LOG_WINDOW_S);
	d->quiet_lines = d->quiet_skipped = 0;
}

/* Is group among the peer's supplementary groups as the kernel recorded
 * them at connect() (SO_PEERGROUPS, Linux 4.13)?  Not /proc/PID/status,
 * which may be another process's by the time it is read (the client gone,
 * its pid reused), nor getgrouplist(), which says what the group database
 * grants the user, not what this process holds (a sandbox drops groups),
 * and may wait on a network directory. */
static bool
peer_in_group(int fd, gid_t group)
{
	gid_t small[PEER_GROUPS_ON_STACK], *groups = small;
	socklen_t len = sizeof(small);
	bool found = false;
	size_t i;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
		/* ERANGE: len is what they need. */
		if (errno != ERANGE || len > NGROUPS_MAX * sizeof(gid_t))
			return false;
		groups = malloc(len);
		if (!groups ||
		    getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0) {
			free(groups);
			return false;
		}
	}
	for (i = 0; i < len / sizeof(gid_t) && !found; i++)
		found = groups[i] == group;
	if (groups != small)
		free(groups);
	return found;
}

/* Root, the daemon's own user (who could take over the daemon anyway: a
 * torpord a user runs on the sim source), or a member of [torpor] group
 * (primary or supplementary, as the client's process had them when it
 * connected). */
static bool
peer_privileged(const struct torpord *d, int fd, const struct ucred *cred)
{
	if (cred->uid == 0 || cred->uid == geteuid())
		return true;
	if (!d->has_group)
		return false;
	return cred->gid == d->group || peer_in_group(fd, d->group);
}

/* Connections held: in all, by unprivileged users, by uid. */
struct tally {
	size_t all, unprivileged, mine;
};

static void
count_conns(const struct torpord *d, uid_t uid, struct tally *t)
{
	const struct conn *c;

	memset(t, 0, sizeof(*t));
	for (c = d->conns; c; c = c->next) {
		if (c->dead)
			continue;
		t->all++;
		t->unprivileged += !c->privileged;
		t->mine += c->uid == uid;
	}
}

static size_t
held_by(const struct torpord *d, uid_t uid)
{
	struct tally t;

	count_conns(d, uid, &t);
	return t.mine;
}

/* May c be closed to let another in?  Not a cycle's client, nor one
 * waiting for its cycle; every other is waiting for the rest of its
 * request or for its client to take the reply (a request is served
 * whole as soon as it is in). */
static bool
evictable(const struct torpord *d, const struct conn *c)
{
	return !c->dead && !c->hibernating && c != d->client &&
	       c != d->pending;
}

/*
 * The connection to close so that a newcomer (uid, privileged, holding
 * mine) gets in, or NULL.  The user holding the most loses its oldest,
 * an unprivileged user's first when the newcomer is privileged; between
 * equals only a user holding at least two more than the newcomer's user
 * (so that two users end up with their share, not swapping a slot).
 * Root's connections are never closed for another.
 */
static struct conn *
victim(const struct torpord *d, uid_t uid, bool privileged, size_t mine)
{
	struct conn *c, *best = NULL;
	size_t held, best_held = 0;

	for (c = d->conns; c; c = c->next) {
		if (!evictable(d, c) || c->uid == uid || c->uid == 0 ||
		    (c->privileged && !privileged))
			continue;
		held = held_by(d, c->uid);
		if (c->privileged == privileged && held < mine + 2)
			continue;
		if (best) {
			if (c->privileged != best->privileged) {
				if (c->privileged)
					continue;
			} else if (held < best_held ||
				   (held == best_held && c->serial > best->serial)) {
				continue;
			}
		}
		best = c;
		best_held = held;
	}
	return best;
}

/* 0: a client (cred) may come in, once another's connection is closed
 * for it when need be; else why not, in why. */
static int
admit(struct torpord *d, const struct ucred *cred, bool privileged,
      bool unlimited, char *why, size_t why_size)
{
	struct tally t;
	struct conn *v;

	count_conns(d, cred->uid, &t);
	if (!unlimited && t.mine >= TORPORD_MAX_CONNS_PER_USER) {
		snprintf(why, why_size, "too many connections: uid %u holds %zu, the most one user may",
			 (unsigned)cred->uid, t.mine);
		return -EUSERS;
	}
	if (t.all < TORPORD_MAX_CONNS &&
	    (privileged || t.unprivileged <
	     TORPORD_MAX_CONNS - TORPORD_RESERVED_CONNS))
		return 0;
	v = victim(d, cred->uid, privileged, t.mine);
	if (!v) {
		if (privileged)
			snprintf(why, why_size, "too many connections: all %d are taken",
				 TORPORD_MAX_CONNS);
		else
			snprintf(why, why_size, "too many connections: the %d that users other than root and [torpor] group may hold are taken",
				 TORPORD_MAX_CONNS - TORPORD_RESERVED_CONNS);
		return -EAGAIN;
	}
	conn_log(d, v, "closed to let uid %u in: the oldest of the %zu connections uid %u holds, more than its share",
		 (unsigned)cred->uid, held_by(d, v->uid), (unsigned)v->uid);
	conn_close(d, v);
	return 0;
}

/* Say why in an error message (the client shows it, and knows by "limit"
 * that its request was not read), without waiting, and close. */
static void
refuse(int fd, const char *why)
{
	struct proto_msg m;

	if (proto_msg_begin(&m, "error") == 0) {
		proto_msg_string(&m, "error", why);
		proto_msg_bool(&m, "limit", true);
		if (proto_msg_end(&m) >= 0 &&
		    send(fd, m.text, m.len, MSG_DONTWAIT | MSG_NOSIGNAL) < 0)
			log_debug("the refusal was not sent: %s", strerror(errno));
		proto_msg_free(&m);
	}
	close(fd);
}

static void
conn_add(struct torpord *d, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	bool privileged, unlimited;
	struct conn *c;
	char why[160];

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warning_errno(-errno, "a client without credentials: dropped (%m)");
		close(fd);
		return;
	}
	privileged = peer_privileged(d, fd, &cred);
	unlimited = cred.uid == 0 || cred.uid == geteuid();
	if (admit(d, &cred, privileged, unlimited, why, sizeof(why)) < 0) {
		client_log(d, cred.pid, cred.uid, privileged, "%s: refused", why);
		refuse(fd, why);
		return;
	}
	c = calloc(1, sizeof(*c));
	if (!c) {
		close(fd);
		return;
	}
	c->fd = fd;
	c->pid = cred.pid;
	c->uid = cred.uid;
	c->privileged = privileged;
	c->unlimited = unlimited;
	c->serial = ++d->conn_serial;
	c->deadline = clock_now() + TORPORD_REQUEST_TIMEOUT_S;
	c->next = d->conns;
	d->conns = c;
}

void
conn_accept_all(struct torpord *d)
{
	int fd, n;

	for (n = 0; n < MAX_ACCEPTS_PER_TURN; n++) {
		fd = accept4(d->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd < 0)
			break;
		conn_add(d, fd);
	}
}

void
conn_close(struct torpord *d, struct conn *c)
{
	if (c->dead)
		return;
	close(c->fd);
	c->fd = -1;
	c->dead = true;
	if (d->client == c) {
		/* Leaving before the commit is a cancel (doc/protocol.md). */
		if (!d->committed) {
			log_notice("pid %d: the client went away: cancelling the cycle",
				   (int)c->pid);
			torpord_cancel = 1;
		} else {
			log_notice("pid %d: the client went away after the commit: the cycle goes on",
				   (int)c->pid);
		}
		d->client = NULL;
	}
	if (d->pending == c) {
		log_notice("pid %d: the client went away before the cycle began: not hibernating",
			   (int)c->pid);
		d->pending = NULL;
	}
}

void
conn_send(struct conn *c, const struct proto_msg *m, bool droppable)
{
	size_t pending = c->out_len - c->out_off;
	char *grown;

	if (c->dead || (droppable && pending))
		return;
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, pending);
		c->out_len = pending;
		c->out_off = 0;
	}
	grown = realloc(c->out, c->out_len + m->len);
	if (!grown)
		return;
	c->out = grown;
	memcpy(c->out + c->out_len, m->text, m->len);
	c->out_len += m->len;
}

void
conn_flush(struct torpord *d, struct conn *c)
{
	while (!c->dead && c->out_off < c->out_len) {
		ssize_t k = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off,
				 MSG_DONTWAIT | MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0 && (errno == EAGAIN || errno == EWOULDBLOCK))
			return;
		if (k < 0) {
			conn_close(d, c);
			return;
		}
		c->out_off += (size_t)k;
	}
	if (!c->dead && c->answered && c->out_off == c->out_len)
		conn_close(d, c);
}

/* A request that is not one: one log line, and the connection ends. */
static void
drop(struct torpord *d, struct conn *c, const char *why)
{
	conn_log(d, c, "%s: dropped", why);
	conn_close(d, c);
}

/* Read from c and act on what came. */
static void
conn_read(struct torpord *d, struct conn *c)
{
	int r = proto_in_read(&c->in, c->fd);

	if (c->hibernating && d->busy) {
		request_during_cycle(d, c, r);
		return;
	}
	if (c->answered || c->hibernating) {
		/* Nothing more is expected: only its end. */
		if (r < 0)
			conn_close(d, c);
		else if (r == 1)
			proto_in_reset(&c->in);
		return;
	}
	if (r == 1)
		request_handle(d, c);
	else if (r == -EPIPE)
		conn_close(d, c);	/* connected, sent nothing, left */
	else if (r == -EMSGSIZE)
		drop(d, c, "a request larger than 64 KiB (or empty)");
	else if (r < 0)
		drop(d, c, "the connection ended inside a request");
}

static void
check_deadlines(struct torpord *d)
{
	double now = clock_now();
	struct conn *c;

	for (c = d->conns; c; c = c->next) {
		if (c->dead || c->hibernating || now < c->deadline)
			continue;
		if (c->answered)
			conn_close(d, c);	/* it does not read its reply */
		else
			drop(d, c, "no whole request within 5 s");
	}
}

static void
reap(struct torpord *d)
{
	struct conn **p = &d->conns, *c;

	while ((c = *p)) {
		if (!c->dead) {
			p = &c->next;
			continue;
		}
		*p = c->next;
		free(c->out);
		free(c);
	}
}

int
conn_next_timeout(const struct torpord *d)
{
	double now = clock_now(), first = -1;
	const struct conn *c;

	for (c = d->conns; c; c = c->next)
		if (!c->dead && !c->hibernating &&
		    (first < 0 || c->deadline < first))
			first = c->deadline;
	/* The line that says what was left out comes at the window's end. */
	if (d->quiet_skipped &&
	    (first < 0 || d->quiet_t0 + CLIENT_LOG_WINDOW_S < first))
		first = d->quiet_t0 + CLIENT_LOG_WINDOW_S;
	if (first < 0)
		return -1;
	return first <= now ? 0 : (int)((first - now) * 1000) + 1;
}

void
conn_serve(struct torpord *d, int timeout_ms)
{
	struct pollfd pfd[TORPORD_MAX_CONNS + 2];
	struct conn *which[TORPORD_MAX_CONNS + 2];
	struct conn *c;
	size_t n = 0, i;
	char drain[64];

	pfd[n] = (struct pollfd){ .fd = d->signal_pipe[0], .events = POLLIN };
	which[n++] = NULL;
	pfd[n] = (struct pollfd){ .fd = d->listen_fd, .events = POLLIN };
	which[n++] = NULL;
	for (c = d->conns; c && n < TORPORD_MAX_CONNS + 2; c = c->next) {
		if (c->dead)
			continue;
		pfd[n] = (struct pollfd){ .fd = c->fd, .events = POLLIN |
			(c->out_off < c->out_len ? POLLOUT : 0) };
		which[n++] = c;
	}
	if (poll(pfd, n, timeout_ms) > 0) {
		while (pfd[0].revents && read(d->signal_pipe[0], drain,
					      sizeof(drain)) > 0)
			;
		if (pfd[1].revents & POLLIN)
			conn_accept_all(d);
		for (i = 2; i < n; i++) {
			c = which[i];
			if (!c->dead && (pfd[i].revents & POLLOUT))
				conn_flush(d, c);
			if (!c->dead && (pfd[i].revents & (POLLIN | POLLHUP | POLLERR)))
				conn_read(d, c);
			if (!c->dead)
				conn_flush(d, c);
		}
	}
	check_deadlines(d);
	end_log_window(d);
	reap(d);
}
