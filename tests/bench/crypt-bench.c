/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Benchmark behind tests/bench/crypt-bench.sh: the built lzo and crypt
 * plugins, loaded as the core loads them, run over the same simulated
 * image chunk by chunk on one thread: lzo alone, then lzo + crypt (keyfile
 * mode), alternated three times, best of each reported.  Then raw
 * libgcrypt AEAD throughput on 64 MiB and the default Argon2id time.
 */
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <gcrypt.h>

#include <torpor/plugin.h>
#include <torpor/plugin-util.h>

#include "sim-pages.h"
#include "snapshot-internal.h"
#include "snapshot-sim.h"

#include "crypt-key.h"
#include "fake-host.h"

#define PAGE 4096u
#define CHUNK_PAGES 32u
#define CHUNK (PAGE * CHUNK_PAGES)

static const char *keyfile;

static void
b_log(int level, const char *plugin, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "%s: ", plugin);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}

static const char *
b_config_get(const char *section, const char *key)
{
	if (strcmp(section, "crypt") == 0 && strcmp(key, "mode") == 0)
		return "keyfile";
	if (strcmp(section, "crypt") == 0 && strcmp(key, "key_file") == 0)
		return keyfile;
	return NULL;
}

static void *
b_secure_alloc(size_t size)
{
	return gcry_calloc_secure(1, size);
}

static void
b_secure_free(void *p, size_t size)
{
	if (p)
		explicit_bzero(p, size);
	gcry_free(p);
}

static const struct torpor_host host_methods = {
	.log = b_log,
	.config_get = b_config_get,
	.secure_alloc = b_secure_alloc,
	.secure_free = b_secure_free,
};

/* The methods above; every other one aborts (fake-host.h). */
static struct torpor_host host;

static double
now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec / 1e9;
}

static const struct torpor_filter *
load(const char *dir, const char *name)
{
	torpor_plugin_entry_fn entry;
	const struct torpor_plugin *p;
	char path[1024];
	void *dl;

	snprintf(path, sizeof(path), "%s/%s.so", dir, name);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!dl) {
		fprintf(stderr, "%s\n", dlerror());
		exit(1);
	}
	*(void **)&entry = dlsym(dl, TORPOR_PLUGIN_ENTRY_NAME);
	p = entry();
	if (p->load && p->load(fake_host_init(&host, &host_methods)) < 0)
		exit(1);
	if (p->initialise && p->initialise(1) < 0)
		exit(1);
	return (const struct torpor_filter *)p;
}

struct run {
	double seconds;
	uint64_t stored;
};

static struct run
run_chain(const struct torpor_filter *lzo, const struct torpor_filter *crypt,
	  const uint8_t *image, uint64_t chunks, uint8_t *mid, size_t mid_size,
	  uint8_t *out, size_t out_size)
{
	void *ls = NULL, *cs = NULL;
	struct run r = { 0 };
	double t0;

	if (lzo->thread_init(&ls) < 0 ||
	    (crypt && crypt->thread_init(&cs) < 0))
		exit(1);
	t0 = now();
	for (uint64_t c = 0; c < chunks; c++) {
		struct torpor_chunk_info ci = {
			.sequence = c,
			.flags = c + 1 == chunks ? TORPOR_CHUNK_LAST : 0,
			.raw_len = CHUNK,
		};
		size_t n, m;

		if (lzo->encode(ls, &ci, image + c * CHUNK, CHUNK, mid,
					mid_size, &n) < 0)
			exit(1);
		if (crypt) {
			if (crypt->encode(cs, &ci, mid, n, out,
						  out_size, &m) < 0)
				exit(1);
			n = m;
		}
		r.stored += n;
	}
	r.seconds = now() - t0;
	lzo->thread_free(ls);
	if (crypt)
		crypt->thread_free(cs);
	return r;
}

static void
aead_speed(const char *name, int algo, int mode)
{
	size_t n = 64u << 20, chunk = CHUNK;
	uint8_t *buf = malloc(n), key[32] = { 1 }, nonce[12] = { 0 }, tag[16];
	gcry_cipher_hd_t h;
	double best = 1e9;

	if (!buf || gcry_cipher_open(&h, algo, mode, 0) ||
	    gcry_cipher_setkey(h, key, 32))
		exit(1);
	for (size_t i = 0; i < n; i++)
		buf[i] = (uint8_t)(i * 131);
	for (int rep = 0; rep < 3; rep++) {
		double t0 = now(), t;

		for (size_t off = 0; off < n; off += chunk) {
			torpor_put_be64(nonce + 4, off / chunk);
			gcry_cipher_setiv(h, nonce, 12);
			gcry_cipher_authenticate(h, nonce, 12);
			gcry_cipher_final(h);
			gcry_cipher_encrypt(h, buf + off, chunk, NULL, 0);
			gcry_cipher_gettag(h, tag, 16);
		}
		t = now() - t0;
		if (t < best)
			best = t;
	}
	printf("  %-20s %7.0f MiB/s (64 MiB in 128 KiB chunks, best of 3)\n",
	       name, 64 / best);
	gcry_cipher_close(h);
	free(buf);
}

int
main(int argc, char **argv)
{
	const struct torpor_filter *lzo, *crypt;
	uint64_t pages, chunks;
	uint8_t *image, *mid, *out, uuid[16] = { 0 }, salt[16] = { 0 }, k[32];
	struct run best_l = { 1e9, 0 }, best_c = { 1e9, 0 };
	struct torpor_image_info info = { 0 };
	size_t mid_size, out_size;
	double t0;

	if (argc != 4) {
		fprintf(stderr, "usage: %s PLUGIN_DIR KEYFILE SIZE_MIB\n", argv[0]);
		return 2;
	}
	keyfile = argv[2];
	pages = strtoull(argv[3], NULL, 10) * (1u << 20) / PAGE;
	chunks = pages / CHUNK_PAGES;
	image = malloc(chunks * CHUNK);
	if (!image)
		return 1;
	for (uint64_t p = 0; p < chunks * CHUNK_PAGES; p++)
		sim_generate_page(1, p + 1, image + p * PAGE);

	crypt = load(argv[1], "crypt");	/* first: it initialises libgcrypt */
	lzo = load(argv[1], "lzo");
	info.binding = uuid;
	info.binding_len = sizeof(uuid);
	info.page_size = PAGE;
	info.chunk_pages = CHUNK_PAGES;
	info.page_count = chunks * CHUNK_PAGES;
	info.chunk_count = chunks;
	if (crypt->start_stream(&info) < 0)
		return 1;
	mid_size = lzo->max_encoded_size(CHUNK);
	out_size = crypt->max_encoded_size(mid_size);
	mid = malloc(mid_size);
	out = malloc(out_size);
	if (!mid || !out)
		return 1;

	for (int rep = 0; rep < 3; rep++) {
		struct run l = run_chain(lzo, NULL, image, chunks, mid, mid_size,
					 out, out_size);
		struct run c = run_chain(lzo, crypt, image, chunks, mid,
					 mid_size, out, out_size);

		if (l.seconds < best_l.seconds)
			best_l = l;
		if (c.seconds < best_c.seconds)
			best_c = c;
	}
	printf("crypt-bench: %llu MiB simulated image, %u-page chunks, one thread, best of 3\n",
	       (unsigned long long)(chunks * CHUNK >> 20), CHUNK_PAGES);
	printf("  lzo          %7.0f MiB/s  stored %llu MiB (%.0f%%)\n",
	       (double)(chunks * CHUNK >> 20) / best_l.seconds,
	       (unsigned long long)(best_l.stored >> 20),
	       100.0 * (double)best_l.stored / (double)(chunks * CHUNK));
	printf("  lzo + crypt  %7.0f MiB/s  stored %llu MiB (+%llu bytes of tags)\n",
	       (double)(chunks * CHUNK >> 20) / best_c.seconds,
	       (unsigned long long)(best_c.stored >> 20),
	       (unsigned long long)(best_c.stored - best_l.stored));
	printf("  crypt costs  %.1f %% of lzo's throughput\n",
	       100.0 * (1.0 - best_l.seconds / best_c.seconds));

	printf("AEAD in libgcrypt %s:\n", gcry_check_version(NULL));
	aead_speed("AES-256-GCM", GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_GCM);
	aead_speed("ChaCha20-Poly1305", GCRY_CIPHER_CHACHA20,
		   GCRY_CIPHER_MODE_POLY1305);

	t0 = now();
	if (crypt_argon2id("bench", 5, salt, CRYPT_ARGON2_PASSES,
			   CRYPT_ARGON2_MEMORY_KIB, CRYPT_ARGON2_PARALLEL, k) < 0)
		return 1;
	printf("Argon2id unlock, keygen defaults (m=%u MiB, t=%u, p=%u): %.2f s\n",
	       CRYPT_ARGON2_MEMORY_KIB / 1024, CRYPT_ARGON2_PASSES,
	       CRYPT_ARGON2_PARALLEL, now() - t0);
	return 0;
}
