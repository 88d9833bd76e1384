/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The image's data stream, read straight through in both directions:
 * hibernation's way out (stream-out.h) and resume's way in (stream-in.h).
 * What both share: the size of their buffers and how they report their
 * progress.
 */
#ifndef TORPOR_STREAM_H
#define TORPOR_STREAM_H

#include <signal.h>
#include <stdint.h>

/* The one buffer between the framing and the writer: a multiple of
 * TORPOR_WRITE_ALIGN, so that every write() but the last is one. */
#define STREAM_IO_SIZE (1u << 20)

/* How far a stream has come, after each chunk. */
struct stream_progress {
	const char *what;	/* "hibernate", "verify", "resume" */
	uint64_t chunks_done;
	uint64_t chunks_total;
	uint64_t raw_bytes;	/* pages through so far */
	uint64_t stored_bytes;	/* data stream bytes so far */
};

/* Called on the streaming thread after each chunk; with user space frozen
 * at hibernation, so it must not wait on another process. */
typedef void (*stream_progress_fn)(void *ctx, const struct stream_progress *p);

struct stream_report {
	stream_progress_fn fn;	/* NULL: nobody listens */
	void *ctx;
	const char *what;
	/* Hibernation: when set (a signal, or torpord's client), the
	 * stream stops after the chunk it is at, with -ECANCELED. */
	const volatile sig_atomic_t *cancel;
};

/* Tell rep's listener, if any, that chunk done of total is through. */
static inline void
stream_report_chunk(const struct stream_report *rep, uint64_t done,
		    uint64_t total, uint64_t raw, uint64_t stored)
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

#endif
