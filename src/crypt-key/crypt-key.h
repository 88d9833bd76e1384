/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor-crypt-key: the crypt filter's file formats (private and public
 * key files, the saved key blob, the per-chunk nonce and associated data)
 * and the primitives built on libgcrypt.  A static, position-independent
 * library linked by the plugin (plugins/crypt/crypt.c) and by `torpor
 * keygen` (src/torpor/keygen.c), so that both agree on the formats; the
 * unit tests link it too.  doc/crypt.md describes every format byte by
 * byte; a change here is a change there.  Nothing here logs.
 */
#ifndef TORPOR_CRYPT_KEY_H
#define TORPOR_CRYPT_KEY_H

#include <errno.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <gcrypt.h>

/* Sizes of the primitives. */
#define CRYPT_KEY_SIZE 32		/* AES-256, X25519 scalars and points */
#define CRYPT_NONCE_SIZE 12		/* GCM's 96-bit nonce */
#define CRYPT_TAG_SIZE 16		/* GCM tag */
#define CRYPT_DIGEST_SIZE 32		/* SHA-256 */
#define CRYPT_SALT_SIZE 16		/* Argon2id salt */

/* Oldest libgcrypt with Argon2 (gcry_kdf_open) and gcry_ecc_mul_point. */
#define CRYPT_GCRYPT_MIN "1.10.0"

/*
 * Private key file (sealed mode), binary, CRYPT_SK_FILE_SIZE bytes:
 *   0  magic "TORPORSK"
 *   8  u8 version (1)
 *   9  u8 kdf (1 = Argon2id)
 *  10  u16 reserved, 0
 *  12  u32 LE passes (Argon2 t)
 *  16  u32 LE memory in KiB (Argon2 m)
 *  20  u32 LE parallelism (Argon2 p)
 *  24  salt[16]
 *  40  public key[32] (X25519, in the clear: it is public)
 *  72  nonce[12]
 *  84  encrypted private scalar[32]
 * 116  tag[16]
 * The private scalar is sealed with AES-256-GCM under Argon2id(passphrase,
 * salt, t, m, p), with bytes 0..72 as associated data, so a changed
 * parameter or public key fails like a wrong passphrase would.
 */
#define CRYPT_SK_MAGIC "TORPORSK"
#define CRYPT_SK_VERSION 1
#define CRYPT_KDF_ARGON2ID 1
#define CRYPT_SK_OFF_PASSES 12
#define CRYPT_SK_OFF_MEMORY 16
#define CRYPT_SK_OFF_PARALLEL 20
#define CRYPT_SK_OFF_SALT 24
#define CRYPT_SK_OFF_PUBLIC 40
#define CRYPT_SK_OFF_NONCE 72
#define CRYPT_SK_OFF_SEALED 84
#define CRYPT_SK_OFF_TAG 116
#define CRYPT_SK_FILE_SIZE 132

/*
 * keygen's Argon2id defaults, and the bounds of every parameter, checked
 * (crypt_argon2_check()) before any memory is taken for the derivation:
 * a crafted key file cannot make torpor-resume take more than 1 GiB, nor
 * more than four times that in passes x memory (about ten times the
 * default work).  Memory is at least 8 KiB per lane, as Argon2 needs.
 * These are the only copies: keygen's options and --help, and the
 * refusals of a key file, take them from here; torpor(8) and
 * doc/crypt.md state them, and tests/integration/documented-bounds.sh
 * checks that the program does what torpor(8) says.
 */
#define CRYPT_ARGON2_PASSES 3
#define CRYPT_ARGON2_MEMORY_KIB (128u * 1024u)
#define CRYPT_ARGON2_PARALLEL 1
#define CRYPT_ARGON2_MIN_PASSES 1u
#define CRYPT_ARGON2_MAX_PASSES 16u
#define CRYPT_ARGON2_MIN_LANE_MEMORY_KIB 8u
#define CRYPT_ARGON2_MAX_MEMORY_KIB (1024u * 1024u)
#define CRYPT_ARGON2_MIN_PARALLEL 1u
#define CRYPT_ARGON2_MAX_PARALLEL 16u
#define CRYPT_ARGON2_MAX_WORK_KIB (4ull * 1024u * 1024u)

/* Public key file: one text line, "torpor-crypt-x25519-v1 " + 64 hex. */
#define CRYPT_PK_PREFIX "torpor-crypt-x25519-v1 "

/* Key file (keyfile mode): exactly 32 raw bytes. */
#define CRYPT_KEYFILE_SIZE CRYPT_KEY_SIZE

/*
 * Header blob (save_config), CRYPT_BLOB_SIZE bytes:
 *   0  u8 version (1)
 *   1  u8 mode (CRYPT_MODE_*)
 *   2  u8 aead (1 = AES-256-GCM)
 *   3  u8 reserved, 0
 *   4  key id[32]: sealed: the recipient's public key;
 *      keyfile: SHA-256("torpor-crypt keyfile id v1" || key)
 *  36  wrap input[32]: sealed: the ephemeral X25519 public key;
 *      keyfile: a random salt
 *  68  wrapped data key[32] + tag[16] (AES-256-GCM under the KEK, zero
 *      nonce, bytes 0..68 as associated data)
 * 116  binding tag[32]: HMAC-SHA256 under the image's MAC key of
 *      "torpor-crypt binding v1" || SHA-256(binding)
 * 148
 */
#define CRYPT_BLOB_VERSION 1
#define CRYPT_MODE_SEALED 1
#define CRYPT_MODE_KEYFILE 2
#define CRYPT_AEAD_AES256_GCM 1
#define CRYPT_BLOB_OFF_KEY_ID 4
#define CRYPT_BLOB_OFF_WRAP_IN 36
#define CRYPT_BLOB_OFF_WRAPPED 68
#define CRYPT_BLOB_OFF_BINDING 116
#define CRYPT_BLOB_SIZE 148

/* Associated data of every chunk; see crypt_chunk_aad(). */
#define CRYPT_AAD_SIZE (CRYPT_DIGEST_SIZE + 8 + 4 + 4 + 8)

/* HKDF "info" labels: one per derived key, so no two uses share one. */
#define CRYPT_INFO_SEALED_WRAP "torpor-crypt v1 sealed wrap"
#define CRYPT_INFO_KEYFILE_WRAP "torpor-crypt v1 keyfile wrap"
#define CRYPT_INFO_CHUNK_KEY "torpor-crypt v1 chunk key"
#define CRYPT_INFO_NONCE_PREFIX "torpor-crypt v1 nonce prefix"
#define CRYPT_INFO_MAC_KEY "torpor-crypt v1 binding mac"
#define CRYPT_KEYFILE_ID_LABEL "torpor-crypt keyfile id v1"
#define CRYPT_BINDING_LABEL "torpor-crypt binding v1"

/* Constant-time comparison, for tags and keys. */
bool crypt_equal(const void *a, const void *b, size_t len);

/* A libgcrypt error as a negative errno (-EIO when it has none). */
int crypt_errno(gcry_error_t e);

/*
 * HMAC-SHA256 over up to three pieces (NULL pieces skipped); out gets 32
 * bytes.  libgcrypt 1.10 has no HKDF, and HKDF is two HMAC calls.
 */
int crypt_hmac(const void *key, size_t key_len, const void *a, size_t a_len,
	       const void *b, size_t b_len, const void *c, size_t c_len,
	       uint8_t *out);

/*
 * HKDF-SHA256 (RFC 5869): out_len (at most 64) bytes from ikm, salt (may
 * be empty) and the label info.  The pseudo-random key and the blocks are
 * wiped before returning; out should be secure memory for keys.
 */
int crypt_hkdf(const void *ikm, size_t ikm_len, const void *salt,
	       size_t salt_len, const char *info, uint8_t *out, size_t out_len);

void crypt_sha256(const void *a, size_t a_len, const void *b, size_t b_len,
		  uint8_t *out);

/*
 * One-shot AES-256-GCM for the small things (key wrap, private key file):
 * seal len bytes of in into out and write the tag to tag; or open them,
 * -EBADMSG when the tag does not match (out is then wiped).
 */
int crypt_aead(bool seal, const uint8_t *key, const uint8_t *nonce,
	       const void *aad, size_t aad_len, const uint8_t *in, size_t len,
	       uint8_t *out, uint8_t *tag);

/* X25519: out = scalar * point (point NULL: the base point).  Refuses an
 * all-zero result, which only a low-order point can produce. */
int crypt_x25519(const uint8_t *scalar, const uint8_t *point, uint8_t *out);

/*
 * Whether Argon2id parameters lie within the bounds above: 0, or -ERANGE
 * with a reason in reason (reason_size bytes, may be 0) that names the
 * first field out of bounds ("passes", "memory", "parallelism", or
 * "passes x memory") and its limit.
 */
int crypt_argon2_check(uint32_t passes, uint32_t memory_kib,
		       uint32_t parallel, char *reason, size_t reason_size);

/* Argon2id(passphrase, salt, passes, memory KiB, parallelism) -> 32 bytes;
 * -ERANGE, before anything is allocated, for parameters out of bounds. */
int crypt_argon2id(const char *passphrase, size_t len, const uint8_t *salt,
		   uint32_t passes, uint32_t memory_kib, uint32_t parallel,
		   uint8_t *out);

/*
 * Build a private key file image (CRYPT_SK_FILE_SIZE bytes into file) for
 * the X25519 scalar sk and its public key pk, sealed under the passphrase.
 */
int crypt_sk_seal(const uint8_t *sk, const uint8_t *pk, const char *passphrase,
		  size_t pass_len, uint32_t passes, uint32_t memory_kib,
		  uint32_t parallel, uint8_t *file);

/* Check a private key file's fixed fields: -EBADMSG when it is not one,
 * -EPROTONOSUPPORT for a later version or another KDF, -ERANGE for KDF
 * parameters out of bounds.  crypt_sk_problem() says why in reason. */
int crypt_sk_check(const uint8_t *file, size_t len);
int crypt_sk_problem(const uint8_t *file, size_t len, char *reason,
		     size_t reason_size);

/*
 * Open a private key file with a passphrase: sk gets the scalar (secure
 * memory).  -EKEYREJECTED when the passphrase is wrong (or the file was
 * changed: GCM cannot tell the two apart).
 */
int crypt_sk_open(const uint8_t *file, const char *passphrase, size_t pass_len,
		  uint8_t *sk);

/* Public key file text for pk: CRYPT_PK_PREFIX, 64 hex digits, newline,
 * NUL; buf needs sizeof(CRYPT_PK_PREFIX) + 65 bytes. */
#define CRYPT_PK_TEXT_SIZE (sizeof(CRYPT_PK_PREFIX) + 2 * CRYPT_KEY_SIZE + 1)

void crypt_pk_format(const uint8_t *pk, char *buf);

/* The value of one hex digit, or -1. */
int crypt_hex_digit(char c);

/* Parse a public key file's text (len bytes, not NUL-terminated). */
int crypt_pk_parse(const char *text, size_t len, uint8_t *pk);

/*
 * The nonce of chunk sequence under an image's data key: the 32-bit
 * prefix derived from that key, then the sequence number big-endian.  The
 * map from sequence to nonce is injective, so within one image no two
 * chunks share a nonce; every image has its own random data key.
 */
void crypt_chunk_nonce(const uint8_t prefix[4], uint64_t sequence,
		       uint8_t *nonce);

/* The associated data of one chunk: SHA-256(binding), sequence, flags,
 * raw length and the image's chunk count, big-endian. */
void crypt_chunk_aad(const uint8_t *binding_digest, uint64_t sequence,
		     uint32_t flags, uint32_t raw_len, uint64_t chunk_count,
		     uint8_t *aad);

#endif
