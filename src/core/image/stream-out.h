/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Hibernation's way out (stream_encode_all): snapshot pages -> chunks ->
 * the chain on the pool -> frames -> the write buffers -> the writer.
 */
#ifndef TORPOR_STREAM_OUT_H
#define TORPOR_STREAM_OUT_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "image-format.h"
#include "pool.h"
#include "stream.h"

/* The writer thread's stack, allocated and touched with the buffers
 * (before the freeze): the thread starts after it. */
#define STREAM_WRITER_STACK (256u << 10)

/* The write buffers: a ring, so that chunks can be given their place in
 * one buffer while the one before is still being filled or written. */
#define STREAM_OUT_BUFS 3

struct stream_out {
	const struct plugin_entry *writer;
	/* STREAM_IO_SIZE each, aligned to TORPOR_WRITE_ALIGN: stream byte
	 * k lies in bufs[(k / STREAM_IO_SIZE) % n_bufs].  Two without the
	 * writer thread, STREAM_OUT_BUFS with it. */
	uint8_t *bufs[STREAM_OUT_BUFS];
	unsigned n_bufs;
	/* Stream bytes given a place (a chunk's frame and stored bytes, in
	 * order: when the pages are read straight into the buffers, before
	 * the chunk goes to the pool), and bytes final (the frame written
	 * too, the chunk collected).  Buffer j is handed to the writer once
	 * every byte of it is final; its memory is reused for buffer
	 * j + n_bufs once it is written. */
	uint64_t placed, framed;
	uint64_t handed;	/* buffers handed to the writer so far */
	uint64_t seen_written;	/* written, as last read under the lock */
	uint64_t total;		/* bytes handed to the writer so far */
	uint32_t crc_seed;	/* chunk_crc_seed() of the image */
	struct stream_report report;
	/* Seconds spent in the writer's write() (on whichever thread), and
	 * seconds the filling thread waited for writes: what overlapping
	 * could save, and what it did not. */
	double writing, blocked;
	unsigned writes;
	/* stream_encode_all()'s thread: seconds taking pages from the
	 * source, handing chunks to the pool (the chain and the CRC, when
	 * the pool runs inline), waiting for the workers, and framing
	 * (`blocked` included); and the chunks whose pages the source put
	 * straight into the write buffers (no filters: no copy). */
	double sourcing, submitting, pool_wait, framing;
	uint64_t in_place;
	/* The writer thread of stream_encode_all() (stream_out_init()'s
	 * thread): it writes the buffers handed over, in order, while the
	 * others are filled, so that the filling goes on during the I/O.
	 * Shared with it, under lock: */
	void *stack;		/* STREAM_WRITER_STACK, or NULL: no thread */
	pthread_mutex_t lock;
	pthread_cond_t cond;	/* a buffer was handed over, or written */
	uint64_t shared_handed;	/* handed, as the thread sees it */
	size_t last_len;	/* the length of a short last buffer */
	uint64_t written;	/* buffers written */
	int write_err;		/* the writer's write() failed */
	bool stop, running, locks;
	pthread_t thread;
};

/* What stream_out_init() takes, with or without the writer thread. */
size_t stream_out_memory(bool thread);

/*
 * The writer's side of the ABI contract holds here: every write() gets
 * one of the buffers (aligned to TORPOR_WRITE_ALIGN) and a length that is
 * a multiple of TORPOR_WRITE_ALIGN, except the one stream_out_finish()
 * makes, the last before commit().  Writes come in order, one at a time:
 * with thread, from the writer thread while stream_encode_all() runs
 * (and from the caller's thread otherwise).  Every buffer (and the
 * thread's stack) is allocated and touched here, before the freeze.
 */
int stream_out_init(struct stream_out *o, const struct plugin_entry *writer,
		    bool thread);
/* Hand the rest to the writer and wait until all is written; nothing may
 * be queued after it. */
int stream_out_finish(struct stream_out *o);
void stream_out_free(struct stream_out *o);

/* Where the pages come from at hibernation: fill buf with up to max_pages
 * pages, in order, and say how many; fewer only at the end of the image. */
typedef int (*stream_page_source)(void *ctx, uint8_t *buf, uint32_t max_pages,
				  uint32_t *ret_pages);

/*
 * Read the h->page_count pages of the image from source, in chunks of
 * h->chunk_pages, run them through the chain on the pool (an encoding one,
 * started), frame them and hand them to the writer through out, in order
 * (on out's writer thread when it has one: started here after the freeze,
 * gone before this returns); then check that the source has no page more
 * and finish out.  Errors are logged once, where they happen; after a
 * failed write nothing more is written.
 */
int stream_encode_all(const struct chain *c, struct pool *pool,
		      struct stream_out *out, const struct image_header *h,
		      stream_page_source source, void *ctx);

#endif
