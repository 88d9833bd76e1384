/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The chain: the enabled filters in order, ending at the active writer, and
 * the per-thread state that runs a chunk through it.  Shared by the
 * hibernation cycle, resume and verify.
 */
#ifndef TORPOR_CHAIN_H
#define TORPOR_CHAIN_H

#include <stddef.h>
#include <stdint.h>

#include "image-format.h"
#include "registry.h"

struct chain {
	struct plugin_entry *filters[IMAGE_MAX_CHAIN];
	size_t n_filters;
	struct plugin_entry *writer;
	size_t page_size;
	uint32_t chunk_pages;
	/* bound[i]: largest input of filter i (bound[0] = a full chunk of
	 * pages); bound[n_filters]: largest stored chunk. */
	size_t bound[IMAGE_MAX_CHAIN + 1];
	size_t buf_size;	/* largest of the bounds */
	struct torpor_image_info info;
	uint8_t *binding;
};

/* One thread's filter states and buffers. */
struct chain_worker {
	void *state[IMAGE_MAX_CHAIN];
	uint8_t *buf[2];
	size_t n_states;
};

/* Walk the registry (next filter ... active writer) into c and size the
 * buffers.  -ENODEV when there is no active writer. */
int chain_setup(struct chain *c, struct registry *r, size_t page_size,
		uint32_t chunk_pages);

/* Fill c->info and its binding from a header, then call start_stream() on
 * every filter and the writer. */
int chain_start_stream(struct chain *c, const struct image_header *h);

/* Canonical bytes of the header fields the restore depends on (see struct
 * torpor_image_info).  Caller frees *ret. */
int chain_binding(const struct image_header *h, uint8_t **ret,
		  size_t *ret_len);

void chain_release(struct chain *c);

/* Expected bytes of the data stream for raw_bytes of pages: each filter's
 * expected_ratio() multiplied in, plus per chunk the framing and what each
 * filter may add to a chunk (max_encoded_size(chunk) - chunk).  The writer
 * reserves this much before the freeze. */
uint64_t chain_expected_stream(const struct chain *c, uint64_t raw_bytes);

/* A worker's chunk buffers (before the freeze: they are touched here). */
int chain_worker_init(const struct chain *c, struct chain_worker *w);
/* Its filter states (thread_init), after start_stream() as the ABI says;
 * stop frees them and keeps the buffers. */
int chain_worker_start(const struct chain *c, struct chain_worker *w);
void chain_worker_stop(const struct chain *c, struct chain_worker *w);
/* Both (a zeroed worker is fine). */
void chain_worker_free(const struct chain *c, struct chain_worker *w);

/* Bytes one worker takes: its buffers and its filter states
 * (memory_needed() per state). */
size_t chain_worker_memory(const struct chain *c);

/* Run in[0..in_len) through every filter's encode, the last one writing
 * final (room for c->bound[n_filters] bytes, not in): no copy of the
 * result.  *ret is final, or in when there is no filter.  Stages in
 * between use the worker's buffers. */
int chain_encode(const struct chain *c, struct chain_worker *w,
		 const struct torpor_chunk_info *info,
		 const uint8_t *in, size_t in_len, uint8_t *final,
		 const uint8_t **ret, size_t *ret_len);

/* The reverse: decode in reverse order.  The result must be exactly
 * info->raw_len bytes (-EBADMSG otherwise); *ret points into the worker's
 * buffers (or at in).  Not into the caller's buffer as chain_encode():
 * decompressors write, and read back, many small pieces, and did so
 * slower (torpor bench, resume side: 12-36% for 'lzo, checksum, crypt')
 * in a slot buffer another thread had just read than in the worker's own
 * buffer followed by one copy. */
int chain_decode(const struct chain *c, struct chain_worker *w,
		 const struct torpor_chunk_info *info,
		 const uint8_t *in, size_t in_len,
		 const uint8_t **ret, size_t *ret_len);

/* Page-aligned (and so aligned for a writer's write()), pre-faulted memory
 * (first touch is slow here: do it before the snapshot).  Free with
 * free(). */
#define CHAIN_BUFFER_ALIGN 4096u
void *chain_alloc_buffer(size_t size);

#endif
