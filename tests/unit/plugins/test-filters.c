/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The filter plugins lzo, zlib, lz4 and checksum, each dlopen()ed straight
 * from the build directory and driven through the ABI with a minimal host,
 * so that these tests do not depend on the core's loader.
 *
 * The bench group (meson test --suite bench) prints each codec's
 * throughput against a plain loop over its library: a measurement, not a
 * check.
 */
#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <math.h>
#include <time.h>
#include <unistd.h>

#include <lz4.h>
#include <lzo/lzo1x.h>
#include <zlib.h>

#include <torpor/plugin.h>

#include "config.h"
#include "crc32c.h"
#include "fake-host.h"

#define PAGE 4096
#define GUARD 64
#define GUARD_BYTE 0xa5

/* ---- the test host ---------------------------------------------------- */

struct cfg_entry {
	const char *section, *key, *value;
};

static struct cfg_entry cfg_table[8];
/* Set around loops that provoke thousands of expected error lines. */
static bool log_quiet;
/* The last line logged, quiet or not, for tests of a message. */
static char log_last[512];
static size_t cfg_n;

static void
cfg_clear(void)
{
	cfg_n = 0;
}

static void
cfg_set(const char *section, const char *key, const char *value)
{
	size_t i;

	for (i = 0; i < cfg_n; i++) {
		if (strcmp(cfg_table[i].section, section) == 0 &&
		    strcmp(cfg_table[i].key, key) == 0) {
			cfg_table[i].value = value;
			return;
		}
	}
	ck_assert_uint_lt(cfg_n, sizeof(cfg_table) / sizeof(cfg_table[0]));
	cfg_table[cfg_n++] = (struct cfg_entry){ section, key, value };
}

static const char *
test_config_get(const char *section, const char *key)
{
	size_t i;

	for (i = 0; i < cfg_n; i++)
		if (strcmp(cfg_table[i].section, section) == 0 &&
		    strcmp(cfg_table[i].key, key) == 0)
			return cfg_table[i].value;
	return NULL;
}

__attribute__((format(printf, 3, 4)))
static void
test_log(int level, const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(log_last, sizeof(log_last), fmt, ap);
	va_end(ap);
	if (log_quiet)
		return;
	fprintf(stderr, "<%d>%s: %s\n", level, plugin, log_last);
}

static void *
test_secure_alloc(size_t size)
{
	return calloc(1, size);
}

static void
test_secure_free(void *p, size_t size)
{
	if (p)
		explicit_bzero(p, size);
	free(p);
}

/* The plugin being loaded, whose declared keys give defaults and types. */
static const struct torpor_plugin *cfg_plugin;

/* As the core's host: the value (or the declared default), typed. */
static int
test_config_number(const char *section, const char *key, int64_t *ret)
{
	const struct torpor_config_key *k;
	const char *v = test_config_get(section, key);

	for (k = cfg_plugin ? cfg_plugin->config_keys : NULL; k && k->name; k++)
		if (strcmp(k->name, key) == 0)
			return config_number_of(k, v ? v : k->default_value,
						ret);
	return -EINVAL;
}

static const struct torpor_host test_methods = {
	.log = test_log,
	.config_get = test_config_get,
	.secure_alloc = test_secure_alloc,
	.secure_free = test_secure_free,
	.crc32c = crc32c,
	.config_number = test_config_number,
};

/* The methods above; every other one aborts (fake-host.h). */
static struct torpor_host test_host;

/* ---- loading a filter ------------------------------------------------- */

static const char *const filter_names[] = { "lzo", "zlib", "lz4", "checksum" };
#define N_FILTERS 4
#define N_COMPRESSORS 3		/* the first three of filter_names */

struct filter {
	const char *name;
	void *dl;
	const struct torpor_plugin *p;
	const struct torpor_filter *ops;	/* the struct p begins */
	void *state;
	bool initialised;
};

static bool
under_valgrind(void)
{
	return getenv("TORPOR_UNDER_VALGRIND") != NULL;
}

static bool
plugin_path(const char *name, char *buf, size_t size)
{
	const char *dir = getenv("TORPOR_BUILD_PLUGINDIR");

	ck_assert_msg(dir, "TORPOR_BUILD_PLUGINDIR is not set");
	snprintf(buf, size, "%s/%s.so", dir, name);
	/* lz4 is optional (built only where liblz4 is found). */
	if (access(buf, R_OK) < 0 && strcmp(name, "lz4") == 0) {
		fprintf(stderr, "%s not built, skipping\n", buf);
		return false;
	}
	return true;
}

/* dlopen NAME.so and call load(); with start also initialise(1) and
 * thread_init().  Returns the load() result (the plugin stays open). */
static int
filter_open_full(const char *name, struct filter *f, bool start)
{
	torpor_plugin_entry_fn entry;
	char path[4096];
	int r;

	memset(f, 0, sizeof(*f));
	f->name = name;
	if (!plugin_path(name, path, sizeof(path)))
		return -ENOENT;
	f->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(f->dl, "dlopen %s: %s", path, dlerror());
	dlerror();
	*(void **)&entry = dlsym(f->dl, TORPOR_PLUGIN_ENTRY_NAME);
	ck_assert_msg(entry, "%s: no %s", path, TORPOR_PLUGIN_ENTRY_NAME);
	f->p = entry();
	ck_assert_ptr_nonnull(f->p);
	ck_assert_uint_eq(f->p->abi_version, TORPOR_PLUGIN_ABI_VERSION);
	ck_assert_uint_eq(f->p->struct_size, sizeof(struct torpor_filter));
	ck_assert_str_eq(f->p->name, name);
	ck_assert_int_eq(f->p->type, TORPOR_PLUGIN_FILTER);
	ck_assert_ptr_nonnull(f->p->description);
	f->ops = (const struct torpor_filter *)f->p;
	ck_assert_ptr_nonnull(f->ops);
	ck_assert_ptr_nonnull(f->ops->max_encoded_size);
	ck_assert_ptr_nonnull(f->ops->encode);
	ck_assert_ptr_nonnull(f->ops->decode);

	cfg_plugin = f->p;
	r = f->p->load ? f->p->load(fake_host_init(&test_host, &test_methods)) : 0;
	if (r < 0 || !start)
		return r;
	if (f->p->initialise)
		ck_assert_int_eq(f->p->initialise(1), 0);
	f->initialised = true;
	if (f->ops->thread_init)
		ck_assert_int_eq(f->ops->thread_init(&f->state), 0);
	return 0;
}

static bool
filter_open(const char *name, struct filter *f)
{
	int r = filter_open_full(name, f, true);

	if (r == -ENOENT && !f->dl)
		return false;
	ck_assert_int_eq(r, 0);
	return true;
}

static void
filter_close(struct filter *f)
{
	if (!f->dl)
		return;
	if (f->ops->thread_free && f->state)
		f->ops->thread_free(f->state);
	if (f->initialised && f->p->cleanup)
		f->p->cleanup(1);
	if (f->p->unload)
		f->p->unload();
	dlclose(f->dl);
	memset(f, 0, sizeof(*f));
}

/* ---- test data -------------------------------------------------------- */

static uint64_t
rnd(uint64_t *s)
{
	/* xorshift64*: deterministic, so every run tests the same bytes. */
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dULL;
}

enum content { C_ZERO, C_RANDOM, C_TEXT, C_PATTERN, C_MIXED, N_CONTENT };
static const char *const content_names[] = {
	"zeros", "random", "text", "pattern", "mixed",
};

static void
fill_random(uint8_t *b, size_t n, uint64_t *s)
{
	size_t i;

	for (i = 0; i < n; i++)
		b[i] = (uint8_t)(rnd(s) >> 56);
}

static void
fill_text(uint8_t *b, size_t n, uint64_t *s)
{
	static const char *const words[] = {
		"the", "kernel", "snapshot", "image", "page", "swap", "resume",
		"hibernate", "torpor", "chunk", "filter", "writer", "of", "a",
		"and", "memory", "device", "is", "to", "in",
	};
	size_t i = 0;

	while (i < n) {
		const char *w = words[rnd(s) % 20];

		while (*w && i < n)
			b[i++] = (uint8_t)*w++;
		if (i < n)
			b[i++] = (rnd(s) % 11 == 0) ? '\n' : ' ';
	}
}

/* Like kernel data: aligned 64-bit values that mostly climb, some zero. */
static void
fill_pattern(uint8_t *b, size_t n, uint64_t *s)
{
	uint64_t v = 0xffff888000000000ULL + (rnd(s) & 0xfffff000);
	size_t i;

	for (i = 0; i + 8 <= n; i += 8) {
		uint64_t x = (rnd(s) % 4 == 0) ? 0 : v;

		memcpy(b + i, &x, 8);
		v += 64 * (1 + rnd(s) % 4);
	}
	for (; i < n; i++)
		b[i] = (uint8_t)i;
}

static void
fill(uint8_t *b, size_t n, enum content c, uint64_t seed)
{
	uint64_t s = seed * 0x9e3779b97f4a7c15ULL + 1;
	size_t off, l;

	switch (c) {
	case C_ZERO:
		memset(b, 0, n);
		break;
	case C_RANDOM:
		fill_random(b, n, &s);
		break;
	case C_TEXT:
		fill_text(b, n, &s);
		break;
	case C_PATTERN:
		fill_pattern(b, n, &s);
		break;
	default:
		/* A page mix like a real image: many zero pages, code and
		 * data that compress, some that do not (compressed files in
		 * the page cache, keys). */
		for (off = 0; off < n; off += PAGE) {
			l = n - off < PAGE ? n - off : PAGE;
			switch (rnd(&s) % 8) {
			case 0: case 1: case 2:
				memset(b + off, 0, l);
				break;
			case 3: case 4:
				fill_text(b + off, l, &s);
				break;
			case 5: case 6:
				fill_pattern(b + off, l, &s);
				break;
			default:
				fill_random(b + off, l, &s);
				break;
			}
		}
		break;
	}
}

static uint8_t *
alloc_guarded(size_t n)
{
	uint8_t *b = malloc(n + GUARD);

	ck_assert_ptr_nonnull(b);
	memset(b, GUARD_BYTE, n + GUARD);
	return b;
}

static void
check_guard(const uint8_t *b, size_t n, const char *what)
{
	size_t i;

	for (i = 0; i < GUARD; i++)
		ck_assert_msg(b[n + i] == GUARD_BYTE,
			      "%s wrote past its buffer of %zu bytes", what, n);
}

static struct torpor_chunk_info
chunk_info(uint64_t seq, size_t n)
{
	return (struct torpor_chunk_info){
		.sequence = seq, .flags = 0, .raw_len = (uint32_t)n,
	};
}

/* Encode in into a fresh guarded buffer of exactly max_encoded_size. */
static uint8_t *
encode(struct filter *f, uint64_t seq, const uint8_t *in, size_t n,
       size_t *ret_len)
{
	size_t bound = f->ops->max_encoded_size(n), len = 0;
	struct torpor_chunk_info info = chunk_info(seq, n);
	uint8_t *out = alloc_guarded(bound);
	int r;

	r = f->ops->encode(f->state, &info, in, n, out, bound, &len);
	ck_assert_msg(r == 0, "%s: encode of %zu bytes: %d", f->name, n, r);
	ck_assert_msg(len <= bound, "%s: encoded %zu bytes, bound %zu",
		      f->name, len, bound);
	check_guard(out, bound, "encode");
	*ret_len = len;
	return out;
}

/* Decode into a guarded buffer of out_size; returns decode's result. */
static int
decode(struct filter *f, uint64_t seq, const uint8_t *in, size_t in_len,
       size_t out_size, uint8_t **ret_out, size_t *ret_len)
{
	struct torpor_chunk_info info = chunk_info(seq, out_size);
	uint8_t *out = alloc_guarded(out_size);
	size_t len = (size_t)-1;
	int r;

	r = f->ops->decode(f->state, &info, in, in_len, out, out_size, &len);
	check_guard(out, out_size, "decode");
	if (r == 0)
		ck_assert_uint_le(len, out_size);
	if (ret_out)
		*ret_out = out;
	else
		free(out);
	if (ret_len)
		*ret_len = len;
	return r;
}

static bool
is_compressor(const char *name)
{
	return strcmp(name, "checksum") != 0;
}

/* The tag of a chunk the codec shrank: lzo's format 2 cuts it in blocks
 * (plugins/lzo/lzo.c), the others pack it whole. */
static unsigned
packed_tag(const char *name)
{
	return strcmp(name, "lzo") == 0 ? 2 : 1;
}

/* The format version a filter saves in the image header. */
static unsigned
format_version(const char *name)
{
	return strcmp(name, "lzo") == 0 ? 2 : 1;
}

/* ---- every filter ----------------------------------------------------- */

static const size_t sizes[] = {
	0, 1, 4095, 4096, 32 * PAGE, 33 * PAGE + 7,
};
#define N_SIZES (sizeof(sizes) / sizeof(sizes[0]))

START_TEST(roundtrip)
{
	const char *name = filter_names[_i];
	struct filter f;
	size_t si;
	int c;

	if (!filter_open(name, &f))
		return;
	for (si = 0; si < N_SIZES; si++) {
		size_t n = sizes[si];

		for (c = 0; c < N_CONTENT; c++) {
			uint8_t *in = alloc_guarded(n), *enc, *dec;
			size_t elen, dlen;

			fill(in, n, c, si * 10 + c);
			enc = encode(&f, si, in, n, &elen);
			ck_assert_int_eq(decode(&f, si, enc, elen, n, &dec,
						&dlen), 0);
			ck_assert_msg(dlen == n && memcmp(dec, in, n) == 0,
				      "%s: %s chunk of %zu bytes came back as %zu different bytes",
				      name, content_names[c], n, dlen);
			if (!is_compressor(name)) {
				ck_assert_uint_eq(elen, n + 4);
				ck_assert_int_eq(memcmp(enc, in, n), 0);
			} else if (n >= PAGE &&
				   (c == C_ZERO || c == C_TEXT)) {
				ck_assert_msg(enc[0] == packed_tag(name) &&
					      elen < n / 2,
					      "%s: %s chunk of %zu bytes not compressed (tag %u, %zu bytes)",
					      name, content_names[c], n,
					      enc[0], elen);
			}
			free(in);
			free(enc);
			free(dec);
		}
	}
	filter_close(&f);
}
END_TEST

/* A decode that may fail (corrupt input) must fail with -EBADMSG and
 * stay inside its buffer; decode() checks the guard. */
static int
decode_corrupt(struct filter *f, const uint8_t *in, size_t in_len,
	       size_t out_size)
{
	int r = decode(f, 7, in, in_len, out_size, NULL, NULL);

	ck_assert_msg(r == 0 || r == -EBADMSG,
		      "%s: corrupt chunk gave %d, not 0 or -EBADMSG",
		      f->name, r);
	return r;
}

START_TEST(truncated)
{
	const char *name = filter_names[_i];
	const size_t n = 32 * PAGE;
	uint8_t *in = alloc_guarded(n), *enc, *cut;
	size_t elen, lens[8], i;
	struct filter f;

	if (!filter_open(name, &f)) {
		free(in);
		return;
	}
	fill(in, n, C_MIXED, 3);
	enc = encode(&f, 3, in, n, &elen);
	if (is_compressor(name))
		ck_assert_uint_eq(enc[0], packed_tag(name));
	lens[0] = 0;
	lens[1] = 1;
	lens[2] = 2;
	lens[3] = 3;
	lens[4] = elen / 3;
	lens[5] = elen / 2;
	lens[6] = elen - 2;
	lens[7] = elen - 1;
	for (i = 0; i < 8; i++) {
		/* Copy, so that a decoder reading past in_len reads into
		 * the guard, where valgrind and ASan see it. */
		cut = alloc_guarded(lens[i]);
		memcpy(cut, enc, lens[i]);
		ck_assert_msg(decode(&f, 3, cut, lens[i], n, NULL, NULL) ==
			      -EBADMSG,
			      "%s: chunk of %zu bytes cut to %zu was accepted",
			      name, elen, lens[i]);
		free(cut);
	}
	free(enc);
	free(in);
	filter_close(&f);
}
END_TEST

START_TEST(flipped_byte)
{
	const char *name = filter_names[_i];
	const size_t n = 32 * PAGE;
	uint8_t *in = alloc_guarded(n), *enc;
	size_t elen, pos, step, caught = 0, tried = 0;
	struct filter f;

	if (!filter_open(name, &f)) {
		free(in);
		return;
	}
	fill(in, n, C_MIXED, 4);
	enc = encode(&f, 4, in, n, &elen);
	/* Every byte is too slow under valgrind and the sanitizers (each
	 * decode hashes the whole chunk); a prime step still hits headers,
	 * literals, matches and payload, and the first and last 64 bytes
	 * (tags, lengths, digests) are flipped one by one. */
	step = is_compressor(name) ? (under_valgrind() ? 499 : 37) :
		(under_valgrind() ? 97 : 13);
	log_quiet = true;
	for (pos = 1; pos < elen;
	     pos += pos < 64 || pos + 64 >= elen ? 1 : step) {
		enc[pos] ^= 0x41;
		if (decode_corrupt(&f, enc, elen, n) == -EBADMSG)
			caught++;
		enc[pos] ^= 0x41;
		tried++;
	}
	/* The last byte too: the end of a stream is parsed differently. */
	enc[elen - 1] ^= 0x41;
	if (decode_corrupt(&f, enc, elen, n) == -EBADMSG)
		caught++;
	enc[elen - 1] ^= 0x41;
	tried++;
	log_quiet = false;
	fprintf(stderr, "%s: %zu of %zu flipped bytes refused\n", name,
		caught, tried);
	if (!is_compressor(name))
		ck_assert_uint_eq(caught, tried);
	/* Unchanged again: it still decodes. */
	ck_assert_int_eq(decode(&f, 4, enc, elen, n, NULL, NULL), 0);
	free(enc);
	free(in);
	filter_close(&f);
}
END_TEST

START_TEST(bad_tag)
{
	const char *name = filter_names[_i];
	uint8_t tags[] = { 2, 3, 0x80, 0xff };
	const size_t n = 8 * PAGE;
	uint8_t *in = alloc_guarded(n), *enc;
	struct filter f;
	size_t elen, i;
	int c;

	if (!filter_open(name, &f)) {
		free(in);
		return;
	}
	if (packed_tag(name) == 2)
		tags[0] = 4;
	/* Both a packed (text) and a stored (random) chunk. */
	for (c = C_RANDOM; c <= C_TEXT; c++) {
		fill(in, n, c, 5);
		enc = encode(&f, 5, in, n, &elen);
		ck_assert_uint_eq(enc[0], c == C_TEXT ? packed_tag(name) : 0);
		for (i = 0; i < sizeof(tags); i++) {
			enc[0] = tags[i];
			ck_assert_int_eq(decode(&f, 5, enc, elen, n, NULL,
						NULL), -EBADMSG);
		}
		free(enc);
	}
	free(in);
	filter_close(&f);
}
END_TEST

START_TEST(incompressible_stored)
{
	const char *name = filter_names[_i];
	struct filter f;
	size_t si;

	if (!filter_open(name, &f))
		return;
	for (si = 1; si < N_SIZES; si++) {
		size_t n = sizes[si], elen;
		uint8_t *in = alloc_guarded(n), *enc;

		fill(in, n, C_RANDOM, 6 + si);
		enc = encode(&f, 6, in, n, &elen);
		ck_assert_msg(enc[0] == 0 && elen == n + 1,
			      "%s: random chunk of %zu bytes: tag %u, %zu bytes",
			      name, n, enc[0], elen);
		ck_assert_int_eq(memcmp(enc + 1, in, n), 0);
		free(enc);
		free(in);
	}
	filter_close(&f);
}
END_TEST

START_TEST(output_too_small)
{
	const char *name = filter_names[_i];
	struct filter f;
	int c;

	if (!filter_open(name, &f))
		return;
	for (c = 0; c < N_CONTENT; c++) {
		size_t n = 32 * PAGE, elen;
		uint8_t *in = alloc_guarded(n), *enc;

		fill(in, n, c, 8);
		enc = encode(&f, 8, in, n, &elen);
		ck_assert_msg(decode(&f, 8, enc, elen, n - 1, NULL, NULL) ==
			      -EBADMSG,
			      "%s: %s chunk of %zu bytes decoded into %zu",
			      name, content_names[c], n, n - 1);
		/* And a bound far too small. */
		ck_assert_int_eq(decode(&f, 8, enc, elen, 100, NULL, NULL),
				 -EBADMSG);
		free(enc);
		free(in);
	}
	filter_close(&f);
}
END_TEST

START_TEST(encode_needs_bound)
{
	const char *name = filter_names[_i];
	const size_t n = 4 * PAGE;
	uint8_t *in = alloc_guarded(n), *out;
	struct torpor_chunk_info info = chunk_info(9, n);
	size_t bound, small, len = 12345;
	struct filter f;

	if (!filter_open(name, &f)) {
		free(in);
		return;
	}
	fill(in, n, C_RANDOM, 9);
	bound = f.ops->max_encoded_size(n);
	ck_assert_uint_ge(bound, n + 1);
	/* One byte short of the bound, or for checksum (whose bound has
	 * room for its largest digest) of any output. */
	small = bound - 1 < n ? bound - 1 : n;
	out = alloc_guarded(small);
	ck_assert_int_lt(f.ops->encode(f.state, &info, in, n, out, small,
				       &len), 0);
	check_guard(out, small, "encode");
	/* ret_len is untouched on failure. */
	ck_assert_uint_eq(len, 12345);
	free(out);
	free(in);
	filter_close(&f);
}
END_TEST

START_TEST(config_blob)
{
	const char *name = filter_names[_i];
	uint8_t blob[64], junk[64];
	size_t need;
	struct filter f;
	int len;

	if (!filter_open(name, &f))
		return;
	ck_assert_ptr_nonnull(f.p->storage_needed);
	ck_assert_ptr_nonnull(f.p->save_config);
	ck_assert_ptr_nonnull(f.p->load_config);
	need = f.p->storage_needed();
	ck_assert_uint_ge(need, 1);
	ck_assert_uint_le(need, sizeof(blob));
	ck_assert_int_lt(f.p->save_config(blob, 0), 0);
	len = f.p->save_config(blob, need);
	ck_assert_int_gt(len, 0);
	ck_assert_uint_le((size_t)len, need);
	ck_assert_uint_eq(blob[0], format_version(name));
	ck_assert_int_eq(f.p->load_config(blob, (size_t)len), 0);

	/* Wrong sizes and a later version. */
	memcpy(junk, blob, (size_t)len);
	ck_assert_int_eq(f.p->load_config(junk, 0), -EBADMSG);
	ck_assert_int_eq(f.p->load_config(junk, (size_t)len - 1), -EBADMSG);
	junk[len] = 0;
	ck_assert_int_eq(f.p->load_config(junk, (size_t)len + 1), -EBADMSG);
	junk[0] = (uint8_t)(format_version(name) + 1);
	ck_assert_int_eq(f.p->load_config(junk, (size_t)len), -EBADMSG);
	junk[0] = 0;
	ck_assert_int_eq(f.p->load_config(junk, (size_t)len), -EBADMSG);
	filter_close(&f);
}
END_TEST

START_TEST(debug_info)
{
	const char *name = filter_names[_i];
	const size_t n = 8 * PAGE;
	uint8_t *in = alloc_guarded(n), *enc;
	char buf[256], small[8];
	size_t elen;
	struct filter f;
	int r;

	if (!filter_open(name, &f)) {
		free(in);
		return;
	}
	ck_assert_ptr_nonnull(f.p->memory_needed);
	if (is_compressor(name))
		ck_assert_uint_gt(f.p->memory_needed(), 0);
	fill(in, n, C_TEXT, 10);
	enc = encode(&f, 10, in, n, &elen);
	free(enc);
	enc = encode(&f, 11, in, n, &elen);
	ck_assert_int_eq(decode(&f, 11, enc, elen, n, NULL, NULL), 0);
	free(enc);

	ck_assert_ptr_nonnull(f.p->print_debug_info);
	r = f.p->print_debug_info(buf, sizeof(buf));
	ck_assert_int_gt(r, 0);
	ck_assert_uint_eq((size_t)r, strlen(buf));
	fprintf(stderr, "%s\n", buf);
	/* The registry puts the name in front; the text does not repeat
	 * it. */
	ck_assert_msg(strncmp(buf, name, strlen(name)) != 0,
		      "debug info repeats the name %s: %s", name, buf);
	ck_assert_ptr_nonnull(strstr(buf, "2 chunks"));

	memset(small, 'x', sizeof(small));
	r = f.p->print_debug_info(small, sizeof(small));
	ck_assert_int_eq(r, (int)sizeof(small) - 1);
	ck_assert_uint_eq(small[r], '\0');
	free(in);
	filter_close(&f);
}
END_TEST

/* ---- threads ---------------------------------------------------------- */

struct thread_job {
	struct filter *f;
	void *state;
	uint8_t **chunks;
	size_t n_chunks, chunk_len;
	uint8_t **ref;
	size_t *ref_len;
	bool backwards;
	int rounds;
	int failures;
};

static void *
thread_run(void *arg)
{
	struct thread_job *j = arg;
	size_t bound = j->f->ops->max_encoded_size(j->chunk_len);
	uint8_t *out = malloc(bound), *dec = malloc(j->chunk_len);
	int round;
	size_t k;

	if (!out || !dec) {
		j->failures++;
		goto done;
	}
	/* No ck_assert here: Check's assertions are not thread-safe. */
	for (round = 0; round < j->rounds; round++) {
		for (k = 0; k < j->n_chunks; k++) {
			size_t i = j->backwards ? j->n_chunks - 1 - k : k;
			struct torpor_chunk_info info =
				chunk_info(i, j->chunk_len);
			size_t len, dlen;

			if (j->f->ops->encode(j->state, &info, j->chunks[i],
					      j->chunk_len, out, bound,
					      &len) < 0 ||
			    len != j->ref_len[i] ||
			    memcmp(out, j->ref[i], len) != 0)
				j->failures++;
			if (j->f->ops->decode(j->state, &info, j->ref[i],
					      j->ref_len[i], dec, j->chunk_len,
					      &dlen) < 0 ||
			    dlen != j->chunk_len ||
			    memcmp(dec, j->chunks[i], dlen) != 0)
				j->failures++;
		}
	}
done:
	free(out);
	free(dec);
	return NULL;
}

START_TEST(threads)
{
	const char *name = filter_names[_i];
	const size_t chunk_len = 32 * PAGE;
	size_t n_chunks = under_valgrind() ? 6 : 48, i;
	struct thread_job jobs[2];
	pthread_t th[2];
	uint8_t **chunks, **ref;
	size_t *ref_len;
	void *states[2] = { NULL, NULL };
	struct filter f;
	int t;

	if (!filter_open(name, &f))
		return;
	chunks = calloc(n_chunks, sizeof(*chunks));
	ref = calloc(n_chunks, sizeof(*ref));
	ref_len = calloc(n_chunks, sizeof(*ref_len));
	ck_assert(chunks && ref && ref_len);
	/* The single-threaded reference, with the first state. */
	for (i = 0; i < n_chunks; i++) {
		chunks[i] = alloc_guarded(chunk_len);
		fill(chunks[i], chunk_len, C_MIXED, 100 + i);
		ref[i] = encode(&f, i, chunks[i], chunk_len, &ref_len[i]);
	}
	for (t = 0; t < 2; t++) {
		if (f.ops->thread_init)
			ck_assert_int_eq(f.ops->thread_init(&states[t]), 0);
		jobs[t] = (struct thread_job){
			.f = &f, .state = states[t], .chunks = chunks,
			.n_chunks = n_chunks, .chunk_len = chunk_len,
			.ref = ref, .ref_len = ref_len,
			.backwards = t == 1, .rounds = 2,
		};
	}
	for (t = 0; t < 2; t++)
		ck_assert_int_eq(pthread_create(&th[t], NULL, thread_run,
						&jobs[t]), 0);
	for (t = 0; t < 2; t++)
		ck_assert_int_eq(pthread_join(th[t], NULL), 0);
	for (t = 0; t < 2; t++) {
		ck_assert_msg(jobs[t].failures == 0,
			      "%s: thread %d: %d chunks differ from the single-threaded run",
			      name, t, jobs[t].failures);
		if (f.ops->thread_free)
			f.ops->thread_free(states[t]);
	}
	for (i = 0; i < n_chunks; i++) {
		free(chunks[i]);
		free(ref[i]);
	}
	free(chunks);
	free(ref);
	free(ref_len);
	filter_close(&f);
}
END_TEST

/* ---- zlib ------------------------------------------------------------- */

static size_t
zlib_encoded_len(const char *level, enum content c)
{
	const size_t n = 32 * PAGE;
	uint8_t *in = alloc_guarded(n), *enc, *dec;
	char info[256], want[32];
	size_t elen, dlen;
	struct filter f;

	cfg_clear();
	cfg_set("zlib", "level", level);
	ck_assert(filter_open("zlib", &f));
	fill(in, n, c, 12);
	enc = encode(&f, 12, in, n, &elen);
	ck_assert_int_eq(decode(&f, 12, enc, elen, n, &dec, &dlen), 0);
	ck_assert(dlen == n && memcmp(dec, in, n) == 0);
	ck_assert_int_gt(f.p->print_debug_info(info, sizeof(info)), 0);
	snprintf(want, sizeof(want), "level %s,", level);
	ck_assert_msg(strstr(info, want), "no \"%s\" in: %s", want, info);
	free(dec);
	free(enc);
	free(in);
	filter_close(&f);
	cfg_clear();
	return elen;
}

START_TEST(zlib_level)
{
	size_t l1 = zlib_encoded_len("1", C_TEXT);
	size_t l9 = zlib_encoded_len("9", C_TEXT);
	size_t m1 = zlib_encoded_len("1", C_MIXED);
	size_t m9 = zlib_encoded_len("9", C_MIXED);

	fprintf(stderr, "zlib text: level 1 %zu bytes, level 9 %zu; "
		"mixed: %zu, %zu\n", l1, l9, m1, m9);
	ck_assert_uint_le(l9, l1);
	ck_assert_uint_le(m9, m1);
	/* The level really reached deflate. */
	ck_assert_uint_ne(l9, l1);
}
END_TEST

START_TEST(zlib_bad_level)
{
	static const char *const bad[] = { "0", "10", "abc", "", "5x" };
	struct filter f;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		cfg_clear();
		cfg_set("zlib", "level", bad[i]);
		ck_assert_int_eq(filter_open_full("zlib", &f, false), -EINVAL);
		filter_close(&f);
	}
	cfg_clear();
}
END_TEST

START_TEST(zlib_config_roundtrip)
{
	static const uint8_t bad_levels[] = { 0, 10, 255 };
	uint8_t blob[8], image[2] = { 1, 7 };
	struct filter f;
	size_t i;

	cfg_clear();
	cfg_set("zlib", "level", "6");
	ck_assert_int_eq(filter_open_full("zlib", &f, false), 0);
	ck_assert_int_eq(f.p->storage_needed(), 2);
	ck_assert_int_eq(f.p->save_config(blob, sizeof(blob)), 2);
	ck_assert_uint_eq(blob[0], 1);
	ck_assert_uint_eq(blob[1], 6);

	/* Resume order: load_config, then initialise(1); the image's level
	 * wins over the configuration (which resume may not have). */
	cfg_set("zlib", "level", "2");
	ck_assert_int_eq(f.p->load_config(image, 2), 0);
	ck_assert_int_eq(f.p->initialise(1), 0);
	ck_assert_int_eq(f.p->save_config(blob, sizeof(blob)), 2);
	ck_assert_uint_eq(blob[1], 7);

	/* Junk leaves the level as it was. */
	for (i = 0; i < sizeof(bad_levels); i++) {
		uint8_t junk[2] = { 1, bad_levels[i] };

		ck_assert_int_eq(f.p->load_config(junk, 2), -EBADMSG);
	}
	ck_assert_int_eq(f.p->save_config(blob, sizeof(blob)), 2);
	ck_assert_uint_eq(blob[1], 7);

	/* A new cycle reads the configuration again. */
	f.p->cleanup(1);
	ck_assert_int_eq(f.p->initialise(1), 0);
	f.initialised = true;
	ck_assert_int_eq(f.p->save_config(blob, sizeof(blob)), 2);
	ck_assert_uint_eq(blob[1], 2);
	filter_close(&f);
	cfg_clear();
}
END_TEST

/* ---- checksum --------------------------------------------------------- */

static const char *const algorithms[] = { "crc32c", "sha256" };
static const size_t digest_lens[] = { 4, 32 };

START_TEST(checksum_algorithms)
{
	const char *alg = algorithms[_i];
	const size_t dl = digest_lens[_i];
	uint8_t blob[8];
	struct filter f;
	size_t si, pos, elen, step;

	cfg_clear();
	cfg_set("checksum", "algorithm", alg);
	ck_assert(filter_open("checksum", &f));
	ck_assert_int_eq(f.p->save_config(blob, sizeof(blob)), 2);
	ck_assert_uint_eq(blob[0], 1);
	ck_assert_uint_eq(blob[1], (unsigned)_i + 1);

	for (si = 0; si < N_SIZES; si++) {
		size_t n = sizes[si], dlen;
		uint8_t *in = alloc_guarded(n), *enc, *dec;

		fill(in, n, C_MIXED, 20 + si);
		enc = encode(&f, si, in, n, &elen);
		ck_assert_uint_eq(elen, n + dl);
		ck_assert_int_eq(decode(&f, si, enc, elen, n, &dec, &dlen), 0);
		ck_assert(dlen == n && memcmp(dec, in, n) == 0);
		free(dec);

		/* Every byte, digest included; every bit position in
		 * turn. */
		step = (n > PAGE || under_valgrind()) ? 61 : 1;
		log_quiet = true;
		for (pos = 0; pos < elen; pos += step) {
			uint8_t bit = (uint8_t)(1u << (pos % 8));

			enc[pos] ^= bit;
			ck_assert_msg(decode(&f, si, enc, elen, n, NULL,
					     NULL) == -EBADMSG,
				      "%s: flip at %zu of %zu not caught",
				      alg, pos, elen);
			enc[pos] ^= bit;
		}
		log_quiet = false;
		/* A truncated digest or chunk. */
		for (pos = 1; pos <= dl + 1 && pos <= elen; pos++)
			ck_assert_int_eq(decode(&f, si, enc, elen - pos, n,
						NULL, NULL), -EBADMSG);
		free(enc);
		free(in);
	}
	filter_close(&f);
	cfg_clear();
}
END_TEST

/* The image says which algorithm; the configuration is not consulted. */
START_TEST(checksum_image_algorithm)
{
	const size_t n = 2 * PAGE;
	uint8_t *in = alloc_guarded(n), *enc;
	static const uint8_t sha[2] = { 1, 2 }, crc[2] = { 1, 1 };
	static const uint8_t bad[2] = { 1, 3 }, zero[2] = { 1, 0 };
	struct filter f;
	size_t elen;

	cfg_clear();
	cfg_set("checksum", "algorithm", "sha256");
	ck_assert(filter_open("checksum", &f));
	fill(in, n, C_TEXT, 30);
	enc = encode(&f, 30, in, n, &elen);
	ck_assert_uint_eq(elen, n + 32);
	filter_close(&f);

	cfg_set("checksum", "algorithm", "crc32c");
	ck_assert_int_eq(filter_open_full("checksum", &f, false), 0);
	ck_assert_int_eq(f.p->load_config(bad, 2), -EBADMSG);
	ck_assert_int_eq(f.p->load_config(zero, 2), -EBADMSG);
	ck_assert_int_eq(f.p->load_config(sha, 2), 0);
	ck_assert_int_eq(f.p->initialise(1), 0);
	f.initialised = true;
	ck_assert_int_eq(decode(&f, 30, enc, elen, n, NULL, NULL), 0);
	ck_assert_int_eq(f.p->load_config(crc, 2), 0);
	ck_assert_int_eq(decode(&f, 30, enc, elen, n, NULL, NULL), -EBADMSG);
	free(enc);
	free(in);
	filter_close(&f);
	cfg_clear();
}
END_TEST

/* Run decode with stderr sent to a memfd; returns what was logged. */
static char *
decode_capturing_stderr(struct filter *f, uint64_t seq, const uint8_t *in,
			size_t in_len, size_t out_size, int *ret_r)
{
	int fd, saved;
	char *text;
	off_t size;

	fflush(stderr);
	fd = memfd_create("stderr", MFD_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	saved = dup(STDERR_FILENO);
	ck_assert_int_ge(saved, 0);
	ck_assert_int_ge(dup2(fd, STDERR_FILENO), 0);
	*ret_r = decode(f, seq, in, in_len, out_size, NULL, NULL);
	fflush(stderr);
	ck_assert_int_ge(dup2(saved, STDERR_FILENO), 0);
	close(saved);
	size = lseek(fd, 0, SEEK_END);
	ck_assert_int_ge(size, 0);
	text = calloc(1, (size_t)size + 1);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(pread(fd, text, (size_t)size, 0), size);
	close(fd);
	return text;
}

START_TEST(checksum_message)
{
	const char *alg = algorithms[_i];
	const size_t n = PAGE;
	const uint64_t seq = 123456789012ULL;
	uint8_t *in = alloc_guarded(n), *enc;
	char want[128], *text, *nl;
	struct filter f;
	size_t elen;
	int r;

	cfg_clear();
	cfg_set("checksum", "algorithm", alg);
	ck_assert(filter_open("checksum", &f));
	fill(in, n, C_PATTERN, 40);
	enc = encode(&f, seq, in, n, &elen);
	enc[100] ^= 1;
	text = decode_capturing_stderr(&f, seq, enc, elen, n, &r);
	ck_assert_int_eq(r, -EBADMSG);
	snprintf(want, sizeof(want), "chunk %llu: checksum mismatch (%s)",
		 (unsigned long long)seq, alg);
	ck_assert_msg(strstr(text, want), "logged \"%s\", want \"%s\"",
		      text, want);
	/* One line. */
	nl = strchr(text, '\n');
	ck_assert_ptr_nonnull(nl);
	ck_assert_ptr_null(strchr(nl + 1, '\n'));
	free(text);

	/* A good chunk logs nothing. */
	enc[100] ^= 1;
	text = decode_capturing_stderr(&f, seq, enc, elen, n, &r);
	ck_assert_int_eq(r, 0);
	ck_assert_str_eq(text, "");
	free(text);
	free(enc);
	free(in);
	filter_close(&f);
	cfg_clear();
}
END_TEST

/* ---- throughput (a measurement, not a test) --------------------------- */

static double
now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

#define BENCH_ROUNDS 3

struct bench_data {
	uint8_t *in;
	size_t total, chunk;
	uint8_t *enc;			/* n_chunks slots of bound bytes */
	size_t *enc_len;
	size_t bound;
	uint8_t *dec;
};

static void
bench_report(const char *what, const struct bench_data *d, double t_enc,
	     double t_dec)
{
	size_t i, n = d->total / d->chunk, stored = 0;
	double mib = (double)d->total / (1024.0 * 1024.0);

	for (i = 0; i < n; i++)
		stored += d->enc_len[i];
	fprintf(stderr, "bench %-14s compress %7.1f MiB/s  decompress %7.1f MiB/s  ratio %5.1f%%\n",
		what, mib / t_enc, mib / t_dec,
		100.0 * (double)stored / (double)d->total);
}

static void
bench_plugin(const char *name, struct bench_data *d, double *ret_enc,
	     double *ret_dec)
{
	size_t i, n = d->total / d->chunk, len;
	double t0, t_enc = 1e9, t_dec = 1e9;
	struct filter f;
	int round;

	if (!filter_open(name, &f)) {
		*ret_enc = *ret_dec = 0;
		return;
	}
	d->bound = f.ops->max_encoded_size(d->chunk);
	d->enc = malloc(n * d->bound);
	ck_assert_ptr_nonnull(d->enc);
	/* Fault the pages in first: the first touch is not the codec's. */
	memset(d->enc, 0, n * d->bound);
	memset(d->dec, 0, d->total);
	for (round = 0; round < BENCH_ROUNDS; round++) {
		t0 = now();
		for (i = 0; i < n; i++) {
			struct torpor_chunk_info info = chunk_info(i, d->chunk);

			ck_assert_int_eq(f.ops->encode(f.state, &info,
						       d->in + i * d->chunk,
						       d->chunk,
						       d->enc + i * d->bound,
						       d->bound,
						       &d->enc_len[i]), 0);
		}
		t_enc = fmin(t_enc, now() - t0);
		t0 = now();
		for (i = 0; i < n; i++) {
			struct torpor_chunk_info info = chunk_info(i, d->chunk);

			ck_assert_int_eq(f.ops->decode(f.state, &info,
						       d->enc + i * d->bound,
						       d->enc_len[i],
						       d->dec + i * d->chunk,
						       d->chunk, &len), 0);
		}
		t_dec = fmin(t_dec, now() - t0);
	}
	ck_assert_int_eq(memcmp(d->dec, d->in, d->total), 0);
	bench_report(name, d, t_enc, t_dec);
	free(d->enc);
	filter_close(&f);
	*ret_enc = t_enc;
	*ret_dec = t_dec;
}

/* The libraries alone, the way a program without torpor would call them
 * (looked up with dlsym: the test does not link the codecs). */
struct raw_codec {
	__typeof__(lzo1x_1_compress) *lzo_comp;
	__typeof__(lzo1x_decompress_safe) *lzo_decomp;
	__typeof__(LZ4_compress_default) *lz4_comp;
	__typeof__(LZ4_decompress_safe) *lz4_decomp;
	__typeof__(deflateReset) *dreset;
	__typeof__(inflateReset) *ireset;
	__typeof__(deflate) *def;
	__typeof__(inflate) *inf;
	z_stream zd, zi;
	uint8_t *wrk;
};

static void *
bench_sym(void *lib, const char *sym)
{
	void *p = dlsym(lib, sym);

	ck_assert_msg(p, "dlsym %s: %s", sym, dlerror());
	return p;
}

static void
raw_compress(const char *name, struct raw_codec *c, const uint8_t *in,
	     size_t n, uint8_t *out, size_t bound, size_t *ret_len)
{
	if (strcmp(name, "lzo") == 0) {
		lzo_uint l = bound;

		ck_assert_int_eq(c->lzo_comp(in, n, out, &l, c->wrk), 0);
		*ret_len = l;
	} else if (strcmp(name, "lz4") == 0) {
		int l = c->lz4_comp((const char *)in, (char *)out, (int)n,
				    (int)bound);

		ck_assert_int_gt(l, 0);
		*ret_len = (size_t)l;
	} else {
		c->dreset(&c->zd);
		c->zd.next_in = (Bytef *)in;
		c->zd.avail_in = (uInt)n;
		c->zd.next_out = out;
		c->zd.avail_out = (uInt)bound;
		ck_assert_int_eq(c->def(&c->zd, Z_FINISH), Z_STREAM_END);
		*ret_len = bound - c->zd.avail_out;
	}
}

static void
raw_decompress(const char *name, struct raw_codec *c, const uint8_t *in,
	       size_t in_len, uint8_t *out, size_t n)
{
	if (strcmp(name, "lzo") == 0) {
		lzo_uint l = n;

		ck_assert_int_eq(c->lzo_decomp(in, in_len, out, &l, NULL), 0);
		ck_assert_uint_eq(l, n);
	} else if (strcmp(name, "lz4") == 0) {
		ck_assert_int_eq(c->lz4_decomp((const char *)in, (char *)out,
					       (int)in_len, (int)n), (int)n);
	} else {
		c->ireset(&c->zi);
		c->zi.next_in = (Bytef *)in;
		c->zi.avail_in = (uInt)in_len;
		c->zi.next_out = out;
		c->zi.avail_out = (uInt)n;
		ck_assert_int_eq(c->inf(&c->zi, Z_FINISH), Z_STREAM_END);
	}
}

static void
bench_raw(const char *name, struct bench_data *d, double *ret_enc,
	  double *ret_dec)
{
	size_t i, n = d->total / d->chunk;
	size_t bound = d->chunk + d->chunk / 16 + 64 + 3 + 1024;
	struct raw_codec c = { .wrk = malloc(LZO1X_1_MEM_COMPRESS) };
	double t0, t_enc = 1e9, t_dec = 1e9;
	void *lib;
	char what[32];
	int round;

	d->enc = malloc(n * bound);
	ck_assert(d->enc && c.wrk);
	memset(d->enc, 0, n * bound);
	memset(d->dec, 0, d->total);
	if (strcmp(name, "lzo") == 0) {
		lib = dlopen("liblzo2.so.2", RTLD_NOW | RTLD_LOCAL);
		ck_assert_ptr_nonnull(lib);
		*(void **)&c.lzo_comp = bench_sym(lib, "lzo1x_1_compress");
		*(void **)&c.lzo_decomp = bench_sym(lib, "lzo1x_decompress_safe");
	} else if (strcmp(name, "lz4") == 0) {
		lib = dlopen("liblz4.so.1", RTLD_NOW | RTLD_LOCAL);
		ck_assert_ptr_nonnull(lib);
		*(void **)&c.lz4_comp = bench_sym(lib, "LZ4_compress_default");
		*(void **)&c.lz4_decomp = bench_sym(lib, "LZ4_decompress_safe");
	} else {
		__typeof__(deflateInit2_) *dinit;
		__typeof__(inflateInit2_) *iinit;

		lib = dlopen("libz.so.1", RTLD_NOW | RTLD_LOCAL);
		ck_assert_ptr_nonnull(lib);
		*(void **)&dinit = bench_sym(lib, "deflateInit2_");
		*(void **)&iinit = bench_sym(lib, "inflateInit2_");
		*(void **)&c.dreset = bench_sym(lib, "deflateReset");
		*(void **)&c.ireset = bench_sym(lib, "inflateReset");
		*(void **)&c.def = bench_sym(lib, "deflate");
		*(void **)&c.inf = bench_sym(lib, "inflate");
		ck_assert_int_eq(dinit(&c.zd, 1, Z_DEFLATED, 15, 8,
				       Z_DEFAULT_STRATEGY, ZLIB_VERSION,
				       (int)sizeof(z_stream)), Z_OK);
		ck_assert_int_eq(iinit(&c.zi, 15, ZLIB_VERSION,
				       (int)sizeof(z_stream)), Z_OK);
	}
	for (round = 0; round < BENCH_ROUNDS; round++) {
		t0 = now();
		for (i = 0; i < n; i++)
			raw_compress(name, &c, d->in + i * d->chunk, d->chunk,
				     d->enc + i * bound, bound, &d->enc_len[i]);
		t_enc = fmin(t_enc, now() - t0);
		t0 = now();
		for (i = 0; i < n; i++)
			raw_decompress(name, &c, d->enc + i * bound,
				       d->enc_len[i], d->dec + i * d->chunk,
				       d->chunk);
		t_dec = fmin(t_dec, now() - t0);
	}
	ck_assert_int_eq(memcmp(d->dec, d->in, d->total), 0);
	snprintf(what, sizeof(what), "%s (library)", name);
	bench_report(what, d, t_enc, t_dec);
	if (c.def) {
		int (*end)(z_streamp);

		*(void **)&end = bench_sym(lib, "deflateEnd");
		end(&c.zd);
		*(void **)&end = bench_sym(lib, "inflateEnd");
		end(&c.zi);
	}
	dlclose(lib);
	free(c.wrk);
	free(d->enc);
	*ret_enc = t_enc;
	*ret_dec = t_dec;
}

/* ---- lzo's blocks (format 2) ------------------------------------------ */

#define LZO_BLOCK	(32 * 1024)

/* The offsets of a format 2 chunk's block headers; returns the count. */
static size_t
lzo_blocks(const uint8_t *enc, size_t elen, size_t *off, size_t max)
{
	size_t pos = 1, n = 0;

	ck_assert_uint_eq(enc[0], 2);
	while (pos + 3 <= elen) {
		ck_assert_uint_lt(n, max);
		off[n++] = pos;
		pos += 3 + (enc[pos + 1] | (size_t)enc[pos + 2] << 8);
	}
	ck_assert_uint_eq(pos, elen);
	return n;
}

/* Whole blocks of memory that does not compress (random) between blocks
 * of text: block b is text when b % 3 == 1. */
static void
fill_lzo_mix(uint8_t *in, size_t n)
{
	size_t off, l;

	for (off = 0; off < n; off += l) {
		bool text = (off / LZO_BLOCK) % 3 == 1;

		l = n - off < LZO_BLOCK ? n - off : LZO_BLOCK;
		fill(in + off, l, text ? C_TEXT : C_RANDOM, off + 1);
	}
}

/* The random blocks are kept raw (the bytes as they were), the text ones
 * packed, and the chunk comes back whole. */
START_TEST(lzo_raw_blocks)
{
	static const size_t lens[] = { 32 * PAGE, 33 * PAGE + 7 };
	size_t li, b, n, nb, elen, dlen, off[8];
	uint8_t *in, *enc, *dec;
	struct filter f;

	if (!filter_open("lzo", &f))
		return;
	for (li = 0; li < 2; li++) {
		n = lens[li];
		in = alloc_guarded(n);
		fill_lzo_mix(in, n);
		enc = encode(&f, 1, in, n, &elen);
		nb = lzo_blocks(enc, elen, off, 8);
		ck_assert_uint_eq(nb, (n + LZO_BLOCK - 1) / LZO_BLOCK);
		for (b = 0; b < nb; b++) {
			size_t l = n - b * LZO_BLOCK < LZO_BLOCK ?
				   n - b * LZO_BLOCK : LZO_BLOCK;
			size_t blen = enc[off[b] + 1] |
				      (size_t)enc[off[b] + 2] << 8;

			if (b % 3 == 1) {
				ck_assert_msg(enc[off[b]] == 1 && blen < l / 2,
					      "text block %zu: kind %u, %zu bytes",
					      b, enc[off[b]], blen);
				continue;
			}
			ck_assert_msg(enc[off[b]] == 0 && blen == l,
				      "random block %zu: kind %u, %zu bytes", b,
				      enc[off[b]], blen);
			ck_assert_int_eq(memcmp(enc + off[b] + 3,
						in + b * LZO_BLOCK, l), 0);
		}
		ck_assert_int_eq(decode(&f, 1, enc, elen, n, &dec, &dlen), 0);
		ck_assert_uint_eq(dlen, n);
		ck_assert_int_eq(memcmp(dec, in, n), 0);
		free(dec);
		free(enc);
		free(in);
	}
	filter_close(&f);
}
END_TEST

/* One damage to a block header of the mix of lzo_raw_blocks (33 pages
 * and 7 bytes: raw, packed, raw, raw, packed short). */
struct lzo_damage {
	size_t block;		/* whose header */
	int field;		/* 0: kind byte, 1: length */
	long value;		/* the new kind or length; -1: length - 1,
				 * -2: length + 1 */
	const char *said;
};

static const struct lzo_damage lzo_damages[] = {
	{ 0, 0, 7, "chunk 7, block 0: unknown block kind (7)" },
	{ 2, 0, 0x80, "chunk 7, block 2: unknown block kind (128)" },
	{ 0, 0, 1, "chunk 7, block 0: packed block does not decode" },
	{ 1, 0, 0, "chunk 7, block 2: block after a short block" },
	{ 0, 1, -2, "chunk 7, block 0: raw block longer than the room left "
		    "(32769)" },
	{ 2, 1, -1, "chunk 7, block 3: block after a short block (32767)" },
	{ 3, 1, 0, "chunk 7, block 3: empty block" },
	{ 4, 1, 0xffff, "chunk 7, block 4: block length past the chunk "
			"(65535)" },
	{ 1, 1, -1, "chunk 7, block 1: packed block does not decode" },
};

/* lzo opened, and the mix of lzo_raw_blocks of n bytes in *ret_in and
 * encoded as chunk 7 in *ret_enc; false when lzo is not built. */
static bool
lzo_mix_encoded(struct filter *f, size_t n, uint8_t **ret_in,
		uint8_t **ret_enc, size_t *ret_elen)
{
	if (!filter_open("lzo", f))
		return false;
	*ret_in = alloc_guarded(n);
	fill_lzo_mix(*ret_in, n);
	*ret_enc = encode(f, 7, *ret_in, n, ret_elen);
	return true;
}

/* A corrupt block kind or length is refused, saying which block and why;
 * so are blocks past the chunk's size and a chunk with none. */
START_TEST(lzo_bad_blocks)
{
	const struct lzo_damage *d = &lzo_damages[_i];
	const size_t n = 33 * PAGE + 7;
	uint8_t *in, *enc, *bad;
	size_t elen, off[8], len;
	struct filter f;

	if (!lzo_mix_encoded(&f, n, &in, &enc, &elen))
		return;
	ck_assert_uint_eq(lzo_blocks(enc, elen, off, 8), 5);
	bad = alloc_guarded(elen);
	memcpy(bad, enc, elen);
	if (d->field == 0) {
		bad[off[d->block]] = (uint8_t)d->value;
	} else {
		len = bad[off[d->block] + 1] |
		      (size_t)bad[off[d->block] + 2] << 8;
		len = d->value == -1 ? len - 1 :
		      d->value == -2 ? len + 1 : (size_t)d->value;
		bad[off[d->block] + 1] = (uint8_t)len;
		bad[off[d->block] + 2] = (uint8_t)(len >> 8);
	}
	log_last[0] = 0;
	ck_assert_int_eq(decode(&f, 7, bad, elen, n, NULL, NULL), -EBADMSG);
	ck_assert_msg(strstr(log_last, d->said), "said '%s', not '%s'",
		      log_last, d->said);
	free(bad);
	free(enc);
	free(in);
	filter_close(&f);
}
END_TEST

/* Blocks past the size the chunk decodes to, a block header cut short and
 * a chunk of no block are refused too. */
START_TEST(lzo_bad_chunk_ends)
{
	const size_t n = 32 * PAGE;
	uint8_t *in, *enc, *big;
	static const uint8_t none[] = { 2 };
	size_t elen;
	struct filter f;

	if (!lzo_mix_encoded(&f, n, &in, &enc, &elen))
		return;
	/* One more raw block of a byte. */
	big = alloc_guarded(elen + 4);
	memcpy(big, enc, elen);
	memcpy(big + elen, "\0\1\0x", 4);
	ck_assert_int_eq(decode(&f, 7, big, elen + 4, n, NULL, NULL), -EBADMSG);
	ck_assert_str_eq(log_last, "chunk 7, block 4: block past the chunk's "
				   "size (131072)");
	/* Two bytes of a header. */
	ck_assert_int_eq(decode(&f, 7, big, elen + 2, n, NULL, NULL), -EBADMSG);
	ck_assert_str_eq(log_last, "chunk 7, block 4: block header cut (2)");
	ck_assert_int_eq(decode(&f, 7, none, 1, n, NULL, NULL), -EBADMSG);
	ck_assert_str_eq(log_last, "chunk 7, block 0: no block (0)");
	free(big);
	free(enc);
	free(in);
	filter_close(&f);
}
END_TEST

/* A format 1 chunk (tag 1, the whole chunk through LZO1X-1), as images
 * written before the blocks hold, still decodes; its version loads. */
START_TEST(lzo_format1)
{
	const size_t n = 32 * PAGE;
	size_t bound = n + n / 16 + 64 + 3, dlen;
	uint8_t *in = alloc_guarded(n), *enc = alloc_guarded(1 + bound), *dec;
	struct raw_codec c = { .wrk = malloc(LZO1X_1_MEM_COMPRESS) };
	static const uint8_t v1[] = { 1 }, v0[] = { 0 };
	struct filter f;
	void *lib;

	if (!filter_open("lzo", &f)) {
		free(in);
		free(enc);
		free(c.wrk);
		return;
	}
	lib = dlopen("liblzo2.so.2", RTLD_NOW | RTLD_LOCAL);
	ck_assert_ptr_nonnull(lib);
	*(void **)&c.lzo_comp = bench_sym(lib, "lzo1x_1_compress");
	fill(in, n, C_MIXED, 11);
	raw_compress("lzo", &c, in, n, enc + 1, bound, &dlen);
	enc[0] = 1;
	ck_assert_int_eq(decode(&f, 3, enc, 1 + dlen, n, &dec, &dlen), 0);
	ck_assert_uint_eq(dlen, n);
	ck_assert_int_eq(memcmp(dec, in, n), 0);
	ck_assert_int_eq(f.p->load_config(v1, 1), 0);
	ck_assert_int_eq(f.p->load_config(v0, 1), -EBADMSG);
	dlclose(lib);
	free(dec);
	free(c.wrk);
	free(enc);
	free(in);
	filter_close(&f);
}
END_TEST

START_TEST(throughput)
{
	static const char *const bench_names[] = {
		"lzo", "lz4", "zlib", "checksum",
	};
	struct bench_data d = { .chunk = 32 * PAGE };
	double pe, pd, re, rd;
	size_t i;

	d.total = 64u << 20;
	d.in = malloc(d.total);
	d.dec = malloc(d.total);
	d.enc_len = calloc(d.total / d.chunk, sizeof(size_t));
	ck_assert(d.in && d.dec && d.enc_len);
	fill(d.in, d.total, C_MIXED, 77);
	for (i = 0; i < 4; i++) {
		cfg_clear();
		bench_plugin(bench_names[i], &d, &pe, &pd);
		if (i == 3) {
			cfg_set("checksum", "algorithm", "sha256");
			fprintf(stderr, "(checksum: crc32c above, sha256 below)\n");
			bench_plugin(bench_names[i], &d, &pe, &pd);
			cfg_clear();
			break;
		}
		if (pe == 0)
			continue;
		bench_raw(bench_names[i], &d, &re, &rd);
		fprintf(stderr, "bench %-14s time plugin/library: compress %.3f, decompress %.3f\n",
			bench_names[i], pe / re, pd / rd);
	}
	free(d.in);
	free(d.dec);
	free(d.enc_len);
}
END_TEST

Suite *filters_suite(void);
Suite *filters_bench_suite(void);

static void
pin_libgcrypt(void)
{
	/*
	 * The core links libgcrypt, so it stays loaded across a plugin's
	 * dlclose() in torpor; pin it here too, or unloading checksum.so
	 * unloads libgcrypt with its initialisation, which valgrind then
	 * reports as leaked.  Never closed, like the core's.
	 */
	if (!dlopen("libgcrypt.so.20", RTLD_NOW | RTLD_GLOBAL | RTLD_NODELETE))
		fprintf(stderr, "cannot pin libgcrypt: %s\n", dlerror());
}

Suite *
filters_suite(void)
{
	Suite *s = suite_create("filters");
	TCase *tc;

	pin_libgcrypt();
	tc = tcase_create("all");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, roundtrip, 0, N_FILTERS);
	tcase_add_loop_test(tc, truncated, 0, N_FILTERS);
	tcase_add_loop_test(tc, flipped_byte, 0, N_FILTERS);
	tcase_add_loop_test(tc, output_too_small, 0, N_FILTERS);
	tcase_add_loop_test(tc, encode_needs_bound, 0, N_FILTERS);
	tcase_add_loop_test(tc, config_blob, 0, N_FILTERS);
	tcase_add_loop_test(tc, debug_info, 0, N_FILTERS);
	tcase_add_loop_test(tc, threads, 0, N_FILTERS);
	suite_add_tcase(s, tc);

	tc = tcase_create("compressors");
	tcase_set_timeout(tc, 120);
	tcase_add_loop_test(tc, bad_tag, 0, N_COMPRESSORS);
	tcase_add_loop_test(tc, incompressible_stored, 0, N_COMPRESSORS);
	suite_add_tcase(s, tc);

	tc = tcase_create("lzo");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, lzo_raw_blocks);
	tcase_add_loop_test(tc, lzo_bad_blocks, 0,
			    sizeof(lzo_damages) / sizeof(lzo_damages[0]));
	tcase_add_test(tc, lzo_bad_chunk_ends);
	tcase_add_test(tc, lzo_format1);
	suite_add_tcase(s, tc);

	tc = tcase_create("zlib");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, zlib_level);
	tcase_add_test(tc, zlib_bad_level);
	tcase_add_test(tc, zlib_config_roundtrip);
	suite_add_tcase(s, tc);

	tc = tcase_create("checksum");
	tcase_set_timeout(tc, 60);
	tcase_add_loop_test(tc, checksum_algorithms, 0, 2);
	tcase_add_test(tc, checksum_image_algorithm);
	tcase_add_loop_test(tc, checksum_message, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

Suite *
filters_bench_suite(void)
{
	Suite *s = suite_create("filters-bench");
	TCase *tc;

	pin_libgcrypt();
	tc = tcase_create("throughput");
	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, throughput);
	suite_add_tcase(s, tc);
	return s;
}
