/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chain.h"
#include "log.h"
#include "plugin-call.h"

void *
chain_alloc_buffer(size_t size)
{
	size_t page = CHAIN_BUFFER_ALIGN;
	void *p;

	size = (size + page - 1) / page * page;
	if (size == 0)
		size = page;
	if (posix_memalign(&p, page, size) != 0)
		return NULL;
	memset(p, 0, size);
	return p;
}

int
chain_setup(struct chain *c, struct registry *r, size_t page_size,
	    uint32_t chunk_pages)
{
	struct plugin_entry *e;
	size_t i;

	memset(c, 0, sizeof(*c));
	c->page_size = page_size;
	c->chunk_pages = chunk_pages;
	for (e = registry_next_filter(r, NULL);
	     e && e->ops.type == TORPOR_PLUGIN_FILTER;
	     e = registry_next_filter(r, e)) {
		if (c->n_filters >= IMAGE_MAX_CHAIN - 1)
			return log_error_errno(-E2BIG,
				"too many filters in the chain (at most %d)",
				IMAGE_MAX_CHAIN - 1);
		c->filters[c->n_filters++] = e;
	}
	c->writer = e;
	if (!c->writer)
		return log_error_errno(-ENODEV, "no writer is configured%s%s",
			r->disabled_reason[0] ? ": " : "", r->disabled_reason);

	c->bound[0] = (size_t)chunk_pages * page_size;
	c->buf_size = c->bound[0];
	for (i = 0; i < c->n_filters; i++) {
		c->bound[i + 1] = plugin_max_encoded_size(c->filters[i],
							  c->bound[i]);
		if (c->bound[i + 1] < c->bound[i] / 2 ||
		    c->bound[i + 1] > (64u << 20))
			return log_error_errno(-EINVAL,
				"filter '%s' declares an implausible bound: %zu bytes for %zu",
				c->filters[i]->ops.name, c->bound[i + 1],
				c->bound[i]);
		if (c->bound[i + 1] > c->buf_size)
			c->buf_size = c->bound[i + 1];
	}
	return 0;
}

static void
put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void
put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

int
chain_binding(const struct image_header *h, uint8_t **ret, size_t *ret_len)
{
	/* "TORPORBD" v1: uuid, release, version, page size, page count,
	 * chunk pages, chunk count, then name[32] type position per entry;
	 * then, only when the header has a root guard (format 3), its kind,
	 * filesystem UUID, mount time and mount count, so that a filter
	 * authenticating the binding notices a guard removed or changed. */
	bool guard = h->guard.kind != IMAGE_GUARD_NONE;
	size_t len = 8 + 4 + 16 + 65 + 65 + 4 + 8 + 4 + 8 + 4 +
		     (size_t)h->n_chain * 34 + (guard ? 4 + 16 + 8 + 4 : 0);
	uint8_t *b, *p;
	uint32_t i;

	if (h->n_chain > IMAGE_MAX_CHAIN)
		return -EINVAL;
	b = calloc(1, len);
	if (!b)
		return -ENOMEM;
	p = b;
	memcpy(p, "TORPORBD", 8), p += 8;
	put_le32(p, 1), p += 4;
	memcpy(p, h->uuid, 16), p += 16;
	memcpy(p, h->kernel_release, 65), p += 65;
	memcpy(p, h->kernel_version, 65), p += 65;
	put_le32(p, h->page_size), p += 4;
	put_le64(p, h->page_count), p += 8;
	put_le32(p, h->chunk_pages), p += 4;
	put_le64(p, h->chunk_count), p += 8;
	put_le32(p, h->n_chain), p += 4;
	for (i = 0; i < h->n_chain; i++) {
		memcpy(p, h->chain[i].name, 32), p += 32;
		*p++ = h->chain[i].type;
		*p++ = h->chain[i].position;
	}
	if (guard) {
		put_le32(p, h->guard.kind), p += 4;
		memcpy(p, h->guard.fs_uuid, 16), p += 16;
		put_le64(p, h->guard.stamp), p += 8;
		put_le32(p, h->guard.count);
	}
	*ret = b;
	*ret_len = len;
	return 0;
}

int
chain_start_stream(struct chain *c, const struct image_header *h)
{
	size_t i;
	int r;

	free(c->binding);
	c->binding = NULL;
	r = chain_binding(h, &c->binding, &c->info.binding_len);
	if (r < 0)
		return r;
	c->info.struct_size = sizeof(c->info);
	memcpy(c->info.uuid, h->uuid, 16);
	c->info.page_size = h->page_size;
	c->info.chunk_pages = h->chunk_pages;
	c->info.page_count = h->page_count;
	c->info.chunk_count = h->chunk_count;
	c->info.binding = c->binding;
	for (i = 0; i < c->n_filters; i++) {
		r = plugin_start_stream(c->filters[i], &c->info);
		if (r < 0)
			return r;
	}
	return plugin_start_stream(c->writer, &c->info);
}

void
chain_release(struct chain *c)
{
	free(c->binding);
	c->binding = NULL;
}

uint64_t
chain_expected_stream(const struct chain *c, uint64_t raw_bytes)
{
	size_t chunk = (size_t)c->chunk_pages * c->page_size;
	uint64_t chunks = (raw_bytes + chunk - 1) / chunk;
	uint64_t bytes = raw_bytes, per_chunk = CHUNK_FRAME_SIZE;
	size_t i;

	for (i = 0; i < c->n_filters; i++) {
		size_t bound = plugin_max_encoded_size(c->filters[i], chunk);

		bytes = bytes / 1000 * plugin_expected_ratio(c->filters[i]) +
			bytes % 1000 * plugin_expected_ratio(c->filters[i]) / 1000;
		/* Tags, digests, a compressor's worst case over its input. */
		if (bound > chunk)
			per_chunk += bound - chunk;
	}
	return bytes + chunks * per_chunk;
}

/* The buffers the stages write, alternating: one for a single filter
 * (chain_decode() writes it; chain_encode() writes the caller's buffer
 * from its last stage), two for more. */
static size_t
worker_buffers(const struct chain *c)
{
	return c->n_filters < 2 ? c->n_filters : 2;
}

int
chain_worker_init(const struct chain *c, struct chain_worker *w)
{
	size_t i;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < worker_buffers(c); i++) {
		w->buf[i] = chain_alloc_buffer(c->buf_size);
		if (!w->buf[i]) {
			chain_worker_free(c, w);
			return log_error_errno(-ENOMEM, "out of memory for chunk buffers");
		}
	}
	return 0;
}

int
chain_worker_start(const struct chain *c, struct chain_worker *w)
{
	size_t i;
	int r;

	for (i = w->n_states; i < c->n_filters; i++) {
		r = plugin_thread_init(c->filters[i], &w->state[i]);
		if (r < 0) {
			chain_worker_stop(c, w);
			return r;
		}
		w->n_states = i + 1;
	}
	return 0;
}

void
chain_worker_stop(const struct chain *c, struct chain_worker *w)
{
	size_t i;

	for (i = 0; i < w->n_states; i++) {
		plugin_thread_free(c->filters[i], w->state[i]);
		w->state[i] = NULL;
	}
	w->n_states = 0;
}

void
chain_worker_free(const struct chain *c, struct chain_worker *w)
{
	size_t i;

	chain_worker_stop(c, w);
	for (i = 0; i < 2; i++) {
		free(w->buf[i]);
		w->buf[i] = NULL;
	}
}

size_t
chain_worker_memory(const struct chain *c)
{
	size_t bytes = worker_buffers(c) * c->buf_size, i;

	for (i = 0; i < c->n_filters; i++) {
		size_t need = plugin_memory_needed(c->filters[i]);

		/* Saturate: a plugin's figure is not to be trusted. */
		bytes = need > SIZE_MAX - bytes ? SIZE_MAX : bytes + need;
	}
	return bytes;
}

int
chain_encode(const struct chain *c, struct chain_worker *w,
	     const struct torpor_chunk_info *info,
	     const uint8_t *in, size_t in_len, uint8_t *final,
	     const uint8_t **ret, size_t *ret_len)
{
	const uint8_t *cur = in;
	size_t cur_len = in_len, i;

	for (i = 0; i < c->n_filters; i++) {
		/* Stage k writes buf[k & 1] and reads the other one (or in);
		 * the last writes final. */
		uint8_t *out = i + 1 == c->n_filters ? final : w->buf[i & 1];
		size_t out_len = 0;
		int r;

		r = plugin_encode(c->filters[i], w->state[i], info, cur,
				  cur_len, out, c->bound[i + 1], &out_len);
		if (r < 0)
			return r;
		cur = out;
		cur_len = out_len;
	}
	*ret = cur;
	*ret_len = cur_len;
	return 0;
}

int
chain_decode(const struct chain *c, struct chain_worker *w,
	     const struct torpor_chunk_info *info,
	     const uint8_t *in, size_t in_len,
	     const uint8_t **ret, size_t *ret_len)
{
	const uint8_t *cur = in;
	size_t cur_len = in_len, i;

	for (i = c->n_filters; i-- > 0;) {
		/* As in chain_encode(), counted from the first stage run. */
		size_t k = c->n_filters - 1 - i;
		uint8_t *out = w->buf[k & 1];
		size_t out_len = 0;
		int r;

		r = plugin_decode(c->filters[i], w->state[i], info, cur,
				  cur_len, out, c->bound[i], &out_len);
		if (r < 0)
			return r;
		cur = out;
		cur_len = out_len;
	}
	if (cur_len != info->raw_len)
		return log_error_errno(-EBADMSG,
			"chunk %llu: decoded to %zu bytes, the frame says %u",
			(unsigned long long)info->sequence, cur_len,
			info->raw_len);
	*ret = cur;
	*ret_len = cur_len;
	return 0;
}
