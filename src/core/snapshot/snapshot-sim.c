/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The simulated snapshot device.  It hands out a deterministic synthetic
 * memory image ("sim:SIZE[:SEED]") with a mix of pages like a real one
 * (zero pages, machine code, text, incompressible data, heap) and at
 * resume takes pages back the way /dev/snapshot does, comparing each one
 * with the image it regenerates.  It needs no privileges, so the demo,
 * the tests and the benchmarks run on it.
 *
 * Every page is a function of (seed, page number) alone, so the resume
 * side can check any page in O(page) without having kept the image, and
 * the generator can stream gigabytes without holding them.
 */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <torpor/plugin-util.h>

#include "blockdev.h"
#include "log.h"
#include "snapshot-internal.h"
#include "snapshot.h"
#include "test-hook.h"

/* Runs of one kind never cross a block of this many data pages. */
#define RUN_BLOCK	64

/* ------------------------------------------------------------------ */
/* PRNG: xoshiro256** seeded through splitmix64, both public domain.   */

struct rng {
	uint64_t s[4];
};

static inline uint64_t
rotl64(uint64_t x, int k)
{
	return (x << k) | (x >> (64 - k));
}

static inline uint64_t
splitmix64(uint64_t *x)
{
	uint64_t z = (*x += UINT64_C(0x9E3779B97F4A7C15));

	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

enum rng_domain {
	DOMAIN_LAYOUT = 1,
	DOMAIN_PAGE = 2,
	DOMAIN_CODE_LIB = 3,
	DOMAIN_TEXT_LIB = 4,
};

static void
rng_seed(struct rng *r, uint64_t seed, uint64_t index, enum rng_domain d)
{
	uint64_t x = seed;
	uint64_t k = splitmix64(&x);

	/* Mix the index and domain through splitmix64 again so that
	 * neighbouring pages get unrelated states. */
	x = k ^ (index * UINT64_C(0xD1B54A32D192ED03)) ^
	    ((uint64_t)d << 60);
	r->s[0] = splitmix64(&x);
	r->s[1] = splitmix64(&x);
	r->s[2] = splitmix64(&x);
	r->s[3] = splitmix64(&x);
}

static inline uint64_t
rng_next(struct rng *r)
{
	uint64_t *s = r->s;
	uint64_t result = rotl64(s[1] * 5, 7) * 9;
	uint64_t t = s[1] << 17;

	s[2] ^= s[0];
	s[3] ^= s[1];
	s[1] ^= s[2];
	s[0] ^= s[3];
	s[2] ^= t;
	s[3] = rotl64(s[3], 45);
	return result;
}

/* ------------------------------------------------------------------ */
/* Which kind each page is.                                            */

/*
 * Share of data pages of each kind, in percent.  Tuned so that LZO1X-1
 * (32-page chunks) keeps about 36 % of the image, near what it keeps of
 * real memory images: zero pages ~1 %, code ~50 %, text ~40 %, heap
 * ~31 %, random 100 %.
 */
static const struct {
	enum sim_page_kind kind;
	unsigned percent;
} kind_mix[] = {
	{ SIM_PAGE_ZERO, 30 },
	{ SIM_PAGE_CODE, 14 },
	{ SIM_PAGE_TEXT, 16 },
	{ SIM_PAGE_RANDOM, 14 },
	{ SIM_PAGE_HEAP, 26 },
};

const char *
sim_page_kind_name(enum sim_page_kind kind)
{
	static const char *const names[SIM_PAGE_KIND_MAX] = {
		[SIM_PAGE_HEADER] = "header",
		[SIM_PAGE_ZERO] = "zero",
		[SIM_PAGE_CODE] = "code",
		[SIM_PAGE_TEXT] = "text",
		[SIM_PAGE_RANDOM] = "random",
		[SIM_PAGE_HEAP] = "heap",
	};

	if ((unsigned)kind >= SIM_PAGE_KIND_MAX)
		return "?";
	return names[kind];
}

static enum sim_page_kind
pick_kind(uint32_t v)
{
	/* v * 100 / 2^32 is uniform in [0, 100). */
	unsigned pct = (unsigned)(((uint64_t)v * 100) >> 32);
	unsigned acc = 0;
	size_t i;

	for (i = 0; i < sizeof(kind_mix) / sizeof(kind_mix[0]); i++) {
		acc += kind_mix[i].percent;
		if (pct < acc)
			return kind_mix[i].kind;
	}
	return SIM_PAGE_ZERO;
}

/* The kinds of the data pages 1 + block * RUN_BLOCK ... */
static void
block_layout(uint64_t seed, uint64_t block, uint8_t kinds[RUN_BLOCK])
{
	struct rng r;
	unsigned j = 0;

	rng_seed(&r, seed, block, DOMAIN_LAYOUT);
	while (j < RUN_BLOCK) {
		uint64_t v = rng_next(&r);
		enum sim_page_kind kind = pick_kind((uint32_t)(v >> 32));
		unsigned a = (unsigned)(v & 63), b = (unsigned)((v >> 6) & 63);
		/* 1..64 pages, short runs more likely than long ones. */
		unsigned len = 1 + a * b / 63;

		while (len-- && j < RUN_BLOCK)
			kinds[j++] = (uint8_t)kind;
	}
}

enum sim_page_kind
sim_page_kind(uint64_t seed, uint64_t page)
{
	uint8_t kinds[RUN_BLOCK];

	if (page == 0)
		return SIM_PAGE_HEADER;
	block_layout(seed, (page - 1) / RUN_BLOCK, kinds);
	return (enum sim_page_kind)kinds[(page - 1) % RUN_BLOCK];
}

/* ------------------------------------------------------------------ */
/* Page contents.  Each generator fills exactly SIM_PAGE_SIZE bytes.   */

static void
gen_random(struct rng *r, uint8_t *p)
{
	size_t i;

	for (i = 0; i < SIM_PAGE_SIZE; i += 8) {
		uint64_t v = rng_next(r);

		memcpy(p + i, &v, 8);
	}
}

/*
 * Text: words of a small vocabulary separated by spaces, commas, full
 * stops and line breaks, with the odd number.  Words sit in 16-byte slots
 * so that one fixed-size copy places any of them.
 */
struct word {
	char s[16];
	uint8_t len;
};
#define W(x) { x, sizeof(x) - 1 }
static const struct word vocabulary[64] = {
	W("the"), W("of"), W("and"), W("to"),
	W("in"), W("is"), W("that"), W("for"),
	W("it"), W("with"), W("as"), W("was"),
	W("on"), W("be"), W("at"), W("by"),
	W("this"), W("from"), W("or"), W("an"),
	W("are"), W("not"), W("but"), W("have"),
	W("which"), W("they"), W("you"), W("were"),
	W("all"), W("one"), W("can"), W("there"),
	W("error"), W("file"), W("user"), W("system"),
	W("memory"), W("page"), W("kernel"), W("device"),
	W("value"), W("return"), W("string"), W("number"),
	W("started"), W("service"), W("network"), W("process"),
	W("session"), W("config"), W("default"), W("version"),
	W("update"), W("window"), W("request"), W("message"),
	W("server"), W("client"), W("option"), W("module"),
	W("buffer"), W("thread"), W("status"), W("time"),
};
#undef W

/*
 * A phrase of the image's text library: 2..9 words.  Real text repeats
 * itself in phrases rather than in single words, which is what gives
 * compressors their long matches.  One hash of (image, phrase) picks the
 * words, so a phrase costs no more than copying it.
 */
#define TEXT_PHRASES	512

static inline uint64_t
mix64(uint64_t z)
{
	z = (z ^ (z >> 30)) * UINT64_C(0xBF58476D1CE4E5B9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94D049BB133111EB);
	return z ^ (z >> 31);
}

static size_t
text_phrase(uint64_t key, unsigned k, uint8_t *out)
{
	uint64_t v = mix64(key + k * UINT64_C(0x9E3779B97F4A7C15));
	unsigned n = 2 + (unsigned)(v & 7), i;
	size_t pos = 0;

	v >>= 3;
	for (i = 0; i < n; i++) {
		unsigned w = (unsigned)(v & 63);

		v >>= 6;
		memcpy(out + pos, vocabulary[w].s, 16);
		pos += vocabulary[w].len;
		out[pos++] = ' ';
	}
	return pos - 1;
}

/* Per-image keys of the text and code libraries. */
static uint64_t
library_key(uint64_t seed, enum rng_domain d)
{
	return mix64(seed ^ ((uint64_t)d << 56) ^ UINT64_C(0x5DEECE66D));
}

/* The image's code and text libraries made once (below); NULL: each
 * function or phrase is made as it is used. */
struct sim_library;
static size_t library_phrase(const struct sim_library *lib, unsigned k,
			     uint8_t *out);
static size_t library_function(const struct sim_library *lib, unsigned k,
			       uint8_t *out);

static void
gen_text(struct rng *r, uint64_t seed, const struct sim_library *lib,
	 uint8_t *p)
{
	/* Bytes, not strings: the two-byte ones have no NUL (gcc 15 and
	 * later warn about a string literal that leaves it out). */
	static const char seps[8][2] = {
		{ ' ' }, { ' ' }, { ' ' }, { ',', ' ' }, { ',', ' ' },
		{ '.', ' ' }, { '.', '\n' }, { '\n' },
	};
	static const uint8_t sep_len[8] = { 1, 1, 1, 2, 2, 2, 2, 1 };
	uint8_t buf[SIM_PAGE_SIZE + 256];
	uint64_t key = library_key(seed, DOMAIN_TEXT_LIB);
	size_t pos = 0;

	while (pos < SIM_PAGE_SIZE) {
		uint64_t v = rng_next(r);
		unsigned s = (unsigned)((v >> 3) & 7);

		if ((v & 7) < 5) {
			unsigned k = (unsigned)(v >> 6) % TEXT_PHRASES;

			pos += lib ? library_phrase(lib, k, buf + pos) :
				     text_phrase(key, k, buf + pos);
		} else if ((v & 7) < 7) {
			unsigned w = (unsigned)((v >> 6) & 63);

			memcpy(buf + pos, vocabulary[w].s, 16);
			pos += vocabulary[w].len;
		} else {
			/* A number, as in logs and tables. */
			unsigned num = (unsigned)((v >> 6) & 0xfffff), i;

			for (i = 0; i < 6; i++, num /= 10)
				buf[pos++] = (uint8_t)('0' + num % 10);
		}
		memcpy(buf + pos, seps[s], 2);
		pos += sep_len[s];
	}
	memcpy(p, buf, SIM_PAGE_SIZE);
}

/*
 * Machine code: x86-64 instruction encodings with random operands, and
 * int3 padding to 16 bytes after every return, as compilers emit.
 * Random bits go where mask is set (displacements and immediates only
 * ever need the low seven bytes).
 */
struct insn {
	uint8_t len;
	bool ret;
	uint8_t bytes[16];
	uint8_t mask[8];
};

static const struct insn insns[32] = {
	{ 1, false, { 0x55 }, { 0 } },					/* push rbp */
	{ 3, false, { 0x48, 0x89, 0xe5 }, { 0 } },			/* mov rbp,rsp */
	{ 2, false, { 0x41, 0x54 }, { 0, 0x03 } },			/* push r12..r15 */
	{ 4, false, { 0x48, 0x83, 0xec }, { 0, 0, 0, 0x78 } },		/* sub rsp,imm8 */
	{ 4, false, { 0x48, 0x8b, 0x45 }, { 0, 0, 0, 0xf8 } },		/* mov rax,[rbp+d8] */
	{ 4, false, { 0x48, 0x89, 0x45 }, { 0, 0, 0, 0xf8 } },		/* mov [rbp+d8],rax */
	{ 3, false, { 0x8b, 0x45 }, { 0, 0, 0xfc } },			/* mov eax,[rbp+d8] */
	{ 3, false, { 0x89, 0x45 }, { 0, 0, 0xfc } },			/* mov [rbp+d8],eax */
	{ 4, false, { 0x48, 0x8b, 0x7d }, { 0, 0, 0, 0xf8 } },		/* mov rdi,[rbp+d8] */
	{ 3, false, { 0x48, 0x89, 0xc7 }, { 0, 0, 0x07 } },		/* mov rdi,reg */
	{ 3, false, { 0x4c, 0x89, 0xe6 }, { 0, 0, 0x09 } },		/* mov rsi,r12.. */
	{ 5, false, { 0xe8, 0x00, 0x00 }, { 0, 0xff, 0xff, 0x01 } },	/* call rel32 */
	{ 5, false, { 0xe8, 0x00, 0x00, 0xff, 0xff }, { 0, 0xff, 0xff, 0x00 } }, /* call back */
	{ 7, false, { 0x48, 0x8d, 0x3d }, { 0, 0, 0, 0xff, 0xff, 0x03 } },	/* lea rdi,[rip+d32] */
	{ 7, false, { 0x48, 0x8b, 0x05 }, { 0, 0, 0, 0xff, 0xff, 0x03 } },	/* mov rax,[rip+d32] */
	{ 2, false, { 0x85, 0xc0 }, { 0, 0x09 } },			/* test eax,eax */
	{ 3, false, { 0x48, 0x85, 0xc0 }, { 0, 0, 0x09 } },		/* test rax,rax */
	{ 2, false, { 0x74 }, { 0, 0x3f } },				/* je rel8 */
	{ 2, false, { 0x75 }, { 0, 0x3f } },				/* jne rel8 */
	{ 6, false, { 0x0f, 0x84 }, { 0, 0, 0xff, 0x03 } },		/* je rel32 */
	{ 2, false, { 0xeb }, { 0, 0x7f } },				/* jmp rel8 */
	{ 2, false, { 0x31, 0xc0 }, { 0 } },				/* xor eax,eax */
	{ 5, false, { 0xb8 }, { 0, 0x1f } },				/* mov eax,imm32 */
	{ 4, false, { 0x48, 0x83, 0xc4 }, { 0, 0, 0, 0x78 } },		/* add rsp,imm8 */
	{ 7, true, { 0x5b, 0x5d, 0x41, 0x5c, 0x41, 0x5d, 0xc3 }, { 0 } }, /* pops; ret */
	{ 1, true, { 0xc3 }, { 0 } },					/* ret */
	{ 5, false, { 0x0f, 0x1f, 0x44, 0x00, 0x00 }, { 0 } },		/* nopl */
	{ 4, false, { 0x48, 0x8b, 0x43 }, { 0, 0, 0, 0x38 } },		/* mov rax,[rbx+d8] */
	{ 4, false, { 0x48, 0x89, 0x43 }, { 0, 0, 0, 0x38 } },		/* mov [rbx+d8],rax */
	{ 3, false, { 0x83, 0xf8 }, { 0, 0, 0x1f } },			/* cmp eax,imm8 */
	{ 6, false, { 0xff, 0x15 }, { 0, 0, 0xff, 0x0f } },		/* call [rip+d32] */
	{ 4, false, { 0x0f, 0xb6, 0x45 }, { 0, 0, 0, 0xff } },		/* movzx eax,[rbp+d8] */
};

/*
 * A function of the image's code library: instructions from the table
 * above, a return, int3 padding to 16 bytes.  Pages of code are these
 * functions one after the other with some call targets relocated, so the
 * same sequences recur across pages as in mapped binaries.
 */
#define CODE_FUNCTIONS	4096
#define CODE_FN_MAX	(48 + 255 + 16 + 16 + 16)

/* One instruction from the low bits of v at out; returns its length. */
static inline size_t
put_insn(uint8_t *out, uint64_t v)
{
	/* the table without its returns: those end a function */
	unsigned t = (unsigned)(v & 31);
	uint64_t lo, mask;

	if (insns[t].ret)
		t = 0;
	memcpy(&lo, insns[t].bytes, 8);
	memcpy(&mask, insns[t].mask, 8);
	lo = (lo & ~mask) | ((v >> 5) & mask);
	memcpy(out, &lo, 8);
	memcpy(out + 8, insns[t].bytes + 8, 8);
	return insns[t].len;
}

static size_t
code_function(uint64_t key, unsigned k, uint8_t *out)
{
	uint64_t x = key + k * UINT64_C(0x9E3779B97F4A7C15);
	uint64_t v = mix64(x);
	size_t pos = 0, len = 48 + (v & 255);

	while (pos < len) {
		/* two instructions per draw: plenty random for code */
		v = mix64(x += UINT64_C(0x9E3779B97F4A7C15));
		pos += put_insn(out + pos, v);
		pos += put_insn(out + pos, (v >> 32) | (v << 32));
	}
	memcpy(out + pos, insns[24].bytes, 16);
	pos += insns[24].len;
	memset(out + pos, 0xcc, 16);
	return (pos + 15) & ~(size_t)15;
}

/*
 * The code and text libraries of one image, made once: placing a function
 * or a phrase is then a copy of the bytes code_function() or text_phrase()
 * makes, so that the benchmark's source measures torpor more than the
 * simulator.  Pages are the same with or without it.
 */
struct sim_library {
	uint64_t seed;
	uint32_t code_off[CODE_FUNCTIONS + 1];
	uint32_t phrase_off[TEXT_PHRASES + 1];
	uint8_t *code, *phrases;
};

static size_t
library_phrase(const struct sim_library *lib, unsigned k, uint8_t *out)
{
	size_t n = lib->phrase_off[k + 1] - lib->phrase_off[k];

	memcpy(out, lib->phrases + lib->phrase_off[k], n);
	return n;
}

static size_t
library_function(const struct sim_library *lib, unsigned k, uint8_t *out)
{
	size_t n = lib->code_off[k + 1] - lib->code_off[k];

	memcpy(out, lib->code + lib->code_off[k], n);
	return n;
}

static void
library_free(struct sim_library *lib)
{
	if (!lib)
		return;
	free(lib->code);
	free(lib->phrases);
	free(lib);
}

/* Both libraries of seed's image, or NULL without the memory (about
 * 0.9 MiB: the pages are then made the slower way). */
static struct sim_library *
library_make(uint64_t seed)
{
	uint64_t code_key = library_key(seed, DOMAIN_CODE_LIB);
	uint64_t text_key = library_key(seed, DOMAIN_TEXT_LIB);
	struct sim_library *lib = calloc(1, sizeof(*lib));
	uint8_t *tmp;
	unsigned k;

	if (!lib)
		return NULL;
	lib->seed = seed;
	lib->code = malloc((size_t)CODE_FUNCTIONS * CODE_FN_MAX);
	lib->phrases = malloc((size_t)TEXT_PHRASES * (9 * 16 + 1));
	if (!lib->code || !lib->phrases) {
		library_free(lib);
		return NULL;
	}
	for (k = 0; k < CODE_FUNCTIONS; k++)
		lib->code_off[k + 1] = lib->code_off[k] +
			(uint32_t)code_function(code_key, k,
						lib->code + lib->code_off[k]);
	for (k = 0; k < TEXT_PHRASES; k++)
		lib->phrase_off[k + 1] = lib->phrase_off[k] +
			(uint32_t)text_phrase(text_key, k,
					      lib->phrases + lib->phrase_off[k]);
	/* Give back what the worst case reserved. */
	tmp = realloc(lib->code, lib->code_off[CODE_FUNCTIONS]);
	if (tmp)
		lib->code = tmp;
	return lib;
}

static void
gen_code(struct rng *r, uint64_t seed, const struct sim_library *lib,
	 uint8_t *p)
{
	uint8_t fn[CODE_FN_MAX];
	uint64_t key = library_key(seed, DOMAIN_CODE_LIB);
	size_t pos = 0;

	while (pos < SIM_PAGE_SIZE) {
		uint64_t v = rng_next(r);
		unsigned k = (unsigned)(v & 0xffff) % CODE_FUNCTIONS;
		size_t len = lib ? library_function(lib, k, fn) :
				   code_function(key, k, fn);
		size_t n = len < SIM_PAGE_SIZE - pos ? len : SIM_PAGE_SIZE - pos;

		/* Relocate one call target. */
		if (len > 8 && (v & 0x10000)) {
			uint32_t rel = (uint32_t)(v >> 32);

			memcpy(fn + (v >> 17) % (len - 8), &rel, 4);
		}
		memcpy(p + pos, fn, n);
		pos += n;
	}
}

/*
 * Heap: 16-byte malloc slots holding chunk headers, pointers into the
 * same arena, small integers, reference counts, short strings and the
 * zeros between them.  Slots of one sort come in short runs, as arrays
 * and zeroed blocks do.
 */
static void
gen_heap(struct rng *r, uint64_t seed, uint8_t *p)
{
	/* One arena per image: pointers share their high bytes. */
	uint64_t arena = UINT64_C(0x0000550000000000) |
			 ((seed * UINT64_C(0x9E3779B1) & 0xfff) << 28);
	size_t pos = 0;

	while (pos < SIM_PAGE_SIZE) {
		uint64_t v = rng_next(r);
		unsigned sort = (unsigned)(v & 7);
		unsigned n = 1 + (unsigned)((v >> 3) & 3);
		/* per-slot variety from a cheap LCG step off v */
		uint64_t x = v;

		for (; n && pos < SIM_PAGE_SIZE; n--, pos += 16) {
			uint64_t w[2];

			x = x * UINT64_C(6364136223846793005) +
			    UINT64_C(1442695040888963407);
			switch (sort) {
			case 0:
			case 1:
				w[0] = 0;
				w[1] = 0;
				break;
			case 2:		/* chunk header: prev_size, size | in use */
				w[0] = 0;
				w[1] = ((((x >> 40) & 7) + 2) << 4) | 1;
				break;
			case 3:		/* two pointers */
				w[0] = arena | (((x >> 20) & 0xfffff) << 4);
				w[1] = arena | (((x >> 40) & 0xfffff) << 4);
				break;
			case 4:		/* pointer, small count */
				w[0] = arena | (((x >> 24) & 0xfffff) << 4);
				w[1] = (x >> 56) & 0xff;
				break;
			case 5:		/* small ints */
				w[0] = ((x >> 32) & 0xff) | (((x >> 40) & 0x3) << 32);
				w[1] = ((x >> 48) & 0xf) << 32;
				break;
			case 6:		/* refcount, flags */
				w[0] = 1 + ((x >> 40) & 3);
				w[1] = (x >> 44) & 0x100;
				break;
			default:	/* a short string */
				memcpy(w, vocabulary[(x >> 58) & 63].s, 16);
				break;
			}
			memcpy(p + pos, w, 16);
		}
	}
}

static void
generate_kind(uint64_t seed, uint64_t page, enum sim_page_kind kind,
	      const struct sim_library *lib, void *buf)
{
	struct rng r;

	if (kind == SIM_PAGE_ZERO) {
		memset(buf, 0, SIM_PAGE_SIZE);
		return;
	}
	rng_seed(&r, seed, page, DOMAIN_PAGE);
	switch (kind) {
	case SIM_PAGE_CODE:
		gen_code(&r, seed, lib, buf);
		break;
	case SIM_PAGE_TEXT:
		gen_text(&r, seed, lib, buf);
		break;
	case SIM_PAGE_HEAP:
		gen_heap(&r, seed, buf);
		break;
	default:
		gen_random(&r, buf);
		break;
	}
}

void
sim_generate_page(uint64_t seed, uint64_t page, void *buf)
{
	generate_kind(seed, page, sim_page_kind(seed, page), NULL, buf);
}

/* ------------------------------------------------------------------ */
/* The header page.                                                    */

static void
put_u64(uint8_t *p, size_t off, uint64_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

static void
put_u32(uint8_t *p, size_t off, uint32_t v)
{
	memcpy(p + off, &v, sizeof(v));
}

static void
put_str(uint8_t *p, size_t off, const char *s)
{
	size_t len = strnlen(s, SWSUSP_UTS_LEN - 1);

	memcpy(p + off, s, len);
}

/* LINUX_VERSION_CODE of a release such as "6.1.0-18-amd64". */
static uint32_t
version_code_of(const char *release)
{
	unsigned a = 0, b = 0, c = 0;

	if (sscanf(release, "%u.%u.%u", &a, &b, &c) < 2)
		return 0;
	return (a << 16) + (b << 8) + (c > 255 ? 255 : c);
}

void
sim_generate_header(uint64_t seed, uint64_t size, const char *release,
		    void *buf)
{
	uint64_t pages = size / SIM_PAGE_SIZE;
	uint8_t *p = buf;

	memset(p, 0, SIM_PAGE_SIZE);
	put_str(p, SWSUSP_OFF_SYSNAME, "Linux");
	put_str(p, SWSUSP_OFF_NODENAME, "torpor-sim");
	put_str(p, SWSUSP_OFF_RELEASE, release);
	put_str(p, SWSUSP_OFF_VERSION, "#1 SMP torpor-sim");
	put_str(p, SWSUSP_OFF_MACHINE, "x86_64");
	put_str(p, SWSUSP_OFF_DOMAINNAME, "(none)");
	put_u32(p, SWSUSP_OFF_VERSION_CODE, version_code_of(release));
	put_u64(p, SWSUSP_OFF_NUM_PHYSPAGES, 2 * pages);
	put_u32(p, SWSUSP_OFF_CPUS, 2);
	put_u64(p, SWSUSP_OFF_IMAGE_PAGES, pages - 1);
	put_u64(p, SWSUSP_OFF_PAGES, pages);
	put_u64(p, SWSUSP_OFF_SIZE, size);

	memcpy(p + SIM_OFF_TRAILER, SIM_MAGIC, sizeof(SIM_MAGIC));
	put_u32(p, SIM_OFF_FORMAT, SIM_FORMAT_VERSION);
	put_u32(p, SIM_OFF_PAGE_SIZE, SIM_PAGE_SIZE);
	put_u64(p, SIM_OFF_SEED, seed);
	put_u64(p, SIM_OFF_BYTES, size);
}

/* The simulated kernel's architecture in its header page: the machine
 * in the utsname and the memory map in the trailer. */
static void
sim_header_arch(uint8_t *p, const char *machine, const char *memory_map)
{
	memset(p + SWSUSP_OFF_MACHINE, 0, SWSUSP_UTS_LEN);
	put_str(p, SWSUSP_OFF_MACHINE, machine);
	memset(p + SIM_OFF_MEMORY_MAP, 0, SIM_MEMORY_MAP_SIZE);
	memcpy(p + SIM_OFF_MEMORY_MAP, memory_map,
	       strnlen(memory_map, SIM_MEMORY_MAP_SIZE - 1));
}

/* ------------------------------------------------------------------ */
/* The device.                                                         */

/* The kernel's swap bookkeeping for the area SNAPSHOT_SET_SWAP_AREA
 * named: pages 1..last_page of a swap partition, bad ones skipped. */
struct sim_swap {
	bool set;
	uint32_t last_page;
	uint32_t nr_bad;
	uint32_t *bad;
	uint64_t next;		/* the next page to hand out */
	uint64_t taken;		/* pages handed out */
};

struct sim_snapshot {
	struct snapshot s;	/* first: the ops get a struct snapshot * */
	/*
	 * The kernel's system_transition_mutex as /dev/snapshot takes it
	 * (kernel/power/user.c): read() and write() wait for it, every
	 * ioctl only tries it and fails with EBUSY while another thread of
	 * the caller is inside read() or write().  A caller that talks to
	 * the device from two threads at once sees the kernel's error here.
	 */
	pthread_mutex_t transition;
	struct sim_swap swap;
	uint64_t size, seed, pages;
	bool named;		/* the spec gave SIZE (and SEED) */
	uint64_t pref_image_size;	/* as handed over; 0: none */
	/* The simulated kernel: its release, machine and memory map. */
	char release[SWSUSP_UTS_LEN];
	char machine[SWSUSP_UTS_LEN];
	char memory_map[SIM_MEMORY_MAP_SIZE];
	/* The header page's: the running kernel's at hibernation, at resume
	 * the image's once its header page came (page 0 is made of them). */
	char img_release[SWSUSP_UTS_LEN];
	char img_machine[SWSUSP_UTS_LEN];
	char img_memory_map[SIM_MEMORY_MAP_SIZE];
	uint32_t img_version_code;

	bool frozen;
	/* hibernate */
	bool ready;		/* an image was created and not freed */
	bool resumed;		/* powered off: the next create_image is the
				 * one that returns in the "resumed" system */
	const char *after;	/* how the cycle left: "poweroff", "reboot",
				 * "suspend" (NULL: not yet) */
	uint64_t next_read;
	/* resume */
	bool header_seen;
	bool judged;		/* the header passed the kernel's check */
	bool refused;		/* a page was refused: take no more */
	bool mismatch;
	uint64_t mismatch_page;
	uint64_t next_write;

	uint64_t cached_block;
	bool have_block;
	uint8_t kinds[RUN_BLOCK];
	uint8_t *scratch;	/* one page */
	struct sim_library *lib;	/* of seed, made at the first page */
	/* Pages batch_first.. of the premade image (snapshot_sim_premake()),
	 * batch_pages of them. */
	uint8_t *batch;
	uint64_t batch_first, batch_pages;
	uint64_t premade_served;	/* pages taken from it */
};

static const struct snapshot_ops sim_ops;

static struct sim_snapshot *
to_sim(struct snapshot *s)
{
	return (struct sim_snapshot *)s;
}

/* An ioctl's way in: the lock if it is free, else the kernel's EBUSY. */
static int
ioctl_enter(struct snapshot *s)
{
	return pthread_mutex_trylock(&to_sim(s)->transition) == 0 ? 0 : -EBUSY;
}

/* read(), write() and close() wait for the lock. */
static void
io_enter(struct snapshot *s)
{
	pthread_mutex_lock(&to_sim(s)->transition);
}

static void
leave(struct snapshot *s)
{
	pthread_mutex_unlock(&to_sim(s)->transition);
}

/* Page `page` of this image into buf, reusing the run layout. */
static void
sim_fill(struct sim_snapshot *m, uint64_t page, void *buf)
{
	uint64_t block;

	if (page == 0) {
		sim_generate_header(m->seed, m->size, m->img_release, buf);
		sim_header_arch(buf, m->img_machine, m->img_memory_map);
		return;
	}
	block = (page - 1) / RUN_BLOCK;
	if (!m->have_block || m->cached_block != block) {
		block_layout(m->seed, block, m->kinds);
		m->cached_block = block;
		m->have_block = true;
	}
	/* The seed of "sim" alone at resume is known from the header. */
	if (m->lib && m->lib->seed != m->seed) {
		library_free(m->lib);
		m->lib = NULL;
	}
	if (!m->lib)
		m->lib = library_make(m->seed);
	generate_kind(m->seed, page,
		      (enum sim_page_kind)m->kinds[(page - 1) % RUN_BLOCK],
		      m->lib, buf);
}

/*
 * torpor bench's premade image: pages 1.. of one image (size, seed), made
 * once by the generator into a memfd before the bench forks the processes
 * it measures.  A sim of that image then hands those pages out and
 * compares with them at memory speed, and the bench measures torpor more
 * than the generator.  The pages are the generator's, byte for byte.
 */
static struct {
	int fd;
	uint64_t size, seed;
} premade = { .fd = -1 };

/* Premade pages come in by pread() this many at a time. */
#define PREMADE_BATCH	16

/* Page `page` of the premade image, or NULL: not premade, not this image,
 * or it could not be read (the generator makes it then).  The pages come
 * by pread() into a small buffer: the memfd's pages never join this
 * process's resident set, so the RSS the bench reports is torpor's. */
static const uint8_t *
premade_page(struct sim_snapshot *m, uint64_t page)
{
	uint64_t n;

	if (premade.fd < 0 || page == 0 || page >= m->pages ||
	    m->size != premade.size || m->seed != premade.seed)
		return NULL;
	if (m->batch_pages && page >= m->batch_first &&
	    page < m->batch_first + m->batch_pages)
		return m->batch + (page - m->batch_first) * SIM_PAGE_SIZE;
	if (!m->batch) {
		m->batch = malloc((size_t)PREMADE_BATCH * SIM_PAGE_SIZE);
		if (!m->batch)
			return NULL;
	}
	n = m->pages - page < PREMADE_BATCH ? m->pages - page : PREMADE_BATCH;
	if (pread(premade.fd, m->batch, n * SIM_PAGE_SIZE,
		  (off_t)(page * SIM_PAGE_SIZE)) != (ssize_t)(n * SIM_PAGE_SIZE)) {
		m->batch_pages = 0;
		return NULL;
	}
	m->batch_first = page;
	m->batch_pages = n;
	return m->batch;
}

/* Page `page` of this image: the premade one, or made into buf. */
static const uint8_t *
sim_page(struct sim_snapshot *m, uint64_t page, uint8_t *buf)
{
	const uint8_t *p = premade_page(m, page);

	if (p) {
		m->premade_served++;
		return p;
	}
	sim_fill(m, page, buf);
	return buf;
}

int
snapshot_sim_premake(uint64_t size, uint64_t seed)
{
	struct sim_snapshot m = { .size = size, .seed = seed };
	uint8_t *map;
	int fd, r = 0;

	if (size == 0 || size % SIM_PAGE_SIZE != 0)
		return -EINVAL;
	snapshot_sim_premade_drop();
	fd = memfd_create("torpor-sim-pages", MFD_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (ftruncate(fd, (off_t)size) < 0) {
		r = -errno;
		goto fail;
	}
	map = mmap(NULL, size, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);
	if (map == MAP_FAILED) {
		r = -errno;
		goto fail;
	}
	/* Reserve the pages first: a store into one the memory cannot
	 * give would be a SIGBUS. */
	r = fallocate(fd, 0, 0, (off_t)size) < 0 ? -errno : 0;
	for (uint64_t p = 1; r == 0 && p < size / SIM_PAGE_SIZE; p++) {
		sim_fill(&m, p, map + p * SIM_PAGE_SIZE);
		if (p % 256 == 255)
			madvise(map + (p - 255) * SIM_PAGE_SIZE,
				256 * SIM_PAGE_SIZE, MADV_DONTNEED);
	}
	library_free(m.lib);
	munmap(map, size);
	if (r < 0)
		goto fail;
	premade.fd = fd;
	premade.size = size;
	premade.seed = seed;
	return 0;
fail:
	close(fd);
	return r;
}

void
snapshot_sim_premade_drop(void)
{
	if (premade.fd >= 0)
		close(premade.fd);
	premade.fd = -1;
}

static int
do_freeze(struct snapshot *s)
{
	to_sim(s)->frozen = true;
	return 0;
}

/* Like the kernel: thawing with an image in memory is a no-op. */
static int
do_unfreeze(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	if (!m->ready)
		m->frozen = false;
	return 0;
}

/* Recorded only: the simulated image has the size its spec names. */
static int
do_pref_image_size(struct snapshot *s, uint64_t bytes)
{
	to_sim(s)->pref_image_size = bytes;
	return 0;
}

/*
 * The kernel refuses CREATE_IMAGE unless it is the hibernate side, tasks
 * are frozen and no image exists yet; after power_off() the call
 * "returns again" in the resumed system, with in_suspend = 0.
 */
static int
do_create_image(struct snapshot *s, int *in_suspend)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE || !m->frozen)
		return -EPERM;
	if (m->resumed) {
		m->resumed = false;
		m->ready = true;
		*in_suspend = 0;
		return 0;
	}
	if (m->ready)
		return -EPERM;
	/* As the kernel's: the copy must fit.  Only with a test's fake
	 * /proc: the sim's pages take no memory of this machine. */
	if (test_hook_path("TORPOR_TEST_SYSROOT", "")[0]) {
		struct snapshot_memory mem;

		snapshot_memory_read(m->size, &mem);
		if (snapshot_memory_short(&mem))
			return -ENOMEM;
	}
	m->ready = true;
	m->next_read = 0;
	*in_suspend = 1;
	return 0;
}

static int
do_image_size(struct snapshot *s, uint64_t *ret)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE || !m->ready)
		return -ENODATA;
	*ret = m->size;
	return 0;
}

static ssize_t
do_read_page(struct snapshot *s, void *buf)
{
	struct sim_snapshot *m = to_sim(s);
	const uint8_t *p;

	if (s->mode != SNAPSHOT_MODE_HIBERNATE)
		return -EBADF;
	if (!m->ready)
		return -ENODATA;
	if (m->next_read >= m->pages)
		return 0;
	p = sim_page(m, m->next_read++, buf);
	if (p != buf)
		memcpy(buf, p, SIM_PAGE_SIZE);
	return SIM_PAGE_SIZE;
}

static void
remember_mismatch(struct sim_snapshot *m, uint64_t page)
{
	if (m->mismatch)
		return;
	m->mismatch = true;
	m->mismatch_page = page;
	log_error("page %" PRIu64 " differs from the simulated image", page);
}

/*
 * The header tells the resume side which image to expect.  Refusals are
 * -EPERM with the kernel's "Image mismatch" wording where it has one.
 */
static int
sim_take_header(struct sim_snapshot *m, const uint8_t *p)
{
	struct snapshot_info info;
	uint64_t seed, size;
	uint32_t format, page_size;

	if (snapshot_parse_info(p, SIM_PAGE_SIZE, &info) < 0 ||
	    memcmp(p + SIM_OFF_TRAILER, SIM_MAGIC, sizeof(SIM_MAGIC)) != 0) {
		log_error("the first page is not the header of a simulated image; refusing it");
		return -EPERM;
	}
	memcpy(&format, p + SIM_OFF_FORMAT, sizeof(format));
	memcpy(&page_size, p + SIM_OFF_PAGE_SIZE, sizeof(page_size));
	memcpy(&seed, p + SIM_OFF_SEED, sizeof(seed));
	memcpy(&size, p + SIM_OFF_BYTES, sizeof(size));
	if (format != SIM_FORMAT_VERSION || page_size != SIM_PAGE_SIZE ||
	    size != info.size || info.pages != size / SIM_PAGE_SIZE) {
		log_error("Image mismatch: unknown simulated image format %" PRIu32 " (page size %" PRIu32 ")",
			  format, page_size);
		return -EPERM;
	}
	if (m->named && (size != m->size || seed != m->seed)) {
		log_error("Image mismatch: the image is sim:%" PRIu64 ":%" PRIu64 ", this device is sim:%" PRIu64 ":%" PRIu64,
			  size, seed, m->size, m->seed);
		return -EPERM;
	}
	memcpy(m->img_release, info.release, sizeof(m->img_release));
	memcpy(m->img_machine, info.machine, sizeof(m->img_machine));
	memset(m->img_memory_map, 0, sizeof(m->img_memory_map));
	memcpy(m->img_memory_map, p + SIM_OFF_MEMORY_MAP,
	       SIM_MEMORY_MAP_SIZE - 1);
	m->img_version_code = info.version_code;
	m->size = size;
	m->seed = seed;
	m->pages = info.pages;
	m->have_block = false;
	m->header_seen = true;
	return 0;
}

/* A refusal of the header, in the kernel's words: what its log would
 * say (refusal_said()), x86's own line first when there is one. */
static int
sim_refuse_header(struct sim_snapshot *m, const char *arch_line,
		  const char *reason)
{
	snprintf(m->s.refusal_said, sizeof(m->s.refusal_said),
		 "%s%s%s\"PM: hibernation: Image mismatch: %s\"",
		 arch_line ? "\"" : "", arch_line ? arch_line : "",
		 arch_line ? "\"; " : "", reason);
	log_debug("sim kernel: %s", m->s.refusal_said);
	return -EPERM;
}

/*
 * The kernel's check of the header page (load_header()), made as the
 * kernel makes it when it is asked for the next page.  An x86-64 kernel
 * (CONFIG_ARCH_HIBERNATION_HEADER) checks its architecture header: the
 * magic (here: an image of an x86_64 kernel) and the digest of the
 * firmware memory map (here: its name), not the release.  Any other
 * compares the kernel (check_image_kernel()).  Either refuses with
 * -EPERM.  The memory size check that follows is not simulated.
 */
static int
sim_judge_header(struct sim_snapshot *m)
{
	if (!strcmp(m->machine, SNAPSHOT_ARCH_HEADER_MACHINE)) {
		if (strcmp(m->img_machine, SNAPSHOT_ARCH_HEADER_MACHINE) != 0)
			return sim_refuse_header(m, "Unrecognized hibernate image header format!",
						 "architecture specific data");
		if (strncmp(m->img_memory_map, m->memory_map,
			    SIM_MEMORY_MAP_SIZE) != 0)
			return sim_refuse_header(m, "Hibernate inconsistent memory map detected!",
						 "architecture specific data");
		return 0;
	}
	if (m->img_version_code != version_code_of(m->release))
		return sim_refuse_header(m, NULL, "kernel version");
	if (strcmp(m->img_release, m->release) != 0)
		return sim_refuse_header(m, NULL, "kernel release");
	if (strcmp(m->img_machine, m->machine) != 0)
		return sim_refuse_header(m, NULL, "machine");
	return 0;
}

/*
 * Pages come back in order; each is compared with the page regenerated
 * from (seed, number).  Like write() on /dev/snapshot: the page size when
 * the page was taken, 0 once the image is complete, -EPERM when it was
 * refused (and for every page after that).
 */
static ssize_t
do_write_page(struct snapshot *s, const void *buf)
{
	struct sim_snapshot *m = to_sim(s);
	uint64_t page = m->next_write;
	int r;

	if (s->mode != SNAPSHOT_MODE_RESUME)
		return -EBADF;
	if (m->refused)
		return -EPERM;
	if (m->header_seen && page >= m->pages)
		return 0;
	if (page == 0) {
		r = sim_take_header(m, buf);
		if (r < 0) {
			m->refused = true;
			return r;
		}
	}
	if (page == 1 && !m->judged) {
		r = sim_judge_header(m);
		if (r < 0) {
			m->refused = true;
			return r;
		}
		m->judged = true;
	}
	if (memcmp(buf, sim_page(m, page, m->scratch), SIM_PAGE_SIZE) != 0) {
		remember_mismatch(m, page);
		m->refused = true;
		return -EPERM;
	}
	m->next_write++;
	s->pages_written++;
	s->pages_verified++;
	return SIM_PAGE_SIZE;
}

static int
do_atomic_restore(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_RESUME)
		return -EPERM;
	if (!m->frozen) {
		log_error("refusing to restore: tasks are not frozen");
		return -EPERM;
	}
	if (m->mismatch) {
		log_error("refusing to restore: page %" PRIu64 " differs from the simulated image",
			  m->mismatch_page);
		return -EPERM;
	}
	if (!m->header_seen) {
		log_error("refusing to restore: the image is incomplete (no valid header page was handed back)");
		return -EPERM;
	}
	if (s->pages_verified < m->pages) {
		log_error("refusing to restore: the image is incomplete, %" PRIu64 " of %" PRIu64 " pages missing",
			  m->pages - s->pages_verified, m->pages);
		return -EPERM;
	}
	s->restored = true;
	return 0;
}

static int
do_free_image(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	m->ready = false;
	m->next_read = 0;
	return 0;
}

static int
do_platform_support(struct snapshot *s, bool on)
{
	return 0;
}

/*
 * The tests' next boot: TORPOR_SIM_NEXT_BOOT, when set, is a shell command
 * run while the simulated machine is "off", before the cycle returns as
 * resumed: a torpor-resume there consumes the image as at a real boot,
 * and the cycle then reads back what it left.  (The hibernating process
 * keeps the writer's device open meanwhile: exclusive opens make that a
 * test for files and shared devices.)
 */
static void
sim_next_boot(void)
{
	const char *cmd = getenv("TORPOR_SIM_NEXT_BOOT");
	int status = 0;
	pid_t pid;

	if (!cmd || !*cmd)
		return;
	fflush(NULL);
	pid = fork();
	if (pid == 0) {
		execl("/bin/sh", "sh", "-c", cmd, (char *)NULL);
		_exit(127);
	}
	if (pid < 0 || waitpid(pid, &status, 0) < 0) {
		log_warning_errno(-errno, "sim: the next boot could not run: %m");
		return;
	}
	log_notice("sim: next boot done (exit %d)",
		   WIFEXITED(status) ? WEXITSTATUS(status) : 128);
}

/* Nothing to switch off or restart: the image now counts as resumed,
 * and the way out is recorded (and said, for the tests). */
static int
sim_leave(struct snapshot *s, const char *how)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE)
		return -EPERM;
	m->resumed = true;
	m->ready = false;
	m->after = how;
	log_notice("sim: %s", how);
	sim_next_boot();
	return 0;
}

static int
do_power_off(struct snapshot *s)
{
	return sim_leave(s, "poweroff");
}

static int
do_reboot(struct snapshot *s)
{
	return sim_leave(s, "reboot");
}

/* Suspend to RAM and wake up at once: the image was not used. */
static int
do_suspend_to_ram(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	if (s->mode != SNAPSHOT_MODE_HIBERNATE || !m->ready)
		return -EPERM;
	m->ready = false;
	m->after = "suspend";
	log_notice("sim: suspend to RAM, woke up");
	return 0;
}

/*
 * SNAPSHOT_SET_SWAP_AREA.  The kernel takes an active swap area; the sim
 * takes an inactive swap partition (its header at offset 0 of the device
 * with that number), since the running kernel would hand the pages of an
 * active one to others.  A swap file's pages lie where its filesystem put
 * them, which the sim cannot see: -EOPNOTSUPP, and the writer allocates
 * itself.  Like the kernel: -EPERM once pages were handed out.
 */
static int
do_set_swap_area(struct snapshot *s, uint32_t dev, uint64_t offset)
{
	struct sim_swap *w = &to_sim(s)->swap;
	dev_t d = makedev((dev & 0xfff00) >> 8, (dev & 0xff) | ((dev >> 12) & 0xfff00));
	char node[PATH_MAX];
	uint8_t *pg = NULL;
	uint32_t last, nbad;
	int fd = -1, r;

	if (w->taken)
		return -EPERM;
	if (offset != 0)
		return -EOPNOTSUPP;
	r = bd_devnode(d, node, sizeof(node));
	if (r < 0)
		return r;
	fd = open(node, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -ENODEV;
	pg = malloc(SIM_PAGE_SIZE);
	r = pg ? 0 : -ENOMEM;
	if (r == 0 && pread(fd, pg, SIM_PAGE_SIZE, 0) != SIM_PAGE_SIZE)
		r = -ENODEV;
	if (r == 0 && (memcmp(pg + SIM_PAGE_SIZE - 10, "SWAPSPACE2", 10) != 0 ||
		       torpor_get_le32(pg + 1024) != 1))
		r = -ENODEV;
	if (r < 0)
		goto out;
	last = torpor_get_le32(pg + 1028);
	nbad = torpor_get_le32(pg + 1032);
	if (1536 + 4ull * nbad > SIM_PAGE_SIZE - 10) {
		r = -ENODEV;
		goto out;
	}
	free(w->bad);
	w->bad = nbad ? calloc(nbad, sizeof(*w->bad)) : NULL;
	if (nbad && !w->bad) {
		r = -ENOMEM;
		goto out;
	}
	for (uint32_t i = 0; i < nbad; i++)
		w->bad[i] = torpor_get_le32(pg + 1536 + 4 * i);
	w->last_page = last;
	w->nr_bad = nbad;
	w->next = 1;
	w->set = true;
out:
	free(pg);
	if (fd >= 0)
		close(fd);
	return r;
}

static bool
swap_page_bad(const struct sim_swap *w, uint64_t page)
{
	for (uint32_t i = 0; i < w->nr_bad; i++)
		if (w->bad[i] == page)
			return true;
	return false;
}

/* SNAPSHOT_AVAIL_SWAP_SIZE: the free bytes of the area (0 with none). */
static int64_t
do_avail_swap(struct snapshot *s)
{
	struct sim_swap *w = &to_sim(s)->swap;
	int64_t n = 0;

	if (!w->set)
		return 0;
	for (uint64_t p = w->next; p <= w->last_page; p++)
		n += !swap_page_bad(w, p);
	return n * SIM_PAGE_SIZE;
}

/* SNAPSHOT_ALLOC_SWAP_PAGE: the byte offset of the next free page, front
 * to back as on an empty area. */
static int64_t
do_alloc_swap_page(struct snapshot *s)
{
	struct sim_swap *w = &to_sim(s)->swap;

	if (!w->set)
		return -ENODEV;
	while (w->next <= w->last_page && swap_page_bad(w, w->next))
		w->next++;
	if (w->next > w->last_page)
		return -ENOSPC;
	w->taken++;
	return (int64_t)(w->next++ * SIM_PAGE_SIZE);
}

static int
do_free_swap_pages(struct snapshot *s)
{
	struct sim_swap *w = &to_sim(s)->swap;

	if (!w->set)
		return -ENODEV;
	w->next = 1;
	w->taken = 0;
	return 0;
}

/* Like the kernel: closed without the restore, the pages handed back
 * are dropped, and with them everything the device knew of the image. */
static void
sim_drop_unrestored(struct sim_snapshot *m)
{
	struct snapshot *s = &m->s;

	if (s->mode != SNAPSHOT_MODE_RESUME || s->restored ||
	    s->pages_written == 0)
		return;
	log_debug("closed without a restore: %" PRIu64 " pages handed back are dropped",
		  s->pages_written);
	s->pages_written = 0;
	s->pages_verified = 0;
	m->next_write = 0;
	m->header_seen = false;
	m->judged = false;
}

/* Like release(): waits for the lock. */
static void
sim_close(struct snapshot *s)
{
	struct sim_snapshot *m = to_sim(s);

	io_enter(s);
	sim_drop_unrestored(m);
	leave(s);
	pthread_mutex_destroy(&m->transition);
	free(m->swap.bad);
	library_free(m->lib);
	free(m->batch);
	free(m->scratch);
	free(m);
}

/* The device's entry points: each takes the transition lock as the
 * kernel does (an ioctl tries it, read(), write() and reboot() wait). */
#define SIM_IOCTL(name, type, params, args)				\
	static type							\
	sim_##name params						\
	{								\
		type r = ioctl_enter(s);				\
									\
		if (r < 0)						\
			return r;					\
		r = do_##name args;					\
		leave(s);						\
		return r;						\
	}
#define SIM_WAIT(name, type, params, args)				\
	static type							\
	sim_##name params						\
	{								\
		type r;							\
									\
		io_enter(s);						\
		r = do_##name args;					\
		leave(s);						\
		return r;						\
	}

SIM_IOCTL(freeze, int, (struct snapshot *s), (s))
SIM_IOCTL(unfreeze, int, (struct snapshot *s), (s))
SIM_IOCTL(pref_image_size, int, (struct snapshot *s, uint64_t bytes), (s, bytes))
SIM_IOCTL(create_image, int, (struct snapshot *s, int *in_suspend),
	  (s, in_suspend))
SIM_IOCTL(image_size, int, (struct snapshot *s, uint64_t *ret), (s, ret))
SIM_IOCTL(atomic_restore, int, (struct snapshot *s), (s))
SIM_IOCTL(free_image, int, (struct snapshot *s), (s))
SIM_IOCTL(platform_support, int, (struct snapshot *s, bool on), (s, on))
SIM_IOCTL(power_off, int, (struct snapshot *s), (s))
SIM_IOCTL(suspend_to_ram, int, (struct snapshot *s), (s))
SIM_IOCTL(set_swap_area, int, (struct snapshot *s, uint32_t dev, uint64_t offset),
	  (s, dev, offset))
SIM_IOCTL(avail_swap, int64_t, (struct snapshot *s), (s))
SIM_IOCTL(alloc_swap_page, int64_t, (struct snapshot *s), (s))
SIM_IOCTL(free_swap_pages, int, (struct snapshot *s), (s))
SIM_WAIT(read_page, ssize_t, (struct snapshot *s, void *buf), (s, buf))
SIM_WAIT(write_page, ssize_t, (struct snapshot *s, const void *buf), (s, buf))
SIM_WAIT(reboot, int, (struct snapshot *s), (s))

static const struct snapshot_ops sim_ops = {
	.freeze = sim_freeze,
	.unfreeze = sim_unfreeze,
	.pref_image_size = sim_pref_image_size,
	.create_image = sim_create_image,
	.image_size = sim_image_size,
	.read_page = sim_read_page,
	.write_page = sim_write_page,
	.atomic_restore = sim_atomic_restore,
	.free_image = sim_free_image,
	.platform_support = sim_platform_support,
	.power_off = sim_power_off,
	.reboot = sim_reboot,
	.suspend_to_ram = sim_suspend_to_ram,
	.set_swap_area = sim_set_swap_area,
	.avail_swap = sim_avail_swap,
	.alloc_swap_page = sim_alloc_swap_page,
	.free_swap_pages = sim_free_swap_pages,
	.close = sim_close,
};

const char *
sim_after(const struct snapshot *s)
{
	if (!s || s->kind != TORPOR_SNAPSHOT_SIM)
		return NULL;
	return to_sim((struct snapshot *)s)->after;
}

int
sim_first_mismatch(const struct snapshot *s, uint64_t *ret_page)
{
	const struct sim_snapshot *m = (const struct sim_snapshot *)s;

	if (!s || (s->dev ? s->dev : s->ops) != &sim_ops)
		return -EINVAL;
	if (!m->mismatch)
		return 0;
	if (ret_page)
		*ret_page = m->mismatch_page;
	return 1;
}

/* The value of a test's lever (printable, cut to size), or fallback. */
static void
sim_env_string(const char *name, const char *fallback, char *buf, size_t size)
{
	const char *v = getenv(name);
	size_t i;

	snprintf(buf, size, "%s", v && *v ? v : fallback);
	for (i = 0; buf[i]; i++)
		if (buf[i] < 0x20 || buf[i] > 0x7e)
			buf[i] = '?';
}

/*
 * Open a simulated device.  In resume mode "sim" alone takes whatever
 * simulated image its header describes; "sim:SIZE[:SEED]" insists on
 * that one.  In hibernate mode "sim" alone is a 64 MiB image, seed 1.
 */
int
snapshot_sim_open(const char *spec, enum snapshot_mode mode,
		  struct snapshot **ret)
{
	struct sim_snapshot *m;
	uint64_t size, seed;
	bool named;
	int r;

	r = snapshot_spec_parse(spec, &size, &seed, &named);
	if (r < 0)
		return log_error_errno(-EINVAL, "invalid simulated snapshot '%s': %s",
				       spec, snapshot_spec_strerror(r));

	m = calloc(1, sizeof(*m));
	if (!m)
		return -ENOMEM;
	m->scratch = malloc(SIM_PAGE_SIZE);
	if (!m->scratch) {
		free(m);
		return -ENOMEM;
	}
	pthread_mutex_init(&m->transition, NULL);
	m->s.ops = &sim_ops;
	m->s.kind = TORPOR_SNAPSHOT_SIM;
	m->s.mode = mode;
	m->s.page_size = SIM_PAGE_SIZE;
	m->size = size;
	m->seed = seed;
	m->pages = size / SIM_PAGE_SIZE;
	m->named = named;

	r = snapshot_running_release(&m->s, m->release, sizeof(m->release));
	if (r < 0) {
		sim_close(&m->s);
		return log_error_errno(r, "cannot tell the kernel release for the simulated image: %m");
	}
	sim_env_string(SIM_MACHINE_ENV, SNAPSHOT_ARCH_HEADER_MACHINE, m->machine,
		       sizeof(m->machine));
	sim_env_string(SIM_MEMORY_MAP_ENV, "", m->memory_map,
		       sizeof(m->memory_map));
	memcpy(m->img_release, m->release, sizeof(m->release));
	memcpy(m->img_machine, m->machine, sizeof(m->machine));
	memcpy(m->img_memory_map, m->memory_map, sizeof(m->memory_map));
	*ret = &m->s;
	return 0;
}

uint64_t
sim_premade_served(const struct snapshot *s)
{
	const struct sim_snapshot *m = (const struct sim_snapshot *)s;

	if (!s || (s->dev ? s->dev : s->ops) != &sim_ops)
		return 0;
	return m->premade_served;
}
