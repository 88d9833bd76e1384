/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The data stream handed on in whole blocks; see block-stream.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "block-stream.h"
#include "device-io.h"

void
bd_stream_start(struct bd_stream *s, size_t unit)
{
	memset(s, 0, sizeof(*s));
	s->unit = unit;
}

void
bd_stream_free(struct bd_stream *s)
{
	free(s->tail);
	memset(s, 0, sizeof(*s));
}

/* Add up to what completes the tail's unit; emit the unit once full. */
static int
fill_tail(struct bd_stream *s, const uint8_t **p, size_t *len,
	  bd_emit_fn emit, void *ctx)
{
	size_t n = s->unit - s->tail_len;
	int r;

	if (!s->tail && posix_memalign((void **)&s->tail, BD_BLOCK, s->unit))
		return -ENOMEM;
	if (n > *len)
		n = *len;
	memcpy(s->tail + s->tail_len, *p, n);
	s->tail_len += n;
	s->written += n;
	*p += n;
	*len -= n;
	if (s->tail_len < s->unit)
		return 0;
	r = emit(ctx, s->tail, s->unit);
	if (r == 0)
		s->tail_len = 0;
	return r;
}

int
bd_stream_write(struct bd_stream *s, const void *buf, size_t len,
		bd_emit_fn emit, void *ctx)
{
	const uint8_t *p = buf;
	size_t whole;
	int r;

	/* Only input that breaks the write contract finds a tail here. */
	if (s->tail_len) {
		r = fill_tail(s, &p, &len, emit, ctx);
		if (r < 0)
			return r;
	}
	whole = len / s->unit * s->unit;
	if (whole) {
		r = emit(ctx, p, whole);
		if (r < 0)
			return r;
		p += whole;
		len -= whole;
		s->written += whole;
	}
	return len ? fill_tail(s, &p, &len, emit, ctx) : 0;
}

int
bd_stream_flush(struct bd_stream *s, bd_emit_fn emit, void *ctx)
{
	int r;

	if (!s->tail_len)
		return 0;
	memset(s->tail + s->tail_len, 0, s->unit - s->tail_len);
	r = emit(ctx, s->tail, s->unit);
	if (r == 0)
		s->tail_len = 0;
	return r;
}
