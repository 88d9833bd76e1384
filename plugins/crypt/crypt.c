/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * crypt: authenticated encryption of every chunk with AES-256-GCM under a
 * fresh random data key per image.
 *
 * Modes ([crypt] mode=):
 *  - sealed: the data key is wrapped for an X25519 public key (ephemeral
 *    ECDH + HKDF-SHA256 + AES-256-GCM), so hibernation needs only the
 *    public key; resume unlocks the private key with a passphrase
 *    (Argon2id) and unwraps the data key;
 *  - keyfile: the data key is wrapped under a 32-byte key file (e.g. one a
 *    TPM unseals in the initramfs).
 *
 * Chunk format: ciphertext (as long as the input) then the 16-byte tag.
 * The nonce comes from the chunk's sequence number; the associated data
 * binds the image header (a digest of the core's binding), the sequence
 * number, the last-chunk flag, the raw length and the chunk count.  See
 * doc/crypt.md for the key hierarchy, the formats and the threat model.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gcrypt.h>

#include <torpor/plugin.h>
#include <torpor/plugin-util.h>

#include "crypt-key.h"

#define NAME "crypt"
#define PASSPHRASE_MAX 1024
#define PASSPHRASE_ATTEMPTS 3

/* Key material of one cycle; lives in secure memory. */
struct crypt_secrets {
	uint8_t data_key[CRYPT_KEY_SIZE];
	uint8_t chunk_key[CRYPT_KEY_SIZE];
	uint8_t mac_key[CRYPT_KEY_SIZE];
	uint8_t keyfile_key[CRYPT_KEY_SIZE];	/* keyfile mode */
	uint8_t sk[CRYPT_KEY_SIZE];		/* X25519 scalar: private or ephemeral */
	uint8_t shared[CRYPT_KEY_SIZE];
	uint8_t kek[CRYPT_KEY_SIZE];
	uint8_t answer_digest[CRYPT_DIGEST_SIZE];
	char passphrase[PASSPHRASE_MAX];
};

struct crypt_thread {
	gcry_cipher_hd_t cipher;
	uint64_t keyed;		/* the stream generation its key is from */
};

static const struct torpor_host *host;

static struct {
	struct crypt_secrets *sec;
	bool blob_loaded;		/* resume side: load_config() ran */
	bool streaming;			/* start_stream() succeeded */
	int mode;			/* CRYPT_MODE_* */
	uint8_t public_key[CRYPT_KEY_SIZE];	/* sealed, hibernation side */
	uint8_t blob[CRYPT_BLOB_SIZE];
	uint8_t binding_digest[CRYPT_DIGEST_SIZE];
	uint8_t nonce_prefix[4];
	uint64_t chunk_count;
	uint64_t generation;		/* bumped by every start_stream() */
	atomic_uint_fast64_t encrypted, decrypted, refused;
} st;

static const char *const mode_choices[] = { "sealed", "keyfile", NULL };

static const struct torpor_config_key crypt_keys[] = {
	{ .name = "mode", .type = TORPOR_CONFIG_ENUM,
	  .choices = mode_choices, .default_value = "sealed",
	  .help = "sealed: public key at hibernation, passphrase at resume; keyfile: a 32-byte key file" },
	{ .name = "public_key", .type = TORPOR_CONFIG_PATH,
	  .default_value = "/etc/torpor/crypt.pub",
	  .help = "sealed mode: the public key hibernation seals each image for (torpor keygen)" },
	{ .name = "private_key", .type = TORPOR_CONFIG_PATH,
	  .default_value = "/etc/torpor/crypt.key",
	  .help = "sealed mode: the passphrase-protected private key resume unlocks (0600, root)" },
	{ .name = "key_file", .type = TORPOR_CONFIG_PATH,
	  .default_value = "/etc/torpor/crypt.keyfile",
	  .help = "keyfile mode: 32 random bytes (0600, root), e.g. unsealed by a TPM" },
	{ .name = NULL },
};

static const char *
conf(const char *key, const char *fallback)
{
	const char *v = host->config_get ? host->config_get(NAME, key) : NULL;

	return v && *v ? v : fallback;
}

static void *
secure_alloc(size_t size)
{
	if (host && host->secure_alloc)
		return host->secure_alloc(size);
	return gcry_calloc_secure(1, size);
}

static void
secure_free(void *p, size_t size)
{
	if (!p)
		return;
	if (host && host->secure_free) {
		host->secure_free(p, size);
		return;
	}
	explicit_bzero(p, size);
	gcry_free(p);
}

/*
 * Read a key file into buf (at most size bytes; *ret_len gets the length).
 * secret: the file must be 0600 or tighter; either way, when we run as
 * root, it must be owned by root and not writable by others, since whoever
 * can replace a public key reads every later image.
 */
static int
read_key_file(const char *what, const char *path, bool secret, uint8_t *buf,
	      size_t size, size_t *ret_len)
{
	struct stat s;
	size_t got = 0;
	ssize_t n;
	int fd, r = 0;

	fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
	if (fd < 0) {
		r = -errno;
		if (r == -ENOENT)
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				   "the %s %s does not exist: torpor keygen creates the keys (or name yours in [crypt])",
				   what, path);
		else
			torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot open the %s %s: %m",
					 what, path);
		return r;
	}
	if (fstat(fd, &s) < 0) {
		r = -errno;
		goto out;
	}
	if (!S_ISREG(s.st_mode)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "the %s %s is not a regular file",
			  what, path);
		r = -EINVAL;
		goto out;
	}
	if (geteuid() == 0 && s.st_uid != 0) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "refusing the %s %s: it is owned by uid %u, not root",
			  what, path, (unsigned)s.st_uid);
		r = -EPERM;
		goto out;
	}
	if (secret && (s.st_mode & 0077)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "refusing the %s %s: its permissions %04o are wider than 0600 (chmod 600 %s)",
			  what, path, (unsigned)(s.st_mode & 07777), path);
		r = -EPERM;
		goto out;
	}
	if (!secret && (s.st_mode & 0022)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "refusing the %s %s: others may write it (permissions %04o)",
			  what, path, (unsigned)(s.st_mode & 07777));
		r = -EPERM;
		goto out;
	}
	/* One byte more than fits tells a too long file from a full one. */
	for (;;) {
		uint8_t extra;

		if (got == size) {
			n = read(fd, &extra, 1);
			if (n > 0) {
				torpor_log(host, NAME, TORPOR_LOG_ERR,
					  "the %s %s is larger than %zu bytes: not a torpor key",
					  what, path, size);
				r = -EBADMSG;
				goto out;
			}
		} else
			n = read(fd, buf + got, size - got);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			r = -errno;
			goto out;
		}
		if (n == 0)
			break;
		got += (size_t)n;
	}
	*ret_len = got;
out:
	if (r < 0 && r != -EPERM && r != -EBADMSG && r != -EINVAL)
		torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r, "cannot read the %s %s: %m",
			  what, path);
	if (r < 0)
		explicit_bzero(buf, size);
	close(fd);
	return r;
}

static int
load_public_key(uint8_t *pk)
{
	const char *path = conf("public_key", "/etc/torpor/crypt.pub");
	char text[CRYPT_PK_TEXT_SIZE + 16];
	size_t len;
	int r;

	r = read_key_file("public key", path, false, (uint8_t *)text,
			  sizeof(text), &len);
	if (r < 0)
		return r;
	r = crypt_pk_parse(text, len, pk);
	if (r < 0)
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "%s is not a torpor public key (torpor keygen writes one)",
			  path);
	return r;
}

static int
load_keyfile(uint8_t *key)
{
	const char *path = conf("key_file", "/etc/torpor/crypt.keyfile");
	size_t len;
	int r;

	r = read_key_file("key file", path, true, key, CRYPT_KEYFILE_SIZE, &len);
	if (r < 0)
		return r;
	if (len != CRYPT_KEYFILE_SIZE) {
		explicit_bzero(key, CRYPT_KEYFILE_SIZE);
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "the key file %s holds %zu bytes, not %d",
			  path, len, CRYPT_KEYFILE_SIZE);
		return -EBADMSG;
	}
	return 0;
}

static void
keyfile_id(const uint8_t *key, uint8_t *id)
{
	crypt_sha256(CRYPT_KEYFILE_ID_LABEL, strlen(CRYPT_KEYFILE_ID_LABEL),
		     key, CRYPT_KEY_SIZE, id);
}

static void
free_secrets(void)
{
	secure_free(st.sec, sizeof(*st.sec));
	st.sec = NULL;
}

static int
alloc_secrets(void)
{
	if (st.sec)
		return 0;
	st.sec = secure_alloc(sizeof(*st.sec));
	return st.sec ? 0 : -ENOMEM;
}

static int
crypt_load(const struct torpor_host *h)
{
	host = h;
	/* The programs initialise libgcrypt with secure memory before they
	 * load plugins; a test program may not have. */
	if (!gcry_control(GCRYCTL_INITIALIZATION_FINISHED_P)) {
		if (!gcry_check_version(GCRYPT_VERSION)) {
			torpor_log(h, NAME, TORPOR_LOG_ERR,
			       "libgcrypt %s is older than the %s crypt was built with",
			       gcry_check_version(NULL), GCRYPT_VERSION);
			return -ELIBBAD;
		}
		gcry_control(GCRYCTL_SUSPEND_SECMEM_WARN);
		gcry_control(GCRYCTL_INIT_SECMEM, 256 * 1024, 0);
		gcry_control(GCRYCTL_RESUME_SECMEM_WARN);
		gcry_control(GCRYCTL_INITIALIZATION_FINISHED, 0);
	}
	if (!gcry_check_version(CRYPT_GCRYPT_MIN)) {
		torpor_log(h, NAME, TORPOR_LOG_ERR,
		       "libgcrypt %s lacks Argon2 and X25519; crypt needs %s or later",
		       gcry_check_version(NULL), CRYPT_GCRYPT_MIN);
		return -ELIBBAD;
	}
	return 0;
}

static void
crypt_unload(void)
{
	free_secrets();
	explicit_bzero(&st, sizeof(st));
	host = NULL;
}

/*
 * At hibernation (no saved configuration loaded) read the key the image
 * will be wrapped for now, before anything is frozen, so that a missing
 * or unsafe key stops the cycle early.  At resume the keys are read in
 * start_stream(), once the header has been checked.
 */
static int
crypt_initialise(int starting_cycle)
{
	const char *mode;
	int r;

	if (!starting_cycle)
		return 0;
	atomic_store(&st.encrypted, 0);
	atomic_store(&st.decrypted, 0);
	atomic_store(&st.refused, 0);
	st.streaming = false;
	r = alloc_secrets();
	if (r < 0)
		return r;
	if (st.blob_loaded)
		return 0;

	mode = conf("mode", "sealed");
	if (strcmp(mode, "sealed") == 0)
		st.mode = CRYPT_MODE_SEALED;
	else if (strcmp(mode, "keyfile") == 0)
		st.mode = CRYPT_MODE_KEYFILE;
	else {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "unknown mode '%s' (sealed or keyfile)", mode);
		return -EINVAL;
	}
	if (st.mode == CRYPT_MODE_SEALED)
		return load_public_key(st.public_key);
	return load_keyfile(st.sec->keyfile_key);
}

static void
crypt_cleanup(int finishing_cycle)
{
	if (!finishing_cycle)
		return;
	free_secrets();
	st.streaming = false;
	st.blob_loaded = false;
	explicit_bzero(st.blob, sizeof(st.blob));
}

/* Chunk key, nonce prefix and MAC key from the data key; salted with the
 * image UUID so that even a repeated data key would give other keys. */
static int
derive_image_keys(const struct torpor_image_info *info)
{
	struct crypt_secrets *s = st.sec;
	uint8_t *prefix;
	int r;

	r = crypt_hkdf(s->data_key, CRYPT_KEY_SIZE, info->uuid, 16,
		       CRYPT_INFO_CHUNK_KEY, s->chunk_key, CRYPT_KEY_SIZE);
	if (r >= 0)
		r = crypt_hkdf(s->data_key, CRYPT_KEY_SIZE, info->uuid, 16,
			       CRYPT_INFO_MAC_KEY, s->mac_key, CRYPT_KEY_SIZE);
	if (r < 0)
		return r;
	prefix = gcry_malloc_secure(sizeof(st.nonce_prefix));
	if (!prefix)
		return -ENOMEM;
	r = crypt_hkdf(s->data_key, CRYPT_KEY_SIZE, info->uuid, 16,
		       CRYPT_INFO_NONCE_PREFIX, prefix, sizeof(st.nonce_prefix));
	if (r >= 0)
		memcpy(st.nonce_prefix, prefix, sizeof(st.nonce_prefix));
	gcry_free(prefix);
	return r;
}

static int
binding_tag(uint8_t *tag)
{
	return crypt_hmac(st.sec->mac_key, CRYPT_KEY_SIZE,
			  CRYPT_BINDING_LABEL, strlen(CRYPT_BINDING_LABEL),
			  st.binding_digest, CRYPT_DIGEST_SIZE, NULL, 0, tag);
}

/* The KEK of the wrap: from the ECDH secret (sealed) or the key file. */
static int
wrap_kek(const uint8_t *key_id, const uint8_t *wrap_in)
{
	struct crypt_secrets *s = st.sec;
	uint8_t salt[2 * CRYPT_KEY_SIZE];

	if (st.mode == CRYPT_MODE_KEYFILE)
		return crypt_hkdf(s->keyfile_key, CRYPT_KEY_SIZE, wrap_in,
				  CRYPT_KEY_SIZE, CRYPT_INFO_KEYFILE_WRAP,
				  s->kek, CRYPT_KEY_SIZE);
	memcpy(salt, wrap_in, CRYPT_KEY_SIZE);
	memcpy(salt + CRYPT_KEY_SIZE, key_id, CRYPT_KEY_SIZE);
	return crypt_hkdf(s->shared, CRYPT_KEY_SIZE, salt, sizeof(salt),
			  CRYPT_INFO_SEALED_WRAP, s->kek, CRYPT_KEY_SIZE);
}

static void
wipe_transients(void)
{
	explicit_bzero(st.sec->sk, sizeof(st.sec->sk));
	explicit_bzero(st.sec->shared, sizeof(st.sec->shared));
	explicit_bzero(st.sec->kek, sizeof(st.sec->kek));
	explicit_bzero(st.sec->keyfile_key, sizeof(st.sec->keyfile_key));
	explicit_bzero(st.sec->passphrase, sizeof(st.sec->passphrase));
	explicit_bzero(st.sec->answer_digest, sizeof(st.sec->answer_digest));
}

/* Hibernation: draw the image's data key and wrap it into the blob. */
static int
seal_image(void)
{
	static const uint8_t zero_nonce[CRYPT_NONCE_SIZE];
	struct crypt_secrets *s = st.sec;
	uint8_t *b = st.blob;
	int r;

	memset(b, 0, sizeof(st.blob));
	b[0] = CRYPT_BLOB_VERSION;
	b[1] = (uint8_t)st.mode;
	b[2] = CRYPT_AEAD_AES256_GCM;
	gcry_randomize(s->data_key, CRYPT_KEY_SIZE, GCRY_STRONG_RANDOM);
	if (st.mode == CRYPT_MODE_SEALED) {
		memcpy(b + CRYPT_BLOB_OFF_KEY_ID, st.public_key, CRYPT_KEY_SIZE);
		gcry_randomize(s->sk, CRYPT_KEY_SIZE, GCRY_STRONG_RANDOM);
		r = crypt_x25519(s->sk, NULL, b + CRYPT_BLOB_OFF_WRAP_IN);
		if (r >= 0)
			r = crypt_x25519(s->sk, st.public_key, s->shared);
		if (r == -EBADMSG)
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				  "the public key is a low-order point: not a usable key");
	} else {
		keyfile_id(s->keyfile_key, b + CRYPT_BLOB_OFF_KEY_ID);
		gcry_randomize(b + CRYPT_BLOB_OFF_WRAP_IN, CRYPT_KEY_SIZE,
			       GCRY_STRONG_RANDOM);
		r = 0;
	}
	/* A KEK is used once (fresh ephemeral key or salt per image), so a
	 * fixed nonce is safe for the wrap. */
	if (r >= 0)
		r = wrap_kek(b + CRYPT_BLOB_OFF_KEY_ID, b + CRYPT_BLOB_OFF_WRAP_IN);
	if (r >= 0)
		r = crypt_aead(true, s->kek, zero_nonce, b,
			       CRYPT_BLOB_OFF_WRAPPED, s->data_key,
			       CRYPT_KEY_SIZE, b + CRYPT_BLOB_OFF_WRAPPED,
			       b + CRYPT_BLOB_OFF_WRAPPED + CRYPT_KEY_SIZE);
	wipe_transients();
	return r;
}

static void
fingerprint(const uint8_t *key, char *buf)
{
	for (int i = 0; i < 8; i++)
		sprintf(buf + 2 * i, "%02x", key[i]);
}

/*
 * Resume, sealed mode: ask for the passphrase and open the private key.
 * -EKEYREJECTED after PASSPHRASE_ATTEMPTS wrong answers, or at once when
 * an answer repeats the previous one (a passphrase file gives the same
 * answer however often it is asked); -ENOKEY when nobody can be asked.
 */
static int
unlock_private_key(const uint8_t *file, const char *path)
{
	struct crypt_secrets *s = st.sec;
	uint8_t digest[CRYPT_DIGEST_SIZE];
	int attempt, n, r = -EKEYREJECTED;

	if (!TORPOR_HOST_HAS(host, ask_passphrase)) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "this program cannot ask for the passphrase of %s", path);
		return -ENOKEY;
	}
	for (attempt = 1; attempt <= PASSPHRASE_ATTEMPTS; attempt++) {
		n = host->ask_passphrase("Passphrase to resume the hibernated system: ",
					 s->passphrase, sizeof(s->passphrase));
		if (n < 0) {
			torpor_log_errno(host, NAME, TORPOR_LOG_ERR, n,
				  "cannot ask for the passphrase: %m");
			r = n == -ENOKEY || n == -ECANCELED || n == -ENXIO ||
			    n == -ENOTTY ? -ENOKEY : n;
			break;
		}
		if ((size_t)n >= sizeof(s->passphrase))
			n = (int)strnlen(s->passphrase, sizeof(s->passphrase) - 1);
		crypt_sha256(s->passphrase, (size_t)n, NULL, 0, digest);
		if (attempt > 1 &&
		    crypt_equal(digest, s->answer_digest, sizeof(digest))) {
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				  "the same wrong passphrase came again (from a file?): giving up");
			r = -EKEYREJECTED;
			break;
		}
		memcpy(s->answer_digest, digest, sizeof(digest));
		r = crypt_sk_open(file, s->passphrase, (size_t)n, s->sk);
		explicit_bzero(s->passphrase, sizeof(s->passphrase));
		if (r >= 0)
			break;
		if (r != -EKEYREJECTED) {
			if (r == -EBADMSG)
				torpor_log(host, NAME, TORPOR_LOG_ERR,
					   "cannot open the private key %s: it does not match the public key stored in it",
					   path);
			else
				torpor_log_errno(host, NAME, TORPOR_LOG_ERR, r,
						 "cannot open the private key %s: %m",
						 path);
			break;
		}
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "wrong passphrase for %s (attempt %d of %d)", path,
			  attempt, PASSPHRASE_ATTEMPTS);
	}
	explicit_bzero(digest, sizeof(digest));
	explicit_bzero(s->passphrase, sizeof(s->passphrase));
	return r;
}

/* Resume: recover the image's data key from the blob. */
static int
unseal_image(void)
{
	static const uint8_t zero_nonce[CRYPT_NONCE_SIZE];
	struct crypt_secrets *s = st.sec;
	const uint8_t *b = st.blob;
	char want[17], have[17];
	int r;

	if (st.mode == CRYPT_MODE_SEALED) {
		const char *path = conf("private_key", "/etc/torpor/crypt.key");
		uint8_t file[CRYPT_SK_FILE_SIZE];
		char why[160];
		size_t len;

		r = read_key_file("private key", path, true, file, sizeof(file),
				  &len);
		if (r < 0)
			return r;
		r = crypt_sk_problem(file, len, why, sizeof(why));
		if (r < 0) {
			/* Out-of-bounds KDF parameters are refused before
			 * any memory is taken for them: a key this torpor
			 * does not use, like one of a later version. */
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				  "refusing the private key %s: %s", path, why);
			return r == -ERANGE ? -EPROTONOSUPPORT : r;
		}
		if (!crypt_equal(file + CRYPT_SK_OFF_PUBLIC,
				 b + CRYPT_BLOB_OFF_KEY_ID, CRYPT_KEY_SIZE)) {
			fingerprint(b + CRYPT_BLOB_OFF_KEY_ID, want);
			fingerprint(file + CRYPT_SK_OFF_PUBLIC, have);
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				  "the image was sealed for public key %s..., but %s belongs to %s...",
				  want, path, have);
			return -ENOKEY;
		}
		r = unlock_private_key(file, path);
		if (r < 0)
			return r;
		r = crypt_x25519(s->sk, b + CRYPT_BLOB_OFF_WRAP_IN, s->shared);
		if (r < 0) {
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				  "the image's ephemeral key is not usable (header tampered)");
			return -EBADMSG;
		}
	} else {
		uint8_t id[CRYPT_DIGEST_SIZE];

		r = load_keyfile(s->keyfile_key);
		if (r < 0)
			return r;
		keyfile_id(s->keyfile_key, id);
		if (!crypt_equal(id, b + CRYPT_BLOB_OFF_KEY_ID, sizeof(id))) {
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				  "the key file %s is not the one this image was encrypted with",
				  conf("key_file", "/etc/torpor/crypt.keyfile"));
			return -ENOKEY;
		}
	}
	r = wrap_kek(b + CRYPT_BLOB_OFF_KEY_ID, b + CRYPT_BLOB_OFF_WRAP_IN);
	if (r >= 0) {
		r = crypt_aead(false, s->kek, zero_nonce, b,
			       CRYPT_BLOB_OFF_WRAPPED, b + CRYPT_BLOB_OFF_WRAPPED,
			       CRYPT_KEY_SIZE, s->data_key,
			       (uint8_t *)b + CRYPT_BLOB_OFF_WRAPPED +
			       CRYPT_KEY_SIZE);
		if (r == -EBADMSG)
			torpor_log(host, NAME, TORPOR_LOG_ERR,
				  "the image's wrapped data key: authentication failed (header tampered)");
	}
	wipe_transients();
	return r;
}

static int
crypt_start_stream(const struct torpor_image_info *info)
{
	uint8_t tag[CRYPT_DIGEST_SIZE];
	int r;

	if (!info || !info->binding || !info->binding_len || !st.sec)
		return -EINVAL;
	st.streaming = false;
	st.chunk_count = info->chunk_count;
	crypt_sha256(info->binding, info->binding_len, NULL, 0,
		     st.binding_digest);

	r = st.blob_loaded ? unseal_image() : seal_image();
	if (r >= 0)
		r = derive_image_keys(info);
	if (r >= 0)
		r = binding_tag(tag);
	if (r < 0)
		goto fail;
	if (!st.blob_loaded)
		memcpy(st.blob + CRYPT_BLOB_OFF_BINDING, tag, sizeof(tag));
	else if (!crypt_equal(tag, st.blob + CRYPT_BLOB_OFF_BINDING,
			      sizeof(tag))) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "image header: authentication failed: a field the restore depends on "
			  "(chain, counts, sizes, kernel release, UUID) changed since hibernation");
		r = -EBADMSG;
		goto fail;
	}
	st.generation++;
	st.streaming = true;
	return 0;
fail:
	wipe_transients();
	explicit_bzero(st.sec->data_key, CRYPT_KEY_SIZE);
	explicit_bzero(st.sec->chunk_key, CRYPT_KEY_SIZE);
	explicit_bzero(st.sec->mac_key, CRYPT_KEY_SIZE);
	return r;
}

static size_t
crypt_memory_needed(void)
{
	return sizeof(struct crypt_thread) + sizeof(struct crypt_secrets);
}

static size_t
crypt_storage_needed(void)
{
	return CRYPT_BLOB_SIZE;
}

static int
crypt_save_config(uint8_t *buf, size_t size)
{
	if (!st.streaming || st.blob_loaded)
		return -EINVAL;
	if (size < CRYPT_BLOB_SIZE)
		return -ENOBUFS;
	memcpy(buf, st.blob, CRYPT_BLOB_SIZE);
	return CRYPT_BLOB_SIZE;
}

static int
crypt_load_config(const uint8_t *buf, size_t len)
{
	if (!buf || len < 1)
		return -EBADMSG;
	if (buf[0] != CRYPT_BLOB_VERSION) {
		torpor_log(host, NAME, TORPOR_LOG_ERR,
			  "the image's crypt header has version %u; this crypt reads %u",
			  buf[0], CRYPT_BLOB_VERSION);
		return -EPROTONOSUPPORT;
	}
	if (len != CRYPT_BLOB_SIZE ||
	    (buf[1] != CRYPT_MODE_SEALED && buf[1] != CRYPT_MODE_KEYFILE) ||
	    buf[2] != CRYPT_AEAD_AES256_GCM || buf[3] != 0)
		return -EBADMSG;
	memcpy(st.blob, buf, CRYPT_BLOB_SIZE);
	st.mode = buf[1];
	st.blob_loaded = true;
	return 0;
}

static int
crypt_print_debug_info(char *buf, size_t size)
{
	int n;

	if (!buf || size == 0)
		return -EINVAL;
	n = snprintf(buf, size,
		     "%s, AES-256-GCM, %llu chunks encrypted, %llu decrypted, %llu refused",
		     st.mode == CRYPT_MODE_KEYFILE ? "keyfile" : "sealed",
		     (unsigned long long)atomic_load(&st.encrypted),
		     (unsigned long long)atomic_load(&st.decrypted),
		     (unsigned long long)atomic_load(&st.refused));
	if (n < 0)
		return -EIO;
	return (size_t)n >= size ? (int)(size - 1) : n;
}

static size_t
crypt_max_encoded_size(size_t in_len)
{
	return in_len + CRYPT_TAG_SIZE;
}

/*
 * The core may set up its worker threads before the stream starts (at
 * hibernation it allocates everything before freezing), so a thread's
 * cipher is keyed at its first chunk of each stream, not here.
 */
static int
crypt_thread_init(void **ret_state)
{
	struct crypt_thread *t;
	gcry_error_t e;

	t = calloc(1, sizeof(*t));
	if (!t)
		return -ENOMEM;
	/* The expanded key schedule goes to secure memory too. */
	e = gcry_cipher_open(&t->cipher, GCRY_CIPHER_AES256,
			     GCRY_CIPHER_MODE_GCM, GCRY_CIPHER_SECURE);
	if (e) {
		free(t);
		return crypt_errno(e);
	}
	*ret_state = t;
	return 0;
}

static void
crypt_thread_free(void *state)
{
	struct crypt_thread *t = state;

	if (!t)
		return;
	gcry_cipher_close(t->cipher);	/* wipes the key schedule */
	free(t);
}

static gcry_error_t
chunk_start(struct crypt_thread *t, const struct torpor_chunk_info *info)
{
	uint8_t nonce[CRYPT_NONCE_SIZE], aad[CRYPT_AAD_SIZE];
	gcry_error_t e;

	/* start_stream() ran before any encode / decode of its stream and
	 * nothing changes the generation while chunks are in flight. */
	if (t->keyed != st.generation) {
		e = gcry_cipher_setkey(t->cipher, st.sec->chunk_key,
				       CRYPT_KEY_SIZE);
		if (e)
			return e;
		t->keyed = st.generation;
	}
	crypt_chunk_nonce(st.nonce_prefix, info->sequence, nonce);
	crypt_chunk_aad(st.binding_digest, info->sequence, info->flags,
			info->raw_len, st.chunk_count, aad);
	e = gcry_cipher_setiv(t->cipher, nonce, sizeof(nonce));
	if (!e)
		e = gcry_cipher_authenticate(t->cipher, aad, sizeof(aad));
	if (!e)
		e = gcry_cipher_final(t->cipher);
	return e;
}

static int
crypt_encode(void *state, const struct torpor_chunk_info *info,
	     const uint8_t *in, size_t in_len,
	     uint8_t *out, size_t out_size, size_t *ret_len)
{
	struct crypt_thread *t = state;
	gcry_error_t e;

	if (!t || !info || !st.streaming)
		return -EINVAL;
	if (out_size < crypt_max_encoded_size(in_len))
		return -ENOBUFS;
	e = chunk_start(t, info);
	if (!e)
		e = gcry_cipher_encrypt(t->cipher, out, in_len, in, in_len);
	if (!e)
		e = gcry_cipher_gettag(t->cipher, out + in_len, CRYPT_TAG_SIZE);
	if (e) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "chunk %llu: encryption failed: %s",
			  (unsigned long long)info->sequence, gcry_strerror(e));
		return crypt_errno(e);
	}
	*ret_len = in_len + CRYPT_TAG_SIZE;
	atomic_fetch_add(&st.encrypted, 1);
	return 0;
}

static int
refuse_chunk(const struct torpor_chunk_info *info, const char *why)
{
	atomic_fetch_add(&st.refused, 1);
	torpor_log(host, NAME, TORPOR_LOG_ERR, "chunk %llu: authentication failed: %s",
		  (unsigned long long)info->sequence, why);
	return -EBADMSG;
}

static int
crypt_decode(void *state, const struct torpor_chunk_info *info,
	     const uint8_t *in, size_t in_len,
	     uint8_t *out, size_t out_size, size_t *ret_len)
{
	struct crypt_thread *t = state;
	size_t n;
	gcry_error_t e;

	if (!t || !info || !st.streaming)
		return -EINVAL;
	if (in_len < CRYPT_TAG_SIZE)
		return refuse_chunk(info, "shorter than its tag (truncated)");
	n = in_len - CRYPT_TAG_SIZE;
	if (n > out_size)
		return refuse_chunk(info, "longer than any chunk it could hold");
	/* The core says which position it reads; the last one, and only it,
	 * must carry the last-chunk flag, or the image was cut short. */
	if (info->sequence >= st.chunk_count)
		return refuse_chunk(info, "beyond the image's chunk count");
	if (!!(info->flags & TORPOR_CHUNK_LAST) !=
	    (info->sequence + 1 == st.chunk_count))
		return refuse_chunk(info, "last-chunk flag does not match the chunk count (truncated)");
	e = chunk_start(t, info);
	if (!e)
		e = gcry_cipher_decrypt(t->cipher, out, n, in, n);
	if (e) {
		torpor_log(host, NAME, TORPOR_LOG_ERR, "chunk %llu: decryption failed: %s",
			  (unsigned long long)info->sequence, gcry_strerror(e));
		return crypt_errno(e);
	}
	e = gcry_cipher_checktag(t->cipher, in + n, CRYPT_TAG_SIZE);
	if (e) {
		/* Nothing unauthenticated may leave the filter. */
		explicit_bzero(out, n);
		return refuse_chunk(info,
				    "modified, reordered, duplicated or truncated data, "
				    "or a changed image header");
	}
	*ret_len = n;
	atomic_fetch_add(&st.decrypted, 1);
	return 0;
}

static const struct torpor_filter crypt_plugin = {
	.plugin = {
		.name = NAME,
		.description = "AES-256-GCM authenticated encryption, sealed for a public key or a key file",
		.config_keys = crypt_keys,
		.load = crypt_load,
		.unload = crypt_unload,
		.initialise = crypt_initialise,
		.cleanup = crypt_cleanup,
		.memory_needed = crypt_memory_needed,
		.storage_needed = crypt_storage_needed,
		.save_config = crypt_save_config,
		.load_config = crypt_load_config,
		.print_debug_info = crypt_print_debug_info,
	},
	.start_stream = crypt_start_stream,
	.max_encoded_size = crypt_max_encoded_size,
	.thread_init = crypt_thread_init,
	.thread_free = crypt_thread_free,
	.encode = crypt_encode,
	.decode = crypt_decode,
};

TORPOR_FILTER_REGISTER(crypt_plugin)
