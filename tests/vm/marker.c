/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The "user session" of the VM suite: the proof that a resume really
 * happened.  It draws a random token, fills a locked buffer with data
 * derived from it and prints the token and the buffer's checksum.  On
 * SIGUSR1 it reads the whole buffer again and prints both once more.  The
 * token only exists in this process's memory: seeing it again in a later
 * boot means the memory came back from the image, and the checksum says
 * every page of the buffer came back intact.
 *
 * Usage: marker [MiB]      (default 16)
 * With MARKER_FILL=mixed in the environment the buffer is not all random
 * but partly compressible, page by page, as a process's memory is: an
 * eighth zero pages, three eighths text-like pages (8-byte words from a
 * 16-word vocabulary), a quarter half random and half a repeated word, a
 * quarter random (`lz4 -1` stores 52 % of it, `gzip -1` 46 %).  The perf case's
 * large guest uses it.
 * Output: "MARKER pid=P token=T sum=S mib=M"
 *         "MARKER-AFTER pid=P token=T sum=S mib=M boottime_jump=J"
 *
 * With MARKER_THAWED_FD=N in the environment it also watches for the
 * resume itself: every 5 ms it compares CLOCK_BOOTTIME with
 * CLOCK_MONOTONIC, and the first time they have drifted apart by more
 * than half a second (the time the machine was off) it writes
 * "MARKER-THAWED pid=P boottime_jump=J" to descriptor N.  That line is the
 * moment this user process runs again after the thaw, whoever thawed it
 * and whatever the program that hibernated does afterwards; the VM
 * suite's perf case times the resume to it.
 * Exit: 0 after MARKER-AFTER, 1 on error.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#define TOKEN_BYTES 16
#define WATCH_NSEC 5000000L	/* the resume watch's poll period */
#define WATCH_JUMP 0.5		/* seconds of boottime drift that mean off */

static int
fill_random(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len > 0) {
		ssize_t n = getrandom(p, len, 0);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* xorshift64*: cheap and deterministic, enough to make every page differ. */
static uint64_t
next_word(uint64_t *state)
{
	uint64_t x = *state;

	x ^= x >> 12;
	x ^= x << 25;
	x ^= x >> 27;
	*state = x;
	return x * UINT64_C(2685821657736338717);
}

#define PAGE_WORDS 512	/* 4 KiB */

/* One page of MARKER_FILL=mixed, from the generator's state. */
static void
fill_mixed_page(uint64_t *w, uint64_t *state)
{
	uint64_t vocab[16], kind = next_word(state) % 8, bits = 0;

	if (kind == 0) {
		memset(w, 0, PAGE_WORDS * sizeof(*w));
		return;
	}
	if (kind <= 3) {
		for (int i = 0; i < 16; i++)
			vocab[i] = next_word(state);
		for (int i = 0; i < PAGE_WORDS; i++) {
			if (i % 16 == 0)
				bits = next_word(state);
			w[i] = vocab[bits & 15];
			bits >>= 4;
		}
		return;
	}
	for (int i = 0; i < PAGE_WORDS; i++)
		w[i] = next_word(state);
	if (kind <= 5)
		for (int i = PAGE_WORDS / 2; i < PAGE_WORDS; i++)
			w[i] = w[0];
}

/* FNV-1a over 64-bit words, position-dependent through the running state. */
static uint64_t
checksum(const uint64_t *words, size_t n)
{
	uint64_t h = UINT64_C(14695981039346656037);

	for (size_t i = 0; i < n; i++) {
		h ^= words[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

static double
boottime_minus_monotonic(void)
{
	struct timespec b, m;

	clock_gettime(CLOCK_BOOTTIME, &b);
	clock_gettime(CLOCK_MONOTONIC, &m);
	return (double)(b.tv_sec - m.tv_sec) +
	       (double)(b.tv_nsec - m.tv_nsec) / 1e9;
}

int
main(int argc, char **argv)
{
	uint8_t token[TOKEN_BYTES];
	char hex[2 * TOKEN_BYTES + 1];
	size_t mib = 16, nwords;
	uint64_t *buf, state, sum;
	double jump_before;
	const char *watch = getenv("MARKER_THAWED_FD");
	const char *fill = getenv("MARKER_FILL");
	bool mixed = false;
	int watch_fd = -1, sig, r;
	sigset_t set;

	if (argc > 2) {
		fprintf(stderr, "usage: marker [MiB]\n");
		return 1;
	}
	if (argc == 2) {
		char *end;
		unsigned long v = strtoul(argv[1], &end, 10);

		if (*end != '\0' || v == 0 || v > 1024) {
			fprintf(stderr, "marker: bad size '%s'\n", argv[1]);
			return 1;
		}
		mib = v;
	}
	if (watch) {
		char *end;
		long v = strtol(watch, &end, 10);

		if (*end != '\0' || v < 0 || v > 1024) {
			fprintf(stderr, "marker: bad MARKER_THAWED_FD '%s'\n", watch);
			return 1;
		}
		watch_fd = (int)v;
	}
	if (fill && *fill) {
		if (strcmp(fill, "mixed") != 0) {
			fprintf(stderr, "marker: bad MARKER_FILL '%s' (mixed or empty)\n", fill);
			return 1;
		}
		mixed = true;
	}
	nwords = mib * 1024 * 1024 / sizeof(uint64_t);

	/* Block SIGUSR1 before anyone can send it: sigwait() collects it. */
	sigemptyset(&set);
	sigaddset(&set, SIGUSR1);
	sigprocmask(SIG_BLOCK, &set, NULL);

	r = fill_random(token, sizeof(token));
	if (r < 0) {
		fprintf(stderr, "marker: getrandom: %s\n", strerror(-r));
		return 1;
	}
	for (size_t i = 0; i < sizeof(token); i++)
		snprintf(hex + 2 * i, 3, "%02x", token[i]);

	buf = mmap(NULL, nwords * sizeof(uint64_t), PROT_READ | PROT_WRITE,
		   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (buf == MAP_FAILED) {
		fprintf(stderr, "marker: mmap %zu MiB: %m\n", mib);
		return 1;
	}
	/* Locked so that the pages sit in RAM (and so in the image), not in
	 * the swap area the image may be written to. */
	if (mlock(buf, nwords * sizeof(uint64_t)) < 0) {
		fprintf(stderr, "marker: mlock %zu MiB: %m\n", mib);
		return 1;
	}
	memcpy(&state, token, sizeof(state));
	state |= 1;
	if (mixed) {
		for (size_t i = 0; i < nwords; i += PAGE_WORDS)
			fill_mixed_page(buf + i, &state);
	} else {
		for (size_t i = 0; i < nwords; i++)
			buf[i] = next_word(&state);
	}
	sum = checksum(buf, nwords);
	/* Wipe the generator's state: the buffer alone must carry the proof. */
	state = 0;

	jump_before = boottime_minus_monotonic();
	printf("MARKER pid=%ld token=%s sum=%016" PRIx64 " mib=%zu\n",
	       (long)getpid(), hex, sum, mib);
	fflush(stdout);

	for (;;) {
		struct timespec period = { 0, WATCH_NSEC };
		double jump;

		if (watch_fd < 0) {
			r = sigwait(&set, &sig);
			if (r == 0 && sig == SIGUSR1)
				break;
			continue;
		}
		sig = sigtimedwait(&set, NULL, &period);
		if (sig == SIGUSR1)
			break;
		jump = boottime_minus_monotonic() - jump_before;

		if (jump > WATCH_JUMP) {
			dprintf(watch_fd, "MARKER-THAWED pid=%ld boottime_jump=%.1f\n",
				(long)getpid(), jump);
			watch_fd = -1;
		}
	}

	sum = checksum(buf, nwords);
	/* CLOCK_BOOTTIME jumps by the time spent powered off (the kernel adds
	 * the sleep time on resume from hibernation):
	 * a large jump is one more sign that the machine really was off. */
	printf("MARKER-AFTER pid=%ld token=%s sum=%016" PRIx64
	       " mib=%zu boottime_jump=%.1f\n",
	       (long)getpid(), hex, sum, mib,
	       boottime_minus_monotonic() - jump_before);
	fflush(stdout);
	munmap(buf, nwords * sizeof(uint64_t));
	return 0;
}
