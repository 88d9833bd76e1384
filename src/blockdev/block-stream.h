/* SPDX-License-Identifier: GPL-2.0-or-later */
/* The data stream handed on in whole blocks (block-stream.c). */
#ifndef TORPOR_BD_BLOCK_STREAM_H
#define TORPOR_BD_BLOCK_STREAM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/*
 * The data stream on its way to the device, in whole units (a page for
 * swap, a block for file): allocation and O_DIRECT both want them.  The
 * core hands write() buffers aligned to TORPOR_WRITE_ALIGN and lengths that
 * are multiples of it until the last call (plugin.h), so whole units go to
 * emit straight from the caller's buffer, without a copy; only a partial
 * unit at the end is kept, in a tail of one unit that bd_stream_flush()
 * zero-pads.  Input that breaks the contract (data after a partial unit,
 * a misaligned buffer) is still written correctly, through the tail and
 * bd_write()'s bounce buffer, only slower.
 */
typedef int (*bd_emit_fn)(void *ctx, const uint8_t *p, size_t n);

struct bd_stream {
	size_t unit;
	uint8_t *tail;		/* unit bytes, aligned, on first need */
	size_t tail_len;
	uint64_t written;	/* bytes accepted */
};

/* Start an empty stream of units of unit bytes (a multiple of BD_BLOCK). */
void bd_stream_start(struct bd_stream *s, size_t unit);
void bd_stream_free(struct bd_stream *s);
int bd_stream_write(struct bd_stream *s, const void *buf, size_t len,
		    bd_emit_fn emit, void *ctx);
/* Emit what is pending, zero-padded to a unit. */
int bd_stream_flush(struct bd_stream *s, bd_emit_fn emit, void *ctx);

#endif
