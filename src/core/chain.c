/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "chain.h"
#include "log.h"

void *
chain_alloc_buffer(size_t size)
{
	size_t page = 4096;
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
		c->bound[i + 1] = c->filters[i]->ops.max_encoded_size(
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
	 * chunk pages, chunk count, then name[32] type position per entry. */
	size_t len = 8 + 4 + 16 + 65 + 65 + 4 + 8 + 4 + 8 + 4 +
		     (size_t)h->n_chain * 34;
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
	*ret = b;
	*ret_len = len;
	return 0;
}

static int
start_one(struct plugin_entry *e, const struct torpor_image_info *info)
{
	int r;

	if (!e->ops.start_stream)
		return 0;
	r = e->ops.start_stream(info);
	if (r < 0)
		return log_error_errno(r, "plugin '%s' could not start the image stream: %m",
				       e->ops.name);
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
	memcpy(c->info.uuid, h->uuid, 16);
	c->info.page_size = h->page_size;
	c->info.chunk_pages = h->chunk_pages;
	c->info.page_count = h->page_count;
	c->info.chunk_count = h->chunk_count;
	c->info.binding = c->binding;
	for (i = 0; i < c->n_filters; i++) {
		r = start_one(c->filters[i], &c->info);
		if (r < 0)
			return r;
	}
	return start_one(c->writer, &c->info);
}

void
chain_release(struct chain *c)
{
	free(c->binding);
	c->binding = NULL;
}

int
chain_worker_init(const struct chain *c, struct chain_worker *w)
{
	size_t i;
	int r;

	memset(w, 0, sizeof(*w));
	for (i = 0; i < c->n_filters; i++) {
		const struct torpor_plugin *f = &c->filters[i]->ops;

		if (f->thread_init) {
			r = f->thread_init(&w->state[i]);
			if (r < 0) {
				log_error_errno(r, "filter '%s' could not set up a thread: %m",
						c->filters[i]->ops.name);
				chain_worker_free(c, w);
				return r;
			}
		}
		w->n_states = i + 1;
	}
	for (i = 0; i < 2; i++) {
		w->buf[i] = chain_alloc_buffer(c->buf_size);
		if (!w->buf[i]) {
			chain_worker_free(c, w);
			return log_error_errno(-ENOMEM, "out of memory for chunk buffers");
		}
	}
	return 0;
}

void
chain_worker_free(const struct chain *c, struct chain_worker *w)
{
	size_t i;

	for (i = 0; i < w->n_states; i++) {
		const struct torpor_plugin *f = &c->filters[i]->ops;

		if (f->thread_free && w->state[i])
			f->thread_free(w->state[i]);
		w->state[i] = NULL;
	}
	w->n_states = 0;
	for (i = 0; i < 2; i++) {
		free(w->buf[i]);
		w->buf[i] = NULL;
	}
}

int
chain_encode(const struct chain *c, struct chain_worker *w,
	     const struct torpor_chunk_info *info,
	     const uint8_t *in, size_t in_len,
	     const uint8_t **ret, size_t *ret_len)
{
	const uint8_t *cur = in;
	size_t cur_len = in_len, i;

	for (i = 0; i < c->n_filters; i++) {
		const struct torpor_plugin *f = &c->filters[i]->ops;
		uint8_t *out = w->buf[i & 1];
		size_t out_len = 0;
		int r;

		r = f->encode(w->state[i], info, cur, cur_len, out,
			      c->bound[i + 1], &out_len);
		if (r < 0)
			return log_error_errno(r, "filter '%s' failed on chunk %llu: %m",
				c->filters[i]->ops.name,
				(unsigned long long)info->sequence);
		if (out_len == 0 || out_len > c->bound[i + 1])
			return log_error_errno(-EIO,
				"filter '%s' produced %zu bytes for chunk %llu (bound %zu)",
				c->filters[i]->ops.name, out_len,
				(unsigned long long)info->sequence,
				c->bound[i + 1]);
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
		const struct torpor_plugin *f = &c->filters[i]->ops;
		uint8_t *out = w->buf[i & 1];
		size_t out_len = 0;
		int r;

		/* The input never aliases the output: stage i reads the
		 * buffer stage i + 1 wrote, i.e. the other one. */
		r = f->decode(w->state[i], info, cur, cur_len, out,
			      c->bound[i], &out_len);
		if (r >= 0 && out_len > c->bound[i])
			r = -EBADMSG;
		if (r < 0)
			return log_error_errno(r,
				"chunk %llu: filter '%s' refused it: %s",
				(unsigned long long)info->sequence,
				c->filters[i]->ops.name,
				r == -EBADMSG ? "corrupt or tampered data" :
				strerror(-r));
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
