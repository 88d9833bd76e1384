/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
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

/* Two buffers at least: a chunk placed before it is collected
 * (place_chunk()) may reach into the buffer after the one being filled. */
static unsigned
out_buffers(bool thread)
{
	return thread ? STREAM_OUT_BUFS : 2;
}

size_t
stream_out_memory(bool thread)
{
	return out_buffers(thread) * (size_t)STREAM_IO_SIZE +
	       (thread ? STREAM_WRITER_STACK : 0);
}

int
stream_out_init(struct stream_out *o, const struct plugin_entry *writer,
		bool thread)
{
	unsigned i;

	memset(o, 0, sizeof(*o));
	o->writer = writer;
	o->n_bufs = out_buffers(thread);
	for (i = 0; i < o->n_bufs; i++) {
		o->bufs[i] = chain_alloc_buffer(STREAM_IO_SIZE);
		if (!o->bufs[i])
			return -ENOMEM;
	}
	if (!thread)
		return 0;
	o->stack = chain_alloc_buffer(STREAM_WRITER_STACK);
	if (!o->stack)
		return -ENOMEM;
	if (pthread_mutex_init(&o->lock, NULL) != 0)
		return -ENOMEM;
	if (pthread_cond_init(&o->cond, NULL) != 0) {
		pthread_mutex_destroy(&o->lock);
		return -ENOMEM;
	}
	o->locks = true;
	return 0;
}

static uint8_t *
buffer_of(const struct stream_out *o, uint64_t j)
{
	return o->bufs[j % o->n_bufs];
}

/* The writer thread: each buffer handed over, in order, until stop.
 * After a failed write it writes nothing more. */
static void *
writer_main(void *arg)
{
	struct stream_out *o = arg;

	pthread_mutex_lock(&o->lock);
	for (;;) {
		const uint8_t *p;
		size_t len;

		while (!o->stop && o->written == o->shared_handed)
			pthread_cond_wait(&o->cond, &o->lock);
		if (o->stop)
			break;
		p = buffer_of(o, o->written);
		len = o->written + 1 == o->shared_handed && o->last_len ?
		      o->last_len : STREAM_IO_SIZE;
		if (o->write_err == 0) {
			double t0;
			int r;

			pthread_mutex_unlock(&o->lock);
			t0 = clock_now();
			r = plugin_write(o->writer, p, len);
			t0 = clock_now() - t0;
			pthread_mutex_lock(&o->lock);
			o->writing += t0;
			o->writes++;
			if (r < 0)
				o->write_err = r;
		}
		/* (After a failed write, the buffers handed over go by
		 * unwritten: the stream has failed.) */
		o->written++;
		pthread_cond_broadcast(&o->cond);
	}
	pthread_mutex_unlock(&o->lock);
	return NULL;
}

/* The thread runs on the stack allocated before the freeze: made now, it
 * takes no memory of its own. */
static int
stream_out_start(struct stream_out *o)
{
	int r;

	o->placed = o->framed = o->handed = o->total = 0;
	o->written = o->shared_handed = o->seen_written = 0;
	o->last_len = 0;
	o->write_err = 0;
	if (!o->stack)
		return 0;
	o->stop = false;
	r = pool_thread_on_stack(&o->thread, o->stack, STREAM_WRITER_STACK,
				 writer_main, o);
	if (r < 0)
		return log_error_errno(r, "cannot start the stream's writer thread: %m");
	o->running = true;
	return 0;
}

/* Stop the writer thread (a write under way ends first; buffers handed
 * over and not begun are dropped: the stream failed). */
static void
stream_out_stop(struct stream_out *o)
{
	if (!o->running)
		return;
	pthread_mutex_lock(&o->lock);
	o->stop = true;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	pthread_join(o->thread, NULL);
	o->running = false;
}

/* Wait until the first count buffers are written: 0, or the error of a
 * write.  Only buffers already handed over can be waited for. */
static int
wait_written(struct stream_out *o, uint64_t count)
{
	double t0;
	int r;

	if (!o->running)
		return o->write_err;
	/* Asked for each chunk: the lock only when a buffer not yet seen
	 * written is wanted (a write error then shows too). */
	if (count <= o->seen_written)
		return 0;
	t0 = clock_now();
	pthread_mutex_lock(&o->lock);
	while (o->written < count && !o->write_err)
		pthread_cond_wait(&o->cond, &o->lock);
	r = o->write_err;
	o->seen_written = o->written;
	pthread_mutex_unlock(&o->lock);
	o->blocked += clock_now() - t0;
	return r;
}

/* Hand the next buffer (len bytes) to the writer: to the thread, or
 * written now. */
static int
hand_buffer(struct stream_out *o, size_t len)
{
	uint64_t j = o->handed++;

	o->total += len;
	if (!o->running) {
		double t0 = clock_now();
		int r;

		if (o->write_err)
			return o->write_err;
		r = plugin_write(o->writer, buffer_of(o, j), len);
		t0 = clock_now() - t0;
		o->writing += t0;
		o->blocked += t0;
		o->writes++;
		if (r < 0)
			o->write_err = r;
		return r;
	}
	pthread_mutex_lock(&o->lock);
	if (len != STREAM_IO_SIZE)
		o->last_len = len;
	o->shared_handed = o->handed;
	pthread_cond_broadcast(&o->cond);
	pthread_mutex_unlock(&o->lock);
	return 0;
}

/* Hand over every buffer whose bytes are all final. */
static int
hand_whole(struct stream_out *o)
{
	while (o->framed >= (o->handed + 1) * STREAM_IO_SIZE) {
		int r = hand_buffer(o, STREAM_IO_SIZE);

		if (r < 0)
			return r;
	}
	return 0;
}

/* Whether buffer j's memory still belongs to buffer j - n_bufs, not yet
 * handed over (not all of its bytes final). */
static bool
held_by_earlier(const struct stream_out *o, uint64_t j)
{
	return j >= o->n_bufs && o->handed <= j - o->n_bufs;
}

/* Make buffer j's memory free for it: buffer j - n_bufs, which shares it,
 * written.  That one must have been handed over: the caller sees to it. */
static int
claim_buffer(struct stream_out *o, uint64_t j)
{
	if (j < o->n_bufs)
		return 0;
	if (held_by_earlier(o, j))
		return log_error_errno(-EIO, "stream: buffer %llu is needed before buffer %llu is written",
				       (unsigned long long)j,
				       (unsigned long long)(j - o->n_bufs));
	return wait_written(o, j - o->n_bufs + 1);
}

/* Copy len bytes to the stream's final bytes, handing over each buffer
 * filled. */
static int
out_put(struct stream_out *o, const void *data, size_t len)
{
	const uint8_t *p = data;
	int r;

	while (len > 0) {
		uint64_t j = o->framed / STREAM_IO_SIZE;
		size_t at = (size_t)(o->framed % STREAM_IO_SIZE);
		size_t n = STREAM_IO_SIZE - at;

		if (n > len)
			n = len;
		r = claim_buffer(o, j);
		if (r < 0)
			return r;
		memcpy(buffer_of(o, j) + at, p, n);
		o->framed += n;
		p += n;
		len -= n;
		r = hand_whole(o);
		if (r < 0)
			return r;
	}
	return 0;
}

/* Collect the oldest chunk from the pool: its frame, and its stored bytes
 * (unless the source put them in place already), become final. */
static int
write_collected(struct pool *pool, struct stream_out *out, uint64_t total,
		uint64_t *raw)
{
	double t0 = clock_now();
	struct pool_slot *s = pool_collect(pool);
	uint8_t frame[CHUNK_FRAME_SIZE];
	int r;

	out->pool_wait += clock_now() - t0;
	if (s->err < 0)
		return s->err;
	t0 = clock_now();
	chunk_frame_encode(&(struct chunk_frame){
		.sequence = s->info.sequence,
		.flags = s->info.flags,
		.raw_len = s->info.raw_len,
		.stored_len = (uint32_t)s->out_len,
		.stored_crc = s->crc,
		.seed = out->crc_seed,
	}, frame);
	if (s->data && (out->framed != s->stream_offset ||
			s->res != s->data || s->out_len != s->in_len))
		return log_error_errno(-EIO, "stream: chunk %llu is not where it was placed",
				       (unsigned long long)s->info.sequence);
	r = out_put(out, frame, sizeof(frame));
	if (r >= 0 && s->data) {
		/* In place: the bytes lie in one buffer, after the frame. */
		out->framed += s->out_len;
		r = hand_whole(out);
	} else if (r >= 0) {
		r = out_put(out, s->res, s->out_len);
	}
	out->framing += clock_now() - t0;
	if (r < 0)
		return r;
	*raw += s->info.raw_len;
	report(&out->report, s->info.sequence + 1, total, *raw, out->framed);
	if (out->report.cancel && *out->report.cancel)
		return -ECANCELED;
	return 0;
}

/*
 * Without filters a chunk's stored bytes are its pages: the source can
 * read them straight into the write buffer, where they will be written,
 * instead of into the slot (and a copy from there).  The chunk gets its
 * place (frame and bytes) before it goes to the pool; the workers compute
 * the CRC there, and the frame is written when it is collected.  Up to
 * end, each buffer's memory must be free: what shared it written, and
 * for that, all of it final, which may take collecting chunks first.
 * Returns where the pages go: in place, or NULL (they straddle two
 * buffers: the slot, and a copy as with filters).
 */
static uint8_t *
place_chunk(struct pool *pool, struct stream_out *out, size_t len,
	    uint64_t total, uint64_t *raw, int *err)
{
	uint64_t start = out->placed + CHUNK_FRAME_SIZE, end = start + len;
	uint64_t last = (end - 1) / STREAM_IO_SIZE;
	int r = 0;

	while (r == 0 && held_by_earlier(out, last)) {
		if (!pool_pending(pool)) {
			r = log_error_errno(-EIO, "stream: no chunk left to make room for buffer %llu",
					    (unsigned long long)last);
			break;
		}
		r = write_collected(pool, out, total, raw);
	}
	if (r == 0)
		r = claim_buffer(out, last);
	*err = r;
	if (r < 0)
		return NULL;
	out->placed = end;
	if (start / STREAM_IO_SIZE != last)
		return NULL;
	return buffer_of(out, last) + start % STREAM_IO_SIZE;
}

int
stream_out_finish(struct stream_out *o)
{
	int r = 0;

	if (o->framed > o->handed * STREAM_IO_SIZE)
		r = hand_buffer(o, (size_t)(o->framed - o->handed * STREAM_IO_SIZE));
	return r < 0 ? r : wait_written(o, o->handed);
}

void
stream_out_free(struct stream_out *o)
{
	unsigned i;

	stream_out_stop(o);
	if (o->locks) {
		pthread_cond_destroy(&o->cond);
		pthread_mutex_destroy(&o->lock);
		o->locks = false;
	}
	for (i = 0; i < STREAM_OUT_BUFS; i++) {
		free(o->bufs[i]);
		o->bufs[i] = NULL;
	}
	free(o->stack);
	o->stack = NULL;
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

static int
encode_chunks(const struct chain *c, struct pool *pool,
	      struct stream_out *out, const struct image_header *h,
	      stream_page_source source, void *ctx)
{
	uint64_t seq, pages_left = h->page_count, raw = 0;
	/* Pages in place need a chunk (and its frame) no larger than a
	 * buffer: then it spans two at most, and room can always be made. */
	bool direct = c->n_filters == 0 &&
		      CHUNK_FRAME_SIZE + (size_t)h->chunk_pages * c->page_size <=
		      STREAM_IO_SIZE;
	double t0;
	int r;

	out->crc_seed = chunk_crc_seed(h->uuid);
	pool->crc = true;
	pool->crc_seed = out->crc_seed;
	for (seq = 0; seq < h->chunk_count; seq++) {
		uint32_t want = pages_left < h->chunk_pages ?
			(uint32_t)pages_left : h->chunk_pages, n = 0;
		struct pool_slot *slot;
		uint8_t *dst;

		if (pool_full(pool)) {
			r = write_collected(pool, out, h->chunk_count, &raw);
			if (r < 0)
				return r;
		}
		slot = pool_next(pool);
		slot->data = NULL;
		slot->stream_offset = out->placed;
		dst = slot->in;
		if (direct) {
			uint8_t *p = place_chunk(pool, out,
						 (size_t)want * c->page_size,
						 h->chunk_count, &raw, &r);

			if (r < 0)
				return r;
			if (p) {
				dst = p;
				slot->data = p;
				out->in_place++;
			}
		}
		t0 = clock_now();
		r = source(ctx, dst, want, &n);
		out->sourcing += clock_now() - t0;
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
		t0 = clock_now();
		pool_submit(pool);
		out->submitting += clock_now() - t0;
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
stream_encode_all(const struct chain *c, struct pool *pool,
		  struct stream_out *out, const struct image_header *h,
		  stream_page_source source, void *ctx)
{
	double t0, cpu0, thread0, busy0;
	int r = stream_out_start(out);

	if (r < 0)
		return r;
	out->writing = out->blocked = 0;
	out->sourcing = out->submitting = out->pool_wait = out->framing = 0;
	out->writes = 0;
	out->in_place = 0;
	t0 = clock_now();
	cpu0 = clock_process_cpu();
	thread0 = clock_thread_cpu();
	busy0 = pool_workers_cpu(pool);
	r = encode_chunks(c, pool, out, h, source, ctx);
	stream_out_stop(out);
	log_info("this thread: %.3f s taking pages from the source, %.3f s handing chunks to the pool%s, %.3f s waiting for the workers, %.3f s framing chunks (waits for the writer included); %llu of %llu chunks read straight into the write buffers",
		 out->sourcing, out->submitting,
		 pool->n_threads ? "" : " (the chain and the CRC, inline)",
		 out->pool_wait, out->framing,
		 (unsigned long long)out->in_place,
		 (unsigned long long)h->chunk_count);
	/* Whether the stream had CPUs to spare: CPU seconds against its
	 * wall-clock seconds. */
	log_info("CPU over the stream's %.3f s: the process %.3f s, this thread %.3f s, %u worker thread%s %.3f s",
		 clock_now() - t0, clock_process_cpu() - cpu0,
		 clock_thread_cpu() - thread0, pool->n_threads,
		 pool->n_threads == 1 ? "" : "s", pool_workers_cpu(pool) - busy0);
	log_info("%u writes: %.3f s in the writer's write(), %.3f s of them waited for%s",
		 out->writes, out->writing, out->blocked,
		 out->stack ? " (writer thread)" : "");
	return r;
}

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
		report(&in->report, done, h->chunk_count,
		       done == h->chunk_count ? h->page_count * h->page_size :
		       done * h->chunk_pages * h->page_size, in->pos);
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
