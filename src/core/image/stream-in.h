/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Resume's way in (stream_decode_all), in one pass: the writer, read
 * ahead by a thread -> frames checked -> the chain on the pool -> pages,
 * in order.
 */
#ifndef TORPOR_STREAM_IN_H
#define TORPOR_STREAM_IN_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "image-format.h"
#include "pool.h"
#include "stream.h"

/* Read-ahead of the resume side: pieces of STREAM_IO_SIZE the reader
 * thread may have read before the chain gets to them, counted from the
 * oldest chunk in the pool (the workers read chunks in the ring).  Resume
 * memory is this and the pool, whatever the image's size. */
#define STREAM_READ_PIECES 4

struct stream_in {
	const struct plugin_entry *writer;
	uint64_t end;		/* stored bytes in the stream */
	uint64_t pos;		/* next byte to hand out */
	/* STREAM_READ_PIECES pieces: piece k of the stream (bytes from
	 * k * STREAM_IO_SIZE) sits in ring piece k % STREAM_READ_PIECES. */
	uint8_t *ring;
	uint64_t ready;		/* pieces the consumer knows are read */
	/* The frame of the oldest chunk in the pool: its stored bytes,
	 * and all after them, may still be read from the ring (UINT64_MAX:
	 * the pool is empty). */
	uint64_t held;
	uint64_t freed;		/* the consumer's copy of freed_pieces */
	/* Shared with the reader thread, under lock: */
	pthread_mutex_t lock;
	pthread_cond_t more;	/* a piece was read (or the read failed) */
	pthread_cond_t room;	/* a piece was consumed (or stop) */
	uint64_t read_pieces;	/* pieces read so far */
	uint64_t freed_pieces;	/* pieces the consumer is done with */
	int read_err;		/* the writer's read() failed */
	bool stop;
	bool running, locks;
	pthread_t reader;
	uint64_t bytes_read;	/* from the writer (final once stopped) */
	uint64_t in_place;	/* chunks the pool read in the ring (the
				 * others were copied into their slot) */
	/* Seconds: the reader's in the writer's read() and waiting for
	 * room (final once stopped); this thread's waiting for a piece,
	 * for the workers, and in the sink. */
	double reading, room_wait, data_wait, pool_wait, sinking;
	struct stream_report report;
};

/* Allocate and touch the read-ahead ring: before the freeze.  No thread
 * yet: stream_decode_all() runs the reader for as long as it reads. */
int stream_in_init(struct stream_in *in, const struct plugin_entry *writer,
		   uint64_t stored_bytes);
void stream_in_free(struct stream_in *in);

/* Called with the pages of each decoded chunk, in order. */
typedef int (*stream_page_sink)(void *ctx, const uint8_t *pages, size_t len);

/*
 * Read every chunk of the image described by h once, check its frame
 * (sequence, flags, lengths, CRC of the stored bytes), decode it through
 * the chain and hand the pages to sink (may be NULL), in order.  A reader
 * thread (started here, stopped before returning: the writer is the
 * caller's again) reads ahead into the ring; the pool (a decoding one,
 * started) checks each chunk's CRC and runs the chain, reading the stored
 * bytes where the ring has them (copied out only when they wrap around its
 * end); this thread checks frames and feeds the sink, which is then all
 * it copies: without a filter the sink is handed the ring's bytes.  A sink may have
 * been given pages of earlier chunks when a later one is refused.  Every
 * refusal is logged once saying what and where (chunk number, and the
 * stream offset for what this thread checks) and returns -EBADMSG; a
 * sink's error is returned as it is.
 */
int stream_decode_all(const struct chain *c, struct pool *pool,
		      struct stream_in *in, const struct image_header *h,
		      stream_page_sink sink, void *ctx);

#endif
