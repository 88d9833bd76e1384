/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The crypt filter's key formats and the primitives built on libgcrypt;
 * see crypt-key.h and doc/crypt.md.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gcrypt.h>

#include <torpor/plugin-util.h>

#include "crypt-key.h"

bool
crypt_equal(const void *a, const void *b, size_t len)
{
	const volatile uint8_t *x = a, *y = b;
	uint8_t d = 0;

	for (size_t i = 0; i < len; i++)
		d |= x[i] ^ y[i];
	return d == 0;
}

int
crypt_errno(gcry_error_t e)
{
	int r;

	if (gcry_err_code(e) == GPG_ERR_ENOMEM)
		return -ENOMEM;
	r = gcry_err_code_to_errno(gcry_err_code(e));
	return r > 0 ? -r : -EIO;
}

int
crypt_hmac(const void *key, size_t key_len, const void *a, size_t a_len,
	   const void *b, size_t b_len, const void *c, size_t c_len,
	   uint8_t *out)
{
	gcry_mac_hd_t h;
	size_t n = CRYPT_DIGEST_SIZE;
	gcry_error_t e;

	e = gcry_mac_open(&h, GCRY_MAC_HMAC_SHA256, GCRY_MAC_FLAG_SECURE, NULL);
	if (e)
		return crypt_errno(e);
	e = gcry_mac_setkey(h, key, key_len);
	if (!e && a && a_len)
		e = gcry_mac_write(h, a, a_len);
	if (!e && b && b_len)
		e = gcry_mac_write(h, b, b_len);
	if (!e && c && c_len)
		e = gcry_mac_write(h, c, c_len);
	if (!e)
		e = gcry_mac_read(h, out, &n);
	gcry_mac_close(h);
	if (!e && n != CRYPT_DIGEST_SIZE)
		return -EIO;
	return e ? crypt_errno(e) : 0;
}

int
crypt_hkdf(const void *ikm, size_t ikm_len, const void *salt,
	   size_t salt_len, const char *info, uint8_t *out, size_t out_len)
{
	static const uint8_t zero_salt[CRYPT_DIGEST_SIZE];
	uint8_t *prk, *t;
	size_t done = 0;
	uint8_t i;
	int r;

	if (out_len > 2 * CRYPT_DIGEST_SIZE)
		return -EINVAL;
	prk = gcry_calloc_secure(2, CRYPT_DIGEST_SIZE);
	if (!prk)
		return -ENOMEM;
	t = prk + CRYPT_DIGEST_SIZE;
	if (!salt || salt_len == 0) {
		salt = zero_salt;
		salt_len = sizeof(zero_salt);
	}
	r = crypt_hmac(salt, salt_len, ikm, ikm_len, NULL, 0, NULL, 0, prk);
	for (i = 1; r >= 0 && done < out_len; i++) {
		size_t n = out_len - done;

		r = crypt_hmac(prk, CRYPT_DIGEST_SIZE,
			       i == 1 ? NULL : t, i == 1 ? 0 : CRYPT_DIGEST_SIZE,
			       info, strlen(info), &i, 1, t);
		if (r < 0)
			break;
		if (n > CRYPT_DIGEST_SIZE)
			n = CRYPT_DIGEST_SIZE;
		memcpy(out + done, t, n);
		done += n;
	}
	gcry_free(prk);		/* libgcrypt wipes secure memory on free */
	return r;
}

void
crypt_sha256(const void *a, size_t a_len, const void *b, size_t b_len,
	     uint8_t *out)
{
	gcry_buffer_t iov[2] = {
		{ .data = (void *)a, .len = a_len },
		{ .data = (void *)b, .len = b_len },
	};

	gcry_md_hash_buffers(GCRY_MD_SHA256, 0, out, iov, b ? 2 : 1);
}

int
crypt_aead(bool seal, const uint8_t *key, const uint8_t *nonce,
	   const void *aad, size_t aad_len, const uint8_t *in, size_t len,
	   uint8_t *out, uint8_t *tag)
{
	gcry_cipher_hd_t h;
	gcry_error_t e;

	e = gcry_cipher_open(&h, GCRY_CIPHER_AES256, GCRY_CIPHER_MODE_GCM,
			     GCRY_CIPHER_SECURE);
	if (e)
		return crypt_errno(e);
	e = gcry_cipher_setkey(h, key, CRYPT_KEY_SIZE);
	if (!e)
		e = gcry_cipher_setiv(h, nonce, CRYPT_NONCE_SIZE);
	if (!e && aad_len)
		e = gcry_cipher_authenticate(h, aad, aad_len);
	if (!e)
		e = gcry_cipher_final(h);
	if (!e && seal)
		e = gcry_cipher_encrypt(h, out, len, in, len);
	else if (!e)
		e = gcry_cipher_decrypt(h, out, len, in, len);
	if (!e && seal)
		e = gcry_cipher_gettag(h, tag, CRYPT_TAG_SIZE);
	else if (!e) {
		e = gcry_cipher_checktag(h, tag, CRYPT_TAG_SIZE);
		if (e) {
			gcry_cipher_close(h);
			explicit_bzero(out, len);
			return -EBADMSG;
		}
	}
	gcry_cipher_close(h);
	return e ? crypt_errno(e) : 0;
}

int
crypt_x25519(const uint8_t *scalar, const uint8_t *point, uint8_t *out)
{
	static const uint8_t zero[CRYPT_KEY_SIZE];
	gcry_error_t e;

	e = gcry_ecc_mul_point(GCRY_ECC_CURVE25519, out, scalar, point);
	if (e)
		return crypt_errno(e);
	if (crypt_equal(out, zero, CRYPT_KEY_SIZE))
		return -EBADMSG;
	return 0;
}

int
crypt_argon2_check(uint32_t passes, uint32_t memory_kib, uint32_t parallel,
		   char *reason, size_t reason_size)
{
	char dummy[1];

	if (!reason || reason_size == 0) {
		reason = dummy;
		reason_size = sizeof(dummy);
	}
	if (passes < CRYPT_ARGON2_MIN_PASSES ||
	    passes > CRYPT_ARGON2_MAX_PASSES) {
		snprintf(reason, reason_size,
			 "Argon2id passes %" PRIu32 " is out of range %u..%u",
			 passes, CRYPT_ARGON2_MIN_PASSES,
			 CRYPT_ARGON2_MAX_PASSES);
		return -ERANGE;
	}
	if (parallel < CRYPT_ARGON2_MIN_PARALLEL ||
	    parallel > CRYPT_ARGON2_MAX_PARALLEL) {
		snprintf(reason, reason_size,
			 "Argon2id parallelism %" PRIu32 " is out of range %u..%u",
			 parallel, CRYPT_ARGON2_MIN_PARALLEL,
			 CRYPT_ARGON2_MAX_PARALLEL);
		return -ERANGE;
	}
	if (memory_kib < CRYPT_ARGON2_MIN_LANE_MEMORY_KIB * parallel ||
	    memory_kib > CRYPT_ARGON2_MAX_MEMORY_KIB) {
		snprintf(reason, reason_size,
			 "Argon2id memory %" PRIu32 " KiB is out of range "
			 "%" PRIu32 "..%u KiB", memory_kib,
			 CRYPT_ARGON2_MIN_LANE_MEMORY_KIB * parallel,
			 CRYPT_ARGON2_MAX_MEMORY_KIB);
		return -ERANGE;
	}
	if ((uint64_t)passes * memory_kib > CRYPT_ARGON2_MAX_WORK_KIB) {
		snprintf(reason, reason_size,
			 "Argon2id passes x memory (%" PRIu32 " x %" PRIu32
			 " KiB) is more than %llu KiB", passes, memory_kib,
			 CRYPT_ARGON2_MAX_WORK_KIB);
		return -ERANGE;
	}
	return 0;
}

int
crypt_argon2id(const char *passphrase, size_t len, const uint8_t *salt,
	       uint32_t passes, uint32_t memory_kib, uint32_t parallel,
	       uint8_t *out)
{
	unsigned long param[4] = { CRYPT_KEY_SIZE, passes, memory_kib,
				   parallel };
	gcry_kdf_hd_t h;
	gcry_error_t e;

	if (crypt_argon2_check(passes, memory_kib, parallel, NULL, 0) < 0)
		return -ERANGE;
	e = gcry_kdf_open(&h, GCRY_KDF_ARGON2, GCRY_KDF_ARGON2ID, param, 4,
			  passphrase, len, salt, CRYPT_SALT_SIZE,
			  NULL, 0, NULL, 0);
	if (e)
		return crypt_errno(e);
	e = gcry_kdf_compute(h, NULL);
	if (!e)
		e = gcry_kdf_final(h, CRYPT_KEY_SIZE, out);
	gcry_kdf_close(h);
	return e ? crypt_errno(e) : 0;
}

int
crypt_sk_seal(const uint8_t *sk, const uint8_t *pk, const char *passphrase,
	      size_t pass_len, uint32_t passes, uint32_t memory_kib,
	      uint32_t parallel, uint8_t *file)
{
	uint8_t *kek;
	int r;

	kek = gcry_calloc_secure(1, CRYPT_KEY_SIZE);
	if (!kek)
		return -ENOMEM;
	memset(file, 0, CRYPT_SK_FILE_SIZE);
	memcpy(file, CRYPT_SK_MAGIC, 8);
	file[8] = CRYPT_SK_VERSION;
	file[9] = CRYPT_KDF_ARGON2ID;
	torpor_put_le32(file + CRYPT_SK_OFF_PASSES, passes);
	torpor_put_le32(file + CRYPT_SK_OFF_MEMORY, memory_kib);
	torpor_put_le32(file + CRYPT_SK_OFF_PARALLEL, parallel);
	gcry_randomize(file + CRYPT_SK_OFF_SALT, CRYPT_SALT_SIZE,
		       GCRY_STRONG_RANDOM);
	memcpy(file + CRYPT_SK_OFF_PUBLIC, pk, CRYPT_KEY_SIZE);
	gcry_create_nonce(file + CRYPT_SK_OFF_NONCE, CRYPT_NONCE_SIZE);
	r = crypt_argon2id(passphrase, pass_len, file + CRYPT_SK_OFF_SALT,
			   passes, memory_kib, parallel, kek);
	if (r >= 0)
		r = crypt_aead(true, kek, file + CRYPT_SK_OFF_NONCE, file,
			       CRYPT_SK_OFF_NONCE, sk, CRYPT_KEY_SIZE,
			       file + CRYPT_SK_OFF_SEALED,
			       file + CRYPT_SK_OFF_TAG);
	gcry_free(kek);
	return r;
}

int
crypt_sk_problem(const uint8_t *file, size_t len, char *reason,
		 size_t reason_size)
{
	if (len != CRYPT_SK_FILE_SIZE || memcmp(file, CRYPT_SK_MAGIC, 8) != 0) {
		snprintf(reason, reason_size, "not a torpor private key");
		return -EBADMSG;
	}
	if (file[8] != CRYPT_SK_VERSION || file[9] != CRYPT_KDF_ARGON2ID) {
		snprintf(reason, reason_size, "version %u, KDF %u: not a "
			 "private key this version can read", file[8],
			 file[9]);
		return -EPROTONOSUPPORT;
	}
	if (file[10] || file[11]) {
		snprintf(reason, reason_size, "reserved bytes are not zero: "
			 "not a torpor private key");
		return -EBADMSG;
	}
	/* Before anything is derived: the file says how much memory. */
	return crypt_argon2_check(torpor_get_le32(file + CRYPT_SK_OFF_PASSES),
				  torpor_get_le32(file + CRYPT_SK_OFF_MEMORY),
				  torpor_get_le32(file + CRYPT_SK_OFF_PARALLEL),
				  reason, reason_size);
}

int
crypt_sk_check(const uint8_t *file, size_t len)
{
	char reason[160];

	return crypt_sk_problem(file, len, reason, sizeof(reason));
}

int
crypt_sk_open(const uint8_t *file, const char *passphrase, size_t pass_len,
	      uint8_t *sk)
{
	uint8_t *kek, pk[CRYPT_KEY_SIZE];
	int r;

	r = crypt_sk_check(file, CRYPT_SK_FILE_SIZE);
	if (r < 0)
		return r;
	kek = gcry_calloc_secure(1, CRYPT_KEY_SIZE);
	if (!kek)
		return -ENOMEM;
	r = crypt_argon2id(passphrase, pass_len, file + CRYPT_SK_OFF_SALT,
			   torpor_get_le32(file + CRYPT_SK_OFF_PASSES),
			   torpor_get_le32(file + CRYPT_SK_OFF_MEMORY),
			   torpor_get_le32(file + CRYPT_SK_OFF_PARALLEL), kek);
	if (r >= 0) {
		r = crypt_aead(false, kek, file + CRYPT_SK_OFF_NONCE, file,
			       CRYPT_SK_OFF_NONCE, file + CRYPT_SK_OFF_SEALED,
			       CRYPT_KEY_SIZE, sk, (uint8_t *)file +
			       CRYPT_SK_OFF_TAG);
		if (r == -EBADMSG)
			r = -EKEYREJECTED;
	}
	gcry_free(kek);
	/* The scalar must give the public key stored beside it. */
	if (r >= 0) {
		r = crypt_x25519(sk, NULL, pk);
		if (r >= 0 && !crypt_equal(pk, file + CRYPT_SK_OFF_PUBLIC,
					   CRYPT_KEY_SIZE))
			r = -EBADMSG;
		if (r < 0)
			explicit_bzero(sk, CRYPT_KEY_SIZE);
	}
	return r;
}

void
crypt_pk_format(const uint8_t *pk, char *buf)
{
	static const char hex[] = "0123456789abcdef";
	size_t n = strlen(CRYPT_PK_PREFIX);

	memcpy(buf, CRYPT_PK_PREFIX, n);
	for (size_t i = 0; i < CRYPT_KEY_SIZE; i++) {
		buf[n++] = hex[pk[i] >> 4];
		buf[n++] = hex[pk[i] & 15];
	}
	buf[n++] = '\n';
	buf[n] = '\0';
}

int
crypt_hex_digit(char c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
crypt_pk_parse(const char *text, size_t len, uint8_t *pk)
{
	size_t n = strlen(CRYPT_PK_PREFIX);

	while (len > 0 && (text[len - 1] == '\n' || text[len - 1] == '\r' ||
			   text[len - 1] == ' ' || text[len - 1] == '\t'))
		len--;
	if (len != n + 2 * CRYPT_KEY_SIZE || memcmp(text, CRYPT_PK_PREFIX, n))
		return -EBADMSG;
	for (size_t i = 0; i < CRYPT_KEY_SIZE; i++) {
		int hi = crypt_hex_digit(text[n + 2 * i]);
		int lo = crypt_hex_digit(text[n + 2 * i + 1]);

		if (hi < 0 || lo < 0)
			return -EBADMSG;
		pk[i] = (uint8_t)(hi << 4 | lo);
	}
	return 0;
}

void
crypt_chunk_nonce(const uint8_t prefix[4], uint64_t sequence, uint8_t *nonce)
{
	memcpy(nonce, prefix, 4);
	torpor_put_be64(nonce + 4, sequence);
}

void
crypt_chunk_aad(const uint8_t *binding_digest, uint64_t sequence,
		uint32_t flags, uint32_t raw_len, uint64_t chunk_count,
		uint8_t *aad)
{
	memcpy(aad, binding_digest, CRYPT_DIGEST_SIZE);
	torpor_put_be64(aad + CRYPT_DIGEST_SIZE, sequence);
	torpor_put_be32(aad + CRYPT_DIGEST_SIZE + 8, flags);
	torpor_put_be32(aad + CRYPT_DIGEST_SIZE + 12, raw_len);
	torpor_put_be64(aad + CRYPT_DIGEST_SIZE + 16, chunk_count);
}
