/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The crypt filter, loaded from $TORPOR_BUILD_PLUGINDIR/crypt.so with a test
 * host (configuration from a table, scripted passphrases), and torpor
 * keygen, called directly.
 */
#include <check.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gcrypt.h>

#include <torpor/plugin.h>
#include <torpor/plugin-util.h>

#include "crypt-key.h"
#include "fake-host.h"
/* torpor keygen, linked from its library (which also brings the
 * LeakSanitizer suppression for libgcrypt). */
#include "keygen.h"

#define PAGE 4096u
#define CHUNK_PAGES 4u
#define N_CHUNKS 6u
#define CHUNK_BYTES (PAGE * CHUNK_PAGES)
#define MARKER "TORPOR-SECRET-MARKER-7f3a9c"
#define PASSPHRASE "correct horse battery staple"

/* ---- the test host ---- */

struct conf_entry {
	char key[32];
	char value[512];
};

static struct conf_entry conf_table[8];
static const char *answers[8];
static int n_answers, asked;
static char log_text[16384];

static void
t_log(int level, const char *plugin, const char *fmt, ...)
{
	char line[1024];
	va_list ap;
	size_t used = strlen(log_text);

	va_start(ap, fmt);
	vsnprintf(line, sizeof(line), fmt, ap);
	va_end(ap);
	fprintf(stderr, "[%d] %s: %s\n", level, plugin, line);
	snprintf(log_text + used, sizeof(log_text) - used, "%s\n", line);
}

static const char *
t_config_get(const char *section, const char *key)
{
	if (strcmp(section, "crypt") != 0)
		return NULL;
	for (size_t i = 0; i < sizeof(conf_table) / sizeof(conf_table[0]); i++)
		if (strcmp(conf_table[i].key, key) == 0)
			return conf_table[i].value;
	return NULL;
}

static void
set_conf(const char *key, const char *value)
{
	size_t i;

	for (i = 0; i < sizeof(conf_table) / sizeof(conf_table[0]); i++)
		if (!conf_table[i].key[0] || strcmp(conf_table[i].key, key) == 0)
			break;
	ck_assert_uint_lt(i, sizeof(conf_table) / sizeof(conf_table[0]));
	snprintf(conf_table[i].key, sizeof(conf_table[i].key), "%s", key);
	snprintf(conf_table[i].value, sizeof(conf_table[i].value), "%s", value);
}

static void *
t_secure_alloc(size_t size)
{
	return gcry_calloc_secure(1, size);
}

static void
t_secure_free(void *p, size_t size)
{
	if (!p)
		return;
	explicit_bzero(p, size);
	gcry_free(p);
}

static int
t_ask_passphrase(const char *prompt, char *buf, size_t size)
{
	const char *a;

	ck_assert_ptr_nonnull(prompt);
	if (asked >= n_answers)
		return -ENOKEY;
	a = answers[asked++];
	ck_assert_uint_lt(strlen(a), size);
	strcpy(buf, a);
	return (int)strlen(a);
}

static int
t_snapshot_kind(void)
{
	return TORPOR_SNAPSHOT_SIM;
}

static const struct torpor_host test_methods = {
	.log = t_log,
	.config_get = t_config_get,
	.secure_alloc = t_secure_alloc,
	.secure_free = t_secure_free,
	.ask_passphrase = t_ask_passphrase,
	.snapshot_kind = t_snapshot_kind,
};

/* The methods above; every other one aborts (fake-host.h). */
static struct torpor_host test_host;

static void
script(int n, ...)
{
	va_list ap;

	va_start(ap, n);
	for (int i = 0; i < n; i++)
		answers[i] = va_arg(ap, const char *);
	va_end(ap);
	n_answers = n;
	asked = 0;
}

/* ---- the plugin ---- */

static void *dl;
static const struct torpor_plugin *P;
static const struct torpor_filter *F;	/* the struct P begins */
static char tmpdir[64];

static const struct torpor_plugin *
load_plugin(void)
{
	const char *dir = getenv("TORPOR_BUILD_PLUGINDIR");
	torpor_plugin_entry_fn entry;
	char path[512];

	ck_assert_msg(dir != NULL, "TORPOR_BUILD_PLUGINDIR is not set");
	snprintf(path, sizeof(path), "%s/crypt.so", dir);
	dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	ck_assert_msg(dl != NULL, "dlopen %s: %s", path, dlerror());
	*(void **)&entry = dlsym(dl, TORPOR_PLUGIN_ENTRY_NAME);
	ck_assert_ptr_nonnull(entry);
	P = entry();
	F = (const struct torpor_filter *)P;
	ck_assert_uint_eq(P->abi_version, TORPOR_PLUGIN_ABI_VERSION);
	ck_assert_int_eq(P->type, TORPOR_PLUGIN_FILTER);
	ck_assert_str_eq(P->name, "crypt");
	ck_assert_int_eq(P->load(fake_host_init(&test_host, &test_methods)), 0);
	return P;
}

static void
setup(void)
{
	memset(conf_table, 0, sizeof(conf_table));
	log_text[0] = '\0';
	n_answers = asked = 0;
	snprintf(tmpdir, sizeof(tmpdir), "/tmp/torpor-crypt-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
	/* The plugin is the first user of libgcrypt in this process. */
	load_plugin();
}

static void
teardown(void)
{
	char cmd[512];

	if (P && P->unload)
		P->unload();
	if (dl)
		dlclose(dl);
	dl = NULL;
	P = NULL;
	F = NULL;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", tmpdir);
	if (system(cmd) != 0)
		fprintf(stderr, "could not remove %s\n", tmpdir);
}

static void
path_in_tmp(char *buf, size_t size, const char *name)
{
	snprintf(buf, size, "%s/%s", tmpdir, name);
}

/* ---- keys ---- */

static void
write_text(const char *path, const char *text, mode_t mode)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, mode);

	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	ck_assert_int_eq(chmod(path, mode), 0);
}

static int
keygen(const char *out, const char *pass_text, bool force, bool keyfile)
{
	char pf[512];
	char *argv[16];
	int argc = 0;

	path_in_tmp(pf, sizeof(pf), "passphrase");
	argv[argc++] = (char *)"keygen";
	if (!keyfile) {
		write_text(pf, pass_text, 0600);
		argv[argc++] = (char *)"--passphrase-file";
		argv[argc++] = pf;
		/* Small Argon2id parameters keep the tests fast. */
		argv[argc++] = (char *)"--kdf-memory";
		argv[argc++] = (char *)"64";
		argv[argc++] = (char *)"--kdf-passes";
		argv[argc++] = (char *)"1";
	} else
		argv[argc++] = (char *)"--keyfile";
	argv[argc++] = (char *)"--output";
	argv[argc++] = (char *)out;
	if (force)
		argv[argc++] = (char *)"--force";
	argv[argc] = NULL;
	return torpor_keygen_main(argc, argv);
}

static void
use_sealed_keys(void)
{
	char p[512];

	ck_assert_int_eq(keygen(tmpdir, PASSPHRASE "\n", false, false), 0);
	set_conf("mode", "sealed");
	path_in_tmp(p, sizeof(p), "crypt.pub");
	set_conf("public_key", p);
	path_in_tmp(p, sizeof(p), "crypt.key");
	set_conf("private_key", p);
}

static void
use_keyfile(void)
{
	char p[512];

	ck_assert_int_eq(keygen(tmpdir, NULL, false, true), 0);
	set_conf("mode", "keyfile");
	path_in_tmp(p, sizeof(p), "crypt.keyfile");
	set_conf("key_file", p);
}

/* ---- images ---- */

struct image {
	uint8_t uuid[16];
	char release[65];
	uint32_t page_size;
	uint64_t page_count;
	uint32_t chunk_pages;
	uint64_t chunk_count;
	char chain[3][32];
	uint8_t binding[256];
	size_t binding_len;
	struct torpor_image_info info;
};

static void
image_init(struct image *im)
{
	memset(im, 0, sizeof(*im));
	for (int i = 0; i < 16; i++)
		im->uuid[i] = (uint8_t)(0xa0 + i);
	snprintf(im->release, sizeof(im->release), "6.1.0-test");
	im->page_size = PAGE;
	im->chunk_pages = CHUNK_PAGES;
	im->chunk_count = N_CHUNKS;
	im->page_count = (uint64_t)N_CHUNKS * CHUNK_PAGES;
	snprintf(im->chain[0], 32, "lzo");
	snprintf(im->chain[1], 32, "crypt");
	snprintf(im->chain[2], 32, "raw");
}

/* A canonical encoding of the fields, as the core builds its binding. */
static const struct torpor_image_info *
image_info(struct image *im)
{
	uint8_t *p = im->binding;

	memcpy(p, "TORPORBD", 8), p += 8;
	memcpy(p, im->uuid, 16), p += 16;
	memcpy(p, im->release, 65), p += 65;
	memcpy(p, &im->page_size, 4), p += 4;
	memcpy(p, &im->page_count, 8), p += 8;
	memcpy(p, &im->chunk_pages, 4), p += 4;
	memcpy(p, &im->chunk_count, 8), p += 8;
	for (int i = 0; i < 3; i++)
		memcpy(p, im->chain[i], 32), p += 32;
	im->binding_len = (size_t)(p - im->binding);
	ck_assert_uint_le(im->binding_len, sizeof(im->binding));
	memcpy(im->info.uuid, im->uuid, 16);
	im->info.page_size = im->page_size;
	im->info.chunk_pages = im->chunk_pages;
	im->info.page_count = im->page_count;
	im->info.chunk_count = im->chunk_count;
	im->info.binding = im->binding;
	im->info.binding_len = im->binding_len;
	return &im->info;
}

struct stored {
	uint8_t plain[N_CHUNKS][CHUNK_BYTES];
	uint8_t enc[N_CHUNKS + 1][CHUNK_BYTES + CRYPT_TAG_SIZE];
	size_t enc_len[N_CHUNKS + 1];
	uint8_t blob[CRYPT_BLOB_SIZE + 16];
	size_t blob_len;
};

static void
fill_plain(struct stored *s)
{
	uint32_t x = 12345;

	for (size_t c = 0; c < N_CHUNKS; c++) {
		for (size_t i = 0; i < CHUNK_BYTES; i++) {
			/* Half the pages zero, half pseudo-random: a page mix. */
			x = x * 1103515245u + 12345u;
			s->plain[c][i] = (i / PAGE) % 2 ? (uint8_t)(x >> 16) : 0;
		}
		memcpy(s->plain[c] + 100 + c, MARKER, strlen(MARKER));
	}
}

static struct torpor_chunk_info
chunk_info(uint64_t seq, uint64_t count)
{
	struct torpor_chunk_info ci = {
		.sequence = seq,
		.flags = seq + 1 == count ? TORPOR_CHUNK_LAST : 0,
		.raw_len = CHUNK_BYTES,
	};

	return ci;
}

static void
hibernate(struct image *im, struct stored *s)
{
	void *state = NULL;
	int n;

	/* The core's order at hibernation: worker states exist before the
	 * snapshot, so before start_stream(). */
	ck_assert_int_eq(P->initialise(1), 0);
	ck_assert_int_eq(F->thread_init(&state), 0);
	ck_assert_int_eq(F->start_stream(image_info(im)), 0);
	for (uint64_t c = 0; c < N_CHUNKS; c++) {
		struct torpor_chunk_info ci = chunk_info(c, N_CHUNKS);

		ck_assert_uint_eq(F->max_encoded_size(CHUNK_BYTES),
				  sizeof(s->enc[c]));
		ck_assert_int_eq(F->encode(state, &ci, s->plain[c],
						   CHUNK_BYTES, s->enc[c],
						   sizeof(s->enc[c]),
						   &s->enc_len[c]), 0);
		ck_assert_uint_eq(s->enc_len[c], CHUNK_BYTES + CRYPT_TAG_SIZE);
	}
	F->thread_free(state);
	ck_assert_uint_le(P->storage_needed(), sizeof(s->blob));
	n = P->save_config(s->blob, sizeof(s->blob));
	ck_assert_int_eq(n, CRYPT_BLOB_SIZE);
	s->blob_len = (size_t)n;
	P->cleanup(1);
}

/*
 * The resume side, like the core: load_config, initialise, start_stream,
 * then decode n chunks in order, checking each against the plaintext of
 * position order[i].  Returns the first error.
 */
static int
resume_n(struct image *im, struct stored *s, const size_t *order, size_t n,
	 uint64_t claimed_count)
{
	uint8_t out[CHUNK_BYTES];
	void *state = NULL;
	int r;

	r = P->load_config(s->blob, s->blob_len);
	if (r < 0)
		return r;
	r = P->initialise(1);
	if (r < 0)
		goto out;
	r = F->start_stream(image_info(im));
	if (r < 0)
		goto out;
	ck_assert_int_eq(F->thread_init(&state), 0);
	for (size_t i = 0; i < n && r >= 0; i++) {
		struct torpor_chunk_info ci = chunk_info(i, claimed_count);
		size_t k = order ? order[i] : i, len = 0;

		memset(out, 0x55, sizeof(out));
		r = F->decode(state, &ci, s->enc[k], s->enc_len[k],
				      out, sizeof(out), &len);
		if (r < 0) {
			/* Nothing unauthenticated may come out. */
			for (size_t j = 0; j < sizeof(out); j++)
				ck_assert(out[j] == 0 || out[j] == 0x55);
			break;
		}
		ck_assert_uint_eq(len, CHUNK_BYTES);
		ck_assert_mem_eq(out, s->plain[i], CHUNK_BYTES);
	}
	F->thread_free(state);
out:
	P->cleanup(1);
	return r;
}

static int
resume_all(struct image *im, struct stored *s)
{
	return resume_n(im, s, NULL, N_CHUNKS, N_CHUNKS);
}

static struct stored *
new_stored(void)
{
	struct stored *s = calloc(1, sizeof(*s));

	ck_assert_ptr_nonnull(s);
	fill_plain(s);
	return s;
}

static bool
contains(const void *hay, size_t len, const void *needle, size_t nlen)
{
	return nlen <= len && memmem(hay, len, needle, nlen) != NULL;
}

/* ---- round trips ---- */

START_TEST(test_roundtrip_sealed)
{
	struct stored *s = new_stored();
	struct image im;

	use_sealed_keys();
	image_init(&im);
	hibernate(&im, s);
	ck_assert_int_eq(asked, 0);	/* hibernation asks nothing */
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), 0);
	ck_assert_int_eq(asked, 1);
	free(s);
}
END_TEST

START_TEST(test_roundtrip_keyfile)
{
	struct stored *s = new_stored();
	struct image im;

	use_keyfile();
	image_init(&im);
	hibernate(&im, s);
	ck_assert_int_eq(resume_all(&im, s), 0);
	ck_assert_int_eq(asked, 0);
	free(s);
}
END_TEST

/* A thread state kept across two images is keyed for each. */
START_TEST(test_thread_state_rekeyed)
{
	struct stored *s = new_stored();
	struct image im;
	struct torpor_chunk_info ci = chunk_info(0, N_CHUNKS);
	uint8_t first[CHUNK_BYTES + CRYPT_TAG_SIZE];
	void *state = NULL;
	size_t len;

	use_keyfile();
	image_init(&im);
	ck_assert_int_eq(P->initialise(1), 0);
	ck_assert_int_eq(F->thread_init(&state), 0);
	/* No stream yet: nothing to encrypt with. */
	ck_assert_int_eq(F->encode(state, &ci, s->plain[0], CHUNK_BYTES,
					   first, sizeof(first), &len), -EINVAL);
	ck_assert_int_eq(F->start_stream(image_info(&im)), 0);
	ck_assert_int_eq(F->encode(state, &ci, s->plain[0], CHUNK_BYTES,
					   first, sizeof(first), &len), 0);
	P->cleanup(1);
	/* Second image, same state: its chunks must open with its blob. */
	ck_assert_int_eq(P->initialise(1), 0);
	ck_assert_int_eq(F->start_stream(image_info(&im)), 0);
	for (uint64_t c = 0; c < N_CHUNKS; c++) {
		struct torpor_chunk_info cc = chunk_info(c, N_CHUNKS);

		ck_assert_int_eq(F->encode(state, &cc, s->plain[c],
						   CHUNK_BYTES, s->enc[c],
						   sizeof(s->enc[c]),
						   &s->enc_len[c]), 0);
	}
	ck_assert(memcmp(first, s->enc[0], 64) != 0);
	s->blob_len = (size_t)P->save_config(s->blob, sizeof(s->blob));
	ck_assert_uint_eq(s->blob_len, CRYPT_BLOB_SIZE);
	P->cleanup(1);
	F->thread_free(state);
	ck_assert_int_eq(resume_all(&im, s), 0);
	free(s);
}
END_TEST

/* Hibernation reads only the public key: no private key needs to exist. */
START_TEST(test_hibernate_needs_only_public_key)
{
	struct stored *s = new_stored();
	struct image im;
	char p[512];

	use_sealed_keys();
	path_in_tmp(p, sizeof(p), "crypt.key");
	ck_assert_int_eq(unlink(p), 0);
	image_init(&im);
	hibernate(&im, s);
	free(s);
}
END_TEST

START_TEST(test_missing_public_key)
{
	set_conf("mode", "sealed");
	set_conf("public_key", "/nonexistent/crypt.pub");
	ck_assert_int_eq(P->initialise(1), -ENOENT);
	ck_assert_ptr_nonnull(strstr(log_text, "/nonexistent/crypt.pub"));
	P->cleanup(1);
}
END_TEST

/* ---- wrong keys ---- */

START_TEST(test_wrong_passphrase_three_attempts)
{
	struct stored *s = new_stored();
	struct image im;

	use_sealed_keys();
	image_init(&im);
	hibernate(&im, s);
	script(3, "wrong one", "wrong two", "wrong three");
	ck_assert_int_eq(resume_all(&im, s), -EKEYREJECTED);
	ck_assert_int_eq(asked, 3);
	ck_assert_ptr_nonnull(strstr(log_text, "wrong passphrase"));
	ck_assert_ptr_nonnull(strstr(log_text, "attempt 3 of 3"));
	/* Nothing of the passphrases reaches the log. */
	ck_assert_ptr_null(strstr(log_text, "wrong one"));
	free(s);
}
END_TEST

START_TEST(test_passphrase_right_on_third_attempt)
{
	struct stored *s = new_stored();
	struct image im;

	use_sealed_keys();
	image_init(&im);
	hibernate(&im, s);
	script(3, "typo 1", "typo 2", PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), 0);
	ck_assert_int_eq(asked, 3);
	free(s);
}
END_TEST

/* A passphrase file answers the same every time: stop at the repeat. */
START_TEST(test_passphrase_repeated_answer_fails_at_once)
{
	struct stored *s = new_stored();
	struct image im;

	use_sealed_keys();
	image_init(&im);
	hibernate(&im, s);
	script(3, "from a file", "from a file", PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), -EKEYREJECTED);
	ck_assert_int_eq(asked, 2);
	free(s);
}
END_TEST

START_TEST(test_passphrase_nobody_to_ask)
{
	struct stored *s = new_stored();
	struct image im;

	use_sealed_keys();
	image_init(&im);
	hibernate(&im, s);
	script(0);
	ck_assert_int_eq(resume_all(&im, s), -ENOKEY);
	free(s);
}
END_TEST

START_TEST(test_wrong_key_file)
{
	struct stored *s = new_stored();
	struct image im;
	char p[512], q[512];

	use_keyfile();
	image_init(&im);
	hibernate(&im, s);
	/* Another key file of the right size in its place. */
	path_in_tmp(p, sizeof(p), "crypt.keyfile");
	path_in_tmp(q, sizeof(q), "old.keyfile");
	ck_assert_int_eq(rename(p, q), 0);
	ck_assert_int_eq(keygen(tmpdir, NULL, false, true), 0);
	ck_assert_int_eq(resume_all(&im, s), -ENOKEY);
	ck_assert_ptr_nonnull(strstr(log_text, "not the one this image was encrypted with"));
	/* The right one still opens it. */
	ck_assert_int_eq(rename(q, p), 0);
	ck_assert_int_eq(resume_all(&im, s), 0);
	free(s);
}
END_TEST

START_TEST(test_key_file_wrong_size)
{
	char p[512];

	set_conf("mode", "keyfile");
	path_in_tmp(p, sizeof(p), "short.keyfile");
	write_text(p, "only sixteen byt", 0600);
	set_conf("key_file", p);
	ck_assert_int_eq(P->initialise(1), -EBADMSG);
	P->cleanup(1);
}
END_TEST

START_TEST(test_sealed_for_another_key)
{
	struct stored *s = new_stored();
	struct image im;
	char other[256], p[512];

	use_sealed_keys();
	image_init(&im);
	hibernate(&im, s);
	path_in_tmp(other, sizeof(other), "other");
	ck_assert_int_eq(mkdir(other, 0700), 0);
	ck_assert_int_eq(keygen(other, PASSPHRASE "\n", false, false), 0);
	snprintf(p, sizeof(p), "%s/crypt.key", other);
	set_conf("private_key", p);
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), -ENOKEY);
	ck_assert_int_eq(asked, 0);	/* refused before asking */
	ck_assert_ptr_nonnull(strstr(log_text, "sealed for public key"));
	free(s);
}
END_TEST

/* ---- tampering ---- */

static void
expect_chunk_refused(struct image *im, struct stored *s, const size_t *order,
		     size_t n, uint64_t count, unsigned chunk)
{
	char want[64];

	script(1, PASSPHRASE);
	log_text[0] = '\0';
	ck_assert_int_eq(resume_n(im, s, order, n, count), -EBADMSG);
	snprintf(want, sizeof(want), "chunk %u: authentication failed", chunk);
	ck_assert_msg(strstr(log_text, want), "log lacks '%s': %s", want, log_text);
}

static void
sealed_image(struct image *im, struct stored *s)
{
	use_sealed_keys();
	image_init(im);
	hibernate(im, s);
}

START_TEST(test_tamper_ciphertext_byte)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	s->enc[2][1000] ^= 0x01;
	expect_chunk_refused(&im, s, NULL, N_CHUNKS, N_CHUNKS, 2);
	free(s);
}
END_TEST

START_TEST(test_tamper_tag)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	s->enc[3][s->enc_len[3] - 1] ^= 0x80;
	expect_chunk_refused(&im, s, NULL, N_CHUNKS, N_CHUNKS, 3);
	free(s);
}
END_TEST

START_TEST(test_tamper_reordered)
{
	static const size_t order[N_CHUNKS] = { 0, 2, 1, 3, 4, 5 };
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	expect_chunk_refused(&im, s, order, N_CHUNKS, N_CHUNKS, 1);
	free(s);
}
END_TEST

START_TEST(test_tamper_dropped_middle)
{
	static const size_t order[N_CHUNKS - 1] = { 0, 1, 3, 4, 5 };
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	expect_chunk_refused(&im, s, order, N_CHUNKS - 1, N_CHUNKS, 2);
	free(s);
}
END_TEST

/* The last chunk dropped and the one before it presented as the last:
 * the flag disagrees with the authenticated chunk count. */
START_TEST(test_tamper_dropped_last)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	expect_chunk_refused(&im, s, NULL, N_CHUNKS - 1, N_CHUNKS - 1,
			     N_CHUNKS - 2);
	free(s);
}
END_TEST

/* The same, with the header's chunk count lowered to match. */
START_TEST(test_tamper_dropped_last_count_changed)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	im.chunk_count--;
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_n(&im, s, NULL, N_CHUNKS - 1, N_CHUNKS - 1),
			 -EBADMSG);
	ck_assert_ptr_nonnull(strstr(log_text, "image header: authentication failed"));
	free(s);
}
END_TEST

START_TEST(test_tamper_duplicated)
{
	static const size_t order[N_CHUNKS] = { 0, 1, 1, 3, 4, 5 };
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	expect_chunk_refused(&im, s, order, N_CHUNKS, N_CHUNKS, 2);
	free(s);
}
END_TEST

START_TEST(test_tamper_truncated_chunk)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	s->enc_len[4] -= 100;
	expect_chunk_refused(&im, s, NULL, N_CHUNKS, N_CHUNKS, 4);
	s->enc_len[4] = 7;	/* shorter than a tag */
	expect_chunk_refused(&im, s, NULL, N_CHUNKS, N_CHUNKS, 4);
	free(s);
}
END_TEST

/* A chunk longer than the output buffer is refused, not written past it. */
START_TEST(test_decode_never_overruns)
{
	struct stored *s = new_stored();
	struct image im;
	uint8_t small[CHUNK_BYTES / 2 + 64];
	struct torpor_chunk_info ci = chunk_info(0, N_CHUNKS);
	void *state = NULL;
	size_t len = 0;

	sealed_image(&im, s);
	script(1, PASSPHRASE);
	ck_assert_int_eq(P->load_config(s->blob, s->blob_len), 0);
	ck_assert_int_eq(P->initialise(1), 0);
	ck_assert_int_eq(F->start_stream(image_info(&im)), 0);
	ck_assert_int_eq(F->thread_init(&state), 0);
	memset(small, 0xee, sizeof(small));
	ck_assert_int_eq(F->decode(state, &ci, s->enc[0], s->enc_len[0],
					   small, CHUNK_BYTES / 2, &len),
			 -EBADMSG);
	for (size_t i = CHUNK_BYTES / 2; i < sizeof(small); i++)
		ck_assert_uint_eq(small[i], 0xee);
	F->thread_free(state);
	P->cleanup(1);
	free(s);
}
END_TEST

enum field { F_CHAIN, F_CHUNK_COUNT, F_PAGE_COUNT, F_PAGE_SIZE, F_RELEASE, F_UUID };

static void
tamper_field(enum field f)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	switch (f) {
	case F_CHAIN:
		snprintf(im.chain[0], 32, "lz4");
		break;
	case F_CHUNK_COUNT:
		im.chunk_count++;
		break;
	case F_PAGE_COUNT:
		im.page_count--;
		break;
	case F_PAGE_SIZE:
		im.page_size = 16384;
		break;
	case F_RELEASE:
		snprintf(im.release, sizeof(im.release), "6.1.0-evil");
		break;
	case F_UUID:
		im.uuid[0] ^= 1;
		break;
	}
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(log_text, "image header: authentication failed"));
	free(s);
}

START_TEST(test_binding_chain) { tamper_field(F_CHAIN); }
END_TEST
START_TEST(test_binding_chunk_count) { tamper_field(F_CHUNK_COUNT); }
END_TEST
START_TEST(test_binding_page_count) { tamper_field(F_PAGE_COUNT); }
END_TEST
START_TEST(test_binding_page_size) { tamper_field(F_PAGE_SIZE); }
END_TEST
START_TEST(test_binding_kernel_release) { tamper_field(F_RELEASE); }
END_TEST
START_TEST(test_binding_uuid) { tamper_field(F_UUID); }
END_TEST

START_TEST(test_tamper_blob_wrapped_key)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	s->blob[CRYPT_BLOB_OFF_WRAPPED + 5] ^= 0x10;
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), -EBADMSG);
	ck_assert_ptr_nonnull(strstr(log_text, "wrapped data key: authentication failed"));
	free(s);
}
END_TEST

START_TEST(test_tamper_blob_ephemeral_key)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	s->blob[CRYPT_BLOB_OFF_WRAP_IN + 3] ^= 0x04;
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), -EBADMSG);
	free(s);
}
END_TEST

START_TEST(test_blob_version_and_size)
{
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	s->blob[0] = 2;
	ck_assert_int_eq(P->load_config(s->blob, s->blob_len), -EPROTONOSUPPORT);
	s->blob[0] = CRYPT_BLOB_VERSION;
	ck_assert_int_eq(P->load_config(s->blob, s->blob_len - 1), -EBADMSG);
	s->blob[1] = 7;
	ck_assert_int_eq(P->load_config(s->blob, s->blob_len), -EBADMSG);
	free(s);
}
END_TEST

/* ---- secrets ---- */

static void
assert_no_marker(struct stored *s)
{
	for (size_t c = 0; c < N_CHUNKS; c++) {
		ck_assert(contains(s->plain[c], CHUNK_BYTES, MARKER, strlen(MARKER)));
		ck_assert(!contains(s->enc[c], s->enc_len[c], MARKER, strlen(MARKER)));
		/* Nor a run of the zero pages: nothing passes through clear. */
		ck_assert(!contains(s->enc[c], s->enc_len[c], s->plain[c], 64));
	}
	ck_assert(!contains(s->blob, s->blob_len, MARKER, strlen(MARKER)));
}

START_TEST(test_marker_absent_sealed)
{
	struct stored *s = new_stored();
	struct image im;
	uint8_t file[CRYPT_SK_FILE_SIZE + 1];
	char p[512];
	int fd;
	ssize_t n;

	sealed_image(&im, s);
	assert_no_marker(s);
	ck_assert(!contains(s->blob, s->blob_len, PASSPHRASE, strlen(PASSPHRASE)));
	/* The private key file holds neither the passphrase nor anything
	 * that could be the scalar in the clear next to the public key. */
	path_in_tmp(p, sizeof(p), "crypt.key");
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	n = read(fd, file, sizeof(file));
	close(fd);
	ck_assert_int_eq(n, CRYPT_SK_FILE_SIZE);
	ck_assert(!contains(file, (size_t)n, PASSPHRASE, strlen(PASSPHRASE)));
	free(s);
}
END_TEST

START_TEST(test_marker_absent_keyfile)
{
	struct stored *s = new_stored();
	struct image im;
	uint8_t key[CRYPT_KEYFILE_SIZE];
	char p[512];
	int fd;

	use_keyfile();
	image_init(&im);
	hibernate(&im, s);
	assert_no_marker(s);
	path_in_tmp(p, sizeof(p), "crypt.keyfile");
	fd = open(p, O_RDONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(read(fd, key, sizeof(key)), (ssize_t)sizeof(key));
	close(fd);
	ck_assert(!contains(s->blob, s->blob_len, key, sizeof(key)));
	ck_assert(!contains(s->blob, s->blob_len, key, 8));
	free(s);
}
END_TEST

static int
cmp16(const void *a, const void *b)
{
	return memcmp(a, b, 16);
}

static size_t
big_count(void)
{
	return getenv("TORPOR_UNDER_VALGRIND") ? 100000 : 1000000;
}

/* The nonce construction itself: a million sequence numbers, no repeat. */
START_TEST(test_nonce_construction_unique)
{
	static const uint8_t prefix[4] = { 1, 2, 3, 4 };
	size_t n = big_count();
	uint8_t (*nonces)[16] = calloc(n, 16);

	ck_assert_ptr_nonnull(nonces);
	for (size_t i = 0; i < n; i++)
		crypt_chunk_nonce(prefix, (uint64_t)i * 0x10001u, nonces[i]);
	qsort(nonces, n, 16, cmp16);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(memcmp(nonces[i - 1], nonces[i], 16) != 0,
			      "nonce repeated");
	free(nonces);
}
END_TEST

/*
 * Through the plugin: the same zero block encrypted at a million sequence
 * numbers.  GCM's keystream block is AES(key, nonce || counter), and AES
 * is a permutation, so distinct outputs mean distinct nonces.
 */
START_TEST(test_nonce_unique_through_plugin)
{
	size_t n = big_count();
	uint8_t (*ct)[16] = calloc(n, 16);
	uint8_t zero[16] = { 0 }, out[16 + CRYPT_TAG_SIZE];
	struct image im;
	void *state = NULL;

	ck_assert_ptr_nonnull(ct);
	use_keyfile();
	image_init(&im);
	im.chunk_count = n;
	ck_assert_int_eq(P->initialise(1), 0);
	ck_assert_int_eq(F->start_stream(image_info(&im)), 0);
	ck_assert_int_eq(F->thread_init(&state), 0);
	for (size_t i = 0; i < n; i++) {
		struct torpor_chunk_info ci = chunk_info(i, n);
		size_t len;

		ck_assert_int_eq(F->encode(state, &ci, zero, 16, out,
						   sizeof(out), &len), 0);
		memcpy(ct[i], out, 16);
	}
	F->thread_free(state);
	P->cleanup(1);
	qsort(ct, n, 16, cmp16);
	for (size_t i = 1; i < n; i++)
		ck_assert_msg(memcmp(ct[i - 1], ct[i], 16) != 0,
			      "keystream repeated: a nonce was reused");
	free(ct);
}
END_TEST

/* The same memory hibernated twice: another data key, another ciphertext. */
static void
two_images(bool sealed)
{
	struct stored *a = new_stored(), *b = new_stored();
	struct image im;

	if (sealed)
		use_sealed_keys();
	else
		use_keyfile();
	image_init(&im);
	hibernate(&im, a);
	hibernate(&im, b);
	for (size_t c = 0; c < N_CHUNKS; c++)
		ck_assert(memcmp(a->enc[c], b->enc[c], 64) != 0);
	ck_assert(memcmp(a->blob + CRYPT_BLOB_OFF_WRAP_IN,
			 b->blob + CRYPT_BLOB_OFF_WRAP_IN, CRYPT_KEY_SIZE) != 0);
	ck_assert(memcmp(a->blob + CRYPT_BLOB_OFF_WRAPPED,
			 b->blob + CRYPT_BLOB_OFF_WRAPPED, CRYPT_KEY_SIZE) != 0);
	/* Each still opens with its own blob. */
	script(2, PASSPHRASE, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, a), 0);
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, b), 0);
	/* And not with the other's. */
	memcpy(a->blob, b->blob, sizeof(a->blob));
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, a), -EBADMSG);
	free(a);
	free(b);
}

START_TEST(test_two_images_two_keys_sealed) { two_images(true); }
END_TEST
START_TEST(test_two_images_two_keys_keyfile) { two_images(false); }
END_TEST

/* ---- permissions ---- */

START_TEST(test_private_key_mode_refused)
{
	struct stored *s = new_stored();
	struct image im;
	char p[512];

	sealed_image(&im, s);
	path_in_tmp(p, sizeof(p), "crypt.key");
	ck_assert_int_eq(chmod(p, 0644), 0);
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), -EPERM);
	ck_assert_int_eq(asked, 0);
	ck_assert_ptr_nonnull(strstr(log_text, "wider than 0600"));
	ck_assert_int_eq(chmod(p, 0600), 0);
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), 0);
	free(s);
}
END_TEST

START_TEST(test_key_file_mode_refused)
{
	char p[512];

	use_keyfile();
	path_in_tmp(p, sizeof(p), "crypt.keyfile");
	ck_assert_int_eq(chmod(p, 0640), 0);
	ck_assert_int_eq(P->initialise(1), -EPERM);
	ck_assert_ptr_nonnull(strstr(log_text, "wider than 0600"));
	P->cleanup(1);
}
END_TEST

START_TEST(test_public_key_writable_refused)
{
	char p[512];

	use_sealed_keys();
	path_in_tmp(p, sizeof(p), "crypt.pub");
	ck_assert_int_eq(chmod(p, 0666), 0);
	ck_assert_int_eq(P->initialise(1), -EPERM);
	P->cleanup(1);
}
END_TEST

START_TEST(test_key_owner_checked_as_root)
{
	char p[512];
	int r;

	use_keyfile();
	path_in_tmp(p, sizeof(p), "crypt.keyfile");
	if (geteuid() != 0) {
		/* Not root: nobody else could own a key we can use. */
		ck_assert_int_eq(P->initialise(1), 0);
		P->cleanup(1);
		return;
	}
	ck_assert_int_eq(chown(p, 65534, 65534), 0);
	r = P->initialise(1);
	ck_assert_int_eq(r, -EPERM);
	ck_assert_ptr_nonnull(strstr(log_text, "not root"));
	P->cleanup(1);
	ck_assert_int_eq(chown(p, 0, 0), 0);
	ck_assert_int_eq(P->initialise(1), 0);
	P->cleanup(1);
}
END_TEST

/* ---- bounds of the private key file's KDF parameters ---- */

static void read_all(const char *path, char *buf, size_t size,
		     size_t *ret_len);

/* Overwrite the u32 at off of the private key file in the test's dir. */
static void
patch_private_key(size_t off, uint32_t v)
{
	uint8_t le[4];
	char p[512];
	int fd;

	path_in_tmp(p, sizeof(p), "crypt.key");
	torpor_put_le32(le, v);
	fd = open(p, O_WRONLY | O_CLOEXEC);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(pwrite(fd, le, 4, (off_t)off), 4);
	close(fd);
}

/*
 * A sealed key whose file asks for parameters out of bounds (4 GiB of
 * Argon2 memory took 4 GiB and 13 s before): refused before the
 * passphrase is even asked, with a message naming the field.
 */
START_TEST(test_private_key_kdf_out_of_bounds)
{
	static const struct {
		size_t off;
		uint32_t value;
		const char *says;
	} cases[] = {
		{ CRYPT_SK_OFF_MEMORY, 4u * 1024 * 1024,
		  "memory 4194304 KiB is out of range" },
		{ CRYPT_SK_OFF_MEMORY, 0xffffffffu, "memory 4294967295 KiB" },
		{ CRYPT_SK_OFF_PASSES, 1000, "passes 1000 is out of range" },
		{ CRYPT_SK_OFF_PASSES, 0, "passes 0" },
		{ CRYPT_SK_OFF_PARALLEL, 255, "parallelism 255" },
	};
	struct stored *s = new_stored();
	struct image im;

	sealed_image(&im, s);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint8_t file[CRYPT_SK_FILE_SIZE];
		char p[512];
		size_t len;

		path_in_tmp(p, sizeof(p), "crypt.key");
		read_all(p, (char *)file, sizeof(file), &len);
		patch_private_key(cases[i].off, cases[i].value);
		log_text[0] = '\0';
		script(1, PASSPHRASE);
		/* A refusal (the key is unusable), not an I/O error. */
		ck_assert_int_eq(resume_all(&im, s), -EPROTONOSUPPORT);
		ck_assert_int_eq(asked, 0);
		ck_assert_msg(strstr(log_text, cases[i].says) &&
			      strstr(log_text, p), "%s", log_text);
		/* The original parameters still open it. */
		patch_private_key(cases[i].off,
				  torpor_get_le32(file + cases[i].off));
	}
	script(1, PASSPHRASE);
	ck_assert_int_eq(resume_all(&im, s), 0);
	free(s);
}
END_TEST

START_TEST(test_argon2_bounds)
{
	char why[160];

	/* The largest of each, alone and together, pass. */
	ck_assert_int_eq(crypt_argon2_check(CRYPT_ARGON2_MAX_PASSES, 8, 1,
					    why, sizeof(why)), 0);
	ck_assert_int_eq(crypt_argon2_check(4, CRYPT_ARGON2_MAX_MEMORY_KIB,
					    CRYPT_ARGON2_MAX_PARALLEL, why,
					    sizeof(why)), 0);
	ck_assert_int_eq(crypt_argon2_check(16, 256 * 1024, 1, why,
					    sizeof(why)), 0);
	ck_assert_int_eq(crypt_argon2_check(CRYPT_ARGON2_PASSES,
					    CRYPT_ARGON2_MEMORY_KIB,
					    CRYPT_ARGON2_PARALLEL, NULL, 0), 0);
	/* Each field out of bounds is named. */
	ck_assert_int_eq(crypt_argon2_check(17, 64, 1, why, sizeof(why)),
			 -ERANGE);
	ck_assert_ptr_nonnull(strstr(why, "passes 17"));
	ck_assert_int_eq(crypt_argon2_check(1, 64, 17, why, sizeof(why)),
			 -ERANGE);
	ck_assert_ptr_nonnull(strstr(why, "parallelism 17"));
	ck_assert_int_eq(crypt_argon2_check(1, 1024 * 1024 + 1, 1, why,
					    sizeof(why)), -ERANGE);
	ck_assert_ptr_nonnull(strstr(why, "memory 1048577 KiB"));
	ck_assert_int_eq(crypt_argon2_check(1, 31, 4, why, sizeof(why)),
			 -ERANGE);
	ck_assert_ptr_nonnull(strstr(why, "memory 31 KiB"));
	ck_assert_int_eq(crypt_argon2_check(5, 1024 * 1024, 1, why,
					    sizeof(why)), -ERANGE);
	ck_assert_ptr_nonnull(strstr(why, "passes x memory"));
	/* The derivation itself refuses them before taking memory. */
	ck_assert_int_eq(crypt_argon2id("pw", 2, (const uint8_t *)"0123456789abcdef",
					1, 4u * 1024 * 1024, 1,
					(uint8_t *)why), -ERANGE);
}
END_TEST

#if !defined(__SANITIZE_ADDRESS__)
/* The process's address space now, from /proc/self/statm (pages). */
static size_t
address_space_bytes(void)
{
	unsigned long pages = 0;
	FILE *f = fopen("/proc/self/statm", "re");

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fscanf(f, "%lu", &pages), 1);
	fclose(f);
	return pages * (size_t)sysconf(_SC_PAGESIZE);
}
#endif

/*
 * Opening a key file that asks for 4 GiB, with the address space
 * limited to 256 MiB more than the process has: refused with -ERANGE, not
 * -ENOMEM (nothing was tried).  A sanitizer reserves terabytes of shadow,
 * so this runs only in a build without one.
 */
START_TEST(test_private_key_memory_bounded)
{
#if defined(__SANITIZE_ADDRESS__)
	return;
#else
	uint8_t sk[32], pk[32], file[CRYPT_SK_FILE_SIZE], back[32];
	int status;
	pid_t pid;

	gcry_randomize(sk, sizeof(sk), GCRY_STRONG_RANDOM);
	ck_assert_int_eq(crypt_x25519(sk, NULL, pk), 0);
	ck_assert_int_eq(crypt_sk_seal(sk, pk, "pw", 2, 1, 64, 1, file), 0);
	pid = fork();
	ck_assert_int_ge(pid, 0);
	if (pid == 0) {
		struct rlimit rl;
		int r;

		rl.rlim_cur = rl.rlim_max = address_space_bytes() + (256 << 20);
		if (setrlimit(RLIMIT_AS, &rl) < 0)
			_exit(90);
		torpor_put_le32(file + CRYPT_SK_OFF_MEMORY, 4u * 1024 * 1024);
		r = crypt_sk_open(file, "pw", 2, back);
		if (r != -ERANGE)
			_exit(91);
		/* The limit is real: 1 GiB, within the bounds, does not fit. */
		torpor_put_le32(file + CRYPT_SK_OFF_MEMORY, 1024 * 1024);
		r = crypt_sk_open(file, "pw", 2, back);
		_exit(r == -ENOMEM ? 0 : 92);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 0);
#endif
}
END_TEST

/* ---- keygen ---- */

static void
read_all(const char *path, char *buf, size_t size, size_t *ret_len)
{
	int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n;

	ck_assert_int_ge(fd, 0);
	n = read(fd, buf, size);
	ck_assert_int_ge(n, 0);
	close(fd);
	*ret_len = (size_t)n;
}

START_TEST(test_keygen_files)
{
	char p[512], text[256];
	struct stat st_key, st_pub;
	uint8_t pk[CRYPT_KEY_SIZE];
	size_t len;

	ck_assert_int_eq(keygen(tmpdir, PASSPHRASE "\n", false, false), 0);
	path_in_tmp(p, sizeof(p), "crypt.key");
	ck_assert_int_eq(stat(p, &st_key), 0);
	ck_assert_uint_eq(st_key.st_mode & 07777, 0600);
	ck_assert_uint_eq(st_key.st_size, CRYPT_SK_FILE_SIZE);
	ck_assert_uint_eq(st_key.st_uid, geteuid());
	path_in_tmp(p, sizeof(p), "crypt.pub");
	ck_assert_int_eq(stat(p, &st_pub), 0);
	ck_assert_uint_eq(st_pub.st_mode & 07777, 0644);
	read_all(p, text, sizeof(text), &len);
	ck_assert_int_eq(crypt_pk_parse(text, len, pk), 0);
}
END_TEST

START_TEST(test_keygen_refuses_overwrite)
{
	char p[512], before[256], after[256];
	size_t lb, la;

	ck_assert_int_eq(keygen(tmpdir, PASSPHRASE "\n", false, false), 0);
	path_in_tmp(p, sizeof(p), "crypt.pub");
	read_all(p, before, sizeof(before), &lb);
	ck_assert_int_eq(keygen(tmpdir, "another\n", false, false), EXIT_FAILURE);
	read_all(p, after, sizeof(after), &la);
	ck_assert_uint_eq(la, lb);
	ck_assert_mem_eq(before, after, lb);
	/* Only the public key there is enough to refuse too. */
	path_in_tmp(p, sizeof(p), "crypt.key");
	ck_assert_int_eq(unlink(p), 0);
	ck_assert_int_eq(keygen(tmpdir, "another\n", false, false), EXIT_FAILURE);
	ck_assert_int_eq(access(p, F_OK), -1);
	/* --force replaces both. */
	ck_assert_int_eq(keygen(tmpdir, "another\n", true, false), 0);
	path_in_tmp(p, sizeof(p), "crypt.pub");
	read_all(p, after, sizeof(after), &la);
	ck_assert(la != lb || memcmp(before, after, lb) != 0);
	/* No temporary file is left behind. */
	{
		DIR *d = opendir(tmpdir);
		struct dirent *e;

		ck_assert_ptr_nonnull(d);
		while ((e = readdir(d)))
			ck_assert_msg(strncmp(e->d_name, ".crypt", 6) != 0,
				      "left %s", e->d_name);
		closedir(d);
	}
}
END_TEST

START_TEST(test_keygen_keyfile_refuses_overwrite)
{
	char p[512], a[64], b[64];
	size_t la, lb;

	ck_assert_int_eq(keygen(tmpdir, NULL, false, true), 0);
	path_in_tmp(p, sizeof(p), "crypt.keyfile");
	read_all(p, a, sizeof(a), &la);
	ck_assert_uint_eq(la, CRYPT_KEYFILE_SIZE);
	ck_assert_int_eq(keygen(tmpdir, NULL, false, true), EXIT_FAILURE);
	ck_assert_int_eq(keygen(tmpdir, NULL, true, true), 0);
	read_all(p, b, sizeof(b), &lb);
	ck_assert_uint_eq(lb, CRYPT_KEYFILE_SIZE);
	ck_assert(memcmp(a, b, CRYPT_KEYFILE_SIZE) != 0);
}
END_TEST

START_TEST(test_keygen_empty_passphrase_refused)
{
	char p[512];

	ck_assert_int_eq(keygen(tmpdir, "\n", false, false), EXIT_FAILURE);
	path_in_tmp(p, sizeof(p), "crypt.key");
	ck_assert_int_eq(access(p, F_OK), -1);
}
END_TEST

START_TEST(test_keygen_bad_option)
{
	char *argv[] = { (char *)"keygen", (char *)"--kdf-passes",
			 (char *)"zero", NULL };
	char *argv2[] = { (char *)"keygen", (char *)"--bogus", NULL };

	ck_assert_int_eq(torpor_keygen_main(3, argv), EXIT_FAILURE);
	ck_assert_int_eq(torpor_keygen_main(2, argv2), EXIT_FAILURE);
}
END_TEST

/* ---- primitives against published vectors ---- */

static void
unhex(const char *s, uint8_t *out)
{
	for (size_t i = 0; s[2 * i]; i++)
		out[i] = (uint8_t)(crypt_hex_digit(s[2 * i]) << 4 |
				   crypt_hex_digit(s[2 * i + 1]));
}

START_TEST(test_hkdf_rfc5869)
{
	uint8_t ikm[22], salt[13], okm[42], want[42];
	static const char info[] = "\xf0\xf1\xf2\xf3\xf4\xf5\xf6\xf7\xf8\xf9";

	memset(ikm, 0x0b, sizeof(ikm));
	unhex("000102030405060708090a0b0c", salt);
	unhex("3cb25f25faacd57a90434f64d0362f2a2d2d0a90cf1a5a4c5db02d56ecc4c5bf"
	      "34007208d5b887185865", want);
	ck_assert_int_eq(crypt_hkdf(ikm, sizeof(ikm), salt, sizeof(salt), info,
				    okm, sizeof(okm)), 0);
	ck_assert_mem_eq(okm, want, sizeof(want));
}
END_TEST

START_TEST(test_x25519_rfc7748)
{
	uint8_t a[32], b[32], pa[32], pb[32], s1[32], s2[32], want[32];

	unhex("77076d0a7318a57d3c16c17251b26645df4c2f87ebc0992ab177fba51db92c2a", a);
	unhex("5dab087e624a8a4b79e17f8b83800ee66f3bb1292618b6fd1c2f8b27ff88e0eb", b);
	ck_assert_int_eq(crypt_x25519(a, NULL, pa), 0);
	unhex("8520f0098930a754748b7ddcb43ef75a0dbf3a0d26381af4eba4a98eaa9b4e6a", want);
	ck_assert_mem_eq(pa, want, 32);
	ck_assert_int_eq(crypt_x25519(b, NULL, pb), 0);
	ck_assert_int_eq(crypt_x25519(a, pb, s1), 0);
	ck_assert_int_eq(crypt_x25519(b, pa, s2), 0);
	unhex("4a5d9d5ba4ce2de1728e3bf480350f25e07e21c947d19e3376f09b3c1e161742", want);
	ck_assert_mem_eq(s1, want, 32);
	ck_assert_mem_eq(s2, want, 32);
}
END_TEST

START_TEST(test_private_key_file_roundtrip)
{
	uint8_t sk[32], pk[32], file[CRYPT_SK_FILE_SIZE], back[32];

	gcry_randomize(sk, sizeof(sk), GCRY_STRONG_RANDOM);
	ck_assert_int_eq(crypt_x25519(sk, NULL, pk), 0);
	ck_assert_int_eq(crypt_sk_seal(sk, pk, "pw", 2, 1, 64, 1, file), 0);
	ck_assert_int_eq(crypt_sk_open(file, "pw", 2, back), 0);
	ck_assert_mem_eq(sk, back, 32);
	ck_assert_int_eq(crypt_sk_open(file, "pW", 2, back), -EKEYREJECTED);
	/* The KDF parameters are authenticated: lowering them fails. */
	file[CRYPT_SK_OFF_MEMORY] ^= 1;
	ck_assert_int_eq(crypt_sk_open(file, "pw", 2, back), -EKEYREJECTED);
	file[CRYPT_SK_OFF_MEMORY] ^= 1;
	file[8] = 9;
	ck_assert_int_eq(crypt_sk_check(file, sizeof(file)), -EPROTONOSUPPORT);
}
END_TEST

START_TEST(test_gcrypt_initialised_by_plugin)
{
	ck_assert(gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P));
}
END_TEST

Suite *crypt_suite(void);

Suite *
crypt_suite(void)
{
	Suite *s = suite_create("crypt");
	TCase *tc;

	tc = tcase_create("roundtrip");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_gcrypt_initialised_by_plugin);
	tcase_add_test(tc, test_roundtrip_sealed);
	tcase_add_test(tc, test_roundtrip_keyfile);
	tcase_add_test(tc, test_thread_state_rekeyed);
	tcase_add_test(tc, test_hibernate_needs_only_public_key);
	tcase_add_test(tc, test_missing_public_key);
	suite_add_tcase(s, tc);

	tc = tcase_create("keys");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_wrong_passphrase_three_attempts);
	tcase_add_test(tc, test_passphrase_right_on_third_attempt);
	tcase_add_test(tc, test_passphrase_repeated_answer_fails_at_once);
	tcase_add_test(tc, test_passphrase_nobody_to_ask);
	tcase_add_test(tc, test_wrong_key_file);
	tcase_add_test(tc, test_key_file_wrong_size);
	tcase_add_test(tc, test_sealed_for_another_key);
	suite_add_tcase(s, tc);

	tc = tcase_create("tamper");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_tamper_ciphertext_byte);
	tcase_add_test(tc, test_tamper_tag);
	tcase_add_test(tc, test_tamper_reordered);
	tcase_add_test(tc, test_tamper_dropped_middle);
	tcase_add_test(tc, test_tamper_dropped_last);
	tcase_add_test(tc, test_tamper_dropped_last_count_changed);
	tcase_add_test(tc, test_tamper_duplicated);
	tcase_add_test(tc, test_tamper_truncated_chunk);
	tcase_add_test(tc, test_decode_never_overruns);
	tcase_add_test(tc, test_binding_chain);
	tcase_add_test(tc, test_binding_chunk_count);
	tcase_add_test(tc, test_binding_page_count);
	tcase_add_test(tc, test_binding_page_size);
	tcase_add_test(tc, test_binding_kernel_release);
	tcase_add_test(tc, test_binding_uuid);
	tcase_add_test(tc, test_tamper_blob_wrapped_key);
	tcase_add_test(tc, test_tamper_blob_ephemeral_key);
	tcase_add_test(tc, test_blob_version_and_size);
	suite_add_tcase(s, tc);

	tc = tcase_create("secrets");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_marker_absent_sealed);
	tcase_add_test(tc, test_marker_absent_keyfile);
	tcase_add_test(tc, test_nonce_construction_unique);
	tcase_add_test(tc, test_nonce_unique_through_plugin);
	tcase_add_test(tc, test_two_images_two_keys_sealed);
	tcase_add_test(tc, test_two_images_two_keys_keyfile);
	suite_add_tcase(s, tc);

	tc = tcase_create("permissions");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_private_key_mode_refused);
	tcase_add_test(tc, test_key_file_mode_refused);
	tcase_add_test(tc, test_public_key_writable_refused);
	tcase_add_test(tc, test_key_owner_checked_as_root);
	tcase_add_test(tc, test_private_key_kdf_out_of_bounds);
	suite_add_tcase(s, tc);

	tc = tcase_create("keygen");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_keygen_files);
	tcase_add_test(tc, test_keygen_refuses_overwrite);
	tcase_add_test(tc, test_keygen_keyfile_refuses_overwrite);
	tcase_add_test(tc, test_keygen_empty_passphrase_refused);
	tcase_add_test(tc, test_keygen_bad_option);
	suite_add_tcase(s, tc);

	tc = tcase_create("primitives");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, test_hkdf_rfc5869);
	tcase_add_test(tc, test_x25519_rfc7748);
	tcase_add_test(tc, test_private_key_file_roundtrip);
	tcase_add_test(tc, test_argon2_bounds);
	tcase_add_test(tc, test_private_key_memory_bounded);
	suite_add_tcase(s, tc);

	return s;
}
