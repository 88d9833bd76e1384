/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Resume's way in: see stream-in.h. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "plugin-call.h"
#include "stream-in.h"

int
stream_in_init(struct stream_in *in, const struct plugin_entry *writer,
	       uint64_t stored_bytes)
{
	memset(in, 0, sizeof(*in));
	in->writer = writer;
	in->end = stored_bytes;
	in->ring = chain_alloc_buffer((size_t)STREAM_READ_PIECES * STREAM_IO_SIZE);
	if (!in->ring)
		return -ENOMEM;
	if (pthread_mutex_init(&in->lock, NULL) != 0)
		return -ENOMEM;
	if (pthread_cond_init(&in->more, NULL) != 0) {
		pthread_mutex_destroy(&in->lock);
		return -ENOMEM;
	}
	if (pthread_cond_init(&in->room, NULL) != 0) {
		pthread_cond_destroy(&in->more);
		pthread_mutex_destroy(&in->lock);
		return -ENOMEM;
	}
	in->locks = true;
	return 0;
}

static uint64_t
pieces_of(uint64_t bytes)
{
	return bytes / STREAM_IO_SIZE + (bytes % STREAM_IO_SIZE != 0);
}

/* The reader thread: piece k into the ring once the consumer is done
 * with piece k - STREAM_READ_PIECES, until the end, an error or stop.
 * Reads start at multiples of STREAM_IO_SIZE into aligned memory, as
 * O_DIRECT likes them. */
static void *
reader_main(void *arg)
{
	struct stream_in *in = arg;
	uint64_t pieces = pieces_of(in->end);

	pthread_mutex_lock(&in->lock);
	while (!in->stop && !in->read_err && in->read_pieces < pieces) {
		uint64_t k = in->read_pieces, off = k * STREAM_IO_SIZE;
		size_t n = in->end - off < STREAM_IO_SIZE ?
			(size_t)(in->end - off) : STREAM_IO_SIZE;
		double t0 = clock_now();
		int r;

		if (k - in->freed_pieces >= STREAM_READ_PIECES) {
			pthread_cond_wait(&in->room, &in->lock);
			in->room_wait += clock_now() - t0;
			continue;
		}
		pthread_mutex_unlock(&in->lock);
		r = plugin_read(in->writer, off,
				in->ring + (k % STREAM_READ_PIECES) * STREAM_IO_SIZE, n);
		pthread_mutex_lock(&in->lock);
		in->reading += clock_now() - t0;
		if (r < 0) {
			in->read_err = r;
		} else {
			in->read_pieces++;
			in->bytes_read += n;
		}
		pthread_cond_signal(&in->more);
	}
	pthread_mutex_unlock(&in->lock);
	return NULL;
}

static int
stream_in_start(struct stream_in *in)
{
	int r;

	in->pos = 0;
	in->ready = 0;
	in->held = UINT64_MAX;
	in->freed = 0;
	in->in_place = 0;
	in->reading = in->room_wait = in->data_wait = 0;
	in->pool_wait = in->sinking = 0;
	in->read_pieces = in->freed_pieces = 0;
	in->read_err = 0;
	in->bytes_read = 0;
	in->stop = false;
	r = pthread_create(&in->reader, NULL, reader_main, in);
	if (r != 0)
		return log_error_errno(-r, "cannot start the stream's reader thread: %m");
	in->running = true;
	return 0;
}

/* Stop the reader (a read under way ends first): the writer is free. */
static void
stream_in_stop(struct stream_in *in)
{
	if (!in->running)
		return;
	pthread_mutex_lock(&in->lock);
	in->stop = true;
	pthread_cond_signal(&in->room);
	pthread_mutex_unlock(&in->lock);
	pthread_join(in->reader, NULL);
	in->running = false;
}

void
stream_in_free(struct stream_in *in)
{
	stream_in_stop(in);
	if (in->locks) {
		pthread_cond_destroy(&in->room);
		pthread_cond_destroy(&in->more);
		pthread_mutex_destroy(&in->lock);
		in->locks = false;
	}
	free(in->ring);
	in->ring = NULL;
}

/* Wait until piece k is read: 0, or the error that stopped the reader
 * before it (logged where it happened, by the writer's read()). */
static int
wait_piece(struct stream_in *in, uint64_t k)
{
	double t0;
	int r = 0;

	if (k < in->ready)
		return 0;
	t0 = clock_now();
	pthread_mutex_lock(&in->lock);
	while (in->read_pieces <= k && !in->read_err)
		pthread_cond_wait(&in->more, &in->lock);
	if (in->read_pieces <= k)
		r = in->read_err;
	in->ready = in->read_pieces;
	pthread_mutex_unlock(&in->lock);
	in->data_wait += clock_now() - t0;
	return r;
}

/* Where the ring must still hold the stream from: the position, or
 * before it in->held (the frame of the oldest chunk in the pool, whose
 * stored bytes the workers may read from the ring until it is
 * collected). */
static uint64_t
kept_from(const struct stream_in *in)
{
	return in->pos < in->held ? in->pos : in->held;
}

/* The reader may reuse the room of every piece before kept_from(). */
static void
release_pieces(struct stream_in *in)
{
	uint64_t k = kept_from(in) / STREAM_IO_SIZE;

	if (k <= in->freed)
		return;
	in->freed = k;
	pthread_mutex_lock(&in->lock);
	in->freed_pieces = k;
	pthread_cond_signal(&in->room);
	pthread_mutex_unlock(&in->lock);
}

/* The ring pieces [from, to) of the stream would take. */
static uint64_t
pieces_between(uint64_t from, uint64_t to)
{
	return pieces_of(to) - from / STREAM_IO_SIZE;
}

/* Copy [pos, pos + len) of the stream to dst, and move on. */
static int
stream_in_copy(struct stream_in *in, void *dst, size_t len)
{
	uint8_t *d = dst;

	if (len > in->end - in->pos)
		return -ENODATA;
	while (len > 0) {
		uint64_t k = in->pos / STREAM_IO_SIZE;
		size_t at = (size_t)(in->pos % STREAM_IO_SIZE);
		size_t n = STREAM_IO_SIZE - at < len ? STREAM_IO_SIZE - at : len;
		int r = wait_piece(in, k);

		if (r < 0)
			return r;
		memcpy(d, in->ring + (k % STREAM_READ_PIECES) * STREAM_IO_SIZE + at, n);
		d += n;
		len -= n;
		in->pos += n;
		if (in->pos % STREAM_IO_SIZE == 0)
			release_pieces(in);
	}
	return 0;
}

/*
 * [pos, pos + len) of the stream where it is in the ring, without a copy:
 * NULL when it wraps around the ring's end, or takes more pieces than
 * the ring holds from in->held.  The pieces stay until in->held moves
 * past them.
 */
static const uint8_t *
stream_in_borrow(struct stream_in *in, size_t len, int *ret)
{
	const size_t ring = (size_t)STREAM_READ_PIECES * STREAM_IO_SIZE;
	uint64_t from = kept_from(in);
	size_t at = (size_t)(in->pos % ring);
	const uint8_t *p;

	*ret = 0;
	release_pieces(in);
	if (len > in->end - in->pos) {
		*ret = -ENODATA;
		return NULL;
	}
	if (len == 0 || at + len > ring ||
	    pieces_between(from, in->pos + len) > STREAM_READ_PIECES)
		return NULL;
	*ret = wait_piece(in, pieces_of(in->pos + len) - 1);
	if (*ret < 0)
		return NULL;
	p = in->ring + at;
	in->pos += len;
	return p;
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

/* in->held from the chunks in the pool: the frame of the oldest. */
static void
hold_pool(struct stream_in *in, const struct pool *pool)
{
	in->held = pool_pending(pool) ? pool_oldest(pool)->stream_offset :
					UINT64_MAX;
	release_pieces(in);
}

/* Take the oldest chunk back from the pool and hand its pages on.  The
 * chain said why it refused one (the filter and the chunk). */
static int
deliver(struct pool *pool, struct stream_in *in, const struct image_header *h,
	stream_page_sink sink, void *ctx)
{
	double t0 = clock_now();
	struct pool_slot *s = pool_collect(pool);
	uint64_t done = s->info.sequence + 1;
	int r;

	in->pool_wait += clock_now() - t0;
	if (s->crc_bad)
		return refuse(-EBADMSG, "stored data does not match its CRC32C (corrupt)",
			      s->info.sequence, s->stream_offset);
	if (s->err < 0) {
		log_error("chunk %llu at stream offset %llu: refused by the chain",
			  (unsigned long long)s->info.sequence,
			  (unsigned long long)s->stream_offset);
		return -EBADMSG;
	}
	t0 = clock_now();
	r = sink ? sink(ctx, s->res, s->out_len) : 0;
	in->sinking += clock_now() - t0;
	/* Its stored bytes are used: their ring pieces may be read again. */
	hold_pool(in, pool);
	if (r >= 0)
		stream_report_chunk(&in->report, done, h->chunk_count,
				    done == h->chunk_count ?
				    h->page_count * h->page_size :
				    done * h->chunk_pages * h->page_size,
				    in->pos);
	return r;
}

/* Deliver the oldest chunks until the ring has room for the stream up to
 * end beside what the pool holds of it. */
static int
make_room(struct pool *pool, struct stream_in *in,
	  const struct image_header *h, stream_page_sink sink, void *ctx,
	  uint64_t end)
{
	while (pool_pending(pool) &&
	       pieces_between(in->held, end) > STREAM_READ_PIECES) {
		int r = deliver(pool, in, h, sink, ctx);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Check the frame of chunk seq at the current position against the
 * header; *ret_f is the frame. */
static int
check_frame(const struct chain *c, const uint8_t *p,
	    const struct image_header *h, uint64_t seq, uint64_t want_pages,
	    uint64_t at, struct chunk_frame *ret_f)
{
	uint32_t max_raw = h->chunk_pages * h->page_size;
	char err[160];
	int r;

	r = chunk_frame_parse(p, chunk_crc_seed(h->uuid), max_raw,
			      (uint32_t)c->bound[c->n_filters],
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

/*
 * Read and check chunk seq's frame and submit its stored bytes to the
 * pool: where the ring has them (the CRC and the chain read them there,
 * on a worker), or copied into the slot when they wrap around the ring's
 * end or would not fit in it.
 */
static int
submit_chunk(const struct chain *c, struct pool *pool, struct stream_in *in,
	     const struct image_header *h, uint64_t seq, uint64_t want_pages,
	     stream_page_sink sink, void *ctx)
{
	uint64_t at = in->pos;
	uint8_t frame[CHUNK_FRAME_SIZE];
	struct chunk_frame f;
	struct pool_slot *slot;
	int r;

	r = make_room(pool, in, h, sink, ctx, at + sizeof(frame));
	if (r < 0)
		return r;
	r = stream_in_copy(in, frame, sizeof(frame));
	if (r < 0)
		return refuse(r, "the frame", seq, at);
	r = check_frame(c, frame, h, seq, want_pages, at, &f);
	if (r < 0)
		return r;
	/* The frame bounds stored_len by the chain's largest buffer. */
	r = make_room(pool, in, h, sink, ctx, in->pos + f.stored_len);
	if (r < 0)
		return r;
	slot = pool_next(pool);
	slot->data = stream_in_borrow(in, f.stored_len, &r);
	if (slot->data)
		in->in_place++;
	else if (r == 0)
		r = stream_in_copy(in, slot->in, f.stored_len);
	if (r < 0)
		return refuse(r, "the data", seq, at);
	slot->in_len = f.stored_len;
	slot->crc = f.stored_crc;
	slot->info.sequence = seq;
	slot->info.flags = f.flags & CHUNK_FLAG_LAST;
	slot->info.raw_len = f.raw_len;
	slot->stream_offset = at;
	pool_submit(pool);
	hold_pool(in, pool);
	return 0;
}

/* Every chunk, in order, through the pool to the sink. */
static int
decode_chunks(const struct chain *c, struct pool *pool, struct stream_in *in,
	      const struct image_header *h, stream_page_sink sink, void *ctx)
{
	uint64_t seq, pages_left = h->page_count;
	int r;

	pool->crc = true;
	pool->crc_seed = chunk_crc_seed(h->uuid);
	for (seq = 0; seq < h->chunk_count; seq++) {
		uint64_t want_pages = pages_left < h->chunk_pages ?
			pages_left : h->chunk_pages;

		if (pool_full(pool)) {
			r = deliver(pool, in, h, sink, ctx);
			if (r < 0)
				return r;
		}
		r = submit_chunk(c, pool, in, h, seq, want_pages, sink, ctx);
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

int
stream_decode_all(const struct chain *c, struct pool *pool,
		  struct stream_in *in, const struct image_header *h,
		  stream_page_sink sink, void *ctx)
{
	int r = stream_in_start(in);

	if (r < 0)
		return r;
	r = decode_chunks(c, pool, in, h, sink, ctx);
	stream_in_stop(in);
	log_info("%llu reads: %.3f s in the writer's read() (reader thread), %.3f s waiting for room; this thread waited %.3f s for reads, %.3f s for the workers, spent %.3f s handing pages on; %llu of %llu chunks decoded in place",
		 (unsigned long long)in->read_pieces, in->reading,
		 in->room_wait, in->data_wait, in->pool_wait, in->sinking,
		 (unsigned long long)in->in_place,
		 (unsigned long long)h->chunk_count);
	return r;
}
