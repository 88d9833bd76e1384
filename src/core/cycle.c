/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "chain.h"
#include "cycle.h"
#include "host.h"
#include "log.h"
#include "pool.h"
#include "snapshot-internal.h"
#include "snapshot.h"
#include "stream.h"

/* The compression filters shipped with torpor and the ratio we count on for
 * the space check: the measured ratios on a realistic page mix are 31-39 %
 * (KERNEL-FACTS.md), so 60 % leaves a margin for less compressible memory. */
static const char *const compressors[] = { "lzo", "lz4", "zlib", NULL };

uint64_t
cycle_expected_stream(const struct torpor_session *s, uint64_t raw_bytes,
		      size_t page_size, uint32_t chunk_pages)
{
	uint64_t chunks = (raw_bytes / page_size + chunk_pages - 1) / chunk_pages;
	uint64_t bytes = raw_bytes;
	size_t i, j;

	for (i = 0; i < s->config->n_filters; i++)
		for (j = 0; compressors[j]; j++)
			if (strcmp(s->config->filters[i], compressors[j]) == 0) {
				bytes = raw_bytes / 10 * 6;
				goto done;
			}
done:
	/* Framing, per-filter overhead (tags, digests, tags of AEADs). */
	return bytes + chunks * (CHUNK_FRAME_SIZE + 64) + bytes / 20;
}

/* How many bytes of memory the image will take, before it is taken. */
static uint64_t
estimate_image_bytes(struct snapshot *snap, const char *spec)
{
	uint64_t size = 0, seed;
	bool named;
	FILE *f;

	/* The simulated image's size is in its name; like the kernel's, the
	 * device itself knows it only once the image exists. */
	if (snap->kind == TORPOR_SNAPSHOT_SIM)
		return sim_parse_spec(spec, &size, &seed, &named) == 0 ? size : 0;
	/* The kernel shrinks the image to /sys/power/image_size when it can;
	 * used memory is the other bound. */
	f = fopen("/sys/power/image_size", "re");
	if (f) {
		if (fscanf(f, "%" SCNu64, &size) != 1)
			size = 0;
		fclose(f);
	}
	{
		uint64_t total = session_meminfo("MemTotal");
		uint64_t avail = session_meminfo("MemAvailable");

		if (total > avail && (size == 0 || total - avail < size))
			size = total - avail;
	}
	return size;
}

static int
save_entry(struct plugin_entry *e, uint8_t position,
	   struct image_chain_entry *ce)
{
	size_t need = e->ops.storage_needed ? e->ops.storage_needed() : 0;
	int r;

	memset(ce, 0, sizeof(*ce));
	snprintf(ce->name, sizeof(ce->name), "%s", e->ops.name);
	ce->type = (uint8_t)e->ops.type;
	ce->position = position;
	if (!e->ops.save_config || need == 0)
		return 0;
	if (need > IMAGE_MAX_BLOB)
		return log_error_errno(-E2BIG, "plugin '%s' wants %zu bytes of header, more than %u",
				       e->ops.name, need, IMAGE_MAX_BLOB);
	ce->blob = calloc(1, need);
	if (!ce->blob)
		return -ENOMEM;
	r = e->ops.save_config(ce->blob, need);
	if (r < 0)
		return log_error_errno(r, "plugin '%s' could not save its configuration: %m",
				       e->ops.name);
	if ((size_t)r > need)
		return log_error_errno(-EOVERFLOW, "plugin '%s' wrote past its header storage",
				       e->ops.name);
	ce->blob_len = (uint32_t)r;
	return 0;
}

/* Fill the header's chain with the names (blobs come at commit). */
static void
chain_names(const struct chain *c, struct image_header *h)
{
	size_t i;

	h->n_chain = (uint32_t)c->n_filters + 1;
	for (i = 0; i <= c->n_filters; i++) {
		struct plugin_entry *e = i < c->n_filters ? c->filters[i] : c->writer;

		snprintf(h->chain[i].name, sizeof(h->chain[i].name), "%s", e->ops.name);
		h->chain[i].type = (uint8_t)e->ops.type;
		h->chain[i].position = (uint8_t)i;
	}
}

static int
commit_image(struct chain *c, struct image_header *h)
{
	uint8_t *buf = NULL;
	size_t len = 0, i;
	int r;

	for (i = 0; i <= c->n_filters; i++) {
		struct plugin_entry *e = i < c->n_filters ? c->filters[i] : c->writer;

		r = save_entry(e, (uint8_t)i, &h->chain[i]);
		if (r < 0)
			return r;
	}
	len = image_header_size(h);
	buf = calloc(1, len);
	if (!buf)
		return -ENOMEM;
	r = image_header_encode(h, buf, len, &len);
	if (r < 0) {
		free(buf);
		return log_error_errno(r, "could not encode the image header: %m");
	}
	r = c->writer->ops.commit(buf, len);
	free(buf);
	if (r < 0)
		return log_error_errno(r, "writer '%s' could not commit the image: %m",
				       c->writer->ops.name);
	return 0;
}

/* After the system came back: report what the resume side recorded. */
static void
report_resume_stats(struct chain *c)
{
	const struct torpor_plugin *w = &c->writer->ops;
	struct image_header h;
	uint8_t *buf;
	size_t len = 0;
	char err[160];

	buf = malloc(IMAGE_MAX_HEADER);
	if (!buf)
		return;
	memset(&h, 0, sizeof(h));
	if (w->read_header(buf, IMAGE_MAX_HEADER, &len) == 0 &&
	    image_header_parse(buf, len, &h, err, sizeof(err)) == 0 &&
	    h.stats.resumed_at)
		printf("resume (recorded by torpor-resume): %" PRIu64 " pages in %.2f s\n",
		       h.stats.pages_restored, (double)h.stats.read_usec / 1e6);
	image_header_clear(&h);
	free(buf);
}

/* Frame and queue the oldest encoded chunk. */
static int
write_collected(struct pool *pool, struct stream_out *out)
{
	struct pool_slot *s = pool_collect(pool);

	if (s->err < 0)
		return s->err;
	return stream_out_chunk(out, s->info.sequence, s->info.flags,
				s->info.raw_len, s->out, s->out_len);
}

static int
read_chunk_pages(struct snapshot *snap, uint8_t *buf, uint32_t chunk_pages,
		 uint64_t pages_left, uint32_t *ret_pages)
{
	uint32_t n;

	for (n = 0; n < chunk_pages && n < pages_left; n++) {
		ssize_t k = snap->ops->read_page(snap, buf + (size_t)n * snap->page_size);

		if (k < 0)
			return log_error_errno((int)k, "reading page %" PRIu64 " of the snapshot failed: %m",
					       (uint64_t)n);
		if (k == 0)
			break;
		if ((size_t)k != snap->page_size)
			return log_error_errno(-EIO, "the snapshot gave a short page (%zd bytes)", k);
	}
	*ret_pages = n;
	return 0;
}

int
cycle_hibernate(struct torpor_session *s, const struct cycle_options *o)
{
	struct snapshot *snap = NULL;
	struct chain c;
	struct pool pool;
	bool pool_up = false;
	struct stream_out out;
	struct image_header h;
	uint8_t *pages = NULL;
	uint64_t image_bytes = 0, expected, seq, pages_left;
	bool frozen = false, have_image = false, reserved = false;
	bool committed = false, got = false;
	int in_suspend = 0, r;
	double t0;

	memset(&h, 0, sizeof(h));
	memset(&out, 0, sizeof(out));
	memset(&c, 0, sizeof(c));

	r = snapshot_open(s->config->snapshot, SNAPSHOT_MODE_HIBERNATE, &snap);
	if (r < 0)
		return r;
	host_set_snapshot(snap);

	r = chain_setup(&c, &s->reg, snap->page_size, s->config->chunk_pages);
	if (r < 0)
		goto out;
	r = registry_get(&s->reg);
	if (r < 0) {
		log_error_errno(r, "a plugin is being unloaded; try again");
		goto out;
	}
	got = true;
	r = registry_initialise(&s->reg, 1);
	if (r < 0)
		goto out;

	/* Everything the stream needs is allocated and touched now. */
	pages = chain_alloc_buffer((size_t)c.chunk_pages * c.page_size);
	r = pages ? stream_out_init(&out, c.writer) : -ENOMEM;
	if (r < 0) {
		log_error_errno(r, "could not allocate the stream buffers: %m");
		goto out;
	}

	expected = cycle_expected_stream(s, estimate_image_bytes(snap, s->config->snapshot),
					 c.page_size, c.chunk_pages);
	r = c.writer->ops.reserve(expected);
	if (r < 0) {
		if (r != -ENOSPC)
			log_error_errno(r, "writer '%s' could not reserve %" PRIu64 " MiB: %m",
					c.writer->ops.name, expected >> 20);
		goto out;
	}
	reserved = true;

	r = snap->ops->freeze(snap);
	if (r < 0) {
		log_error_errno(r, "could not freeze user space: %m");
		goto out;
	}
	frozen = true;
	r = snap->ops->create_image(snap, &in_suspend);
	if (r < 0) {
		log_error_errno(r, "the kernel could not create the image: %m");
		goto out;
	}
	have_image = true;
	if (!in_suspend)
		goto resumed;

	t0 = session_now();
	r = snap->ops->image_size(snap, &image_bytes);
	if (r < 0) {
		log_error_errno(r, "could not get the image size: %m");
		goto out;
	}
	h.format_version = IMAGE_FORMAT_VERSION;
	h.flags = o->test ? IMAGE_FLAG_TEST : 0;
	if (getrandom(h.uuid, sizeof(h.uuid), 0) != sizeof(h.uuid)) {
		r = log_error_errno(-errno, "no random bytes for the image UUID: %m");
		goto out;
	}
	h.created = (uint64_t)time(NULL);
	h.page_size = (uint32_t)c.page_size;
	h.page_count = image_bytes / c.page_size;
	h.chunk_pages = c.chunk_pages;
	h.chunk_count = (h.page_count + c.chunk_pages - 1) / c.chunk_pages;
	chain_names(&c, &h);

	pages_left = h.page_count;
	for (seq = 0; seq < h.chunk_count; seq++) {
		struct pool_slot *slot;
		uint8_t *dst = pages;
		uint32_t n = 0;

		if (pool_up && pool_full(&pool)) {
			r = write_collected(&pool, &out);
			if (r < 0)
				goto out;
		}
		if (pool_up)
			dst = pool_next(&pool)->in;
		r = read_chunk_pages(snap, dst, c.chunk_pages, pages_left, &n);
		if (r < 0)
			goto out;
		if (n == 0 || (n < c.chunk_pages && n != pages_left)) {
			r = log_error_errno(-EIO, "the snapshot ended after %" PRIu64 " of %" PRIu64 " pages",
					    h.page_count - pages_left + n, h.page_count);
			goto out;
		}
		if (seq == 0) {
			struct snapshot_info si;

			r = snapshot_parse_info(pages, c.page_size, &si);
			if (r < 0) {
				log_error_errno(r, "the image's first page is not a snapshot header");
				goto out;
			}
			memcpy(h.kernel_release, si.release, sizeof(h.kernel_release));
			memcpy(h.kernel_version, si.version, sizeof(h.kernel_version));
			/* Filters learn the image before any thread state
			 * exists (crypt draws its key here). */
			r = chain_start_stream(&c, &h);
			if (r < 0)
				goto out;
			r = pool_init(&pool, &c, POOL_ENCODE, session_threads(s));
			if (r < 0)
				goto out;
			pool_up = true;
			memcpy(pool_next(&pool)->in, pages, (size_t)n * c.page_size);
		}
		pages_left -= n;
		slot = pool_next(&pool);
		slot->in_len = (size_t)n * c.page_size;
		slot->info.sequence = seq;
		slot->info.flags = seq + 1 == h.chunk_count ? TORPOR_CHUNK_LAST : 0;
		slot->info.raw_len = (uint32_t)slot->in_len;
		pool_submit(&pool);
	}
	while (pool_up && pool_pending(&pool)) {
		r = write_collected(&pool, &out);
		if (r < 0)
			goto out;
	}
	if (snap->ops->read_page(snap, pages) != 0) {
		r = log_error_errno(-EIO, "the snapshot has more pages than its size says");
		goto out;
	}
	r = stream_out_flush(&out);
	if (r < 0)
		goto out;
	h.stored_bytes = out.total;
	r = commit_image(&c, &h);
	if (r < 0)
		goto out;
	committed = true;
	session_print_summary(o->test ? "hibernate (test)" : "hibernate", h.page_count,
		      c.page_size, h.stored_bytes, session_now() - t0);

	if (o->test) {
		/* A test image must never be resumed: the system goes on. */
		r = c.writer->ops.invalidate();
		if (r < 0) {
			/* The system goes on running: an image left behind
			 * would be resumed over it at the next boot. */
			log_error_errno(r, "could not invalidate the test image: %m");
			goto out;
		}
		goto resumed;
	}
	switch (s->config->after) {
	case CONFIG_AFTER_REBOOT:
	case CONFIG_AFTER_SUSPEND:
		log_warning("after=%s is not supported yet; powering off",
			    s->config->after == CONFIG_AFTER_REBOOT ? "reboot" : "suspend");
		/* fall through */
	case CONFIG_AFTER_POWEROFF:
		r = snap->ops->power_off(snap);
		break;
	}
	if (r < 0) {
		log_error_errno(r, "could not power off: %m");
		goto out;
	}
	/* Only the simulated device gets here: its "resume" is the next
	 * torpor-resume run; the cycle goes on as after a real one. */

resumed:
	r = 0;
	if (!o->test)
		report_resume_stats(&c);
	log_info("thawing");
out:
	if (r < 0 && reserved && c.writer) {
		if (committed)
			c.writer->ops.invalidate();
		else if (c.writer->ops.abort)
			c.writer->ops.abort();
	}
	if (have_image)
		snap->ops->free_image(snap);
	if (frozen)
		snap->ops->unfreeze(snap);
	stream_out_free(&out);
	if (pool_up)
		pool_free(&pool);
	free(pages);
	registry_cleanup(&s->reg, 1);
	if (got)
		registry_put(&s->reg);
	image_header_clear(&h);
	chain_release(&c);
	host_set_snapshot(NULL);
	snapshot_close(snap);
	return r;
}
