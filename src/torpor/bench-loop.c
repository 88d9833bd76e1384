/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor bench's baselines: the chain's codecs without the pipeline (no
 * framing, no writer, no ordering), on one thread and on n, and the sim
 * source's own rate in both directions, all on the pages of one image.
 * The pages go through in batches so that memory stays bounded; each
 * batch is read from the sim, encoded, decoded and handed back to a
 * resume-mode sim, which checks every page: the loop measures codecs that
 * round-trip.
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>

#include "bench.h"
#include "chain.h"
#include "clock.h"
#include "host.h"
#include "log.h"
#include "session.h"
#include "snapshot.h"

/* Image bytes per batch. */
#define LOOP_BATCH (16u << 20)
#define LOOP_MAX_THREADS 64

struct batch {
	uint8_t *pages, *enc, *dec;
	size_t *enc_len;
	struct torpor_chunk_info *info;
	unsigned n;			/* chunks in this batch */
	unsigned max;			/* room for */
};

struct loop {
	struct torpor_session s;
	bool session, got;
	struct snapshot *src, *dst;
	struct chain c;
	struct image_header h;
	struct chain_worker w[LOOP_MAX_THREADS];
	unsigned threads;
	size_t chunk_bytes;
	struct batch bt;
	double t_enc[2], t_dec[2], t_read, t_write;
	double c_enc, c_dec, c_read, c_write;	/* CPU seconds */
};

/* One codec pass over a batch, shared by its threads. */
struct pass {
	struct loop *l;
	bool encode;
	atomic_uint next;
	atomic_int err;
};

static int
run_chunk(struct loop *l, struct chain_worker *w, bool encode, unsigned i)
{
	struct batch *bt = &l->bt;
	const uint8_t *res;
	size_t len = 0;
	int r;

	if (encode) {
		uint8_t *to = bt->enc + i * l->c.buf_size;

		r = chain_encode(&l->c, w, &bt->info[i],
				 bt->pages + i * l->chunk_bytes,
				 bt->info[i].raw_len, to, &res, &len);
		if (r >= 0 && res != to)
			memcpy(to, res, len);
		bt->enc_len[i] = len;
	} else {
		r = chain_decode(&l->c, w, &bt->info[i],
				 bt->enc + i * l->c.buf_size, bt->enc_len[i],
				 &res, &len);
		if (r >= 0)
			memcpy(bt->dec + i * l->chunk_bytes, res, len);
	}
	return r;
}

struct pass_thread {
	struct pass *p;
	struct chain_worker *w;
};

static void *
pass_main(void *arg)
{
	struct pass_thread *t = arg;
	struct pass *p = t->p;
	unsigned i;

	while ((i = atomic_fetch_add(&p->next, 1)) < p->l->bt.n) {
		int r = run_chunk(p->l, t->w, p->encode, i);

		if (r < 0) {
			atomic_store(&p->err, r);
			break;
		}
	}
	return NULL;
}

/* The batch through the chain on `threads` threads (1: this one); the
 * seconds it took, or -errno. */
static double
run_pass(struct loop *l, bool encode, unsigned threads)
{
	struct pass p = { .l = l, .encode = encode };
	struct pass_thread t[LOOP_MAX_THREADS];
	pthread_t tid[LOOP_MAX_THREADS];
	double t0 = clock_now();
	unsigned i, started = 0;

	atomic_init(&p.next, 0);
	atomic_init(&p.err, 0);
	for (i = 0; i < threads; i++)
		t[i] = (struct pass_thread){ .p = &p, .w = &l->w[i] };
	if (threads == 1)
		pass_main(&t[0]);
	for (i = 0; threads > 1 && i < threads; i++, started++)
		if (pthread_create(&tid[i], NULL, pass_main, &t[i]) != 0) {
			atomic_store(&p.err, -EAGAIN);
			break;
		}
	for (i = 0; i < started; i++)
		pthread_join(tid[i], NULL);
	if (atomic_load(&p.err) < 0)
		return atomic_load(&p.err);
	return clock_now() - t0;
}

/* The hibernate-mode sim (open) with its image created, and the header the
 * filters learn the image from (crypt seals its key for it). */
static int
open_source(struct loop *l)
{
	struct image_header *h = &l->h;
	uint64_t bytes = 0;
	int in_suspend = 0, r;
	size_t i;

	host_set_snapshot(l->src);
	r = l->src->ops->freeze(l->src);
	if (r >= 0)
		r = l->src->ops->create_image(l->src, &in_suspend);
	if (r >= 0)
		r = l->src->ops->image_size(l->src, &bytes);
	if (r < 0)
		return log_error_errno(r, "bench: the sim source: %m");
	h->format_version = IMAGE_FORMAT_VERSION;
	if (getrandom(h->uuid, sizeof(h->uuid), 0) != sizeof(h->uuid))
		return log_error_errno(-EIO, "bench: no random bytes");
	h->page_size = (uint32_t)l->src->page_size;
	h->page_count = bytes / h->page_size;
	h->chunk_pages = l->s.config->chunk_pages;
	h->chunk_count = (h->page_count + h->chunk_pages - 1) / h->chunk_pages;
	snapshot_running_release(l->src, h->kernel_release,
				 sizeof(h->kernel_release));
	h->n_chain = (uint32_t)l->c.n_filters + 1;
	for (i = 0; i < h->n_chain; i++)
		snprintf(h->chain[i].name, sizeof(h->chain[i].name), "%s",
			 i < l->c.n_filters ? l->c.filters[i]->ops.name :
					      l->c.writer->ops.name);
	return 0;
}

static int
alloc_batch(struct loop *l)
{
	struct batch *bt = &l->bt;

	bt->max = LOOP_BATCH / (unsigned)l->chunk_bytes;
	if (bt->max == 0)
		bt->max = 1;
	bt->pages = chain_alloc_buffer(bt->max * l->chunk_bytes);
	bt->dec = chain_alloc_buffer(bt->max * l->chunk_bytes);
	bt->enc = chain_alloc_buffer(bt->max * l->c.buf_size);
	bt->enc_len = calloc(bt->max, sizeof(*bt->enc_len));
	bt->info = calloc(bt->max, sizeof(*bt->info));
	if (!bt->pages || !bt->dec || !bt->enc || !bt->enc_len || !bt->info)
		return log_error_errno(-ENOMEM, "bench: out of memory for the codec loop");
	return 0;
}

static int
loop_setup(struct loop *l, const char *conf, const char *plugin_dir,
	   unsigned threads)
{
	unsigned i;
	int r;

	l->threads = threads > LOOP_MAX_THREADS ? LOOP_MAX_THREADS : threads;
	r = session_open(&l->s, conf, plugin_dir, true);
	l->session = true;
	if (r >= 0)
		r = session_arrange_hibernate(&l->s);
	if (r >= 0)
		r = snapshot_open(l->s.config->snapshot, SNAPSHOT_MODE_HIBERNATE,
				  &l->src);
	if (r >= 0)
		r = chain_setup(&l->c, &l->s.reg, l->src->page_size,
				l->s.config->chunk_pages);
	if (r >= 0 && (r = registry_get(&l->s.reg)) >= 0)
		l->got = true;
	if (r >= 0)
		r = registry_initialise(&l->s.reg, 1);
	if (r >= 0)
		r = open_source(l);
	if (r >= 0)
		r = chain_start_stream(&l->c, &l->h);
	l->chunk_bytes = (size_t)l->c.chunk_pages * l->c.page_size;
	for (i = 0; r >= 0 && i < l->threads; i++) {
		r = chain_worker_init(&l->c, &l->w[i]);
		if (r >= 0)
			r = chain_worker_start(&l->c, &l->w[i]);
	}
	if (r >= 0)
		r = snapshot_open(l->s.config->snapshot, SNAPSHOT_MODE_RESUME, &l->dst);
	if (r >= 0)
		r = l->dst->ops->freeze(l->dst);
	if (r >= 0)
		r = alloc_batch(l);
	return r;
}

static void
loop_free(struct loop *l)
{
	unsigned i;

	for (i = 0; i < l->threads; i++)
		chain_worker_free(&l->c, &l->w[i]);
	if (l->got) {
		registry_cleanup(&l->s.reg, 1);
		registry_put(&l->s.reg);
	}
	chain_release(&l->c);
	host_set_snapshot(NULL);
	snapshot_close(l->src);
	snapshot_close(l->dst);
	if (l->session)
		session_close(&l->s);
	free(l->bt.pages);
	free(l->bt.dec);
	free(l->bt.enc);
	free(l->bt.enc_len);
	free(l->bt.info);
}

/* The next batch's pages from the sim, timed; the chunks described as
 * the pipeline describes them. */
static int
read_batch(struct loop *l, uint64_t *chunk, uint64_t *pages_left)
{
	struct batch *bt = &l->bt;
	double t0 = clock_now(), c0 = clock_thread_cpu();
	uint64_t p, n;
	unsigned i;

	for (i = 0; i < bt->max && *pages_left > 0; i++, (*chunk)++) {
		n = *pages_left < l->c.chunk_pages ? *pages_left : l->c.chunk_pages;
		for (p = 0; p < n; p++) {
			uint8_t *at = bt->pages + i * l->chunk_bytes + p * l->c.page_size;
			ssize_t k = l->src->ops->read_page(l->src, at);

			if (k != (ssize_t)l->c.page_size)
				return log_error_errno(k < 0 ? (int)k : -EIO,
						       "bench: reading the sim: %m");
		}
		*pages_left -= n;
		bt->info[i] = (struct torpor_chunk_info){
			.struct_size = sizeof(bt->info[i]),
			.sequence = *chunk,
			.flags = *chunk + 1 == l->h.chunk_count ? TORPOR_CHUNK_LAST : 0,
			.raw_len = (uint32_t)(n * l->c.page_size),
		};
	}
	bt->n = i;
	l->t_read += clock_now() - t0;
	l->c_read += clock_thread_cpu() - c0;
	return 0;
}

/* The decoded pages back to the resume-mode sim, which checks each. */
static int
write_batch(struct loop *l)
{
	struct batch *bt = &l->bt;
	double t0 = clock_now(), c0 = clock_thread_cpu();
	unsigned i;
	size_t at;

	for (i = 0; i < bt->n; i++)
		for (at = 0; at < bt->info[i].raw_len; at += l->c.page_size) {
			ssize_t k = l->dst->ops->write_page(l->dst,
				bt->dec + i * l->chunk_bytes + at);

			if (k != (ssize_t)l->c.page_size)
				return log_error_errno(-EBADMSG, "bench: chunk %llu did not round-trip through the chain",
						       (unsigned long long)bt->info[i].sequence);
		}
	l->t_write += clock_now() - t0;
	l->c_write += clock_thread_cpu() - c0;
	return 0;
}

/* Encode and decode the batch on one thread and on n. */
static int
codec_batch(struct loop *l)
{
	double t[4], c[4];
	int k;

	/* One thread runs on this one: its CPU time is the codec's. */
	c[0] = clock_thread_cpu();
	t[0] = run_pass(l, true, 1);
	c[1] = clock_thread_cpu();
	t[1] = run_pass(l, true, l->threads);
	c[2] = clock_thread_cpu();
	t[2] = run_pass(l, false, 1);
	c[3] = clock_thread_cpu();
	t[3] = run_pass(l, false, l->threads);
	l->c_enc += c[1] - c[0];
	l->c_dec += c[3] - c[2];
	for (k = 0; k < 4; k++)
		if (t[k] < 0)
			return log_error_errno((int)t[k], "bench: the chain refused a chunk: %m");
	l->t_enc[0] += t[0];
	l->t_enc[1] += t[1];
	l->t_dec[0] += t[2];
	l->t_dec[1] += t[3];
	return 0;
}

static double
rate(uint64_t bytes, double seconds)
{
	return seconds > 0 ? (double)bytes / (1024.0 * 1024.0) / seconds : 0;
}

int
bench_loop_run(const char *conf, const char *plugin_dir, unsigned threads,
	       struct bench_loop *ret)
{
	struct loop *l = calloc(1, sizeof(*l));
	uint64_t chunk = 0, left, bytes;
	int r;

	if (!l)
		return -ENOMEM;
	r = loop_setup(l, conf, plugin_dir, threads);
	left = l->h.page_count;
	while (r >= 0 && left > 0) {
		r = read_batch(l, &chunk, &left);
		if (r >= 0)
			r = codec_batch(l);
		if (r >= 0)
			r = write_batch(l);
	}
	if (r >= 0 && l->dst->pages_verified != l->h.page_count)
		r = log_error_errno(-EBADMSG, "bench: the sim checked %llu pages of %llu",
				    (unsigned long long)l->dst->pages_verified,
				    (unsigned long long)l->h.page_count);
	bytes = l->h.page_count * l->h.page_size;
	*ret = (struct bench_loop){
		.enc1 = rate(bytes, l->t_enc[0]), .encn = rate(bytes, l->t_enc[1]),
		.dec1 = rate(bytes, l->t_dec[0]), .decn = rate(bytes, l->t_dec[1]),
		.src_read = rate(bytes, l->t_read),
		.src_write = rate(bytes, l->t_write),
		.enc1_cpu = rate(bytes, l->c_enc),
		.dec1_cpu = rate(bytes, l->c_dec),
		.src_read_cpu = rate(bytes, l->c_read),
		.src_write_cpu = rate(bytes, l->c_write),
	};
	loop_free(l);
	free(l);
	return r;
}
