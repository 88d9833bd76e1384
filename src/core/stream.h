/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image's data stream: framed chunks handed to the writer in large
 * writes at hibernation, and read back, checked and decoded at resume.
 */
#ifndef TORPOR_STREAM_H
#define TORPOR_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"
#include "image-format.h"
#include "pool.h"

#define STREAM_IO_SIZE (1u << 20)

struct stream_out {
	struct plugin_entry *writer;
	uint8_t *buf;
	size_t used;
	uint64_t total;		/* bytes handed to the writer so far */
};

int stream_out_init(struct stream_out *o, struct plugin_entry *writer);
int stream_out_put(struct stream_out *o, const void *data, size_t len);
int stream_out_flush(struct stream_out *o);
void stream_out_free(struct stream_out *o);

/* Frame and queue one encoded chunk. */
int stream_out_chunk(struct stream_out *o, uint64_t sequence, uint32_t flags,
		     uint32_t raw_len, const uint8_t *stored,
		     size_t stored_len);

struct stream_in {
	struct plugin_entry *writer;
	uint64_t end;		/* stored bytes in the stream */
	uint64_t pos;		/* next byte to hand out */
	/* Either the whole stream (cache, filled while reading the first
	 * time and reused after rewind) or a window of STREAM_IO_SIZE. */
	uint8_t *buf;
	size_t buf_cap;		/* window: grows to the largest piece asked */
	uint64_t buf_start;
	size_t buf_len;
	bool cached;
	uint64_t cache_filled;
	uint64_t bytes_read;	/* from the writer */
};

/* Keep the whole stream in memory when it is no larger than cache_limit. */
int stream_in_init(struct stream_in *in, struct plugin_entry *writer,
		   uint64_t stored_bytes, uint64_t cache_limit);
void stream_in_rewind(struct stream_in *in);
void stream_in_free(struct stream_in *in);

/* Called with the pages of each decoded chunk, in order. */
typedef int (*stream_page_sink)(void *ctx, const uint8_t *pages, size_t len);

/*
 * Read every chunk of the image described by h, check its frame (sequence,
 * flags, lengths, CRC of the stored bytes), decode it through the chain and
 * hand the pages to sink (may be NULL), in order.  The pool (a decoding
 * one) runs the chain; this thread reads and checks frames.  Every refusal is logged saying
 * what and where (chunk number and stream offset) and returns -EBADMSG; a
 * sink's error is returned as it is.
 */
int stream_decode_all(const struct chain *c, struct pool *pool,
		      struct stream_in *in, const struct image_header *h,
		      stream_page_sink sink, void *ctx);

#endif
