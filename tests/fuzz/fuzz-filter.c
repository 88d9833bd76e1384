/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Fuzz one filter's decode(), the filter named by FUZZ_PLUGIN and loaded
 * from FUZZ_PLUGIN_PATH as the loader loads it (dlopen, the one entry
 * point, load() with the core's host services, initialise(1), the image's
 * start_stream(), a thread state).  crypt runs in keyfile mode under a
 * fixed key.
 *
 * Input: chunk sequence (2 bytes LE), flags (1 byte, bit 0: last), pages
 * in the chunk (1 byte, taken modulo FUZZ_CHUNK_PAGES, plus one), then the
 * stored bytes handed to decode().  decode() must refuse or give at most
 * the bound it was handed, never writing past it.  The same bytes are also
 * taken as a chunk of pages: encode() then decode() must give them back.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <torpor/plugin.h>

#include "config.h"
#include "fuzz.h"
#include "host.h"
#include "log.h"
#include "registry.h"

#define FUZZ_CHUNK_PAGES 4
#define FUZZ_PAGE 4096
#define FUZZ_RAW_MAX (FUZZ_CHUNK_PAGES * FUZZ_PAGE)
#define FUZZ_INFO_SIZE 4
#define FUZZ_CHUNKS 50		/* in the image: sequences 0-49 */

static const struct torpor_plugin *plugin;
static const struct torpor_filter *filter;	/* the struct plugin begins */
static void *state;
static struct registry reg;
static struct plugin_entry entry_in_reg;

/* A file descriptor holding text, for the readers that take a path. */
static int
text_fd(const char *name, const void *text, size_t len)
{
	int fd = memfd_create(name, MFD_CLOEXEC);

	if (fd < 0 || write(fd, text, len) != (ssize_t)len)
		abort();
	return fd;
}

/* The configuration: crypt's key file is a fixed key. */
static void
configure(void)
{
	static const uint8_t key[32] = "torpor fuzz key, never a secret";
	struct torpor_config *c;
	char text[256], path[64];
	int key_fd = text_fd("fuzz-key", key, sizeof(key)), fd;

	if (fchmod(key_fd, 0600) < 0)
		abort();
	snprintf(text, sizeof(text),
		 "[torpor]\nfilters = %s\n\n[crypt]\nmode = keyfile\nkey_file = /proc/self/fd/%d\n",
		 FUZZ_PLUGIN, key_fd);
	fd = text_fd("fuzz-config", text, strlen(text));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (config_load(path, false, &c) < 0)
		abort();
	host_set_config(c);
}

static void
set_up(void)
{
	static const uint8_t binding[] = "fuzz image binding";
	struct torpor_image_info info = {
		.struct_size = sizeof(info),
		.uuid = { 0x74, 0x6f, 0x72, 0x70, 0x6f, 0x72 },
		.page_size = FUZZ_PAGE,
		.chunk_pages = FUZZ_CHUNK_PAGES,
		.page_count = FUZZ_CHUNKS * FUZZ_CHUNK_PAGES,
		.chunk_count = FUZZ_CHUNKS,
		.binding = binding,
		.binding_len = sizeof(binding),
	};
	const struct torpor_plugin *(*entry)(void);
	void *h;

	log_set_max_level(getenv("FUZZ_VERBOSE") ? TORPOR_LOG_DEBUG : 0);
	if (host_init_crypto() < 0)
		abort();
	configure();
	h = dlopen(FUZZ_PLUGIN_PATH, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "%s\n", dlerror());
		abort();
	}
	entry = (const struct torpor_plugin *(*)(void))dlsym(h, TORPOR_PLUGIN_ENTRY_NAME);
	if (!entry || !(plugin = entry()) || plugin->type != TORPOR_PLUGIN_FILTER)
		abort();
	filter = (const struct torpor_filter *)plugin;
	/* The host finds a plugin's key declarations in the registry. */
	registry_init(&reg);
	entry_in_reg.filter = *filter;
	if (registry_register(&reg, &entry_in_reg) < 0)
		abort();
	host_set_registry(&reg);
	if ((plugin->load && plugin->load(host_get()) < 0) ||
	    (plugin->initialise && plugin->initialise(1) < 0) ||
	    (filter->start_stream && filter->start_stream(&info) < 0) ||
	    (filter->thread_init && filter->thread_init(&state) < 0))
		abort();
}

static void
chunk_info(const uint8_t *data, struct torpor_chunk_info *info)
{
	memset(info, 0, sizeof(*info));
	info->struct_size = sizeof(*info);
	info->sequence = (uint64_t)data[0] | (uint64_t)data[1] << 8;
	info->flags = data[2] & TORPOR_CHUNK_LAST;
	info->raw_len = (uint32_t)(data[3] % FUZZ_CHUNK_PAGES + 1) * FUZZ_PAGE;
}

/* decode() of untrusted bytes, into exactly the bound it is promised. */
static void
decode_stored(const struct torpor_chunk_info *info, const uint8_t *in,
	      size_t len)
{
	uint8_t *copy = malloc(len ? len : 1), *out = malloc(FUZZ_RAW_MAX);
	size_t out_len = 0;
	int r;

	if (!copy || !out)
		abort();
	memcpy(copy, in, len);
	r = filter->decode(state, info, copy, len, out, FUZZ_RAW_MAX, &out_len);
	if (r == 0 && out_len > FUZZ_RAW_MAX)
		abort();
	if (r > 0)
		abort();
	free(out);
	free(copy);
}

/* The bytes as a chunk of pages: encode, then decode gives them back.
 * The chunk is one the image can hold (crypt checks its place). */
static void
round_trip(const struct torpor_chunk_info *fuzzed, const uint8_t *in,
	   size_t len)
{
	struct torpor_chunk_info ci = *fuzzed, *info = &ci;
	size_t bound, enc_len = 0, dec_len = 0;
	uint8_t *enc, *dec;

	if (len == 0)
		return;
	if (len > FUZZ_RAW_MAX)
		len = FUZZ_RAW_MAX;
	ci.sequence %= FUZZ_CHUNKS;
	ci.flags = ci.sequence + 1 == FUZZ_CHUNKS ? TORPOR_CHUNK_LAST : 0;
	bound = filter->max_encoded_size(len);
	enc = malloc(bound ? bound : 1);
	dec = malloc(FUZZ_RAW_MAX);
	if (!enc || !dec)
		abort();
	if (filter->encode(state, info, in, len, enc, bound, &enc_len) < 0 ||
	    enc_len > bound)
		abort();
	if (filter->decode(state, info, enc, enc_len, dec, FUZZ_RAW_MAX,
			   &dec_len) < 0 ||
	    dec_len != len || memcmp(dec, in, len) != 0)
		abort();
	free(dec);
	free(enc);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct torpor_chunk_info info;

	if (!plugin)
		set_up();
	if (size < FUZZ_INFO_SIZE)
		return 0;
	chunk_info(data, &info);
	decode_stored(&info, data + FUZZ_INFO_SIZE, size - FUZZ_INFO_SIZE);
	round_trip(&info, data + FUZZ_INFO_SIZE, size - FUZZ_INFO_SIZE);
	return 0;
}

/* Pages of a few kinds, as memory holds them. */
static void
sample_pages(unsigned int kind, uint8_t *p, size_t len)
{
	uint32_t x = 0x9e3779b9u * (kind + 1);

	for (size_t i = 0; i < len; i++) {
		switch (kind) {
		case 0:
			p[i] = 0;
			break;
		case 1:
			p[i] = (uint8_t)"torpor hibernates "[i % 18];
			break;
		case 2:
			p[i] = i % 64 < 8 ? (uint8_t)(i >> 6) : 0;
			break;
		default:
			x ^= x << 13;
			x ^= x >> 17;
			x ^= x << 5;
			p[i] = (uint8_t)x;
			break;
		}
	}
}

/* Seeds: sample chunks as this filter encodes them, with their info. */
size_t
fuzz_seed(unsigned int i, uint8_t *buf, size_t size)
{
	uint8_t pages[FUZZ_RAW_MAX];
	struct torpor_chunk_info info;
	size_t len = 0;

	if (i >= 8 || size < FUZZ_INFO_SIZE + FUZZ_RAW_MAX + 64)
		return 0;
	if (!plugin)
		set_up();
	buf[0] = (uint8_t)(i * 7);	/* the last is chunk 49, marked last */
	buf[1] = 0;
	buf[2] = i == 7;
	buf[3] = (uint8_t)(i % FUZZ_CHUNK_PAGES);
	chunk_info(buf, &info);
	sample_pages(i % 4, pages, info.raw_len);
	if (filter->encode(state, &info, pages, info.raw_len,
			   buf + FUZZ_INFO_SIZE, size - FUZZ_INFO_SIZE, &len) < 0)
		abort();
	return FUZZ_INFO_SIZE + len;
}
