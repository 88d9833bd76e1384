/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * checksum: appends a digest of each chunk it receives (CRC32C, or SHA-256
 * through libgcrypt) and checks it at resume, so that a page damaged on
 * the way to the storage and back is refused instead of restored.
 *
 * The filter digests whatever reaches it: first in the chain it covers
 * the plaintext pages themselves (and so also the other filters' decode),
 * after a compression filter only the compressed bytes.  It guards against
 * accidents, not an attacker: that is the crypt filter's job.
 *
 * Chunk format: the input unchanged, then the digest (CRC32C little-endian
 * in 4 bytes, or the 32 bytes of SHA-256) of the chunk's place followed by
 * the input.  The place is the image's UUID (16 bytes), the chunk's
 * sequence number (8 bytes), flags (4) and raw length (4), little-endian:
 * a chunk reordered, duplicated or taken from another image does not
 * match, even with its frame rewritten.
 */
#include <errno.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include <gcrypt.h>

#include <torpor/plugin-util.h>
#include <torpor/plugin.h>

#define NAME "checksum"

enum checksum_algorithm {
	CHECKSUM_CRC32C = 1,
	CHECKSUM_SHA256 = 2,
};

#define CHECKSUM_MAX_DIGEST 32
#define CHECKSUM_PLACE_SIZE 32

static const char *const algorithm_names[] = { "crc32c", "sha256", NULL };

static const struct torpor_host *host;
/* Written only by load / initialise / load_config, which the core never
 * runs alongside encode or decode. */
static enum checksum_algorithm algorithm = CHECKSUM_CRC32C;
/* The algorithm came from an image header: keep it over the configuration. */
static bool algorithm_from_image;

/* The image's UUID, from start_stream(); read-only while chunks flow. */
static uint8_t image_uuid[16];

static atomic_uint_fast64_t n_encoded, n_verified, n_mismatches;

static const struct torpor_config_key checksum_config_keys[] = {
	{
		.name = "algorithm",
		.type = TORPOR_CONFIG_ENUM,
		.choices = algorithm_names,
		.default_value = "crc32c",
		.help = "digest appended to each chunk: crc32c (fast) or sha256",
	},
	{ .name = NULL },
};

static const char *
algorithm_name(enum checksum_algorithm a)
{
	return a == CHECKSUM_SHA256 ? "sha256" : "crc32c";
}

static size_t
digest_len(enum checksum_algorithm a)
{
	return a == CHECKSUM_SHA256 ? 32 : 4;
}

/* The digest of the chunk's place (see the top) and then buf. */
static void
digest(enum checksum_algorithm a, const struct torpor_chunk_info *info,
       const uint8_t *buf, size_t len, uint8_t *ret)
{
	uint8_t place[CHECKSUM_PLACE_SIZE];
	uint32_t c;

	memcpy(place, image_uuid, 16);
	torpor_put_le64(place + 16, info->sequence);
	torpor_put_le32(place + 24, info->flags);
	torpor_put_le32(place + 28, info->raw_len);
	if (a == CHECKSUM_SHA256) {
		gcry_buffer_t iov[2] = {
			{ .size = sizeof(place), .len = sizeof(place), .data = place },
			{ .size = len, .len = len, .data = (void *)buf },
		};

		/* Thread-safe, and for SHA-256 it allocates nothing. */
		gcry_md_hash_buffers(GCRY_MD_SHA256, 0, ret, iov, 2);
		return;
	}
	c = host->crc32c(host->crc32c(0, place, sizeof(place)), buf, len);
	torpor_put_le32(ret, c);
}

static int
checksum_read_config(void)
{
	int64_t i;
	int r;

	/* An index into algorithm_names[], checked by the core. */
	r = host->config_number("checksum", "algorithm", &i);
	if (r < 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "algorithm: no valid value (crc32c or sha256)");
		return r;
	}
	algorithm = i == 1 ? CHECKSUM_SHA256 : CHECKSUM_CRC32C;
	return 0;
}

static void
reset_counters(void)
{
	atomic_store_explicit(&n_encoded, 0, memory_order_relaxed);
	atomic_store_explicit(&n_verified, 0, memory_order_relaxed);
	atomic_store_explicit(&n_mismatches, 0, memory_order_relaxed);
}

static int
checksum_load(const struct torpor_host *h)
{
	if (!TORPOR_HOST_HAS(h, crc32c) || !TORPOR_HOST_HAS(h, config_number))
		return -EPROTO;
	host = h;
	/*
	 * Initialising libgcrypt (secure memory, FIPS mode, "finished") is
	 * the program's decision, and the core makes it for the keys of the
	 * crypt filter.  A library may only make sure the version check,
	 * which initialises libgcrypt's subsystems and may be repeated, has
	 * run before its first call: hashing needs no secure memory.
	 */
	if (!gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P) &&
	    !gcry_check_version(GCRYPT_VERSION)) {
		torpor_log(h, NAME, TORPOR_LOG_ERR,
		       "libgcrypt %s is older than %s, which torpor was built with",
		       gcry_check_version(NULL), GCRYPT_VERSION);
		return -ELIBBAD;
	}
	algorithm_from_image = false;
	reset_counters();
	return checksum_read_config();
}

static void
checksum_unload(void)
{
	host = NULL;
}

static int
checksum_initialise(int starting_cycle)
{
	if (!starting_cycle)
		return 0;
	reset_counters();
	if (algorithm_from_image)
		return 0;
	return checksum_read_config();
}

static void
checksum_cleanup(int finishing_cycle)
{
	if (finishing_cycle)
		algorithm_from_image = false;
	memset(image_uuid, 0, sizeof(image_uuid));
}

static int
checksum_start_stream(const struct torpor_image_info *info)
{
	if (!info)
		return -EINVAL;
	memcpy(image_uuid, info->uuid, sizeof(image_uuid));
	return 0;
}

/* No work memory: the digest is computed straight from the chunk. */
static size_t
checksum_memory_needed(void)
{
	return 0;
}

static size_t
checksum_storage_needed(void)
{
	return 2;
}

static int
checksum_save_config(uint8_t *buf, size_t size)
{
	if (size < 2)
		return -ENOBUFS;
	buf[0] = TORPOR_FILTER_CONFIG_VERSION;
	buf[1] = (uint8_t)algorithm;
	return 2;
}

static int
checksum_load_config(const uint8_t *buf, size_t len)
{
	int r;

	r = torpor_filter_config_check(buf, len, 2);
	if (r < 0)
		return r;
	if (buf[1] != CHECKSUM_CRC32C && buf[1] != CHECKSUM_SHA256)
		return -EBADMSG;
	algorithm = buf[1];
	algorithm_from_image = true;
	return 0;
}

static int
checksum_print_debug_info(char *buf, size_t size)
{
	return torpor_filter_print(buf, size,
			    "%s, %llu chunks digested, "
			    "%llu verified, %llu mismatches",
			    algorithm_name(algorithm),
			    (unsigned long long)atomic_load(&n_encoded),
			    (unsigned long long)atomic_load(&n_verified),
			    (unsigned long long)atomic_load(&n_mismatches));
}

/*
 * Room for the largest digest whatever the algorithm: the core may size
 * its buffers before load_config() has told it which one the image used.
 */
static size_t
checksum_max_encoded_size(size_t in_len)
{
	return in_len + CHECKSUM_MAX_DIGEST;
}

static int
checksum_encode(void *state, const struct torpor_chunk_info *info,
		const uint8_t *in, size_t in_len,
		uint8_t *out, size_t out_size, size_t *ret_len)
{
	enum checksum_algorithm a = algorithm;
	size_t dlen = digest_len(a);

	if (out_size < in_len || out_size - in_len < dlen)
		return -ENOBUFS;
	if (in_len)
		memcpy(out, in, in_len);
	digest(a, info, in, in_len, out + in_len);
	*ret_len = in_len + dlen;
	atomic_fetch_add_explicit(&n_encoded, 1, memory_order_relaxed);
	return 0;
}

static int
checksum_decode(void *state, const struct torpor_chunk_info *info,
		const uint8_t *in, size_t in_len,
		uint8_t *out, size_t out_size, size_t *ret_len)
{
	enum checksum_algorithm a = algorithm;
	size_t dlen = digest_len(a), n, i;
	uint8_t d[CHECKSUM_MAX_DIGEST];
	uint8_t diff = 0;

	if (in_len < dlen) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "chunk %llu: too short (%zu bytes) for its %s digest",
			  (unsigned long long)info->sequence, in_len,
			  algorithm_name(a));
		goto bad;
	}
	n = in_len - dlen;
	if (n > out_size) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "chunk %llu: %zu bytes, more than the %zu it can hold",
			  (unsigned long long)info->sequence, n, out_size);
		goto bad;
	}
	digest(a, info, in, n, d);
	/* Compare every byte: the time taken says nothing about where the
	 * digests differ (not that a checksum needs it, but it is free). */
	for (i = 0; i < dlen; i++)
		diff |= d[i] ^ in[n + i];
	if (diff) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "chunk %llu: checksum mismatch (%s)",
			  (unsigned long long)info->sequence, algorithm_name(a));
		goto bad;
	}
	if (n)
		memcpy(out, in, n);
	*ret_len = n;
	atomic_fetch_add_explicit(&n_verified, 1, memory_order_relaxed);
	return 0;

bad:
	atomic_fetch_add_explicit(&n_mismatches, 1, memory_order_relaxed);
	return -EBADMSG;
}

static const struct torpor_filter checksum_plugin = {
	.plugin = {
		.name = NAME,
		.description = "appends a crc32c or sha256 digest to each chunk; "
			       "first in the chain it covers the plaintext pages",
		.config_keys = checksum_config_keys,
		.load = checksum_load,
		.unload = checksum_unload,
		.initialise = checksum_initialise,
		.cleanup = checksum_cleanup,
		.memory_needed = checksum_memory_needed,
		.storage_needed = checksum_storage_needed,
		.save_config = checksum_save_config,
		.load_config = checksum_load_config,
		.print_debug_info = checksum_print_debug_info,
	},
	.start_stream = checksum_start_stream,
	.max_encoded_size = checksum_max_encoded_size,
	.encode = checksum_encode,
	.decode = checksum_decode,
};

TORPOR_FILTER_REGISTER(checksum_plugin)
