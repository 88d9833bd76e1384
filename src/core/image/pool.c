/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "clock.h"
#include "crc32c.h"
#include "log.h"
#include "pool.h"
#include "proc.h"

enum {
	SLOT_FREE,
	SLOT_READY,
	SLOT_BUSY,
	SLOT_DONE,
};

unsigned
pool_default_threads(void)
{
	long n = sysconf(_SC_NPROCESSORS_ONLN);

	return n < 1 ? 1 : n > 64 ? 64 : (unsigned)n;
}

/* The chunk's stored bytes against the CRC32C its frame gives. */
static bool
stored_crc_ok(const struct pool *p, struct pool_slot *s, const uint8_t *src)
{
	s->crc_bad = p->crc && crc32c(p->crc_seed, src, s->in_len) != s->crc;
	return !s->crc_bad;
}

static void
run_slot(const struct pool *p, struct chain_worker *w, struct pool_slot *s)
{
	const uint8_t *src = s->data ? s->data : s->in, *res = NULL;
	size_t len = 0;

	if (p->direction == POOL_ENCODE) {
		/* The last filter writes the slot's own buffer.  Without
		 * filters the result is the input: in, or where the stream
		 * had the pages read (data, in its write buffer). */
		s->err = chain_encode(p->chain, w, &s->info, src, s->in_len,
				      s->out, &s->res, &len);
		if (s->err == 0 && p->crc)
			s->crc = crc32c(p->crc_seed, s->res, len);
	} else if (!stored_crc_ok(p, s, src)) {
		s->err = -EBADMSG;
	} else {
		s->err = chain_decode(p->chain, w, &s->info, src, s->in_len,
				      &res, &len);
		if (!p->n_threads || res == src) {
			/* Inline, with one slot: this chunk is handed on
			 * before the worker runs again, so the result can
			 * stay where the last filter left it.  Without
			 * filters it is the input, the slot's until it is
			 * collected. */
			s->res = res;
		} else {
			/* A worker's buffers are reused for its next
			 * chunk, before this one is collected. */
			if (s->err == 0)
				memcpy(s->out, res, len);
			s->res = s->out;
		}
	}
	s->out_len = s->err == 0 ? len : 0;
}

struct worker_arg {
	struct pool *pool;
	struct chain_worker *worker;
};

static void *
worker_main(void *arg)
{
	struct pool *p = ((struct worker_arg *)arg)->pool;
	struct chain_worker *w = ((struct worker_arg *)arg)->worker;

	free(arg);
	pthread_mutex_lock(&p->lock);
	for (;;) {
		struct pool_slot *s;

		while (!p->stop && p->taken == p->filled)
			pthread_cond_wait(&p->work, &p->lock);
		if (p->stop)
			break;
		s = &p->slots[p->taken++ % p->n_slots];
		s->state = SLOT_BUSY;
		pthread_mutex_unlock(&p->lock);
		run_slot(p, w, s);
		pthread_mutex_lock(&p->lock);
		s->state = SLOT_DONE;
		pthread_cond_broadcast(&p->done);
	}
	pthread_mutex_unlock(&p->lock);
	return NULL;
}

static unsigned
slots_for(unsigned threads)
{
	return threads ? 2 * threads + 2 : 1;
}

static size_t
memory_of(const struct chain *c, unsigned threads)
{
	size_t slots = (size_t)slots_for(threads) * 2 * c->buf_size +
		       (size_t)threads * POOL_STACK_SIZE;
	size_t workers = threads ? threads : 1;
	size_t worker = chain_worker_memory(c);

	if (worker > (SIZE_MAX - slots) / workers)
		return SIZE_MAX;
	return slots + workers * worker;
}

unsigned
pool_threads_for(const struct chain *c, unsigned threads)
{
	/* memory_of() grows with threads: the most that fit, at least 1. */
	while (threads > 1 && memory_of(c, threads) > POOL_MEMORY_BUDGET)
		threads--;
	return threads;
}

size_t
pool_memory(const struct chain *c, unsigned threads)
{
	return memory_of(c, pool_threads_for(c, threads));
}

unsigned
pool_threads_within(const struct chain *c, unsigned threads, uint64_t fixed,
		    uint64_t room)
{
	threads = pool_threads_for(c, threads);
	while (room && threads > 1 && pool_memory(c, threads) + fixed > room / 2)
		threads--;
	return threads;
}

/*
 * The filter states are made once the image exists (thread_init() comes
 * after start_stream() since ABI 2, and crypt draws its key there), with the
 * plugins' own malloc().  So that they find memory that is already there,
 * touched and (under mlockall) locked, the heap grows now by what the
 * filters declared (memory_needed() per state, and some room for malloc's
 * own bookkeeping) and keeps it: freed, that memory stays in the heap
 * (no trim), and allocations of up to 32 MiB come from the heap instead of
 * fresh mappings.  Only thread_init() on this thread is served so: a
 * filter that allocates elsewhere or more than it declared still works,
 * paying page faults at that moment.
 */
static void
reserve_heap(const struct chain *c, unsigned workers)
{
	size_t states = chain_worker_memory(c) - 2 * c->buf_size, bytes;
	void *m;

	if (states == 0 || states > POOL_MEMORY_BUDGET / workers)
		return;
	bytes = states * workers + ((size_t)64 << 10);
#ifdef __GLIBC__
	mallopt(M_MMAP_THRESHOLD, 32 << 20);
	mallopt(M_TRIM_THRESHOLD, 64 << 20);
#endif
	m = malloc(bytes);
	if (m)
		memset(m, 0, bytes);
	free(m);
}

int
pool_init(struct pool *p, const struct chain *c,
	  enum pool_direction direction, unsigned threads)
{
	unsigned i, asked = threads;

	threads = pool_threads_for(c, threads);
	if (threads < asked)
		log_notice("worker threads: %u instead of %u, whose chunk "
			   "buffers and filter states would take %zu MiB: the "
			   "pool stays under %u MiB (chunks of %zu KiB)",
			   threads, asked, memory_of(c, asked) >> 20,
			   POOL_MEMORY_BUDGET >> 20, c->buf_size >> 10);
	memset(p, 0, sizeof(*p));
	p->chain = c;
	p->direction = direction;
	p->want_threads = threads;
	p->n_slots = slots_for(threads);
	pthread_mutex_init(&p->lock, NULL);
	pthread_cond_init(&p->work, NULL);
	pthread_cond_init(&p->done, NULL);

	p->slots = calloc(p->n_slots, sizeof(*p->slots));
	p->workers = calloc(threads ? threads : 1, sizeof(*p->workers));
	if (!p->slots || !p->workers)
		goto nomem;
	/* Every worker is freed, set up or not (a zeroed one is a no-op). */
	p->n_workers = threads ? threads : 1;
	p->threads = threads ? calloc(threads, sizeof(*p->threads)) : NULL;
	if (threads && !p->threads)
		goto nomem;
	/* The workers' stacks, touched now: a thread made after the
	 * snapshot takes no memory of its own then. */
	p->stacks = threads ? calloc(threads, sizeof(*p->stacks)) : NULL;
	if (threads && !p->stacks)
		goto nomem;
	for (i = 0; i < threads; i++) {
		p->stacks[i] = chain_alloc_buffer(POOL_STACK_SIZE);
		if (!p->stacks[i])
			goto nomem;
	}
	for (i = 0; i < p->n_slots; i++) {
		/* What the filters see of each chunk says its size (ABI). */
		p->slots[i].info.struct_size = sizeof(p->slots[i].info);
		p->slots[i].in = chain_alloc_buffer(c->buf_size);
		p->slots[i].out = chain_alloc_buffer(c->buf_size);
		if (!p->slots[i].in || !p->slots[i].out)
			goto nomem;
	}
	for (i = 0; i < p->n_workers; i++)
		if (chain_worker_init(c, &p->workers[i]) < 0) {
			pool_free(p);
			return -ENOMEM;
		}
	reserve_heap(c, p->n_workers);
	return 0;
nomem:
	pool_free(p);
	return log_error_errno(-ENOMEM, "out of memory for the worker pool");
}

int
pool_thread_on_stack(pthread_t *thread, void *stack, size_t size,
		     void *(*fn)(void *), void *arg)
{
	pthread_attr_t attr;
	int r;

	r = pthread_attr_init(&attr);
	if (r != 0)
		return -r;
	r = pthread_attr_setstack(&attr, stack, size);
	if (r == 0)
		r = pthread_create(thread, &attr, fn, arg);
	pthread_attr_destroy(&attr);
	return -r;
}

static int
start_thread(struct pool *p, unsigned i)
{
	struct worker_arg *a = malloc(sizeof(*a));
	int r;

	if (!a)
		return log_error_errno(-ENOMEM, "out of memory for a worker thread");
	a->pool = p;
	a->worker = &p->workers[i];
	r = pool_thread_on_stack(&p->threads[i], p->stacks[i], POOL_STACK_SIZE,
				 worker_main, a);
	if (r < 0) {
		free(a);
		return log_error_errno(r, "cannot start a worker thread: %m");
	}
	return 0;
}

static int
start_threads(struct pool *p)
{
	unsigned i;
	int r;

	for (i = 0; i < p->want_threads; i++) {
		r = start_thread(p, i);
		if (r < 0)
			return r;
		p->n_threads = i + 1;
	}
	return 0;
}

int
pool_start(struct pool *p)
{
	unsigned i;
	int r = 0;

	p->filled = p->taken = p->collected = 0;
	p->stop = false;
	for (i = 0; i < p->n_workers && r >= 0; i++)
		r = chain_worker_start(p->chain, &p->workers[i]);
	if (r >= 0)
		r = start_threads(p);
	if (r < 0)
		pool_stop(p);
	return r;
}

void
pool_stop(struct pool *p)
{
	unsigned i;

	if (p->n_threads) {
		pthread_mutex_lock(&p->lock);
		p->stop = true;
		pthread_cond_broadcast(&p->work);
		pthread_mutex_unlock(&p->lock);
		for (i = 0; i < p->n_threads; i++)
			pthread_join(p->threads[i], NULL);
	}
	p->n_threads = 0;
	if (p->workers)
		for (i = 0; i < p->n_workers; i++)
			chain_worker_stop(p->chain, &p->workers[i]);
}

void
pool_free(struct pool *p)
{
	unsigned i;

	if (!p->chain)
		return;
	pool_stop(p);
	free(p->threads);
	p->threads = NULL;
	if (p->stacks)
		for (i = 0; i < p->want_threads; i++)
			free(p->stacks[i]);
	free(p->stacks);
	p->stacks = NULL;
	if (p->workers)
		for (i = 0; i < p->n_workers; i++)
			chain_worker_free(p->chain, &p->workers[i]);
	free(p->workers);
	p->workers = NULL;
	if (p->slots)
		for (i = 0; i < p->n_slots; i++) {
			free(p->slots[i].in);
			free(p->slots[i].out);
		}
	free(p->slots);
	p->slots = NULL;
	pthread_cond_destroy(&p->work);
	pthread_cond_destroy(&p->done);
	pthread_mutex_destroy(&p->lock);
	p->chain = NULL;
}

bool
pool_full(const struct pool *p)
{
	return p->filled - p->collected == p->n_slots;
}

bool
pool_pending(const struct pool *p)
{
	return p->filled != p->collected;
}

struct pool_slot *
pool_next(struct pool *p)
{
	return &p->slots[p->filled % p->n_slots];
}

void
pool_submit(struct pool *p)
{
	struct pool_slot *s = &p->slots[p->filled % p->n_slots];

	if (!p->n_threads) {
		run_slot(p, &p->workers[0], s);
		s->state = SLOT_DONE;
		p->filled++;
		return;
	}
	pthread_mutex_lock(&p->lock);
	s->state = SLOT_READY;
	p->filled++;
	pthread_cond_signal(&p->work);
	pthread_mutex_unlock(&p->lock);
}

const struct pool_slot *
pool_oldest(const struct pool *p)
{
	return &p->slots[p->collected % p->n_slots];
}

double
pool_workers_cpu(const struct pool *p)
{
	double sum = 0;

	for (unsigned i = 0; i < p->n_threads; i++) {
		clockid_t id;

		if (pthread_getcpuclockid(p->threads[i], &id) == 0)
			sum += clock_seconds(id);
	}
	return sum;
}

struct pool_slot *
pool_collect(struct pool *p)
{
	struct pool_slot *s = &p->slots[p->collected % p->n_slots];

	if (p->n_threads) {
		pthread_mutex_lock(&p->lock);
		while (s->state != SLOT_DONE)
			pthread_cond_wait(&p->done, &p->lock);
		pthread_mutex_unlock(&p->lock);
	}
	s->state = SLOT_FREE;
	p->collected++;
	return s;
}

void
pool_wait_threads_gone(void)
{
	struct timespec tick = { 0, 1000 * 1000 };
	unsigned n = 0;

	/* pthread_join() returns once the thread cleared its id, which the
	 * kernel does before it drops the task from the thread list; the
	 * count falls to one when every joined thread is really gone. */
	for (int i = 0; i < 2000; i++) {
		n = proc_thread_count();
		if (n <= 1)
			return;
		nanosleep(&tick, NULL);
	}
	log_warning("%u threads still exist at the thaw", n);
}
