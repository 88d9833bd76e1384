/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Helpers for plugin authors, installed beside plugin.h: everything here is
 * static inline, so a plugin that uses it links nothing of torpor's.
 *
 *  - little- and big-endian encoding of fixed-width integers: the one set
 *    of byte-order helpers of torpor (the core's image format uses them
 *    too), so that saved configurations read the same everywhere;
 *  - the chunk format the compression filters share: a tag byte, then the
 *    payload.  TORPOR_FILTER_TAG_STORED means the payload is the input as
 *    it was (the codec did not make it smaller, so it is not worth the
 *    decode time); TORPOR_FILTER_TAG_PACKED means it is the codec's output;
 *  - counters and a bounded printf for print_debug_info();
 *  - logging through the host with %m and the plugin's name.
 */
#ifndef TORPOR_PLUGIN_UTIL_H
#define TORPOR_PLUGIN_UTIL_H

#include <errno.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <torpor/plugin.h>

#ifdef __cplusplus
extern "C" {
#endif

/* ---- logging ------------------------------------------------------------ */

/* Longest line torpor_log() formats; the rest is cut. */
#define TORPOR_LOG_LINE_MAX 1024

/* torpor_log() with a va_list. */
__attribute__((format(printf, 4, 0)))
static inline void
torpor_logv(const struct torpor_host *host, const char *plugin, int level,
	    const char *fmt, va_list ap)
{
	char line[TORPOR_LOG_LINE_MAX];
	int saved = errno;

	vsnprintf(line, sizeof(line), fmt, ap);
	host->log(level, plugin, "%s", line);
	errno = saved;
}

/*
 * Log one line through host->log, which prefixes it with plugin (the
 * plugin's name).  fmt is printf's, and %m is the text of errno as it was
 * when torpor_log() was called, whatever the host does before it prints;
 * errno is the same again when torpor_log() returns.
 */
__attribute__((format(printf, 4, 5)))
static inline void
torpor_log(const struct torpor_host *host, const char *plugin, int level,
	   const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	torpor_logv(host, plugin, level, fmt, ap);
	va_end(ap);
}

/*
 * The same for a failure held as a negative errno r, which %m prints;
 * returns r, so that a failure is logged and returned in one statement:
 *	return torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r,
 *				"cannot open %s: %m", path);
 */
__attribute__((format(printf, 5, 6)))
static inline int
torpor_log_errno(const struct torpor_host *host, const char *plugin,
		 int level, int r, const char *fmt, ...)
{
	int saved = errno;
	va_list ap;

	errno = r < 0 ? -r : r;
	va_start(ap, fmt);
	torpor_logv(host, plugin, level, fmt, ap);
	va_end(ap);
	errno = saved;
	return r;
}

/* ---- byte order ------------------------------------------------------- */

static inline void
torpor_put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static inline void
torpor_put_le32(uint8_t *p, uint32_t v)
{
	torpor_put_le16(p, (uint16_t)v);
	torpor_put_le16(p + 2, (uint16_t)(v >> 16));
}

static inline void
torpor_put_le64(uint8_t *p, uint64_t v)
{
	torpor_put_le32(p, (uint32_t)v);
	torpor_put_le32(p + 4, (uint32_t)(v >> 32));
}

static inline uint16_t
torpor_get_le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (uint16_t)p[1] << 8);
}

static inline uint32_t
torpor_get_le32(const uint8_t *p)
{
	return (uint32_t)torpor_get_le16(p) |
	       (uint32_t)torpor_get_le16(p + 2) << 16;
}

static inline uint64_t
torpor_get_le64(const uint8_t *p)
{
	return (uint64_t)torpor_get_le32(p) |
	       (uint64_t)torpor_get_le32(p + 4) << 32;
}

/* Big-endian, for the few formats that want it (counters in nonces). */
static inline void
torpor_put_be32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline void
torpor_put_be64(uint8_t *p, uint64_t v)
{
	torpor_put_be32(p, (uint32_t)(v >> 32));
	torpor_put_be32(p + 4, (uint32_t)v);
}

/* ---- filters ----------------------------------------------------------- */

#define TORPOR_FILTER_TAG_STORED 0
#define TORPOR_FILTER_TAG_PACKED 1
#define TORPOR_FILTER_TAG_SIZE 1

/* Version byte that leads every saved configuration blob. */
#define TORPOR_FILTER_CONFIG_VERSION 1

/*
 * Counters for print_debug_info.  encode / decode run on several threads
 * at once, so every field is updated atomically (the GCC / Clang builtins,
 * which C and C++ share); relaxed ordering is enough because
 * nothing is derived from them but a status line.
 */
struct torpor_filter_stats {
	uint64_t chunks;		/* encoded */
	uint64_t stored;		/* of which stored raw */
	uint64_t in_bytes;
	uint64_t out_bytes;
	uint64_t decoded;		/* chunks decoded */
};

/* A thread state that is nothing but one block of the codec's work memory
 * (free it with free()). */
static inline int
torpor_filter_workmem_init(void **ret_state, size_t size)
{
	void *p = malloc(size);

	if (!p)
		return -ENOMEM;
	*ret_state = p;
	return 0;
}

static inline void
torpor_filter_stats_reset(struct torpor_filter_stats *s)
{
	__atomic_store_n(&s->chunks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->stored, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->in_bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->out_bytes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&s->decoded, 0, __ATOMIC_RELAXED);
}

static inline void
torpor_filter_stats_encoded(struct torpor_filter_stats *s, size_t in_len,
			    size_t out_len, bool stored)
{
	__atomic_fetch_add(&s->chunks, 1, __ATOMIC_RELAXED);
	if (stored)
		__atomic_fetch_add(&s->stored, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->in_bytes, in_len, __ATOMIC_RELAXED);
	__atomic_fetch_add(&s->out_bytes, out_len, __ATOMIC_RELAXED);
}

static inline void
torpor_filter_stats_decoded(struct torpor_filter_stats *s)
{
	__atomic_fetch_add(&s->decoded, 1, __ATOMIC_RELAXED);
}

/*
 * snprintf into buf that returns what print_debug_info promises: the
 * length actually written, never more than size - 1.
 */
__attribute__((format(printf, 3, 4)))
static inline int
torpor_filter_print(char *buf, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (!buf || size == 0)
		return -EINVAL;
	va_start(ap, fmt);
	n = vsnprintf(buf, size, fmt, ap);
	va_end(ap);
	if (n < 0)
		return -EIO;
	if ((size_t)n >= size)
		n = (int)(size - 1);
	return n;
}

/*
 * "WHAT, N chunks, P% of input, S stored raw, D decoded" for a
 * compression filter (the core puts the plugin's name before it).
 */
static inline int
torpor_filter_stats_print(const struct torpor_filter_stats *s,
			  const char *what, char *buf, size_t size)
{
	uint64_t chunks, stored, in, out, decoded;
	unsigned pct = 0;

	chunks = __atomic_load_n(&s->chunks, __ATOMIC_RELAXED);
	stored = __atomic_load_n(&s->stored, __ATOMIC_RELAXED);
	in = __atomic_load_n(&s->in_bytes, __ATOMIC_RELAXED);
	out = __atomic_load_n(&s->out_bytes, __ATOMIC_RELAXED);
	decoded = __atomic_load_n(&s->decoded, __ATOMIC_RELAXED);
	if (in)
		pct = (unsigned)((out * 100 + in / 2) / in);
	return torpor_filter_print(buf, size,
			    "%s, %llu chunks, %u%% of input, "
			    "%llu stored raw, %llu decoded",
			    what, (unsigned long long)chunks, pct,
			    (unsigned long long)stored,
			    (unsigned long long)decoded);
}

/* Write in as a stored chunk: tag byte, then the bytes unchanged. */
static inline int
torpor_filter_store(const uint8_t *in, size_t in_len, uint8_t *out,
		    size_t out_size, size_t *ret_len)
{
	if (out_size < TORPOR_FILTER_TAG_SIZE ||
	    out_size - TORPOR_FILTER_TAG_SIZE < in_len)
		return -ENOBUFS;
	out[0] = TORPOR_FILTER_TAG_STORED;
	if (in_len)
		memcpy(out + TORPOR_FILTER_TAG_SIZE, in, in_len);
	*ret_len = in_len + TORPOR_FILTER_TAG_SIZE;
	return 0;
}

/* Decode a stored chunk (tag already checked): -EBADMSG when it cannot be
 * what the encoder wrote for a buffer of out_size. */
static inline int
torpor_filter_unstore(const uint8_t *in, size_t in_len, uint8_t *out,
		      size_t out_size, size_t *ret_len)
{
	size_t n = in_len - TORPOR_FILTER_TAG_SIZE;

	if (n > out_size)
		return -EBADMSG;
	if (n)
		memcpy(out, in + TORPOR_FILTER_TAG_SIZE, n);
	*ret_len = n;
	return 0;
}

/* Check a saved configuration blob: len bytes, version byte first. */
static inline int
torpor_filter_config_check(const uint8_t *buf, size_t len,
			   size_t expected_len)
{
	if (!buf || len != expected_len ||
	    buf[0] != TORPOR_FILTER_CONFIG_VERSION)
		return -EBADMSG;
	return 0;
}

/*
 * Header storage of a filter whose only saved setting is the format
 * version: point storage_needed, save_config and load_config straight at
 * these, so that a later format is refused by an older resume side rather
 * than misread.
 */
static inline size_t
torpor_filter_version_storage(void)
{
	return 1;
}

static inline int
torpor_filter_save_version(uint8_t *buf, size_t size)
{
	if (size < 1)
		return -ENOBUFS;
	buf[0] = TORPOR_FILTER_CONFIG_VERSION;
	return 1;
}

static inline int
torpor_filter_load_version(const uint8_t *buf, size_t len)
{
	return torpor_filter_config_check(buf, len, 1);
}

#ifdef __cplusplus
}
#endif

#endif /* TORPOR_PLUGIN_UTIL_H */
