/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A small stand-in for libFuzzer, for compilers without it: runs the
 * target over the files named on the command line, then over pseudo-random
 * mutations of the target's valid inputs.  The seed is fixed, so a crash
 * reproduces; the mutant is written to fuzz-crash.bin before each run only
 * with -k (keeping it costs a write per input).
 *
 *   fuzz-X [-n ITERATIONS] [-s SEED] [-w DIR] [-k] [FILE|DIR...]
 *
 * A DIR stands for every file in it (a corpus, or the regression inputs).
 *
 * -w DIR writes the valid inputs into DIR (a seed corpus for libFuzzer)
 * and exits.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fuzz.h"

#define FUZZ_MAX_INPUT (1u << 20)

static uint64_t rng_state;

static uint64_t
rng(void)
{
	rng_state ^= rng_state >> 12;
	rng_state ^= rng_state << 25;
	rng_state ^= rng_state >> 27;
	return rng_state * 0x2545F4914F6CDD1Dull;
}

/* Run the target on an exact-size copy so that any read past the end
 * lands outside the allocation (valgrind and ASan see it). */
static void
run(const uint8_t *data, size_t len, bool keep)
{
	uint8_t *copy = malloc(len ? len : 1);

	if (!copy)
		abort();
	memcpy(copy, data, len);
	if (keep) {
		FILE *f = fopen("fuzz-crash.bin", "wbe");

		if (f) {
			fwrite(data, 1, len, f);
			fclose(f);
		}
	}
	LLVMFuzzerTestOneInput(copy, len);
	free(copy);
}

static int run_file(const char *path);

/* Every file in dir; returns how many, or -1. */
static int
run_dir(const char *path, DIR *d)
{
	struct dirent *e;
	int n = 0;

	while ((e = readdir(d))) {
		char p[4096];

		if (e->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "%s/%s", path, e->d_name);
		if (run_file(p) < 0) {
			n = -1;
			break;
		}
		n++;
	}
	closedir(d);
	return n;
}

static int
run_file(const char *path)
{
	DIR *d = opendir(path);

	if (d)
		return run_dir(path, d) < 0 ? -1 : 0;
	static uint8_t buf[FUZZ_MAX_INPUT];
	size_t len;
	FILE *f = fopen(path, "rbe");

	if (!f) {
		fprintf(stderr, "%s: %s\n", path, strerror(errno));
		return -1;
	}
	len = fread(buf, 1, sizeof(buf), f);
	fclose(f);
	run(buf, len, false);
	return 0;
}

static const uint32_t interesting[] = {
	0, 1, 2, 3, 0x7f, 0x80, 0xff, 0x100, 4095, 4096, 4097, 8192, 65536,
	65537, 1u << 20, (1u << 20) + 1, 0x7fffffff, 0x80000000, 0xffffffff,
};

/* One random change to buf (len bytes, room for cap). */
static size_t
mutate(uint8_t *buf, size_t len, size_t cap)
{
	size_t at = len ? rng() % len : 0, n;
	uint32_t v;

	switch (rng() % 8) {
	case 0:		/* flip a bit */
	case 1:
		if (len)
			buf[at] ^= (uint8_t)(1u << (rng() % 8));
		break;
	case 2:		/* a random byte */
		if (len)
			buf[at] = (uint8_t)rng();
		break;
	case 3:		/* an interesting 8/32/64-bit value */
		v = interesting[rng() % (sizeof(interesting) / sizeof(interesting[0]))];
		n = (size_t[]){ 1, 4, 8 }[rng() % 3];
		for (size_t i = 0; i < n && at + i < len; i++)
			buf[at + i] = (uint8_t)(i < 4 ? v >> (8 * i) : 0);
		break;
	case 4:		/* truncate */
		len = at;
		break;
	case 5:		/* grow with random bytes */
		n = rng() % 64;
		if (len + n > cap)
			n = cap - len;
		for (size_t i = 0; i < n; i++)
			buf[len + i] = (uint8_t)rng();
		len += n;
		break;
	case 6:		/* delete a range */
		n = rng() % 48;
		if (at + n > len)
			n = len - at;
		memmove(buf + at, buf + at + n, len - at - n);
		len -= n;
		break;
	default:	/* duplicate a range in place of another */
		if (len) {
			size_t from = rng() % len;

			n = rng() % 48;
			if (from + n > len)
				n = len - from;
			if (at + n > len)
				n = len - at;
			memmove(buf + at, buf + from, n);
		}
		break;
	}
	return len;
}

static int
write_seeds(const char *dir)
{
	static uint8_t buf[FUZZ_MAX_INPUT];
	unsigned int i;
	size_t len;

	for (i = 0; (len = fuzz_seed(i, buf, sizeof(buf))) > 0; i++) {
		char path[4096];
		FILE *f;

		snprintf(path, sizeof(path), "%s/seed-%u", dir, i);
		f = fopen(path, "wbe");
		if (!f || fwrite(buf, 1, len, f) != len || fclose(f) != 0) {
			fprintf(stderr, "%s: cannot write\n", path);
			return EXIT_FAILURE;
		}
	}
	return EXIT_SUCCESS;
}

int
main(int argc, char **argv)
{
	static uint8_t seed[FUZZ_MAX_INPUT], buf[FUZZ_MAX_INPUT];
	unsigned long iterations = 1000000, it;
	uint64_t s = 0x746f72706f72ull;	/* "torpor" */
	unsigned int n_seeds = 0, k;
	bool keep = false;
	int opt, files = 0;

	if (getenv("TORPOR_UNDER_VALGRIND"))
		iterations = 20000;
	while ((opt = getopt(argc, argv, "n:s:w:k")) != -1) {
		switch (opt) {
		case 'n':
			iterations = strtoul(optarg, NULL, 0);
			break;
		case 's':
			s = strtoull(optarg, NULL, 0);
			break;
		case 'w':
			return write_seeds(optarg);
		case 'k':
			keep = true;
			break;
		default:
			fprintf(stderr, "usage: %s [-n N] [-s SEED] [-w DIR] [-k] [FILE...]\n",
				argv[0]);
			return EXIT_FAILURE;
		}
	}
	for (; optind < argc; optind++, files++)
		if (run_file(argv[optind]) < 0)
			return EXIT_FAILURE;

	rng_state = s ? s : 1;
	while (fuzz_seed(n_seeds, seed, sizeof(seed)) > 0)
		n_seeds++;
	for (it = 0; n_seeds && it < iterations; it++) {
		size_t len = fuzz_seed((unsigned int)(rng() % n_seeds), seed,
				       sizeof(seed));
		unsigned int rounds = 1 + (unsigned int)(rng() % 4);

		memcpy(buf, seed, len);
		for (k = 0; k < rounds; k++)
			len = mutate(buf, len, sizeof(buf));
		run(buf, len, keep);
	}
	printf("%d files, %lu mutations of %u valid inputs: no failure\n",
	       files, it, n_seeds);
	return EXIT_SUCCESS;
}
