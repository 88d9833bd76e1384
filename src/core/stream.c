/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "crc32c.h"
#include "log.h"
#include "plugin-call.h"
#include "stream.h"

_Static_assert(STREAM_IO_SIZE % TORPOR_WRITE_ALIGN == 0,
	       "the stream buffer is a whole number of write units");
_Static_assert(CHAIN_BUFFER_ALIGN % TORPOR_WRITE_ALIGN == 0,
	       "chain buffers are aligned for the writer");

static void
report(const struct stream_report *rep, uint64_t done, uint64_t total,
       uint64_t raw, uint64_t stored)
{
	struct stream_progress p = {
		.what = rep->what,
		.chunks_done = done,
		.chunks_total = total,
		.raw_bytes = raw,
		.stored_bytes = stored,
	};

	if (rep->fn)
		rep->fn(rep->ctx, &p);
}

int
stream_out_init(struct stream_out *o, const struct plugin_entry *writer)
{
	memset(o, 0, sizeof(*o));
	o->writer = writer;
	o->buf = chain_alloc_buffer(STREAM_IO_SIZE);
	return o->buf ? 0 : -ENOMEM;
}

/* Hand the buffer to the writer: whole, or at the end what is left. */
static int
stream_out_write(struct stream_out *o)
{
	int r;

	if (o->used == 0)
		return 0;
	r = plugin_write(o->writer, o->buf, o->used);
	if (r < 0)
		return r;
	o->total += o->used;
	o->used = 0;
	return 0;
}

static int
stream_out_put(struct stream_out *o, const void *data, size_t len)
{
	const uint8_t *p = data;
	int r;

	while (len > 0) {
		size_t n = STREAM_IO_SIZE - o->used;

		if (n > len)
			n = len;
		memcpy(o->buf + o->used, p, n);
		o->used += n;
		p += n;
		len -= n;
		if (o->used == STREAM_IO_SIZE) {
			r = stream_out_write(o);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

int
stream_out_chunk(struct stream_out *o, uint64_t sequence, uint32_t flags,
		 uint32_t raw_len, const uint8_t *stored, size_t stored_len)
{
	struct chunk_frame f = {
		.sequence = sequence,
		.flags = flags,
		.raw_len = raw_len,
		.stored_len = (uint32_t)stored_len,
		.stored_crc = crc32c(0, stored, stored_len),
	};
	uint8_t frame[CHUNK_FRAME_SIZE];
	int r;

	chunk_frame_encode(&f, frame);
	r = stream_out_put(o, frame, sizeof(frame));
	if (r < 0)
		return r;
	return stream_out_put(o, stored, stored_len);
}

int
stream_out_finish(struct stream_out *o)
{
	return stream_out_write(o);
}

void
stream_out_free(struct stream_out *o)
{
	free(o->buf);
	o->buf = NULL;
}

/* Frame and queue the oldest encoded chunk. */
static int
write_collected(struct pool *pool, struct stream_out *out, uint64_t total,
		uint64_t *raw)
{
	struct pool_slot *s = pool_collect(pool);
	int r;

	if (s->err < 0)
		return s->err;
	r = stream_out_chunk(out, s->info.sequence, s->info.flags,
			     s->info.raw_len, s->out, s->out_len);
	if (r < 0)
		return r;
	*raw += s->info.raw_len;
	report(&out->report, s->info.sequence + 1, total, *raw,
	       out->total + out->used);
	return 0;
}

/* The source must end where the image's size says it does. */
static int
check_source_ended(struct pool *pool, stream_page_source source, void *ctx,
		   const struct image_header *h)
{
	uint32_t n = 0;
	int r = source(ctx, pool_next(pool)->in, 1, &n);

	if (r < 0)
		return r;
	if (n != 0)
		return log_error_errno(-EIO, "the snapshot has more pages than its size says (%llu)",
				       (unsigned long long)h->page_count);
	return 0;
}

int
stream_encode_all(const struct chain *c, struct pool *pool,
		  struct stream_out *out, const struct image_header *h,
		  stream_page_source source, void *ctx)
{
	uint64_t seq, pages_left = h->page_count, raw = 0;
	int r;

	for (seq = 0; seq < h->chunk_count; seq++) {
		uint32_t want = pages_left < h->chunk_pages ?
			(uint32_t)pages_left : h->chunk_pages, n = 0;
		struct pool_slot *slot;

		if (pool_full(pool)) {
			r = write_collected(pool, out, h->chunk_count, &raw);
			if (r < 0)
				return r;
		}
		slot = pool_next(pool);
		r = source(ctx, slot->in, want, &n);
		if (r < 0)
			return r;
		if (n != want)
			return log_error_errno(-EIO, "the snapshot ended after %llu of %llu pages",
				(unsigned long long)(h->page_count - pages_left + n),
				(unsigned long long)h->page_count);
		pages_left -= n;
		slot->in_len = (size_t)n * c->page_size;
		slot->info.sequence = seq;
		slot->info.flags = seq + 1 == h->chunk_count ? TORPOR_CHUNK_LAST : 0;
		slot->info.raw_len = (uint32_t)slot->in_len;
		pool_submit(pool);
	}
	while (pool_pending(pool)) {
		r = write_collected(pool, out, h->chunk_count, &raw);
		if (r < 0)
			return r;
	}
	r = check_source_ended(pool, source, ctx, h);
	return r < 0 ? r : stream_out_finish(out);
}

int
stream_in_init(struct stream_in *in, const struct plugin_entry *writer,
	       uint64_t stored_bytes, uint64_t cache_limit)
{
	memset(in, 0, sizeof(*in));
	in->writer = writer;
	in->end = stored_bytes;
	if (stored_bytes <= cache_limit && stored_bytes < SIZE_MAX / 2) {
		in->buf = malloc(stored_bytes ? stored_bytes : 1);
		in->cached = in->buf != NULL;
	}
	if (!in->cached) {
		in->buf = chain_alloc_buffer(STREAM_IO_SIZE);
		if (!in->buf)
			return -ENOMEM;
		in->buf_cap = STREAM_IO_SIZE;
	}
	return 0;
}

void
stream_in_rewind(struct stream_in *in)
{
	in->pos = 0;
	if (!in->cached)
		in->buf_len = 0;
}

void
stream_in_free(struct stream_in *in)
{
	free(in->buf);
	in->buf = NULL;
}

static int
writer_read(struct stream_in *in, uint64_t offset, uint8_t *dst, size_t len)
{
	int r = plugin_read(in->writer, offset, dst, len);

	if (r < 0)
		return r;
	in->bytes_read += len;
	return 0;
}

/* Make [pos, pos + len) available and return a pointer to it. */
static int
stream_in_get(struct stream_in *in, size_t len, const uint8_t **ret)
{
	int r;

	if (len > in->end - in->pos)
		return -ENODATA;
	if (in->cached) {
		while (in->cache_filled < in->pos + len) {
			uint64_t n = in->end - in->cache_filled;

			if (n > STREAM_IO_SIZE)
				n = STREAM_IO_SIZE;
			r = writer_read(in, in->cache_filled,
					in->buf + in->cache_filled, n);
			if (r < 0)
				return r;
			in->cache_filled += n;
		}
		*ret = in->buf + in->pos;
		in->pos += len;
		return 0;
	}
	if (len > in->buf_cap) {
		/* A stored chunk may exceed the usual piece (up to the
		 * chain's bound, which the frame was checked against). */
		uint8_t *b = chain_alloc_buffer(len);

		if (!b)
			return -ENOMEM;
		free(in->buf);
		in->buf = b;
		in->buf_cap = len;
		in->buf_len = 0;
	}
	if (in->buf_len == 0 || in->pos < in->buf_start ||
	    in->pos + len > in->buf_start + in->buf_len) {
		uint64_t n = in->end - in->pos;

		if (n > in->buf_cap)
			n = in->buf_cap;
		r = writer_read(in, in->pos, in->buf, n);
		if (r < 0)
			return r;
		in->buf_start = in->pos;
		in->buf_len = n;
	}
	*ret = in->buf + (in->pos - in->buf_start);
	in->pos += len;
	return 0;
}

/* A refusal of what this thread checks, said once with where it is.  Any
 * other error was logged where it happened (the writer's read()). */
static int
refuse(int r, const char *what, uint64_t chunk, uint64_t offset)
{
	if (r == -ENODATA)
		log_error("image truncated: %s of chunk %llu is missing at stream offset %llu",
			  what, (unsigned long long)chunk,
			  (unsigned long long)offset);
	else if (r == -EBADMSG)
		log_error("chunk %llu at stream offset %llu: %s",
			  (unsigned long long)chunk,
			  (unsigned long long)offset, what);
	else
		return r;
	return -EBADMSG;
}

/* Take the oldest chunk back from the pool and hand its pages on.  The
 * chain said why it refused one (the filter and the chunk). */
static int
deliver(struct pool *pool, struct stream_in *in, const struct image_header *h,
	stream_page_sink sink, void *ctx)
{
	struct pool_slot *s = pool_collect(pool);
	uint64_t done = s->info.sequence + 1;
	int r;

	if (s->err < 0)
		return -EBADMSG;
	r = sink ? sink(ctx, s->out, s->out_len) : 0;
	if (r >= 0)
		report(&in->report, done, h->chunk_count,
		       done == h->chunk_count ? h->page_count * h->page_size :
		       done * h->chunk_pages * h->page_size, in->pos);
	return r;
}

/* Read chunk seq's frame at the current position and check it against
 * the header; *ret_f is the frame. */
static int
read_frame(const struct chain *c, struct stream_in *in,
	   const struct image_header *h, uint64_t seq, uint64_t want_pages,
	   struct chunk_frame *ret_f)
{
	uint32_t max_raw = h->chunk_pages * h->page_size;
	uint64_t at = in->pos;
	const uint8_t *p;
	char err[160];
	int r;

	r = stream_in_get(in, CHUNK_FRAME_SIZE, &p);
	if (r < 0)
		return refuse(r, "the frame", seq, at);
	r = chunk_frame_parse(p, max_raw, (uint32_t)c->bound[c->n_filters],
			      ret_f, err, sizeof(err));
	if (r < 0)
		return refuse(-EBADMSG, err, seq, at);
	if (ret_f->sequence != seq) {
		snprintf(err, sizeof(err),
			 "out of order: the frame says chunk %llu",
			 (unsigned long long)ret_f->sequence);
		return refuse(-EBADMSG, err, seq, at);
	}
	if (!!(ret_f->flags & CHUNK_FLAG_LAST) != (seq + 1 == h->chunk_count))
		return refuse(-EBADMSG, ret_f->flags & CHUNK_FLAG_LAST ?
			      "marked last, but the header counts more chunks" :
			      "the last chunk is not marked last", seq, at);
	if (ret_f->raw_len != want_pages * h->page_size) {
		snprintf(err, sizeof(err),
			 "holds %u bytes of pages, expected %llu", ret_f->raw_len,
			 (unsigned long long)(want_pages * h->page_size));
		return refuse(-EBADMSG, err, seq, at);
	}
	return 0;
}

/* Read, check and submit chunk seq. */
static int
submit_chunk(const struct chain *c, struct pool *pool, struct stream_in *in,
	     const struct image_header *h, uint64_t seq, uint64_t want_pages)
{
	uint64_t at = in->pos;
	struct chunk_frame f;
	struct pool_slot *slot;
	const uint8_t *p;
	int r;

	r = read_frame(c, in, h, seq, want_pages, &f);
	if (r < 0)
		return r;
	r = stream_in_get(in, f.stored_len, &p);
	if (r < 0)
		return refuse(r, "the data", seq, at);
	if (crc32c(0, p, f.stored_len) != f.stored_crc)
		return refuse(-EBADMSG, "stored data does not match its CRC32C (corrupt)",
			      seq, at);
	slot = pool_next(pool);
	memcpy(slot->in, p, f.stored_len);
	slot->in_len = f.stored_len;
	slot->info.sequence = seq;
	slot->info.flags = f.flags & CHUNK_FLAG_LAST;
	slot->info.raw_len = f.raw_len;
	pool_submit(pool);
	return 0;
}

int
stream_decode_all(const struct chain *c, struct pool *pool,
		  struct stream_in *in, const struct image_header *h,
		  stream_page_sink sink, void *ctx)
{
	uint64_t seq, pages_left = h->page_count;
	int r;

	for (seq = 0; seq < h->chunk_count; seq++) {
		uint64_t want_pages = pages_left < h->chunk_pages ?
			pages_left : h->chunk_pages;

		if (pool_full(pool)) {
			r = deliver(pool, in, h, sink, ctx);
			if (r < 0)
				return r;
		}
		r = submit_chunk(c, pool, in, h, seq, want_pages);
		if (r < 0)
			return r;
		pages_left -= want_pages;
	}
	while (pool_pending(pool)) {
		r = deliver(pool, in, h, sink, ctx);
		if (r < 0)
			return r;
	}
	if (in->pos != in->end) {
		log_error("image has %llu stray bytes after the last chunk at stream offset %llu",
			  (unsigned long long)(in->end - in->pos),
			  (unsigned long long)in->pos);
		return -EBADMSG;
	}
	return 0;
}
