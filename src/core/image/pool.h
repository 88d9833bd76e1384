/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The worker pool: chunks are filled and consumed in order by the caller's
 * thread (snapshot reads, writer I/O) while worker threads run them through
 * the chain, each with its own filter states.  With no worker thread the
 * caller's thread runs the chain itself.
 *
 * Memory and threads come in two steps because of the freeze: pool_init()
 * allocates and touches every buffer and the threads' stacks before it,
 * and grows the heap by what the filter states will take; pool_start() makes the
 * filter states (thread_init(), after start_stream() as the ABI says) and
 * the threads once user space is frozen (the freezer would stop threads
 * started before it, as it stops every task but the one that asks).
 */
#ifndef TORPOR_POOL_H
#define TORPOR_POOL_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "chain.h"

enum pool_direction {
	POOL_ENCODE,
	POOL_DECODE,
};

struct pool_slot {
	uint8_t *in;			/* buf_size bytes: pages or stored bytes */
	/* Where the chain reads the in_len bytes, when not from in.
	 * Decode: the stored bytes in the stream's read-ahead ring, which
	 * keeps them until the slot is collected and its result used.
	 * Encode without filters: the pages, read by the source straight
	 * into the stream's write buffer, at the place of the chunk's
	 * stored bytes.  NULL: in. */
	const uint8_t *data;
	size_t in_len;
	/* With pool->crc, the chunk's CRC32C (seeded with pool->crc_seed),
	 * on the worker: encode, of the result (set); decode, of the
	 * stored bytes (what the frame says, checked before the chain; a
	 * mismatch sets crc_bad and err -EBADMSG). */
	uint32_t crc;
	bool crc_bad;
	struct torpor_chunk_info info;
	uint64_t stream_offset;		/* where the chunk's frame is */
	uint8_t *out;			/* buf_size bytes: the last filter's output */
	const uint8_t *res;		/* the result: out; without filters the
				 * input itself (in, or data); or an
				 * inline decode's worker buffer */
	size_t out_len;			/* its length */
	int state;
	int err;
};

struct pool {
	const struct chain *chain;
	enum pool_direction direction;
	unsigned want_threads;		/* configured: 0 = inline */
	unsigned n_threads;		/* running */
	pthread_t *threads;
	void **stacks;			/* want_threads stacks, POOL_STACK_SIZE */
	struct chain_worker *workers;	/* one per thread, or one inline */
	unsigned n_workers;		/* entries of workers[] */
	struct pool_slot *slots;
	unsigned n_slots;
	uint64_t filled, taken, collected;
	/* The chunks' CRC32C on the workers (slot->crc): set by the
	 * stream before the first chunk is submitted. */
	bool crc;
	uint32_t crc_seed;
	bool stop;
	pthread_mutex_t lock;
	pthread_cond_t work;
	pthread_cond_t done;
};

/*
 * Each worker thread's stack, allocated and touched by pool_init(): under
 * mlockall() a thread's default stack (8 MiB) would be faulted in and
 * locked when the thread starts, after the snapshot, when memory is
 * scarcest.  Filters run encode() and decode() on it (plugin.h).
 */
#define POOL_STACK_SIZE (512u << 10)

/*
 * The most the pool's buffers and filter states may take.  Its memory is
 * four to six chunk buffers per thread (slots and worker buffers) and is
 * locked with the rest of the process: the thread count is lowered until
 * it fits, down to one thread (whose pool then stays under 64 MiB for
 * every chunk size torpor.conf allows, filter states aside).
 */
#define POOL_MEMORY_BUDGET (64u << 20)

/* The threads the pool runs when threads are asked for: as many as keep
 * pool_memory() within POOL_MEMORY_BUDGET, at least one (0 stays 0). */
unsigned pool_threads_for(const struct chain *c, unsigned threads);

/* Bytes pool_init() and pool_start() take for this chain and thread count
 * (after pool_threads_for()): slot buffers, and per worker its buffers and
 * filter states. */
size_t pool_memory(const struct chain *c, unsigned threads);

/* pool_threads_for(), lowered further while the pool and fixed more bytes
 * would take more than half of room (what the process may still take,
 * memroom_available(); the rest is for the process and the plugins), down
 * to one thread.  room 0: unknown, not lowered. */
unsigned pool_threads_within(const struct chain *c, unsigned threads,
			     uint64_t fixed, uint64_t room);

/* Allocate every buffer.  Threads: 0 = none (the caller runs the chain);
 * more than pool_threads_for() allows are lowered to that, with a notice
 * in the log. */
int pool_init(struct pool *p, const struct chain *c,
	      enum pool_direction direction, unsigned threads);

/* Filter states and threads; the pool must be empty.  pool_stop() ends
 * both and keeps the buffers, so the pool can be started again. */
int pool_start(struct pool *p);
void pool_stop(struct pool *p);

/* Everything (a pool zeroed or already freed is fine). */
void pool_free(struct pool *p);

/* Whether every slot holds a chunk not yet collected. */
bool pool_full(const struct pool *p);
bool pool_pending(const struct pool *p);

/* The slot to fill with the next chunk (only when !pool_full). */
struct pool_slot *pool_next(struct pool *p);

/* Hand the filled slot over. */
void pool_submit(struct pool *p);

/* The oldest chunk submitted and not collected (only when pool_pending). */
const struct pool_slot *pool_oldest(const struct pool *p);

/* Wait for the oldest submitted chunk and return its slot, whose result
 * (slot->err, out, out_len) the caller uses before the next call. */
struct pool_slot *pool_collect(struct pool *p);

/* CPU seconds the running worker threads have used so far, together
 * (their thread CPU clocks); 0 inline. */
double pool_workers_cpu(const struct pool *p);

/* The online CPUs (1 to 64).  session_threads() makes `threads = 0` in the
 * configuration one worker per CPU, or none with a single CPU. */
unsigned pool_default_threads(void);

/* Start fn(arg) on a stack allocated and touched before the freeze (the
 * workers', the stream's writer thread): the thread takes no memory of its
 * own.  0, or pthread's error as a negative errno. */
int pool_thread_on_stack(pthread_t *thread, void *stack, size_t size,
			 void *(*fn)(void *), void *arg);

/*
 * Wait (2 s at most) until this process has no thread but the caller.  The
 * threads a freezing task creates after the freeze carry the freezer's
 * mark, and the kernel warns at the thaw about any that still exists, even
 * one already joined but not yet released.
 */
void pool_wait_threads_gone(void);

#endif
