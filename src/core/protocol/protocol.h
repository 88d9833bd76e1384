/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The framing of torpord's socket protocol (doc/protocol.md): each message
 * is a 4-byte big-endian length followed by that many bytes of one JSON
 * object (json.h), at most PROTOCOL_MAX_MESSAGE bytes.
 */
#ifndef TORPOR_PROTOCOL_H
#define TORPOR_PROTOCOL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define PROTOCOL_VERSION 1
#define PROTOCOL_MAX_MESSAGE (64 * 1024)
#define PROTOCOL_DEFAULT_SOCKET "/run/torpor/torpord.sock"

/* One message being read from a non-blocking socket. */
struct proto_in {
	uint8_t head[4];
	size_t have_head;
	uint32_t len;		/* once the head is in */
	size_t have;
	char buf[PROTOCOL_MAX_MESSAGE + 1];	/* NUL-terminated when whole */
};

/*
 * Read what fd has: 1 when a whole message is in in->buf (in->len bytes;
 * proto_in_reset() before the next), 0 when more is needed (EAGAIN),
 * -EPIPE at the end of the stream (no message begun), -ECONNRESET when it
 * ended inside one, -EMSGSIZE when the head announces more than
 * PROTOCOL_MAX_MESSAGE or nothing, -errno.
 */
int proto_in_read(struct proto_in *in, int fd);
void proto_in_reset(struct proto_in *in);

/* A message being written: JSON members appended in order. */
struct proto_msg {
	FILE *f;
	char *text;
	size_t len;
	bool first;
};

/* Begin {"v": PROTOCOL_VERSION, "type": type ... ; -ENOMEM. */
int proto_msg_begin(struct proto_msg *m, const char *type);
void proto_msg_string(struct proto_msg *m, const char *key, const char *v);
void proto_msg_int(struct proto_msg *m, const char *key, int64_t v);
void proto_msg_bool(struct proto_msg *m, const char *key, bool v);
/* Close the object and frame it: m->text holds the head and the JSON
 * (m->len bytes in all).  -ENOMEM, -EMSGSIZE when it is too long. */
int proto_msg_end(struct proto_msg *m);
void proto_msg_free(struct proto_msg *m);

/* Send all of buf on a socket (blocking, as far as its SO_SNDTIMEO
 * lets it).  A peer that is gone is -EPIPE, never SIGPIPE.  -errno. */
int proto_write_all(int fd, const void *buf, size_t len);

/* Read one whole message from a blocking fd, waiting timeout_ms at most
 * for each part (-1: no bound): 1, or -EPIPE at a clean end, -ETIMEDOUT,
 * -EINTR when a signal came first, or proto_in_read()'s errors. */
int proto_read_message(struct proto_in *in, int fd, int timeout_ms);

#endif
