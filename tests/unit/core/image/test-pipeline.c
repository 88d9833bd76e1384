/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The pipeline (pool, chain, cycle, resume) on in-memory plugins: a filter
 * that transforms and counts its thread states, and a writer that keeps the
 * image in memory and can be told to fail.  The snapshot source is the sim.
 */
#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chain.h"
#include "cycle.h"
#include "crc32c.h"
#include "image-format.h"
#include "log.h"
#include "pool.h"
#include "registry.h"
#include "resume.h"
#include "session.h"
#include "stream-in.h"
#include "stream-out.h"

/* ---- the filter "tx": XOR with 0x5a and one trailer byte ---- */

static int tx_live;		/* thread states not yet freed */
static int tx_inits;		/* thread_init calls */
static int tx_fail_at;		/* thread_init call that fails (0: none) */
static const struct torpor_image_info *tx_info;
static int tx_cleanups, tx_binding_ok_at_cleanup;
static size_t tx_memory;	/* memory_needed() */
static size_t tx_storage;	/* storage_needed() */
static uint32_t tx_ratio = 1000;	/* expected_ratio() */

static size_t
tx_memory_needed(void)
{
	return tx_memory;
}

static size_t
tx_storage_needed(void)
{
	return tx_storage;
}

static uint32_t
tx_expected_ratio(void)
{
	return tx_ratio;
}

static size_t
tx_bound(size_t n)
{
	return n + 1;
}

static int
tx_thread_init(void **ret)
{
	void *p;

	if (++tx_inits == tx_fail_at)
		return -ENOMEM;
	/* Where its last encode() ran: an address on its stack. */
	p = calloc(1, 16);
	if (!p)
		return -ENOMEM;
	tx_live++;
	*ret = p;
	return 0;
}

static void
tx_thread_free(void *p)
{
	free(p);
	tx_live--;
}

static int
tx_encode(void *st, const struct torpor_chunk_info *info, const uint8_t *in,
	  size_t len, uint8_t *out, size_t size, size_t *ret)
{
	volatile uint8_t mark = 0;

	if (st)
		*(uintptr_t *)st = (uintptr_t)&mark;
	/* The core says the size of what it hands over (ABI 2). */
	if (info->struct_size != sizeof(*info))
		return -EPROTO;
	if (size < len + 1)
		return -ENOBUFS;
	for (size_t i = 0; i < len; i++)
		out[i] = in[i] ^ 0x5a;
	out[len] = 0xa5;
	*ret = len + 1;
	return 0;
}

static int
tx_decode(void *st, const struct torpor_chunk_info *info, const uint8_t *in,
	  size_t len, uint8_t *out, size_t size, size_t *ret)
{
	(void)st;
	if (info->struct_size != sizeof(*info))
		return -EPROTO;
	if (len < 1 || in[len - 1] != 0xa5 || len - 1 > size)
		return -EBADMSG;
	for (size_t i = 0; i + 1 < len; i++)
		out[i] = in[i] ^ 0x5a;
	*ret = len - 1;
	return 0;
}

static int
tx_start_stream(const struct torpor_image_info *info)
{
	if (info->struct_size != sizeof(*info))
		return -EPROTO;
	tx_info = info;
	return 0;
}

static void
tx_cleanup(int finishing)
{
	(void)finishing;
	tx_cleanups++;
	/* The ABI: info and its binding stay valid until cleanup(). */
	if (tx_info && tx_info->binding && tx_info->binding_len >= 8 &&
	    memcmp(tx_info->binding, "TORPORBD", 8) == 0)
		tx_binding_ok_at_cleanup++;
	tx_info = NULL;
}

static const struct torpor_filter tx_plugin = {
	.plugin = {
		.abi_version = TORPOR_PLUGIN_ABI_VERSION,
		.struct_size = sizeof(struct torpor_filter),
		.name = "tx",
		.description = "test filter",
		.type = TORPOR_PLUGIN_FILTER,
		.cleanup = tx_cleanup,
		.memory_needed = tx_memory_needed,
		.storage_needed = tx_storage_needed,
	},
	.start_stream = tx_start_stream,
	.expected_ratio = tx_expected_ratio,
	.max_encoded_size = tx_bound,
	.thread_init = tx_thread_init,
	.thread_free = tx_thread_free,
	.encode = tx_encode,
	.decode = tx_decode,
};

/* ---- the writer "memw": the image in memory ---- */

static struct {
	uint8_t *stream;
	size_t len, cap;
	uint8_t *header;
	size_t header_len;
	bool signed_;
	bool fail_invalidate;
	int aborts, invalidates, refusals;
	int fail_read;		/* read() fails with this */
	int fail_write_at;	/* this write() (1-based) fails, 0: none */
	int reserves;
	uint64_t expected;	/* what reserve() was asked for */
	/* The ABI's write() contract, as seen: */
	int writes, misaligned, after_short;
	bool short_seen;	/* a length that is no multiple came */
	/* Which threads wrote: the test's own, or another; and the
	 * largest stack size a writing thread had. */
	int own_thread, other_thread;
	size_t stack_size;
} mw;

static pthread_t main_thread;
/* open_session() sets [torpor] write_thread = yes. */
static bool write_thread;
/* And these, when set: no filter at all, and chunk_pages. */
static bool no_filter;
static unsigned conf_chunk_pages;

static int
mw_reserve(uint64_t expected)
{
	mw.reserves++;
	mw.expected = expected;
	mw.len = 0;
	mw.signed_ = false;
	mw.short_seen = false;
	return 0;
}

/* Who calls write(), on what stack. */
static void
note_writing_thread(void)
{
	pthread_attr_t attr;
	size_t size = 0;
	void *at;

	if (pthread_equal(pthread_self(), main_thread)) {
		mw.own_thread++;
		return;
	}
	mw.other_thread++;
	if (pthread_getattr_np(pthread_self(), &attr) == 0) {
		if (pthread_attr_getstack(&attr, &at, &size) == 0 &&
		    size > mw.stack_size)
			mw.stack_size = size;
		pthread_attr_destroy(&attr);
	}
}

static int
mw_write(const void *buf, size_t len)
{
	mw.writes++;
	note_writing_thread();
	if (mw.fail_write_at && mw.writes >= mw.fail_write_at)
		return -EIO;
	if ((uintptr_t)buf % TORPOR_WRITE_ALIGN != 0)
		mw.misaligned++;
	/* Only the last write before commit() may be short. */
	if (mw.short_seen)
		mw.after_short++;
	if (len % TORPOR_WRITE_ALIGN != 0)
		mw.short_seen = true;
	if (mw.len + len > mw.cap) {
		size_t cap = (mw.len + len) * 2;
		uint8_t *p = realloc(mw.stream, cap);

		if (!p)
			return -ENOMEM;
		mw.stream = p;
		mw.cap = cap;
	}
	memcpy(mw.stream + mw.len, buf, len);
	mw.len += len;
	return 0;
}

static int
mw_commit(const void *header, size_t len)
{
	free(mw.header);
	mw.header = malloc(len);
	if (!mw.header)
		return -ENOMEM;
	memcpy(mw.header, header, len);
	mw.header_len = len;
	mw.signed_ = true;
	return 0;
}

static void
mw_abort(void)
{
	mw.aborts++;
	mw.len = 0;
}

static int
mw_find(void)
{
	return mw.signed_;
}

static int
mw_read_header(void *buf, size_t size, size_t *ret)
{
	if (mw.header_len > size)
		return -EMSGSIZE;
	memcpy(buf, mw.header, mw.header_len);
	*ret = mw.header_len;
	return 0;
}

static int
mw_read(uint64_t off, void *buf, size_t len)
{
	if (mw.fail_read)
		return mw.fail_read;
	if (off > mw.len || len > mw.len - off)
		return -ENODATA;
	memcpy(buf, mw.stream + off, len);
	return 0;
}

static int
mw_invalidate(void)
{
	mw.invalidates++;
	if (mw.fail_invalidate)
		return -EIO;
	mw.signed_ = false;
	return 0;
}

static void
mw_refused(void)
{
	mw.refusals++;
}

static const struct torpor_writer mw_plugin = {
	.plugin = {
		.abi_version = TORPOR_PLUGIN_ABI_VERSION,
		.struct_size = sizeof(struct torpor_writer),
		.name = "memw",
		.description = "test writer",
		.type = TORPOR_PLUGIN_WRITER,
	},
	.reserve = mw_reserve,
	.write = mw_write,
	.commit = mw_commit,
	.abort = mw_abort,
	.find = mw_find,
	.read_header = mw_read_header,
	.read = mw_read,
	.invalidate = mw_invalidate,
	.refused = mw_refused,
};

/* ---- progress, as a listener sees it ---- */

static struct {
	int calls, disorder;
	uint64_t last_done, total;
	uint64_t raw, stored;
} progress;

static void
note_progress(void *ctx, const struct stream_progress *p)
{
	(void)ctx;
	if (p->chunks_done != progress.last_done + 1 ||
	    (progress.total && p->chunks_total != progress.total))
		progress.disorder++;
	progress.calls++;
	progress.last_done = p->chunks_done;
	progress.total = p->chunks_total;
	progress.raw = p->raw_bytes;
	progress.stored = p->stored_bytes;
}

/* ---- fixtures ---- */

static struct plugin_entry tx_entry, mw_entry;

static void
reset(void)
{
	free(mw.stream);
	free(mw.header);
	memset(&mw, 0, sizeof(mw));
	main_thread = pthread_self();
	write_thread = false;
	no_filter = false;
	conf_chunk_pages = 0;
	tx_live = tx_inits = tx_fail_at = 0;
	tx_cleanups = tx_binding_ok_at_cleanup = 0;
	tx_info = NULL;
	tx_memory = tx_storage = 0;
	tx_ratio = 1000;
	memset(&progress, 0, sizeof(progress));
}

static void
setup(void)
{
	reset();
	log_set_max_level(TORPOR_LOG_WARNING);
}

static void
teardown(void)
{
	reset();
}

/* A configuration file, read once and removed at once: nothing is left
 * in /tmp, whatever the test's outcome. */
static FILE *
new_config(char *path, size_t size)
{
	FILE *f;
	int fd;

	snprintf(path, size, "/tmp/torpor-pipeline.XXXXXX");
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	f = fdopen(fd, "w");
	ck_assert_ptr_nonnull(f);
	return f;
}

/* A session with the two in-memory plugins, the sim source of pages
 * pages, and threads workers. */
static void
open_session(struct torpor_session *s, uint64_t pages, unsigned threads)
{
	char path[64];
	FILE *f = new_config(path, sizeof(path));
	int r;

	fprintf(f, "[torpor]\nsnapshot = sim:%llu:3\nfilters = %s\n"
		   "writer = memw\nthreads = %u\nwrite_thread = %s\n",
		(unsigned long long)(pages * 4096), no_filter ? "" : "tx",
		threads, write_thread ? "yes" : "no");
	if (conf_chunk_pages)
		fprintf(f, "chunk_pages = %u\n", conf_chunk_pages);
	fclose(f);
	r = session_open_config(s, path);
	unlink(path);
	ck_assert_int_eq(r, 0);
	memset(&tx_entry, 0, sizeof(tx_entry));
	memset(&mw_entry, 0, sizeof(mw_entry));
	tx_entry.filter = tx_plugin;
	mw_entry.writer = mw_plugin;
	ck_assert_int_eq(registry_register(&s->reg, &tx_entry), 0);
	ck_assert_int_eq(registry_register(&s->reg, &mw_entry), 0);
}

static int
hibernate(uint64_t pages, unsigned threads, bool test)
{
	struct cycle_options o = { .test = test, .progress = note_progress };
	struct torpor_session s;
	int r;

	open_session(&s, pages, threads);
	ck_assert_int_eq(session_arrange_hibernate(&s), 0);
	r = cycle_hibernate(&s, &o);
	session_close(&s);
	return r;
}

static struct resume_options last_resume;

static int
resume(uint64_t pages, unsigned threads, enum resume_mode mode,
       enum resume_refusal *ret_refusal)
{
	struct resume_options o = { .mode = mode, .progress = note_progress };
	struct torpor_session s;
	int r;

	memset(&progress, 0, sizeof(progress));
	open_session(&s, pages, threads);
	ck_assert_int_eq(session_arrange_writer_only(&s), 0);
	r = resume_run(&s, &o);
	session_close(&s);
	last_resume = o;
	if (ret_refusal)
		*ret_refusal = o.refusal;
	return r;
}

/* A chain of the filter alone, by hand, for the pool tests. */
static void
hand_chain(struct chain *c, uint32_t chunk_pages)
{
	memset(c, 0, sizeof(*c));
	memset(&tx_entry, 0, sizeof(tx_entry));
	tx_entry.filter = tx_plugin;
	c->filters[0] = &tx_entry;
	c->n_filters = 1;
	c->page_size = 4096;
	c->chunk_pages = chunk_pages;
	c->bound[0] = (size_t)chunk_pages * 4096;
	c->bound[1] = c->bound[0] + 1;
	c->buf_size = c->bound[1];
}

/* ---- the pool ---- */

START_TEST(pool_init_failure_frees_every_worker)
{
	struct chain c;
	struct pool p;

	hand_chain(&c, 4);
	/* Workers 0 and 1 get their state, worker 2 fails: both earlier
	 * states must be freed, not only the first one. */
	tx_fail_at = 3;
	ck_assert_int_eq(pool_init(&p, &c, POOL_ENCODE, 4), 0);
	/* Buffers come first (before the freeze), states later. */
	ck_assert_int_eq(tx_inits, 0);
	ck_assert_int_eq(pool_start(&p), -ENOMEM);
	ck_assert_int_eq(tx_inits, 3);
	ck_assert_int_eq(tx_live, 0);
	pool_free(&p);
}
END_TEST

START_TEST(pool_keeps_order_and_shuts_down_with_queued_work)
{
	struct chain c;
	struct pool p;
	uint64_t seq, next = 0;
	unsigned threads = (unsigned)_i;

	hand_chain(&c, 2);
	ck_assert_int_eq(pool_init(&p, &c, POOL_ENCODE, threads), 0);
	ck_assert_int_eq(pool_start(&p), 0);
	for (seq = 0; seq < 600; seq++) {
		struct pool_slot *s;

		if (pool_full(&p)) {
			s = pool_collect(&p);
			ck_assert_int_eq(s->err, 0);
			ck_assert_uint_eq(s->info.sequence, next);
			ck_assert_uint_eq(s->out_len, (next % 3 + 1) * 4096 / 2 + 1);
			ck_assert_uint_eq(s->out[0], (uint8_t)(next ^ 0x5a));
			next++;
		}
		s = pool_next(&p);
		s->in_len = (seq % 3 + 1) * 4096 / 2;
		memset(s->in, (int)(seq & 0xff), s->in_len);
		s->info.sequence = seq;
		s->info.raw_len = (uint32_t)s->in_len;
		pool_submit(&p);
	}
	/* Free with every slot still queued or running. */
	ck_assert(pool_pending(&p));
	pool_free(&p);
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

/*
 * Decoding, _i worker threads (0: inline): every chunk comes back in
 * order and intact.  Inline, the result stays in the worker's buffer
 * where the filter left it (no copy: the one slot is handed on before the
 * worker runs again); with threads it is copied into the slot, since a
 * worker takes its next chunk before this one is collected.
 */
/* Chunk next, collected from a decoding pool of `threads` workers. */
static void
check_decoded(const struct pool *p, const struct pool_slot *s,
	      uint64_t next, unsigned threads)
{
	size_t len = (next % 3 + 1) * 4096 / 2;

	ck_assert_int_eq(s->err, 0);
	ck_assert_uint_eq(s->info.sequence, next);
	ck_assert_uint_eq(s->out_len, len);
	for (size_t i = 0; i < len; i++)
		ck_assert_uint_eq(s->res[i], (uint8_t)((next + i) & 0xff));
	if (threads)
		ck_assert_ptr_eq(s->res, s->out);
	else
		ck_assert_ptr_eq(s->res, p->workers[0].buf[0]);
}

START_TEST(pool_decodes_in_order)
{
	struct chain c;
	struct pool p;
	uint64_t seq, next = 0;
	unsigned threads = (unsigned)_i;

	hand_chain(&c, 2);
	ck_assert_int_eq(pool_init(&p, &c, POOL_DECODE, threads), 0);
	ck_assert_int_eq(pool_start(&p), 0);
	for (seq = 0; seq < 300; seq++) {
		struct pool_slot *s;

		if (pool_full(&p))
			check_decoded(&p, pool_collect(&p), next++, threads);
		s = pool_next(&p);
		s->in_len = (seq % 3 + 1) * 4096 / 2 + 1;
		for (size_t i = 0; i + 1 < s->in_len; i++)
			s->in[i] = (uint8_t)((seq + i) & 0xff) ^ 0x5a;
		s->in[s->in_len - 1] = 0xa5;
		s->info.sequence = seq;
		s->info.raw_len = (uint32_t)(s->in_len - 1);
		pool_submit(&p);
	}
	while (pool_pending(&p))
		check_decoded(&p, pool_collect(&p), next++, threads);
	ck_assert_uint_eq(next, 300);
	pool_free(&p);
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

/*
 * 256 threads of 1024-page chunks took 6.5 GiB (locked by mlockall): the
 * thread count is lowered until the pool's memory fits its budget, and
 * pool_memory() (what the cycle's memory check counts) agrees.
 */
START_TEST(pool_threads_bounded_by_memory)
{
	struct chain c;
	struct pool p;
	unsigned t;

	hand_chain(&c, 1024);
	/* Two threads: six slots of two 4 MiB buffers, a 4 MiB buffer
	 * per worker (one filter) and two stacks; three would need eight
	 * slots, 64 MiB on their own. */
	ck_assert_uint_gt((size_t)8 * 2 * c.buf_size, POOL_MEMORY_BUDGET);
	t = pool_threads_for(&c, 256);
	ck_assert_uint_eq(t, 2);
	ck_assert_uint_le(pool_memory(&c, 256), POOL_MEMORY_BUDGET);
	ck_assert_uint_eq(pool_memory(&c, 256), pool_memory(&c, t));
	ck_assert_int_eq(pool_init(&p, &c, POOL_ENCODE, 256), 0);
	ck_assert_uint_eq(p.want_threads, 2);
	ck_assert_uint_eq(p.n_workers, 2);
	ck_assert_uint_eq(p.n_slots, 6);
	pool_free(&p);

	/* Small chunks: many threads fit, but not 256. */
	hand_chain(&c, 32);
	t = pool_threads_for(&c, 256);
	ck_assert_uint_gt(t, 8);
	ck_assert_uint_lt(t, 256);
	ck_assert_uint_le(pool_memory(&c, 256), POOL_MEMORY_BUDGET);
	/* A count that fits is kept; so is "no thread". */
	ck_assert_uint_eq(pool_threads_for(&c, 4), 4);
	ck_assert_uint_eq(pool_threads_for(&c, 0), 0);
}
END_TEST

/* The workers run on the stacks pool_init() allocated and touched (before
 * the freeze), not on stacks mapped when they start; pool_memory() counts
 * them. */
START_TEST(pool_workers_run_on_preallocated_stacks)
{
	struct chain c;
	struct pool p;
	unsigned i, ran = 0;
	uint64_t seq;

	hand_chain(&c, 2);
	ck_assert_uint_ge(pool_memory(&c, 2) - pool_memory(&c, 1), POOL_STACK_SIZE);
	ck_assert_int_eq(pool_init(&p, &c, POOL_ENCODE, 2), 0);
	for (i = 0; i < 2; i++)
		ck_assert_ptr_nonnull(p.stacks[i]);
	ck_assert_int_eq(pool_start(&p), 0);
	for (seq = 0; seq < 64; seq++) {
		struct pool_slot *s;

		if (pool_full(&p))
			ck_assert_int_eq(pool_collect(&p)->err, 0);
		s = pool_next(&p);
		s->in_len = 4096;
		s->info.sequence = seq;
		s->info.raw_len = 4096;
		pool_submit(&p);
	}
	while (pool_pending(&p))
		ck_assert_int_eq(pool_collect(&p)->err, 0);
	for (i = 0; i < 2; i++) {
		uintptr_t at = *(uintptr_t *)p.workers[i].state[0];
		uintptr_t lo = (uintptr_t)p.stacks[i];

		if (at == 0)
			continue;
		ran++;
		ck_assert_msg(at >= lo && at < lo + POOL_STACK_SIZE,
			      "worker %u ran on %#lx, its stack is [%#lx, +%u)",
			      i, (unsigned long)at, (unsigned long)lo,
			      POOL_STACK_SIZE);
	}
	ck_assert_uint_ge(ran, 1);
	pool_free(&p);
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

/* ---- cycle and resume ---- */

START_TEST(roundtrip_in_memory)
{
	unsigned threads = (unsigned)_i;
	enum resume_refusal why;

	ck_assert_int_eq(hibernate(100, threads, false), 0);
	ck_assert(mw.signed_);
	ck_assert_int_eq(tx_live, 0);
	ck_assert_int_eq(resume(100, threads, RESUME_VERIFY, &why), 0);
	ck_assert(mw.signed_);
	ck_assert_int_eq(resume(100, threads, RESUME_RESTORE, &why), 0);
	ck_assert(!mw.signed_);
	ck_assert_int_eq(mw.refusals, 0);
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

START_TEST(binding_valid_until_cleanup)
{
	ck_assert_int_eq(hibernate(40, 2, false), 0);
	ck_assert_int_eq(tx_cleanups, 1);
	ck_assert_int_eq(tx_binding_ok_at_cleanup, 1);
	ck_assert_int_eq(resume(40, 2, RESUME_VERIFY, NULL), 0);
	ck_assert_int_eq(tx_cleanups, 2);
	ck_assert_int_eq(tx_binding_ok_at_cleanup, 2);
	ck_assert_int_eq(resume(40, 2, RESUME_RESTORE, NULL), 0);
	ck_assert_int_eq(tx_cleanups, 3);
	ck_assert_int_eq(tx_binding_ok_at_cleanup, 3);
}
END_TEST

START_TEST(test_mode_fails_when_its_image_stays_resumable)
{
	mw.fail_invalidate = true;
	/* --test thaws and goes on: an image left behind would be resumed
	 * over the running system at the next boot. */
	ck_assert_int_lt(hibernate(40, 2, true), 0);
}
END_TEST

START_TEST(test_image_is_never_restored)
{
	struct image_header h;
	char err[160];
	size_t len;
	enum resume_refusal why;

	ck_assert_int_eq(hibernate(40, 2, false), 0);
	/* The image of a --test run whose invalidation did not reach the
	 * disk: the header says so, with a valid checksum. */
	memset(&h, 0, sizeof(h));
	ck_assert_int_eq(image_header_parse(mw.header, mw.header_len, &h,
					    err, sizeof(err)), 0);
	h.flags |= IMAGE_FLAG_TEST;
	len = mw.header_len;
	ck_assert_int_eq(image_header_encode(&h, mw.header, mw.header_len,
					     &len), 0);
	ck_assert_uint_eq(len, mw.header_len);
	image_header_clear(&h);

	/* verify applies resume's rules: not resumable, and so refused. */
	ck_assert_int_eq(resume(40, 2, RESUME_VERIFY, &why), EXIT_REFUSED);
	ck_assert_int_eq(why, REFUSAL_CORRUPT);
	ck_assert_int_eq(resume(40, 2, RESUME_RESTORE, &why), EXIT_REFUSED);
	ck_assert_int_eq(why, REFUSAL_CORRUPT);
}
END_TEST

/* The frames' CRC seed: the UUID is at offset 20 of the header. */
static uint32_t
image_seed(void)
{
	ck_assert_uint_ge(mw.header_len, 36);
	return chunk_crc_seed(mw.header + 20);
}

/* The stream offset of chunk n's frame in the writer's image. */
static uint64_t
frame_offset(uint64_t n)
{
	uint64_t off = 0, i;
	struct chunk_frame f;
	char err[160];

	for (i = 0; i < n; i++) {
		ck_assert_uint_lt(off + CHUNK_FRAME_SIZE, mw.len);
		ck_assert_int_eq(chunk_frame_parse(mw.stream + off, image_seed(),
						   1u << 30, 1u << 30, &f, err,
						   sizeof(err)), 0);
		off += CHUNK_FRAME_SIZE + f.stored_len;
	}
	return off;
}

/* Break the filter's trailer of chunk n, with its frame CRC recomputed
 * so that the chain (on a worker) is what refuses it. */
static void
break_trailer(uint64_t n)
{
	uint64_t off = frame_offset(n);
	struct chunk_frame f;
	char err[160];

	ck_assert_int_eq(chunk_frame_parse(mw.stream + off, image_seed(),
					   1u << 30, 1u << 30, &f, err,
					   sizeof(err)), 0);
	mw.stream[off + CHUNK_FRAME_SIZE + f.stored_len - 1] ^= 0xff;
	f.stored_crc = crc32c(f.seed, mw.stream + off + CHUNK_FRAME_SIZE,
			      f.stored_len);
	chunk_frame_encode(&f, mw.stream + off);
}

START_TEST(corrupt_chunk_refused_with_work_in_flight)
{
	enum resume_refusal why;

	ck_assert_int_eq(hibernate(400, 4, false), 0);
	/* The last chunk. */
	break_trailer(400 / 32);
	ck_assert_int_eq(resume(400, 4, RESUME_VERIFY, &why), EXIT_REFUSED);
	ck_assert_int_eq(resume(400, 4, RESUME_RESTORE, &why), EXIT_REFUSED);
	ck_assert_int_eq(why, REFUSAL_CORRUPT);
	ck_assert(mw.signed_);
	ck_assert_int_eq(mw.invalidates, 0);
	ck_assert_int_eq(mw.refusals, 1);
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

/* One pass: a clean image resumes with every page handed once, verified
 * by the sim, and invalidated only then.  _i: worker threads (_i % 3),
 * the image written on the writer thread (_i >= 3) or not. */
START_TEST(one_pass_restores_every_page_once)
{
	unsigned threads = (unsigned)_i % 3;

	write_thread = _i >= 3;

	ck_assert_int_eq(hibernate(2000, threads, false), 0);
	ck_assert_int_eq(resume(2000, threads, RESUME_RESTORE, NULL), 0);
	ck_assert(last_resume.restored);
	ck_assert_uint_eq(last_resume.pages_handed, 2000);
	ck_assert_int_eq(mw.invalidates, 1);
	ck_assert(!mw.signed_);
	ck_assert_int_eq(progress.calls, (2000 + 31) / 32);
	ck_assert_int_eq(tx_live, 0);
	/* Every phase was timed; the restore (the sim's returns) too. */
	for (int i = 0; i < RESUME_N_PHASES; i++)
		ck_assert_msg(last_resume.times[i] > 0, "phase %d: %f", i,
			      last_resume.times[i]);
}
END_TEST

/*
 * The pool reads a chunk's stored bytes where the read-ahead ring holds
 * them, and copies only those that wrap around its end or do not fit in
 * it: every page comes back intact whatever the chunk size, with or
 * without a filter (then the pages handed on are the ring's bytes
 * themselves), inline or on workers.  _i: chunk_pages 1, 32 or 1024
 * (4 MiB and its frame: more than the ring, every chunk copied), no
 * filter (_i % 6 >= 3), two workers (_i < 6) or inline.
 */
START_TEST(one_pass_reads_chunks_in_the_ring)
{
	static const unsigned sizes[] = { 1, 32, 1024 };
	const uint64_t pages = 3072;
	unsigned threads = _i / 6 % 2 ? 0 : 2;
	uint64_t chunks;

	conf_chunk_pages = sizes[_i % 3];
	no_filter = _i % 6 >= 3;
	chunks = (pages + conf_chunk_pages - 1) / conf_chunk_pages;
	ck_assert_int_eq(hibernate(pages, threads, false), 0);
	ck_assert_int_eq(resume(pages, threads, RESUME_RESTORE, NULL), 0);
	ck_assert(last_resume.restored);
	ck_assert_uint_eq(last_resume.pages_handed, pages);
	ck_assert_int_eq(progress.calls, chunks);
	if (conf_chunk_pages == 1024) {
		ck_assert_uint_eq(last_resume.chunks_in_place, 0);
	} else {
		/* The stream is three times the ring: some chunks wrap. */
		ck_assert_uint_gt(last_resume.chunks_in_place, chunks / 2);
		ck_assert_uint_lt(last_resume.chunks_in_place, chunks);
	}
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

/*
 * Without filters the source reads a chunk's pages straight into the
 * write buffer, after the room for its frame: every chunk whose frame and
 * pages lie in one 1 MiB buffer; the others are read into their slot and
 * copied, and with chunks of more than a buffer (frame included) every
 * one is.  With a filter none is in place.  The image restores whatever
 * the mix.  _i: chunk_pages (1, 32, 255: 1020 KiB, a few fit; 256 and
 * 1024: none), worker threads (2 for _i / 5 % 2 == 0, else none), the
 * writer thread (_i >= 10), a filter (_i >= 20).
 */
START_TEST(hibernate_reads_pages_in_place)
{
	static const unsigned sizes[] = { 1, 32, 255, 256, 1024 };
	const uint64_t pages = 3000;
	unsigned threads = _i / 5 % 2 ? 0 : 2;
	uint64_t off = 0, left = pages, want = 0, chunks = 0;
	struct cycle_times times;
	struct cycle_options o = { .progress = note_progress, .times = &times };
	struct torpor_session s;

	conf_chunk_pages = sizes[_i % 5];
	write_thread = _i / 10 % 2;
	no_filter = _i < 20;
	/* Where each chunk's pages go in the stream. */
	while (left > 0) {
		uint64_t n = left < conf_chunk_pages ? left : conf_chunk_pages;
		uint64_t start = off + CHUNK_FRAME_SIZE, end = start + n * 4096;

		if (CHUNK_FRAME_SIZE + conf_chunk_pages * 4096ull <= STREAM_IO_SIZE &&
		    start / STREAM_IO_SIZE == (end - 1) / STREAM_IO_SIZE)
			want++;
		off = end;
		left -= n;
		chunks++;
	}
	if (!no_filter)
		want = 0;
	open_session(&s, pages, threads);
	ck_assert_int_eq(session_arrange_hibernate(&s), 0);
	ck_assert_int_eq(cycle_hibernate(&s, &o), 0);
	session_close(&s);
	ck_assert_uint_eq(times.chunks_in_place, want);
	if (no_filter)
		ck_assert_uint_eq(times.stored_bytes, off);
	ck_assert_int_eq(mw.misaligned, 0);
	ck_assert_int_eq(mw.after_short, 0);
	ck_assert_int_eq(resume(pages, threads, RESUME_RESTORE, NULL), 0);
	ck_assert(last_resume.restored);
	ck_assert_uint_eq(last_resume.pages_handed, pages);
	ck_assert_int_eq(progress.calls, chunks);
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

/*
 * A chunk refused half-way through the one pass, with pages of earlier
 * chunks already handed to the sim: refused as corrupt, nothing restored,
 * the image neither invalidated nor changed, the writer told through
 * refused().  _i: 0 the data of a middle chunk (its CRC, on a worker),
 * 1 a middle chunk's frame, 2 the last chunk's filter trailer (the chain,
 * on a worker), 3 the last chunk's data.
 */
START_TEST(one_pass_refuses_a_corrupt_chunk_half_way)
{
	const uint64_t pages = 2000, chunks = (pages + 31) / 32;
	uint64_t n = _i < 2 ? chunks / 2 : chunks - 1, off;
	enum resume_refusal why;
	uint8_t *before;
	size_t len;

	ck_assert_int_eq(hibernate(pages, 2, false), 0);
	off = frame_offset(n);
	switch (_i) {
	case 0:
		mw.stream[off + CHUNK_FRAME_SIZE + 3] ^= 0x10;
		break;
	case 1:
		mw.stream[off + 9] ^= 0x10;
		break;
	case 2:
		break_trailer(n);
		break;
	default:
		mw.stream[mw.len - 2] ^= 0x01;
		break;
	}
	len = mw.len;
	before = malloc(len);
	ck_assert_ptr_nonnull(before);
	memcpy(before, mw.stream, len);

	ck_assert_int_eq(resume(pages, 2, RESUME_RESTORE, &why), EXIT_REFUSED);
	ck_assert_int_eq(why, REFUSAL_CORRUPT);
	ck_assert(!last_resume.restored);
	/* One pass: pages went to the device before the refusal... */
	ck_assert_uint_gt(last_resume.pages_handed, 0);
	ck_assert_uint_le(last_resume.pages_handed, n * 32);
	/* ...and the image is as it was, never invalidated. */
	ck_assert(mw.signed_);
	ck_assert_int_eq(mw.invalidates, 0);
	ck_assert_int_eq(mw.refusals, 1);
	ck_assert(!resume_left_resumable_image(&last_resume, EXIT_REFUSED));
	ck_assert_uint_eq(mw.len, len);
	ck_assert_mem_eq(mw.stream, before, len);
	ck_assert_int_eq(tx_live, 0);
	/* Verify refuses it too, and changes nothing either. */
	ck_assert_int_eq(resume(pages, 2, RESUME_VERIFY, &why), EXIT_REFUSED);
	ck_assert_int_eq(mw.refusals, 1);
	ck_assert_int_eq(mw.invalidates, 0);
	ck_assert_uint_eq(last_resume.pages_handed, 0);
	free(before);
}
END_TEST

/*
 * A writer that holds less than the header's stored bytes: refused as a
 * corrupt image before the freeze and before a chunk is read (the first
 * piece of the stream would be short), with nothing handed on.
 */
START_TEST(stored_bytes_beyond_what_the_writer_holds)
{
	enum resume_refusal why;
	size_t len;

	ck_assert_int_eq(hibernate(40, 2, false), 0);
	len = mw.len;
	mw.len -= 100;
	ck_assert_int_eq(resume(40, 2, RESUME_VERIFY, &why), EXIT_REFUSED);
	ck_assert_int_eq(why, REFUSAL_CORRUPT);
	ck_assert_uint_eq(last_resume.pages_handed, 0);
	ck_assert_int_eq(progress.calls, 0);
	ck_assert_int_eq(resume(40, 2, RESUME_RESTORE, &why), EXIT_REFUSED);
	ck_assert_int_eq(why, REFUSAL_CORRUPT);
	ck_assert_uint_eq(last_resume.pages_handed, 0);
	ck_assert(!last_resume.restored);
	ck_assert_int_eq(mw.invalidates, 0);
	/* All of it there again: the same image resumes. */
	mw.len = len;
	ck_assert_int_eq(resume(40, 2, RESUME_RESTORE, NULL), 0);
	ck_assert(last_resume.restored);
}
END_TEST

/* The sim tells pages handed from pages restored. */
START_TEST(sim_drops_pages_closed_without_restore)
{
	ck_assert_int_eq(hibernate(200, 2, false), 0);
	mw.fail_read = 0;
	/* Invalidation fails after every page was handed: no restore. */
	mw.fail_invalidate = true;
	ck_assert_int_lt(resume(200, 2, RESUME_RESTORE, NULL), 0);
	ck_assert_uint_eq(last_resume.pages_handed, 200);
	ck_assert(!last_resume.restored);
	ck_assert(last_resume.image_left);
	ck_assert(resume_left_resumable_image(&last_resume, -EIO));
	ck_assert_int_eq(mw.refusals, 0);
	/* The image is still good: it resumes once invalidation works. */
	mw.fail_invalidate = false;
	ck_assert_int_eq(resume(200, 2, RESUME_RESTORE, NULL), 0);
	ck_assert(last_resume.restored);
}
END_TEST

START_TEST(error_before_invalidation_leaves_image_resumable)
{
	int r;

	ck_assert_int_eq(hibernate(40, 2, false), 0);
	/* A read error is no refusal (exit 1), but the image is still
	 * there and still good: torpor-resume must not boot over it. */
	mw.fail_read = -EIO;
	r = resume(40, 2, RESUME_RESTORE, NULL);
	ck_assert_int_lt(r, 0);
	ck_assert(mw.signed_);
	ck_assert(last_resume.image_left);
	ck_assert(resume_left_resumable_image(&last_resume, r));

	/* Refused as corrupt: never resumable, nothing to protect. */
	mw.fail_read = 0;
	mw.stream[CHUNK_FRAME_SIZE + 5] ^= 1;
	r = resume(40, 2, RESUME_RESTORE, NULL);
	ck_assert_int_eq(r, EXIT_REFUSED);
	ck_assert(!resume_left_resumable_image(&last_resume, r));
	mw.stream[CHUNK_FRAME_SIZE + 5] ^= 1;

	/* Verify changes nothing and protects nothing. */
	mw.fail_read = -EIO;
	r = resume(40, 2, RESUME_VERIFY, NULL);
	ck_assert_int_lt(r, 0);
	ck_assert(!resume_left_resumable_image(&last_resume, r));

	/* Restored: invalidated first, nothing left. */
	mw.fail_read = 0;
	r = resume(40, 2, RESUME_RESTORE, NULL);
	ck_assert_int_eq(r, 0);
	ck_assert(!last_resume.image_left);
	ck_assert(!resume_left_resumable_image(&last_resume, r));

	/* No image at all. */
	r = resume(40, 2, RESUME_RESTORE, NULL);
	ck_assert_int_eq(r, 0);
	ck_assert(!resume_left_resumable_image(&last_resume, r));
}
END_TEST

/* ---- what the stream promises ---- */

/* _i: worker threads (_i % 3); with the writer thread (_i >= 3), every
 * write() comes from it, on the stack allocated before the freeze, and
 * without it from the cycle's own thread. */
START_TEST(writer_gets_aligned_whole_units)
{
	write_thread = _i >= 3;
	/* 600 pages: the stream is over 2 MiB, several full buffers and a
	 * short tail. */
	ck_assert_int_eq(hibernate(600, (unsigned)_i % 3, false), 0);
	ck_assert_int_ge(mw.writes, 3);
	ck_assert_int_eq(mw.misaligned, 0);
	ck_assert_int_eq(mw.after_short, 0);
	ck_assert_uint_ne(mw.len % TORPOR_WRITE_ALIGN, 0);
	if (write_thread) {
		ck_assert_int_eq(mw.own_thread, 0);
		ck_assert_int_eq(mw.other_thread, mw.writes);
		ck_assert_uint_eq(mw.stack_size, STREAM_WRITER_STACK);
	} else {
		ck_assert_int_eq(mw.own_thread, mw.writes);
		ck_assert_int_eq(mw.other_thread, 0);
	}
}
END_TEST

START_TEST(write_error_half_way_aborts)
{
	/* The second write fails (with the writer thread, _i >= 3, on it
	 * while the chain goes on filling the other buffer): the cycle
	 * aborts, nothing more is written, the image never becomes
	 * valid. */
	write_thread = _i >= 3;
	mw.fail_write_at = 2;
	ck_assert_int_lt(hibernate(600, (unsigned)_i % 3, false), 0);
	ck_assert_int_eq(mw.writes, 2);
	ck_assert(!mw.signed_);
	ck_assert_int_ge(mw.aborts, 1);
	ck_assert_int_eq(tx_live, 0);
}
END_TEST

START_TEST(progress_reaches_every_chunk)
{
	uint64_t chunks = (100 + 31) / 32;

	ck_assert_int_eq(hibernate(100, 2, false), 0);
	ck_assert_int_eq(progress.calls, (int)chunks);
	ck_assert_int_eq(progress.disorder, 0);
	ck_assert_uint_eq(progress.total, chunks);
	ck_assert_uint_eq(progress.raw, 100 * 4096);
	ck_assert_uint_eq(progress.stored, mw.len);

	/* Restoring: one pass. */
	ck_assert_int_eq(resume(100, 2, RESUME_RESTORE, NULL), 0);
	ck_assert_int_eq(progress.calls, (int)chunks);
	ck_assert_int_eq(progress.disorder, 0);
	ck_assert_uint_eq(progress.last_done, chunks);
	ck_assert_uint_eq(progress.raw, 100 * 4096);
}
END_TEST

START_TEST(expected_stream_multiplies_ratios)
{
	struct chain c;
	uint64_t raw = 64 * 4096;	/* 16 chunks of 4 pages */

	hand_chain(&c, 4);
	/* Absent ratio: 1000; per chunk the frame and tx's one byte. */
	tx_entry.filter.expected_ratio = NULL;
	ck_assert_uint_eq(chain_expected_stream(&c, raw),
			  raw + 16 * (CHUNK_FRAME_SIZE + 1));
	tx_entry.filter.expected_ratio = tx_expected_ratio;
	tx_ratio = 500;
	ck_assert_uint_eq(chain_expected_stream(&c, raw),
			  raw / 2 + 16 * (CHUNK_FRAME_SIZE + 1));
	/* Two filters multiply. */
	c.filters[1] = &tx_entry;
	c.n_filters = 2;
	ck_assert_uint_eq(chain_expected_stream(&c, raw),
			  raw / 4 + 16 * (CHUNK_FRAME_SIZE + 2));
}
END_TEST

START_TEST(reserve_asks_for_the_estimate)
{
	tx_ratio = 400;
	ck_assert_int_eq(hibernate(320, 1, false), 0);
	ck_assert_int_eq(mw.reserves, 1);
	ck_assert_uint_eq(mw.expected,
			  320 * 4096 / 10 * 4 + 10 * (CHUNK_FRAME_SIZE + 1));
}
END_TEST

START_TEST(refused_before_freezing_when_memory_is_short)
{
	/* A plugin that asks for far more than any machine has. */
	tx_memory = (size_t)1 << 50;
	ck_assert_int_eq(hibernate(40, 2, false), -ENOMEM);
	/* Before reserve(), and so before the freeze. */
	ck_assert_int_eq(mw.reserves, 0);
	ck_assert_int_eq(tx_inits, 0);
	ck_assert(!mw.signed_);
	/* A figure that overflows every sum is refused too. */
	tx_memory = SIZE_MAX;
	ck_assert_int_eq(hibernate(40, 2, false), -ENOMEM);
	ck_assert_int_eq(mw.reserves, 0);
}
END_TEST

START_TEST(refused_before_freezing_when_header_is_too_small)
{
	tx_storage = TORPOR_IMAGE_MAX_BLOB + 1;
	ck_assert_int_eq(hibernate(40, 2, false), -E2BIG);
	ck_assert_int_eq(mw.reserves, 0);
	tx_storage = TORPOR_IMAGE_MAX_BLOB;
	ck_assert_int_eq(hibernate(40, 2, false), 0);
}
END_TEST

/* ---- the raw writer, loaded from the build ---- */

START_TEST(raw_reads_its_header_after_commit)
{
	const char *dir = getenv("TORPOR_BUILD_PLUGINDIR");
	const struct torpor_writer *w;
	struct torpor_session s;
	char image[] = "raw-image.XXXXXX", conf_path[64];
	uint8_t *data, header[300], back[sizeof(header)];
	size_t len = 0;
	FILE *f;
	int fd, r;

	ck_assert_msg(dir != NULL, "TORPOR_BUILD_PLUGINDIR is not set");
	/* Beside the build (a disk filesystem that honours O_DIRECT), not
	 * in a tmpfs. */
	fd = mkstemp(image);
	ck_assert_int_ge(fd, 0);
	close(fd);
	f = new_config(conf_path, sizeof(conf_path));
	fprintf(f, "[torpor]\nsnapshot = sim:1M\nwriter = raw\n\n"
		   "[raw]\ndevice = %s/%s\n", getcwd((char[4096]){ 0 }, 4096),
		image);
	fclose(f);
	r = session_open(&s, conf_path, dir, false);
	unlink(conf_path);
	ck_assert_int_eq(r, 0);
	ck_assert_int_eq(session_arrange_writer_only(&s), 0);
	ck_assert_int_eq(registry_initialise(&s.reg, 1), 0);
	w = &s.reg.active_writer->writer;

	data = chain_alloc_buffer(8192);
	ck_assert_ptr_nonnull(data);
	memset(data, 0x33, 8192);
	for (size_t i = 0; i < sizeof(header); i++)
		header[i] = (uint8_t)(i * 7);
	ck_assert_int_eq(w->reserve(8192), 0);
	ck_assert_int_eq(w->write(data, 8192), 0);
	ck_assert_int_eq(w->commit(header, sizeof(header)), 0);
	/* What the cycle does once the system is back: read the header for
	 * the statistics torpor-resume left in it. */
	ck_assert_int_eq(w->read_header(back, sizeof(back), &len), 0);
	ck_assert_uint_eq(len, sizeof(header));
	ck_assert_mem_eq(back, header, sizeof(header));
	ck_assert_int_eq(w->read(4096, back, 100), 0);
	ck_assert_uint_eq(back[99], 0x33);

	registry_cleanup(&s.reg, 1);
	session_close(&s);
	free(data);
	unlink(image);
}
END_TEST

Suite *pipeline_suite(void);

Suite *
pipeline_suite(void)
{
	Suite *s = suite_create("pipeline");
	TCase *tc = tcase_create("pipeline");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, pool_init_failure_frees_every_worker);
	tcase_add_test(tc, pool_workers_run_on_preallocated_stacks);
	tcase_add_test(tc, pool_threads_bounded_by_memory);
	tcase_add_loop_test(tc, pool_keeps_order_and_shuts_down_with_queued_work, 0, 5);
	tcase_add_loop_test(tc, pool_decodes_in_order, 0, 3);
	tcase_add_loop_test(tc, roundtrip_in_memory, 0, 3);
	tcase_add_test(tc, binding_valid_until_cleanup);
	tcase_add_test(tc, test_mode_fails_when_its_image_stays_resumable);
	tcase_add_test(tc, test_image_is_never_restored);
	tcase_add_test(tc, corrupt_chunk_refused_with_work_in_flight);
	tcase_add_test(tc, error_before_invalidation_leaves_image_resumable);
	tcase_add_loop_test(tc, one_pass_restores_every_page_once, 0, 6);
	tcase_add_loop_test(tc, one_pass_refuses_a_corrupt_chunk_half_way, 0, 4);
	tcase_add_loop_test(tc, one_pass_reads_chunks_in_the_ring, 0, 12);
	tcase_add_loop_test(tc, hibernate_reads_pages_in_place, 0, 25);
	tcase_add_test(tc, sim_drops_pages_closed_without_restore);
	tcase_add_test(tc, stored_bytes_beyond_what_the_writer_holds);
	tcase_add_loop_test(tc, writer_gets_aligned_whole_units, 0, 6);
	tcase_add_loop_test(tc, write_error_half_way_aborts, 0, 6);
	tcase_add_test(tc, progress_reaches_every_chunk);
	tcase_add_test(tc, expected_stream_multiplies_ratios);
	tcase_add_test(tc, reserve_asks_for_the_estimate);
	tcase_add_test(tc, refused_before_freezing_when_memory_is_short);
	tcase_add_test(tc, refused_before_freezing_when_header_is_too_small);
	tcase_add_test(tc, raw_reads_its_header_after_commit);
	suite_add_tcase(s, tc);
	return s;
}
