/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "json.h"
#include "protocol.h"

void
proto_in_reset(struct proto_in *in)
{
	in->have_head = 0;
	in->len = 0;
	in->have = 0;
}

/* One read() of at most want bytes into dst. */
static int
read_some(int fd, void *dst, size_t want, size_t *ret)
{
	ssize_t k = read(fd, dst, want);

	if (k < 0)
		return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
	*ret = (size_t)k;
	return k == 0 ? -EPIPE : 1;
}

int
proto_in_read(struct proto_in *in, int fd)
{
	size_t got = 0;
	int r;

	while (in->have_head < sizeof(in->head)) {
		r = read_some(fd, in->head + in->have_head,
			      sizeof(in->head) - in->have_head, &got);
		if (r == -EPIPE && in->have_head)
			return -ECONNRESET;
		if (r <= 0)
			return r;
		in->have_head += got;
		if (in->have_head < sizeof(in->head))
			continue;
		in->len = (uint32_t)in->head[0] << 24 |
			  (uint32_t)in->head[1] << 16 |
			  (uint32_t)in->head[2] << 8 | in->head[3];
		if (in->len == 0 || in->len > PROTOCOL_MAX_MESSAGE)
			return -EMSGSIZE;
	}
	while (in->have < in->len) {
		r = read_some(fd, in->buf + in->have, in->len - in->have, &got);
		if (r == -EPIPE)
			return -ECONNRESET;
		if (r <= 0)
			return r;
		in->have += got;
	}
	in->buf[in->len] = '\0';
	return 1;
}

int
proto_msg_begin(struct proto_msg *m, const char *type)
{
	static const char head[4];

	memset(m, 0, sizeof(*m));
	m->f = open_memstream(&m->text, &m->len);
	if (!m->f)
		return -ENOMEM;
	/* Room for the length, filled in at the end. */
	fwrite(head, 1, sizeof(head), m->f);
	fprintf(m->f, "{\"v\": %d", PROTOCOL_VERSION);
	proto_msg_string(m, "type", type);
	return 0;
}

static void
key(struct proto_msg *m, const char *k)
{
	fputs(", ", m->f);
	json_write_string(m->f, k);
	fputs(": ", m->f);
}

void
proto_msg_string(struct proto_msg *m, const char *k, const char *v)
{
	key(m, k);
	json_write_string(m->f, v ? v : "");
}

void
proto_msg_int(struct proto_msg *m, const char *k, int64_t v)
{
	key(m, k);
	fprintf(m->f, "%lld", (long long)v);
}

void
proto_msg_bool(struct proto_msg *m, const char *k, bool v)
{
	key(m, k);
	fputs(v ? "true" : "false", m->f);
}

int
proto_msg_end(struct proto_msg *m)
{
	size_t body;
	int r;

	fputs("}\n", m->f);
	r = fclose(m->f);
	m->f = NULL;
	if (r != 0 || !m->text)
		return -ENOMEM;
	body = m->len - 4;
	if (body > PROTOCOL_MAX_MESSAGE)
		return -EMSGSIZE;
	m->text[0] = (char)(body >> 24);
	m->text[1] = (char)(body >> 16);
	m->text[2] = (char)(body >> 8);
	m->text[3] = (char)body;
	return 0;
}

void
proto_msg_free(struct proto_msg *m)
{
	if (m->f)
		fclose(m->f);
	m->f = NULL;
	free(m->text);
	m->text = NULL;
	m->len = 0;
}

int
proto_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t k = send(fd, p, len, MSG_NOSIGNAL);

		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		p += k;
		len -= (size_t)k;
	}
	return 0;
}

int
proto_read_message(struct proto_in *in, int fd, int timeout_ms)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };
	int r;

	proto_in_reset(in);
	for (;;) {
		r = poll(&pfd, 1, timeout_ms);
		if (r < 0)
			return -errno;
		if (r == 0)
			return -ETIMEDOUT;
		r = proto_in_read(in, fd);
		if (r != 0)
			return r;
	}
}
