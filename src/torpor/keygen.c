/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * torpor keygen: the keys of the crypt filter.
 *
 *   torpor keygen [--passphrase-file FILE] [--output DIR] [--force]
 *                 [--kdf-memory KIB] [--kdf-passes N] [--kdf-parallelism N]
 *   torpor keygen --keyfile [--output DIR] [--force]
 *
 * Sealed mode (the default): an X25519 key pair, the private key sealed
 * under a passphrase through Argon2id (DIR/crypt.key, 0600) and the public
 * key (DIR/crypt.pub, 0644).  --keyfile: 32 random bytes for keyfile mode
 * (DIR/crypt.keyfile, 0600).  The formats are in src/crypt-key/crypt-key.h
 * and doc/crypt.md.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <gcrypt.h>

#include "host.h"
#include "log.h"
#include "passphrase.h"
#include "write-all.h"

#include "crypt-key.h"
#include "keygen.h"

/*
 * Long-term keys come from GCRY_VERY_STRONG_RANDOM, which starts
 * libgcrypt's jitter entropy collector.  libgcrypt keeps the collector in
 * secure memory, where LeakSanitizer does not look, so the 128 KiB buffer
 * it points to is reported as leaked at exit; it is libgcrypt's, held for
 * the life of the process.  LeakSanitizer calls this hook when present;
 * other builds never do.
 */
const char *__lsan_default_suppressions(void);

const char *
__lsan_default_suppressions(void)
{
	return "leak:libgcrypt.so\n";
}

#define KEYGEN_DEFAULT_DIR "/etc/torpor"
#define KEYGEN_PASSPHRASE_MAX 1024
/* The chain keygen proposes: checksum first, so that its digests cover the
 * plaintext pages and every other filter's decoding; crypt last, since
 * encrypted data does not compress (torpor.conf(5), filters). */
#define KEYGEN_FILTERS "checksum, lzo, crypt"

struct keygen_args {
	const char *passphrase_file;
	const char *output;
	bool force;
	bool keyfile;
	uint32_t passes, memory_kib, parallel;
};

static void
keygen_usage(FILE *f)
{
	fprintf(f,
		"Usage: torpor keygen [--passphrase-file FILE] [--output DIR] [--force]\n"
		"                     [--kdf-memory KIB] [--kdf-passes N] [--kdf-parallelism N]\n"
		"       torpor keygen --keyfile [--output DIR] [--force]\n\n"
		"Create the keys of the crypt filter in DIR (default %s):\n"
		"  sealed mode: crypt.key (private, passphrase-protected, 0600) and\n"
		"               crypt.pub (public, 0644); hibernation needs only crypt.pub\n"
		"  --keyfile:   crypt.keyfile (32 random bytes, 0600) for mode = keyfile\n\n"
		"Options:\n"
		"      --passphrase-file FILE  read the passphrase from FILE's first line\n"
		"  -o, --output DIR            where to write the keys\n"
		"  -f, --force                 replace existing keys (images sealed for\n"
		"                              them can no longer be resumed)\n"
		"      --keyfile               create a key file instead of a key pair\n"
		"      --kdf-memory KIB        Argon2id memory in KiB: %u to %u, at least\n"
		"                              %u per lane (default %u)\n"
		"      --kdf-passes N          Argon2id passes: %u to %u (default %u)\n"
		"      --kdf-parallelism N     Argon2id lanes: %u to %u (default %u)\n"
		"The passes times the memory may be at most %llu KiB.\n",
		KEYGEN_DEFAULT_DIR,
		CRYPT_ARGON2_MIN_LANE_MEMORY_KIB * CRYPT_ARGON2_MIN_PARALLEL,
		CRYPT_ARGON2_MAX_MEMORY_KIB, CRYPT_ARGON2_MIN_LANE_MEMORY_KIB,
		CRYPT_ARGON2_MEMORY_KIB,
		CRYPT_ARGON2_MIN_PASSES, CRYPT_ARGON2_MAX_PASSES,
		CRYPT_ARGON2_PASSES,
		CRYPT_ARGON2_MIN_PARALLEL, CRYPT_ARGON2_MAX_PARALLEL,
		CRYPT_ARGON2_PARALLEL, CRYPT_ARGON2_MAX_WORK_KIB);
}

static int
parse_u32(const char *opt, const char *s, uint32_t min, uint32_t max,
	  uint32_t *ret)
{
	unsigned long v;
	char *end;

	errno = 0;
	v = strtoul(s, &end, 10);
	if (errno || end == s || *end || *s == '-' || v < min || v > max) {
		log_error("keygen: %s wants a number from %u to %u, not '%s'",
			  opt, min, max, s);
		return -EINVAL;
	}
	*ret = (uint32_t)v;
	return 0;
}

static int
join(char *buf, size_t size, const char *dir, const char *name)
{
	int n = snprintf(buf, size, "%s/%s", dir, name);

	return n < 0 || (size_t)n >= size ? -ENAMETOOLONG : 0;
}

/*
 * Write data to dir/name with mode, atomically: a temporary file in dir,
 * synced, then linked to its name (which fails if the name exists) or,
 * with force, renamed over it.
 */
static int
write_key_file(const char *dir, const char *name, const void *data,
	       size_t len, mode_t mode, bool force)
{
	char path[PATH_MAX], tmp[PATH_MAX];
	int fd, r;

	r = join(path, sizeof(path), dir, name);
	if (r >= 0)
		r = snprintf(tmp, sizeof(tmp), "%s/.%s.XXXXXX", dir, name) <
			(int)sizeof(tmp) ? 0 : -ENAMETOOLONG;
	if (r < 0)
		return log_error_errno(r, "keygen: %s/%s: path too long", dir, name);
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return log_error_errno(-errno, "keygen: cannot create a file in %s: %m", dir);
	/* The mode is set before a byte of the key is written. */
	if (fchmod(fd, mode) < 0) {
		r = log_error_errno(-errno, "keygen: chmod %s: %m", tmp);
		goto fail;
	}
	if (geteuid() == 0 && fchown(fd, 0, 0) < 0) {
		r = log_error_errno(-errno, "keygen: chown %s: %m", tmp);
		goto fail;
	}
	r = write_all(fd, data, len);
	if (r < 0) {
		log_error_errno(r, "keygen: writing %s: %m", tmp);
		goto fail;
	}
	if (fsync(fd) < 0) {
		r = log_error_errno(-errno, "keygen: syncing %s: %m", tmp);
		goto fail;
	}
	close(fd);
	fd = -1;
	if (force)
		r = rename(tmp, path) < 0 ? -errno : 0;
	else {
		r = link(tmp, path) < 0 ? -errno : 0;
		unlink(tmp);
	}
	if (r == -EEXIST)
		return log_error_errno(r, "keygen: %s already exists; use --force to replace it", path);
	if (r < 0) {
		log_error_errno(r, "keygen: cannot create %s: %m", path);
		unlink(tmp);
		return r;
	}
	fd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	return 0;
fail:
	close(fd);
	unlink(tmp);
	return r;
}

/* Refuse before asking for anything when a key is already there. */
static int
check_absent(const char *dir, const char *name, bool force)
{
	char path[PATH_MAX];
	struct stat s;

	if (join(path, sizeof(path), dir, name) < 0)
		return log_error_errno(-ENAMETOOLONG, "keygen: %s/%s: path too long",
				       dir, name);
	if (!force && lstat(path, &s) == 0)
		return log_error_errno(-EEXIST,
			"keygen: %s already exists; use --force to replace it "
			"(images sealed for the old key can then no longer be resumed)",
			path);
	return 0;
}

static int
ensure_dir(const char *dir)
{
	struct stat s;

	if (mkdir(dir, 0755) < 0 && errno != EEXIST)
		return log_error_errno(-errno, "keygen: cannot create %s: %m", dir);
	if (stat(dir, &s) < 0)
		return log_error_errno(-errno, "keygen: %s: %m", dir);
	if (!S_ISDIR(s.st_mode))
		return log_error_errno(-ENOTDIR, "keygen: %s is not a directory", dir);
	return 0;
}

/* The configuration takes absolute key paths only: the directory the
 * keys went to as one (it exists by now), into buf. */
static const char *
absolute_dir(const char *dir, char *buf)
{
	if (!realpath(dir, buf))
		snprintf(buf, PATH_MAX, "%s", dir);
	return buf;
}

static int
make_keyfile(const struct keygen_args *a)
{
	char dir[PATH_MAX];
	uint8_t *key;
	int r;

	r = check_absent(a->output, "crypt.keyfile", a->force);
	if (r < 0)
		return r;
	key = gcry_calloc_secure(1, CRYPT_KEYFILE_SIZE);
	if (!key)
		return log_error_errno(-ENOMEM, "keygen: out of secure memory");
	gcry_randomize(key, CRYPT_KEYFILE_SIZE, GCRY_VERY_STRONG_RANDOM);
	r = write_key_file(a->output, "crypt.keyfile", key, CRYPT_KEYFILE_SIZE,
			   0600, a->force);
	gcry_free(key);
	if (r < 0)
		return r;
	printf("Wrote %s/crypt.keyfile (32 random bytes, mode 0600).\n\n"
	       "Add to torpor.conf:\n"
	       "  [torpor]\n  filters = " KEYGEN_FILTERS "\n"
	       "  [crypt]\n  mode = keyfile\n  key_file = %s/crypt.keyfile\n\n"
	       "Both the hibernating system and the initramfs read this file: keep it\n"
	       "where only root can read it, or let a TPM unseal it in the initramfs.\n",
	       a->output, absolute_dir(a->output, dir));
	return 0;
}

static int
ask_new_passphrase(char *buf, size_t size)
{
	int attempt, r = -ENOTUNIQ;

	for (attempt = 0; attempt < 3 && r == -ENOTUNIQ; attempt++) {
		r = passphrase_ask_new("Passphrase for the hibernation key: ",
				       buf, size);
		if (r == -ENOTUNIQ)
			log_error("keygen: the passphrases do not match");
	}
	if (r == -EINVAL)
		return log_error_errno(r, "keygen: an empty passphrase protects nothing");
	if (r == -ENOKEY)
		return log_error_errno(r, "keygen: no terminal to ask for the passphrase; use --passphrase-file");
	if (r < 0 && r != -ENOTUNIQ)
		return log_error_errno(r, "keygen: cannot read the passphrase: %m");
	return r;
}

static int
make_key_pair(const struct keygen_args *a)
{
	struct {
		char passphrase[KEYGEN_PASSPHRASE_MAX];
		uint8_t sk[CRYPT_KEY_SIZE];
		uint8_t check[CRYPT_KEY_SIZE];
	} *sec;
	uint8_t pk[CRYPT_KEY_SIZE], file[CRYPT_SK_FILE_SIZE];
	char text[CRYPT_PK_TEXT_SIZE], dir[PATH_MAX];
	int n, r;

	r = check_absent(a->output, "crypt.key", a->force);
	if (r >= 0)
		r = check_absent(a->output, "crypt.pub", a->force);
	if (r < 0)
		return r;
	sec = gcry_calloc_secure(1, sizeof(*sec));
	if (!sec)
		return log_error_errno(-ENOMEM, "keygen: out of secure memory");

	n = ask_new_passphrase(sec->passphrase, sizeof(sec->passphrase));
	if (n < 0) {
		r = n;
		goto out;
	}
	gcry_randomize(sec->sk, CRYPT_KEY_SIZE, GCRY_VERY_STRONG_RANDOM);
	r = crypt_x25519(sec->sk, NULL, pk);
	if (r >= 0)
		r = crypt_sk_seal(sec->sk, pk, sec->passphrase, (size_t)n,
				  a->passes, a->memory_kib, a->parallel, file);
	/* Open what was sealed before anything is written: a key file that
	 * does not open would only be found out at resume. */
	if (r >= 0)
		r = crypt_sk_open(file, sec->passphrase, (size_t)n, sec->check);
	if (r >= 0 && !crypt_equal(sec->sk, sec->check, CRYPT_KEY_SIZE))
		r = -EIO;
	if (r < 0) {
		log_error_errno(r, "keygen: sealing the private key failed: %m");
		goto out;
	}
	crypt_pk_format(pk, text);
	r = write_key_file(a->output, "crypt.key", file, sizeof(file), 0600,
			   a->force);
	if (r >= 0)
		r = write_key_file(a->output, "crypt.pub", text, strlen(text),
				   0644, a->force);
	if (r < 0)
		goto out;
	absolute_dir(a->output, dir);
	printf("Wrote %s/crypt.key (private, passphrase-protected, Argon2id "
	       "m=%u KiB t=%u p=%u) and %s/crypt.pub (public).\n\n"
	       "Add to torpor.conf:\n"
	       "  [torpor]\n  filters = " KEYGEN_FILTERS "\n"
	       "  [crypt]\n  mode = sealed\n"
	       "  public_key = %s/crypt.pub\n  private_key = %s/crypt.key\n\n"
	       "Hibernation reads only the public key; the initramfs needs the private\n"
	       "key and asks for the passphrase at resume.\n",
	       a->output, a->memory_kib, a->passes, a->parallel, a->output,
	       dir, dir);
	r = 0;
out:
	explicit_bzero(file, sizeof(file));
	gcry_free(sec);		/* wiped by libgcrypt */
	return r;
}

/* The options into *a: 0 to go on, 1 after --help, -EINVAL after a
 * wrong word (said). */
static int
parse_args(int argc, char **argv, struct keygen_args *a)
{
	enum {
		OPT_PASSPHRASE_FILE = 0x100, OPT_KEYFILE, OPT_MEMORY,
		OPT_PASSES, OPT_PARALLEL,
	};
	static const struct option options[] = {
		{ "passphrase-file", required_argument, NULL, OPT_PASSPHRASE_FILE },
		{ "output", required_argument, NULL, 'o' },
		{ "force", no_argument, NULL, 'f' },
		{ "keyfile", no_argument, NULL, OPT_KEYFILE },
		{ "kdf-memory", required_argument, NULL, OPT_MEMORY },
		{ "kdf-passes", required_argument, NULL, OPT_PASSES },
		{ "kdf-parallelism", required_argument, NULL, OPT_PARALLEL },
		{ "help", no_argument, NULL, 'h' },
		{ NULL, 0, NULL, 0 },
	};
	int c, r = 0;

	/* Reset getopt: the caller may have parsed its own options. */
	optind = 0;
	opterr = 0;
	while (r == 0 && (c = getopt_long(argc, argv, ":o:fh", options, NULL)) != -1) {
		switch (c) {
		case OPT_PASSPHRASE_FILE:
			a->passphrase_file = optarg;
			break;
		case 'o':
			a->output = optarg;
			break;
		case 'f':
			a->force = true;
			break;
		case OPT_KEYFILE:
			a->keyfile = true;
			break;
		/* Each alone; check_args() then judges them together (the
		 * memory per lane, passes x memory). */
		case OPT_MEMORY:
			r = parse_u32("--kdf-memory", optarg,
				      CRYPT_ARGON2_MIN_LANE_MEMORY_KIB *
				      CRYPT_ARGON2_MIN_PARALLEL,
				      CRYPT_ARGON2_MAX_MEMORY_KIB, &a->memory_kib);
			break;
		case OPT_PASSES:
			r = parse_u32("--kdf-passes", optarg,
				      CRYPT_ARGON2_MIN_PASSES,
				      CRYPT_ARGON2_MAX_PASSES, &a->passes);
			break;
		case OPT_PARALLEL:
			r = parse_u32("--kdf-parallelism", optarg,
				      CRYPT_ARGON2_MIN_PARALLEL,
				      CRYPT_ARGON2_MAX_PARALLEL, &a->parallel);
			break;
		case 'h':
			keygen_usage(stdout);
			return 1;
		case ':':
			log_error("keygen: %s needs an argument", argv[optind - 1]);
			return -EINVAL;
		default:
			log_error("keygen: unknown option '%s' (torpor keygen --help)",
				  argv[optind - 1]);
			return -EINVAL;
		}
	}
	if (r < 0)
		return -EINVAL;
	if (optind < argc) {
		log_error("keygen: unexpected argument '%s'", argv[optind]);
		return -EINVAL;
	}
	return 0;
}

/* Options that make sense alone but not together, and a libgcrypt that
 * can do the work. */
static int
check_args(const struct keygen_args *a)
{
	char why[160];

	/* The bounds resume applies to the file: one place for both. */
	if (crypt_argon2_check(a->passes, a->memory_kib, a->parallel, why,
			       sizeof(why)) < 0) {
		log_error("keygen: %s", why);
		return -EINVAL;
	}
	if (a->keyfile && a->passphrase_file) {
		log_error("keygen: --keyfile makes a key without a passphrase; drop --passphrase-file");
		return -EINVAL;
	}
	if (host_init_crypto() < 0)
		return -EIO;
	if (!gcry_check_version(CRYPT_GCRYPT_MIN)) {
		log_error("keygen: libgcrypt %s lacks Argon2 and X25519; %s or later is needed",
			  gcry_check_version(NULL), CRYPT_GCRYPT_MIN);
		return -EPROTONOSUPPORT;
	}
	return 0;
}

int
torpor_keygen_main(int argc, char **argv)
{
	struct keygen_args a = {
		.output = KEYGEN_DEFAULT_DIR,
		.passes = CRYPT_ARGON2_PASSES,
		.memory_kib = CRYPT_ARGON2_MEMORY_KIB,
		.parallel = CRYPT_ARGON2_PARALLEL,
	};
	int r;

	r = parse_args(argc, argv, &a);
	if (r != 0)
		return r > 0 ? EXIT_SUCCESS : EXIT_FAILURE;
	if (check_args(&a) < 0 || ensure_dir(a.output) < 0)
		return EXIT_FAILURE;
	if (a.keyfile)
		return make_keyfile(&a) < 0 ? EXIT_FAILURE : EXIT_SUCCESS;

	if (a.passphrase_file)
		passphrase_set_file(a.passphrase_file);
	r = make_key_pair(&a);
	if (a.passphrase_file)
		passphrase_set_file(NULL);
	if (r >= 0 && geteuid() != 0)
		log_warning("keygen: not running as root: the keys belong to you; "
			    "torpor-resume, as root, refuses keys not owned by root");
	return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}
