/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The simulator's page generator (sim-pages.h): a deterministic synthetic
 * memory image with a mix of pages like a real one (zero pages, machine
 * code, text, incompressible data, heap).  Every page is a function of
 * (seed, page number) alone, so the resume side can check any page in
 * O(page) without having kept the image, and the generator can stream
 * gigabytes without holding them.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sim-pages.h"
#include "snapshot-internal.h"

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

/* The kinds of the data pages 1 + block * SIM_RUN_BLOCK ... */
static void
block_layout(uint64_t seed, uint64_t block, uint8_t kinds[SIM_RUN_BLOCK])
{
	struct rng r;
	unsigned j = 0;

	rng_seed(&r, seed, block, DOMAIN_LAYOUT);
	while (j < SIM_RUN_BLOCK) {
		uint64_t v = rng_next(&r);
		enum sim_page_kind kind = pick_kind((uint32_t)(v >> 32));
		unsigned a = (unsigned)(v & 63), b = (unsigned)((v >> 6) & 63);
		/* 1..64 pages, short runs more likely than long ones. */
		unsigned len = 1 + a * b / 63;

		while (len-- && j < SIM_RUN_BLOCK)
			kinds[j++] = (uint8_t)kind;
	}
}

enum sim_page_kind
sim_page_kind(uint64_t seed, uint64_t page)
{
	uint8_t kinds[SIM_RUN_BLOCK];

	if (page == 0)
		return SIM_PAGE_HEADER;
	block_layout(seed, (page - 1) / SIM_RUN_BLOCK, kinds);
	return (enum sim_page_kind)kinds[(page - 1) % SIM_RUN_BLOCK];
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

uint32_t
sim_version_code(const char *release)
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
	put_u32(p, SWSUSP_OFF_VERSION_CODE, sim_version_code(release));
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

void
sim_header_set_arch(void *buf, const char *machine, const char *memory_map)
{
	uint8_t *p = buf;

	memset(p + SWSUSP_OFF_MACHINE, 0, SWSUSP_UTS_LEN);
	put_str(p, SWSUSP_OFF_MACHINE, machine);
	memset(p + SIM_OFF_MEMORY_MAP, 0, SIM_MEMORY_MAP_SIZE);
	memcpy(p + SIM_OFF_MEMORY_MAP, memory_map,
	       strnlen(memory_map, SIM_MEMORY_MAP_SIZE - 1));
}

/* ------------------------------------------------------------------ */
/* One image's pages, one after the other.                             */

void
sim_pages_init(struct sim_pages *g, uint64_t seed)
{
	memset(g, 0, sizeof(*g));
	g->seed = seed;
}

void
sim_pages_fill(struct sim_pages *g, uint64_t page, void *buf)
{
	uint64_t block = (page - 1) / SIM_RUN_BLOCK;

	if (!g->have_block || g->cached_block != block) {
		block_layout(g->seed, block, g->kinds);
		g->cached_block = block;
		g->have_block = true;
	}
	if (!g->lib)
		g->lib = library_make(g->seed);
	generate_kind(g->seed, page,
		      (enum sim_page_kind)g->kinds[(page - 1) % SIM_RUN_BLOCK],
		      g->lib, buf);
}

void
sim_pages_release(struct sim_pages *g)
{
	library_free(g->lib);
	g->lib = NULL;
	g->have_block = false;
}
