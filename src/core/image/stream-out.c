/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Hibernation's way out: see stream-out.h. */
#include <errno.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "plugin-call.h"
#include "stream-out.h"

_Static_assert(STREAM_IO_SIZE % TORPOR_WRITE_ALIGN == 0,
	       "the stream buffer is a whole number of write units");
_Static_assert(CHAIN_BUFFER_ALIGN % TORPOR_WRITE_ALIGN == 0,
	       "chain buffers are aligned for the writer");

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
	stream_report_chunk(&out->report, s->info.sequence + 1, total, *raw, out->framed);
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
