/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Run lists: where logical bytes lie on a device; see run-list.h.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "device-io.h"
#include "run-list.h"

void
bd_map_clear(struct bd_map *m)
{
	free(m->runs);
	memset(m, 0, sizeof(*m));
}

int
bd_map_add(struct bd_map *m, uint64_t phys, uint64_t len)
{
	if (len == 0)
		return 0;
	if (m->n && m->runs[m->n - 1].phys + m->runs[m->n - 1].len == phys) {
		m->runs[m->n - 1].len += len;
		m->total += len;
		return 0;
	}
	if (m->n == m->cap) {
		size_t cap = m->cap ? m->cap * 2 : 16;
		struct bd_run *runs = realloc(m->runs, cap * sizeof(*runs));

		if (!runs)
			return -ENOMEM;
		m->runs = runs;
		m->cap = cap;
	}
	m->runs[m->n].phys = phys;
	m->runs[m->n].len = len;
	m->n++;
	m->total += len;
	return 0;
}

int
bd_map_slice(const struct bd_map *m, uint64_t off, uint64_t len,
	     struct bd_map *out)
{
	uint64_t at = 0;
	int r;

	if (off > m->total || len > m->total - off)
		return -ENODATA;
	for (size_t i = 0; i < m->n && len > 0; i++) {
		const struct bd_run *run = &m->runs[i];
		uint64_t skip, n;

		if (off >= at + run->len) {
			at += run->len;
			continue;
		}
		skip = off - at;
		n = run->len - skip < len ? run->len - skip : len;
		r = bd_map_add(out, run->phys + skip, n);
		if (r < 0)
			return r;
		off += n;
		len -= n;
		at += run->len;
	}
	return 0;
}

/* The runs of [off, off + len) of m, each read or written in turn. */
static int
map_io(struct bd_dev *d, const struct bd_map *m, uint64_t off, void *buf,
       size_t len, bool write)
{
	struct bd_map runs = { 0 };
	uint8_t *p = buf;
	int r;

	r = bd_map_slice(m, off, len, &runs);
	for (size_t i = 0; r == 0 && i < runs.n; i++) {
		r = write ? bd_write(d, runs.runs[i].phys, p, runs.runs[i].len) :
			    bd_read(d, runs.runs[i].phys, p, runs.runs[i].len);
		p += runs.runs[i].len;
	}
	bd_map_clear(&runs);
	return r;
}

int
bd_map_read(struct bd_dev *d, const struct bd_map *m, uint64_t off,
	    void *buf, size_t len)
{
	return map_io(d, m, off, buf, len, false);
}

int
bd_map_write(struct bd_dev *d, const struct bd_map *m, uint64_t off,
	     const void *buf, size_t len)
{
	return map_io(d, m, off, (void *)buf, len, true);
}

size_t
bd_map_first_outside(const struct bd_map *m, uint64_t dev_size)
{
	size_t i;

	for (i = 0; i < m->n; i++)
		if (m->runs[i].phys > dev_size ||
		    m->runs[i].len > dev_size - m->runs[i].phys)
			break;
	return i;
}

bool
bd_map_inside(const struct bd_map *m, uint64_t dev_size)
{
	return bd_map_first_outside(m, dev_size) == m->n;
}
