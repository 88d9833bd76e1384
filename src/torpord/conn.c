/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpord's clients.  Every socket is non-blocking: a client frozen with
 * the rest of user space, or one that never reads, can never hold the
 * daemon; what it does not take in time is dropped (progress events) or
 * ends its connection.
 */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "clock.h"
#include "log.h"
#include "torpord.h"

/* Clients at once; more are refused at accept. */
#define MAX_CONNS 64
/* Supplementary groups looked at (SO_PEERGROUPS). */
#define MAX_PEER_GROUPS 256

static size_t
count_conns(const struct torpord *d)
{
	const struct conn *c;
	size_t n = 0;

	for (c = d->conns; c; c = c->next)
		n++;
	return n;
}

/* Root, the daemon's own user (who could take over the daemon anyway: a
 * torpord a user runs on the sim source), or a member of [torpor] group
 * (primary or supplementary, as the client's process had them when it
 * connected). */
static bool
peer_privileged(const struct torpord *d, int fd, const struct ucred *cred)
{
	gid_t groups[MAX_PEER_GROUPS];
	socklen_t len = sizeof(groups);
	size_t i;

	if (cred->uid == 0 || cred->uid == geteuid())
		return true;
	if (!d->has_group)
		return false;
	if (cred->gid == d->group)
		return true;
	if (getsockopt(fd, SOL_SOCKET, SO_PEERGROUPS, groups, &len) < 0)
		return false;
	for (i = 0; i < len / sizeof(gid_t); i++)
		if (groups[i] == d->group)
			return true;
	return false;
}

static void
conn_add(struct torpord *d, int fd)
{
	struct ucred cred;
	socklen_t len = sizeof(cred);
	struct conn *c;

	if (getsockopt(fd, SOL_SOCKET, SO_PEERCRED, &cred, &len) < 0) {
		log_warning_errno(-errno, "a client without credentials: dropped (%m)");
		close(fd);
		return;
	}
	if (count_conns(d) >= MAX_CONNS) {
		log_warning("pid %d uid %u: more than %d clients: dropped",
			    (int)cred.pid, (unsigned)cred.uid, MAX_CONNS);
		close(fd);
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
	c->privileged = peer_privileged(d, fd, &cred);
	c->deadline = clock_now() + TORPORD_REQUEST_TIMEOUT_S;
	c->next = d->conns;
	d->conns = c;
}

void
conn_accept_all(struct torpord *d)
{
	int fd;

	while ((fd = accept4(d->listen_fd, NULL, NULL,
			     SOCK_NONBLOCK | SOCK_CLOEXEC)) >= 0)
		conn_add(d, fd);
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
	log_warning("pid %d uid %u: %s: dropped", (int)c->pid,
		    (unsigned)c->uid, why);
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
	if (first < 0)
		return -1;
	return first <= now ? 0 : (int)((first - now) * 1000) + 1;
}

void
conn_serve(struct torpord *d, int timeout_ms)
{
	struct pollfd pfd[MAX_CONNS + 2];
	struct conn *which[MAX_CONNS + 2];
	struct conn *c;
	size_t n = 0, i;
	char drain[64];

	pfd[n] = (struct pollfd){ .fd = d->signal_pipe[0], .events = POLLIN };
	which[n++] = NULL;
	pfd[n] = (struct pollfd){ .fd = d->listen_fd, .events = POLLIN };
	which[n++] = NULL;
	for (c = d->conns; c && n < MAX_CONNS + 2; c = c->next) {
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
	reap(d);
}
