/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * An LD_PRELOAD library that looks for known secrets (a passphrase, a key
 * file's bytes) where they must not be:
 *   - in every block handed to free(), at the moment it is freed;
 *   - at exit (after main() returned), in every private writable mapping
 *     without a file behind it: the heap, the main stack (the dead frames
 *     below the stack pointer included), thread stacks, anonymous memory
 *     (libgcrypt's secure pool among them).
 *
 *   TORPOR_SECRET_FILES=F1:F2...  each file's bytes (without one trailing
 *                                 newline) are a secret; at least 8 bytes
 *
 * Each find is reported on stderr ("secret-scan: FOUND ..."), and the exit
 * status becomes 97 if there was any.  The last line is a summary
 * ("secret-scan: done: ...") so the test can tell that the scan ran.
 * The secrets are kept XOR-masked, so this library's own copy is never a
 * find.  Blocks that realloc() moves, and memory unmapped before exit,
 * are not seen.
 */
#include <dlfcn.h>
#include <fcntl.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define MAX_SECRETS	4
#define MAX_SECRET_LEN	256
#define MASK		0x5a

struct secret {
	size_t len;
	uint8_t masked[MAX_SECRET_LEN];
};

static struct secret secrets[MAX_SECRETS];
static unsigned n_secrets;
static void (*real_free)(void *);
static unsigned long frees_scanned, finds;
static unsigned long long bytes_scanned;

/* One secret file into secrets[], masked as it comes in. */
static void
load_secret(const char *path)
{
	struct secret *s = &secrets[n_secrets];
	ssize_t n;
	int fd;

	if (n_secrets == MAX_SECRETS)
		return;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0) {
		fprintf(stderr, "secret-scan: cannot open %s\n", path);
		return;
	}
	n = read(fd, s->masked, sizeof(s->masked));
	close(fd);
	if (n > 0 && s->masked[n - 1] == '\n')
		s->masked[--n] = 0;
	for (ssize_t i = 0; i < n; i++)
		s->masked[i] ^= MASK;
	if (n < 8) {
		fprintf(stderr, "secret-scan: %s is too short to look for\n", path);
		return;
	}
	s->len = (size_t)n;
	n_secrets++;
}

__attribute__((constructor)) static void
scan_setup(void)
{
	char *list = getenv("TORPOR_SECRET_FILES");
	char *copy, *p, *save = NULL;

	real_free = (void (*)(void *))dlsym(RTLD_NEXT, "free");
	if (!list)
		return;
	copy = strdup(list);
	for (p = strtok_r(copy, ":", &save); p; p = strtok_r(NULL, ":", &save))
		load_secret(p);
	real_free(copy);
}

/* Whether secret s starts at p (compared unmasked byte by byte). */
static int
matches(const uint8_t *p, const struct secret *s)
{
	for (size_t i = 0; i < s->len; i++)
		if (p[i] != (uint8_t)(s->masked[i] ^ MASK))
			return 0;
	return 1;
}

/* The number of secrets found in [p, p + len); each is reported. */
static unsigned
scan(const uint8_t *p, size_t len, const char *where)
{
	unsigned found = 0;

	bytes_scanned += len;
	for (unsigned k = 0; k < n_secrets; k++) {
		const struct secret *s = &secrets[k];
		uint8_t first = s->masked[0] ^ MASK;
		const uint8_t *q = p, *end = p + len;

		while (q + s->len <= end &&
		       (q = memchr(q, first, (size_t)(end - q - s->len + 1)))) {
			if (matches(q, s)) {
				fprintf(stderr, "secret-scan: FOUND secret %u (%zu bytes) %s, at offset %zu\n",
					k + 1, s->len, where, (size_t)(q - p));
				found++;
				break;
			}
			q++;
		}
	}
	finds += found;
	return found;
}

void
free(void *ptr)
{
	if (ptr && n_secrets) {
		char where[64];

		snprintf(where, sizeof(where), "in a freed block of %zu bytes",
			 malloc_usable_size(ptr));
		scan(ptr, malloc_usable_size(ptr), where);
		frees_scanned++;
	}
	if (real_free)
		real_free(ptr);
}

/* Every private writable mapping with no file behind it, at exit. */
__attribute__((destructor)) static void
scan_at_exit(void)
{
	unsigned long mappings = 0;
	unsigned long long before = bytes_scanned;
	char line[512];
	FILE *f;

	if (!n_secrets)
		return;
	f = fopen("/proc/self/maps", "re");
	if (!f)
		return;
	/* Unbuffered: no heap block of our own while we read the heap. */
	setvbuf(f, NULL, _IONBF, 0);
	while (fgets(line, sizeof(line), f)) {
		unsigned long start, end;
		char perms[8], path[256] = "";
		char where[300];

		if (sscanf(line, "%lx-%lx %7s %*s %*s %*s %255s", &start, &end,
			   perms, path) < 3)
			continue;
		if (perms[0] != 'r' || perms[1] != 'w' || perms[3] != 'p')
			continue;
		if (path[0] && strcmp(path, "[heap]") != 0 &&
		    strncmp(path, "[stack", 6) != 0)
			continue;
		snprintf(where, sizeof(where), "at exit in %s mapping %lx-%lx",
			 path[0] ? path : "an anonymous", start, end);
		scan((const uint8_t *)start, end - start, where);
		mappings++;
	}
	fclose(f);
	fprintf(stderr, "secret-scan: done: %u secret(s), %lu freed block(s) and %lu mapping(s) at exit (%.1f MiB) scanned, %lu found\n",
		n_secrets, frees_scanned, mappings,
		(double)(bytes_scanned - before) / 1048576.0, finds);
	if (finds)
		_exit(97);
}
