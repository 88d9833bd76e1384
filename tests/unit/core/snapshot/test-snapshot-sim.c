/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The snapshot sources: the simulator (hibernate and resume sides), the
 * first-page parser on pages laid out as the kernel lays them out, and
 * the kernel source's error reporting where no root is needed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <unistd.h>

#include "capture.h"
#include "config.h"
#include "log.h"
#include "sim-pages.h"
#include "snapshot-internal.h"
#include "snapshot-sim.h"
#include "snapshot.h"

#define PAGE SIM_PAGE_SIZE

/* What a failure logged (capture.h). */
static char logged[16384];

/* ---- helpers ---- */

static struct snapshot *
open_ok(const char *spec, enum snapshot_mode mode)
{
	struct snapshot *s = NULL;

	ck_assert_int_eq(snapshot_open(spec, mode, &s), 0);
	ck_assert_ptr_nonnull(s);
	return s;
}

/* How many pages read_image() took from a premade image. */
static uint64_t read_image_premade;

/* The whole image of a hibernate-mode sim, read the way the cycle does. */
static uint8_t *
read_image(const char *spec, uint64_t *ret_pages)
{
	struct snapshot *s = open_ok(spec, SNAPSHOT_MODE_HIBERNATE);
	uint64_t bytes = 0, i;
	uint8_t *img, probe[PAGE];
	int in_suspend = -1;

	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), 0);
	ck_assert_int_eq(in_suspend, 1);
	ck_assert_int_eq(s->ops->image_size(s, &bytes), 0);
	ck_assert_uint_eq(bytes % PAGE, 0);
	img = malloc(bytes);
	ck_assert_ptr_nonnull(img);
	for (i = 0; i < bytes / PAGE; i++)
		ck_assert_int_eq(s->ops->read_page(s, img + i * PAGE), PAGE);
	/* and then the end of the image */
	ck_assert_int_eq(s->ops->read_page(s, probe), 0);
	ck_assert_int_eq(s->ops->free_image(s), 0);
	ck_assert_int_eq(s->ops->unfreeze(s), 0);
	read_image_premade = sim_premade_served(s);
	snapshot_close(s);
	*ret_pages = bytes / PAGE;
	return img;
}

static bool
page_is_zero(const uint8_t *p)
{
	size_t i;

	for (i = 0; i < PAGE; i++)
		if (p[i])
			return false;
	return true;
}

static unsigned
count(const char *text, const char *what)
{
	unsigned n = 0;

	while ((text = strstr(text, what))) {
		n++;
		text++;
	}
	return n;
}

/* ---- spec parsing ---- */

START_TEST(test_specs_good)
{
	uint64_t size, seed;
	bool named;

	ck_assert_int_eq(snapshot_spec_parse("sim", &size, &seed, &named), 0);
	ck_assert(!named);
	ck_assert_uint_eq(size, SIM_DEFAULT_SIZE);
	ck_assert_uint_eq(seed, SIM_DEFAULT_SEED);

	ck_assert_int_eq(snapshot_spec_parse("sim:64M", &size, &seed, &named), 0);
	ck_assert(named);
	ck_assert_uint_eq(size, UINT64_C(64) << 20);
	ck_assert_uint_eq(seed, 1);

	ck_assert_int_eq(snapshot_spec_parse("sim:4096", &size, &seed, &named), 0);
	ck_assert_uint_eq(size, 4096);
	ck_assert_int_eq(snapshot_spec_parse("sim:8k:42", &size, &seed, &named), 0);
	ck_assert_uint_eq(size, 8192);
	ck_assert_uint_eq(seed, 42);
	ck_assert_int_eq(snapshot_spec_parse("sim:2G:0", &size, &seed, &named), 0);
	ck_assert_uint_eq(size, UINT64_C(2) << 30);
	ck_assert_uint_eq(seed, 0);
}
END_TEST

START_TEST(test_specs_bad)
{
	static const char *const bad[] = {
		"sim:0", "sim:100", "sim:abc", "sim:4096:x", "sim:4096:",
		"sim:", "simx", "sim:4096:1:2", "sim:-4096", "sim: 4096",
		"sim:4096K1", "sim:99999999999999999999", "sim:17179869184G",
		"sim:4096:-1", "sim:4096:99999999999999999999",
	};
	struct snapshot *s = (struct snapshot *)&s;
	size_t i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		char *err;

		capture_start();
		ck_assert_msg(snapshot_open(bad[i], SNAPSHOT_MODE_HIBERNATE, &s) == -EINVAL,
			      "spec '%s' accepted", bad[i]);
		err = capture_end(logged, sizeof(logged));
		/* "simx" is not a sim spec at all: no such source */
		ck_assert_msg(strstr(err, bad[i]) != NULL,
			      "message for '%s' does not name it: %s", bad[i], err);
	}
	/* ret untouched on failure */
	ck_assert_ptr_eq(s, (struct snapshot *)&s);
	capture_start();
	ck_assert_int_eq(snapshot_open("relative/dev", SNAPSHOT_MODE_HIBERNATE, &s), -EINVAL);
	ck_assert_int_eq(snapshot_open("", SNAPSHOT_MODE_HIBERNATE, &s), -EINVAL);
	ck_assert_int_eq(snapshot_open(NULL, SNAPSHOT_MODE_HIBERNATE, &s), -EINVAL);
	capture_end(logged, sizeof(logged));
	snapshot_close(NULL);
}
END_TEST

/* The one parser: suffixes of either case, and each way to fail. */
START_TEST(test_specs_parser)
{
	static const struct {
		const char *spec;
		int r;
		uint64_t size, seed;
	} cases[] = {
		{ "sim:8K", 0, 8192, 1 },
		{ "sim:8k", 0, 8192, 1 },
		{ "sim:64M:5", 0, UINT64_C(64) << 20, 5 },
		{ "sim:64m:5", 0, UINT64_C(64) << 20, 5 },
		{ "sim:1G", 0, UINT64_C(1) << 30, 1 },
		{ "sim:1g", 0, UINT64_C(1) << 30, 1 },
		{ "sim:1T", 0, UINT64_C(1) << 40, 1 },
		{ "sim:1t", 0, UINT64_C(1) << 40, 1 },
		{ "sim:4096:18446744073709551615", 0, 4096, UINT64_MAX },
		{ "sim:0", -EDOM, 0, 0 },
		{ "sim:0k", -EDOM, 0, 0 },
		{ "sim:4097", -EDOM, 0, 0 },
		{ "sim:99999999999999999999", -ERANGE, 0, 0 },
		{ "sim:17179869184G", -ERANGE, 0, 0 },
		{ "sim:16777216T", -ERANGE, 0, 0 },
		{ "sim:4096:18446744073709551616", -ERANGE, 0, 0 },
		{ "sim:64MB", -EINVAL, 0, 0 },
		{ "sim:64M ", -EINVAL, 0, 0 },
		{ "sim:64M:1x", -EINVAL, 0, 0 },
		{ "sim:64M:1:2", -EINVAL, 0, 0 },
		{ "sim:99999999999999999999x", -EINVAL, 0, 0 },
		{ "simx", -EINVAL, 0, 0 },
		{ "/dev/snapshot", -EINVAL, 0, 0 },
		{ NULL, -EINVAL, 0, 0 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t size = 77, seed = 77;
		bool named = false;
		int r = snapshot_spec_parse(cases[i].spec, &size, &seed, &named);

		ck_assert_msg(r == cases[i].r, "'%s': %d, want %d",
			      cases[i].spec, r, cases[i].r);
		if (r == 0) {
			ck_assert(named);
			ck_assert_uint_eq(size, cases[i].size);
			ck_assert_uint_eq(seed, cases[i].seed);
		} else {
			/* Untouched on failure. */
			ck_assert_uint_eq(size, 77);
			ck_assert_uint_eq(seed, 77);
		}
		ck_assert_ptr_nonnull(snapshot_spec_strerror(r));
	}
	ck_assert_ptr_nonnull(strstr(snapshot_spec_strerror(-EDOM), "4096"));
	ck_assert_int_eq(snapshot_spec_kind("sim"), TORPOR_SNAPSHOT_SIM);
	ck_assert_int_eq(snapshot_spec_kind("sim:x"), TORPOR_SNAPSHOT_SIM);
	ck_assert_int_eq(snapshot_spec_kind("simx"), TORPOR_SNAPSHOT_KERNEL);
	ck_assert_int_eq(snapshot_spec_kind(NULL), TORPOR_SNAPSHOT_KERNEL);
}
END_TEST

/* A source that records what snapshot_apply_prefs() hands it. */
static uint64_t prefs_bytes;
static int prefs_calls;

static int
record_pref_image_size(struct snapshot *s, uint64_t bytes)
{
	prefs_bytes = bytes;
	prefs_calls++;
	return 0;
}

START_TEST(test_apply_prefs)
{
	static const struct snapshot_ops with = {
		.pref_image_size = record_pref_image_size,
	};
	static const struct snapshot_ops without = { 0 };
	struct snapshot s = { .ops = &with };
	struct torpor_config *c = config_new_default();

	ck_assert_ptr_nonnull(c);
	prefs_calls = 0;
	/* Not set: the kernel decides, nothing is called. */
	ck_assert_int_eq(snapshot_apply_prefs(&s, c), 0);
	ck_assert_int_eq(prefs_calls, 0);

	c->has_image_size = true;
	c->image_size = UINT64_C(3) << 30;
	ck_assert_int_eq(snapshot_apply_prefs(&s, c), 0);
	ck_assert_int_eq(prefs_calls, 1);
	ck_assert_uint_eq(prefs_bytes, UINT64_C(3) << 30);

	/* A source without the method: nothing to hand over. */
	s.ops = &without;
	ck_assert_int_eq(snapshot_apply_prefs(&s, c), 0);
	ck_assert_int_eq(prefs_calls, 1);
	ck_assert_int_eq(snapshot_apply_prefs(NULL, c), -EINVAL);
	config_free(c);
}
END_TEST

/* The sim takes the preference and keeps its own size. */
START_TEST(test_apply_prefs_sim)
{
	struct torpor_config *c = config_new_default();
	struct snapshot *s = open_ok("sim:64K:3", SNAPSHOT_MODE_HIBERNATE);
	uint64_t bytes = 0;
	int in_suspend = -1;

	c->has_image_size = true;
	c->image_size = 4096;
	ck_assert_int_eq(snapshot_apply_prefs(s, c), 0);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), 0);
	ck_assert_int_eq(s->ops->image_size(s, &bytes), 0);
	ck_assert_uint_eq(bytes, 64 * 1024);
	snapshot_close(s);
	config_free(c);
}
END_TEST

/* ---- the hibernate side ---- */

START_TEST(test_deterministic)
{
	uint64_t n1, n2, n3, i, differ = 0;
	uint8_t *a = read_image("sim:2M:5", &n1);
	uint8_t *b = read_image("sim:2M:5", &n2);
	uint8_t *c = read_image("sim:2M:6", &n3);

	ck_assert_uint_eq(n1, 512);
	ck_assert_uint_eq(n2, 512);
	ck_assert_uint_eq(n3, 512);
	ck_assert(memcmp(a, b, n1 * PAGE) == 0);
	for (i = 1; i < n1; i++)
		if (memcmp(a + i * PAGE, c + i * PAGE, PAGE) != 0)
			differ++;
	/* only pages that are zero in both images may agree */
	ck_assert_uint_gt(differ, n1 / 2);
	/* and the header carries the seed */
	ck_assert(memcmp(a, c, PAGE) != 0);

	/* any page regenerates on its own, as the resume side needs, and
	 * the device (which copies from the image's libraries) hands out
	 * the same bytes as the generator making each function and phrase */
	for (i = 1; i < n1; i++) {
		uint8_t page[PAGE];

		sim_generate_page(5, i, page);
		ck_assert_msg(memcmp(page, a + i * PAGE, PAGE) == 0,
			      "page %u regenerated differently", (unsigned)i);
		ck_assert_int_eq(sim_page_kind(5, i) == SIM_PAGE_ZERO,
				 page_is_zero(page));
	}
	free(a);
	free(b);
	free(c);
}
END_TEST

START_TEST(test_page_count)
{
	static const struct {
		const char *spec;
		uint64_t pages;
	} cases[] = {
		{ "sim:4096", 1 },
		{ "sim:12K", 3 },
		{ "sim:1M", 256 },
		{ "sim:1M:77", 256 },
	};
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		uint64_t n;
		uint8_t *img = read_image(cases[i].spec, &n);

		ck_assert_msg(n == cases[i].pages, "%s: %u pages",
			      cases[i].spec, (unsigned)n);
		free(img);
	}
}
END_TEST

START_TEST(test_header_parses)
{
	struct snapshot_info info;
	struct utsname u;
	uint64_t n;
	uint8_t *img;

	setenv("TORPOR_SIM_KERNEL_RELEASE", "9.8.7-torpor", 1);
	img = read_image("sim:1M:3", &n);
	unsetenv("TORPOR_SIM_KERNEL_RELEASE");
	ck_assert_int_eq(snapshot_parse_info(img, PAGE, &info), 0);
	ck_assert_str_eq(info.release, "9.8.7-torpor");
	ck_assert_str_eq(info.version, "#1 SMP torpor-sim");
	ck_assert_uint_eq(info.version_code, (9u << 16) + (8u << 8) + 7u);
	ck_assert_uint_eq(info.pages, 256);
	ck_assert_uint_eq(info.image_pages, 255);
	ck_assert_uint_eq(info.size, UINT64_C(1) << 20);
	ck_assert_uint_eq(info.num_physpages, 512);
	ck_assert_uint_eq(info.cpus, 2);
	free(img);

	/* without the variable: the running kernel's release */
	ck_assert_int_eq(uname(&u), 0);
	img = read_image("sim:8K", &n);
	ck_assert_int_eq(snapshot_parse_info(img, PAGE, &info), 0);
	ck_assert_str_eq(info.release, u.release);
	free(img);
}
END_TEST

START_TEST(test_page_mix)
{
	const uint64_t pages = (UINT64_C(64) << 20) / PAGE;
	uint64_t count[SIM_PAGE_KIND_MAX] = { 0 };
	uint64_t p, run = 0, longest = 0;
	enum sim_page_kind prev = SIM_PAGE_HEADER;
	double zero;
	int k;

	for (p = 0; p < pages; p++) {
		enum sim_page_kind kind = sim_page_kind(1, p);

		ck_assert_int_lt(kind, SIM_PAGE_KIND_MAX);
		count[kind]++;
		run = kind == prev ? run + 1 : 1;
		if (run > longest)
			longest = run;
		prev = kind;
	}
	ck_assert_uint_eq(count[SIM_PAGE_HEADER], 1);
	zero = (double)count[SIM_PAGE_ZERO] / (double)pages;
	printf("snapshot-sim: 64 MiB image: %.1f %% zero pages, code %.1f %%, text %.1f %%, random %.1f %%, heap %.1f %%\n",
	       100 * zero, 100.0 * count[SIM_PAGE_CODE] / pages,
	       100.0 * count[SIM_PAGE_TEXT] / pages,
	       100.0 * count[SIM_PAGE_RANDOM] / pages,
	       100.0 * count[SIM_PAGE_HEAP] / pages);
	ck_assert(zero > 0.20 && zero < 0.40);
	for (k = SIM_PAGE_CODE; k < SIM_PAGE_KIND_MAX; k++)
		ck_assert_msg(count[k] > pages / 20, "too few %s pages: %u",
			      sim_page_kind_name(k), (unsigned)count[k]);
	/* runs, not a salad of single pages (two equal runs may touch) */
	ck_assert_uint_gt(longest, 16);

	/* and the kinds look like what they claim to be */
	for (p = 1; p < 4096; p++) {
		uint8_t page[PAGE];
		enum sim_page_kind kind = sim_page_kind(1, p);
		size_t i, printable = 0;

		sim_generate_page(1, p, page);
		ck_assert_int_eq(page_is_zero(page), kind == SIM_PAGE_ZERO);
		if (kind != SIM_PAGE_TEXT)
			continue;
		for (i = 0; i < PAGE; i++)
			printable += page[i] == '\n' ||
				     (page[i] >= 0x20 && page[i] < 0x7f);
		ck_assert_uint_eq(printable, PAGE);
	}
}
END_TEST

START_TEST(test_hibernate_state)
{
	struct snapshot *s = open_ok("sim:64K", SNAPSHOT_MODE_HIBERNATE);
	uint8_t page[PAGE];
	uint64_t bytes;
	int in_suspend = -1;

	ck_assert_int_eq(s->kind, TORPOR_SNAPSHOT_SIM);
	ck_assert_uint_eq(s->page_size, PAGE);
	/* like the kernel: no image before freezing, no data before an image */
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), -EPERM);
	ck_assert_int_eq(in_suspend, -1);
	ck_assert_int_eq(s->ops->read_page(s, page), -ENODATA);
	ck_assert_int_eq(s->ops->image_size(s, &bytes), -ENODATA);
	ck_assert_int_eq(s->ops->write_page(s, page), -EBADF);
	ck_assert_int_eq(s->ops->atomic_restore(s), -EPERM);
	ck_assert_int_eq(s->ops->pref_image_size(s, 1 << 20), 0);
	ck_assert_int_eq(s->ops->platform_support(s, true), 0);
	/* Like the kernel without a swap area: none to give, none to free.
	 * A swap file's pages are beyond the sim (its extents). */
	ck_assert_int_eq(s->ops->set_swap_area(s, 0x803, 4096), -EOPNOTSUPP);
	ck_assert_int_eq(s->ops->avail_swap(s), 0);
	ck_assert_int_eq(s->ops->alloc_swap_page(s), -ENODEV);
	ck_assert_int_eq(s->ops->free_swap_pages(s), -ENODEV);

	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), 0);
	ck_assert_int_eq(in_suspend, 1);
	/* a second image while the first exists is refused */
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), -EPERM);
	ck_assert_int_eq(s->ops->image_size(s, &bytes), 0);
	ck_assert_uint_eq(bytes, 64 * 1024);
	ck_assert_int_eq(s->ops->read_page(s, page), PAGE);

	/* power off, and the cycle finds itself "resumed" */
	ck_assert_int_eq(s->ops->power_off(s), 0);
	in_suspend = -1;
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), 0);
	ck_assert_int_eq(in_suspend, 0);
	ck_assert_int_eq(s->ops->free_image(s), 0);
	ck_assert_int_eq(s->ops->unfreeze(s), 0);
	/* thawed: a new cycle needs a new freeze */
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), -EPERM);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), 0);
	ck_assert_int_eq(in_suspend, 1);
	ck_assert_uint_eq(s->pages_written, 0);
	snapshot_close(s);
}
END_TEST

/* ---- the resume side ---- */

/* Hand pages [0, n) of img to a resume-mode sim; returns the first
 * result that was not a whole page, or PAGE. */
static ssize_t
hand_back(struct snapshot *s, const uint8_t *img, uint64_t n)
{
	uint64_t i;

	for (i = 0; i < n; i++) {
		ssize_t k = s->ops->write_page(s, img + i * PAGE);

		if (k != PAGE)
			return k;
	}
	return PAGE;
}

START_TEST(test_round_trip)
{
	static const char *const specs[] = { "sim", "sim:4M:9" };
	uint64_t n;
	uint8_t *img = read_image("sim:4M:9", &n);
	size_t i;

	for (i = 0; i < 2; i++) {
		struct snapshot *s = open_ok(specs[i], SNAPSHOT_MODE_RESUME);

		ck_assert_int_eq(s->ops->freeze(s), 0);
		ck_assert_int_eq(hand_back(s, img, n), PAGE);
		/* the image is complete: write() says so, as the kernel's does */
		ck_assert_int_eq(s->ops->write_page(s, img), 0);
		ck_assert_uint_eq(s->pages_written, n);
		ck_assert_uint_eq(s->pages_verified, n);
		ck_assert_int_eq(sim_first_mismatch(s, NULL), 0);
		/* handed back is not restored */
		ck_assert(!s->restored);
		ck_assert_int_eq(s->ops->atomic_restore(s), 0);
		ck_assert(s->restored);
		ck_assert_int_eq(s->ops->read_page(s, img), -EBADF);
		ck_assert_int_eq(s->ops->unfreeze(s), 0);
		snapshot_close(s);
	}
	free(img);
}
END_TEST

START_TEST(test_flipped_byte)
{
	const uint64_t bad_pages[] = { 300, 0, 1023 };
	uint64_t n, at;
	uint8_t *img = read_image("sim:4M:9", &n);
	size_t i;

	for (i = 0; i < sizeof(bad_pages) / sizeof(bad_pages[0]); i++) {
		uint64_t bad = bad_pages[i];
		/* past the header fields: a byte only a byte-for-byte check sees */
		size_t off = bad == 0 ? 3000 : 1234;
		struct snapshot *s = open_ok("sim", SNAPSHOT_MODE_RESUME);
		char want[64], *err;

		img[bad * PAGE + off] ^= 0x40;
		ck_assert_int_eq(s->ops->freeze(s), 0);
		capture_start();
		ck_assert_int_eq(hand_back(s, img, n), -EPERM);
		/* nothing is taken after a refusal */
		ck_assert_int_eq(s->ops->write_page(s, img + (bad + 1) * PAGE), -EPERM);
		ck_assert_int_eq(s->ops->atomic_restore(s), -EPERM);
		err = capture_end(logged, sizeof(logged));
		img[bad * PAGE + off] ^= 0x40;

		snprintf(want, sizeof(want), "page %u differs from the simulated image",
			 (unsigned)bad);
		/* logged once by write_page, reported again by the restore */
		ck_assert_msg(count(err, want) == 2, "want '%s' twice in: %s", want, err);
		ck_assert_int_eq(count(err, "refusing to restore"), 1);
		ck_assert_int_eq(sim_first_mismatch(s, &at), 1);
		ck_assert_uint_eq(at, bad);
		ck_assert_uint_eq(s->pages_written, bad);
		ck_assert_uint_eq(s->pages_verified, bad);
		snapshot_close(s);
	}
	free(img);
}
END_TEST

/*
 * torpor bench's premade pages are the generator's, byte for byte: read
 * with them is the image read without; handed back, they are checked as
 * strictly (a flipped byte refused at its page); another image's sim still
 * generates its own.  The bench then measures the pipeline, not a
 * different image.
 */
START_TEST(test_premade_pages)
{
	uint64_t n, n2, m, at;
	uint8_t *want = read_image("sim:4M:9", &n), *got, *other;
	struct snapshot *s;
	char *err;

	ck_assert_int_eq(snapshot_sim_premake(4 << 20, 9), 0);
	got = read_image("sim:4M:9", &n2);
	ck_assert_uint_eq(n2, n);
	ck_assert_uint_eq(read_image_premade, n - 1);
	ck_assert_int_eq(memcmp(got, want, n * PAGE), 0);
	other = read_image("sim:4M:10", &m);
	ck_assert_uint_eq(m, n);
	ck_assert_uint_eq(read_image_premade, 0);
	ck_assert_int_ne(memcmp(other + PAGE, want + PAGE, (n - 1) * PAGE), 0);

	s = open_ok("sim", SNAPSHOT_MODE_RESUME);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(hand_back(s, got, n), PAGE);
	ck_assert_uint_eq(s->pages_verified, n);
	/* every page but the header was checked against the premade one */
	ck_assert_uint_eq(sim_premade_served(s), n - 1);
	ck_assert_int_eq(s->ops->atomic_restore(s), 0);
	snapshot_close(s);

	got[777 * PAGE + 4000] ^= 1;
	s = open_ok("sim:4M:9", SNAPSHOT_MODE_RESUME);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	capture_start();
	ck_assert_int_eq(hand_back(s, got, n), -EPERM);
	err = capture_end(logged, sizeof(logged));
	ck_assert_msg(strstr(err, "page 777 differs from the simulated image"),
		      "logged: %s", err);
	ck_assert_int_eq(sim_first_mismatch(s, &at), 1);
	ck_assert_uint_eq(at, 777);
	snapshot_close(s);

	snapshot_sim_premade_drop();
	free(want);
	free(got);
	free(other);
}
END_TEST

/* The batch calls (readv() and writev() with the kernel) keep the
 * one-page calls' contract: the same pages, a short batch at the end or
 * at a refused page, and then the one call that says why. */
START_TEST(test_batches)
{
	const uint64_t bad = 300;
	uint64_t n, i = 0;
	uint8_t *img = read_image("sim:4M:9", &n), *got;
	struct snapshot *s = open_ok("sim:4M:9", SNAPSHOT_MODE_HIBERNATE);
	int in_suspend = -1;
	ssize_t k;
	char *err;

	got = malloc(n * PAGE);
	ck_assert_ptr_nonnull(got);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), 0);
	/* 7 pages at a time: n is no multiple of 7, the last batch is short */
	ck_assert_uint_ne(n % 7, 0);
	while ((k = s->ops->read_pages(s, got + i * PAGE, 7)) > 0) {
		ck_assert_int_eq(k % PAGE, 0);
		i += (uint64_t)k / PAGE;
		ck_assert_uint_le(i, n);
		if (k < 7 * PAGE)
			ck_assert_uint_eq(i, n);
	}
	ck_assert_int_eq(k, 0);
	ck_assert_uint_eq(i, n);
	ck_assert_mem_eq(got, img, n * PAGE);
	ck_assert_int_eq(s->ops->free_image(s), 0);
	ck_assert_int_eq(s->ops->unfreeze(s), 0);
	snapshot_close(s);

	/* Back in batches of 64, with page bad refused inside one. */
	img[bad * PAGE + 1234] ^= 0x40;
	s = open_ok("sim", SNAPSHOT_MODE_RESUME);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	capture_start();
	for (i = 0; i < n; i += (uint64_t)k / PAGE) {
		k = s->ops->write_pages(s, img + i * PAGE, n - i < 64 ? n - i : 64);
		if (k <= 0)
			break;
		ck_assert_int_eq(k % PAGE, 0);
	}
	err = capture_end(logged, sizeof(logged));
	ck_assert_int_eq(k, -EPERM);
	ck_assert_uint_eq(i, bad);
	ck_assert_uint_eq(s->pages_written, bad);
	ck_assert_msg(strstr(err, "page 300 differs"), "%s", err);
	snapshot_close(s);
	free(got);
	free(img);
}
END_TEST

START_TEST(test_incomplete)
{
	uint64_t n;
	uint8_t *img = read_image("sim:4M:9", &n);
	struct snapshot *s = open_ok("sim", SNAPSHOT_MODE_RESUME);
	char *err;

	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(hand_back(s, img, 500), PAGE);
	capture_start();
	ck_assert_int_eq(s->ops->atomic_restore(s), -EPERM);
	err = capture_end(logged, sizeof(logged));
	ck_assert_msg(strstr(err, "524 of 1024 pages missing"), "%s", err);
	ck_assert_uint_eq(s->pages_verified, 500);
	ck_assert(!s->restored);
	snapshot_close(s);

	/* nothing at all */
	s = open_ok("sim:4M:9", SNAPSHOT_MODE_RESUME);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	capture_start();
	ck_assert_int_eq(s->ops->atomic_restore(s), -EPERM);
	capture_end(logged, sizeof(logged));
	snapshot_close(s);

	/* complete, but tasks not frozen: the kernel refuses that too */
	s = open_ok("sim", SNAPSHOT_MODE_RESUME);
	ck_assert_int_eq(hand_back(s, img, n), PAGE);
	capture_start();
	ck_assert_int_eq(s->ops->atomic_restore(s), -EPERM);
	err = capture_end(logged, sizeof(logged));
	ck_assert_msg(strstr(err, "not frozen"), "%s", err);
	snapshot_close(s);
	free(img);
}
END_TEST

START_TEST(test_header_mismatch)
{
	uint64_t n;
	uint8_t *img = read_image("sim:1M:5", &n);
	static const char *const others[] = { "sim:1M:6", "sim:2M:5", "sim:1M" };
	size_t i;

	for (i = 0; i < sizeof(others) / sizeof(others[0]); i++) {
		struct snapshot *s = open_ok(others[i], SNAPSHOT_MODE_RESUME);
		char *err;

		capture_start();
		ck_assert_int_eq(s->ops->write_page(s, img), -EPERM);
		err = capture_end(logged, sizeof(logged));
		ck_assert_msg(strstr(err, "Image mismatch"), "%s: %s", others[i], err);
		ck_assert_uint_eq(s->pages_written, 0);
		snapshot_close(s);
	}

	free(img);
}
END_TEST

/*
 * The sim's answer to a header page written by another kernel (issue 42),
 * with the levers the tests set: the release, the machine and the memory
 * map of the kernel the resume runs on.  The header page is always taken;
 * the kernel judges it when it is asked for page 1, and a refusal takes
 * none of page 1 (-EPERM, pages_written stays 1), in the kernel's words.
 */
static void
offer_other_kernel(const uint8_t *img, uint64_t n, const char *release,
		   const char *machine, const char *memory_map,
		   const char *said)
{
	struct snapshot *s;

	if (release)
		setenv("TORPOR_SIM_KERNEL_RELEASE", release, 1);
	if (machine)
		setenv(SIM_MACHINE_ENV, machine, 1);
	if (memory_map)
		setenv(SIM_MEMORY_MAP_ENV, memory_map, 1);
	s = open_ok("sim", SNAPSHOT_MODE_RESUME);
	unsetenv("TORPOR_SIM_KERNEL_RELEASE");
	unsetenv(SIM_MACHINE_ENV);
	unsetenv(SIM_MEMORY_MAP_ENV);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(s->ops->write_page(s, img), PAGE);
	if (!said) {
		ck_assert_int_eq(hand_back(s, img + PAGE, n - 1), PAGE);
		ck_assert_int_eq(s->ops->atomic_restore(s), 0);
		ck_assert_uint_eq(s->pages_verified, n);
		ck_assert_str_eq(s->refusal_said, "");
	} else {
		ck_assert_int_eq(s->ops->write_page(s, img + PAGE), -EPERM);
		ck_assert_uint_eq(s->pages_written, 1);
		/* and nothing more after a refusal */
		ck_assert_int_eq(s->ops->write_page(s, img + PAGE), -EPERM);
		ck_assert_int_eq(s->ops->atomic_restore(s), -EPERM);
		ck_assert_str_eq(s->refusal_said, said);
	}
	snapshot_close(s);
}

START_TEST(test_other_kernel)
{
	uint64_t n;
	uint8_t *img;

	setenv(SIM_MEMORY_MAP_ENV, "e820-a", 1);
	img = read_image("sim:1M:5", &n);
	unsetenv(SIM_MEMORY_MAP_ENV);

	/* x86-64: another release under the same memory map is accepted */
	offer_other_kernel(img, n, "1.2.3-other", NULL, "e820-a", NULL);
	/* another memory map is not, whichever the release */
	offer_other_kernel(img, n, "1.2.3-other", NULL, "e820-b",
			   "\"Hibernate inconsistent memory map detected!\"; \"PM: hibernation: Image mismatch: architecture specific data\"");
	offer_other_kernel(img, n, NULL, NULL, NULL,
			   "\"Hibernate inconsistent memory map detected!\"; \"PM: hibernation: Image mismatch: architecture specific data\"");
	/* an image of a kernel of another machine has no such header */
	offer_other_kernel(img, n, NULL, "aarch64", "e820-a",
			   "\"PM: hibernation: Image mismatch: machine\"");
	/* a kernel that compares releases */
	offer_other_kernel(img, n, "1.2.3-other", "aarch64", "e820-a",
			   "\"PM: hibernation: Image mismatch: kernel version\"");
	free(img);

	setenv(SIM_MACHINE_ENV, "aarch64", 1);
	img = read_image("sim:1M:5", &n);
	unsetenv(SIM_MACHINE_ENV);
	offer_other_kernel(img, n, NULL, "aarch64", NULL, NULL);
	offer_other_kernel(img, n, NULL, NULL, NULL,
			   "\"Unrecognized hibernate image header format!\"; \"PM: hibernation: Image mismatch: architecture specific data\"");
	free(img);
}
END_TEST

/* Whose check decides: the machine the (simulated) kernel runs as. */
START_TEST(test_kernel_judges_image)
{
	struct snapshot sim = { .kind = TORPOR_SNAPSHOT_SIM };
	struct snapshot kernel = { .kind = TORPOR_SNAPSHOT_KERNEL };
	struct utsname u;

	unsetenv(SIM_MACHINE_ENV);
	ck_assert(snapshot_kernel_judges_image(&sim));
	setenv(SIM_MACHINE_ENV, "ppc64le", 1);
	ck_assert(!snapshot_kernel_judges_image(&sim));
	unsetenv(SIM_MACHINE_ENV);
	ck_assert_int_eq(uname(&u), 0);
	ck_assert(snapshot_kernel_judges_image(&kernel) ==
		  !strcmp(u.machine, "x86_64"));
}
END_TEST

/* The kernel's words about a refused image, out of kmsg records. */
START_TEST(test_kmsg_pick)
{
	static const char records[] =
		"6,1001,5000,-;usb 1-1: new high-speed USB device\n"
		"3,1002,5001,-;Hibernate inconsistent memory map detected!\n"
		" SUBSYSTEM=acpi\n"
		"3,1003,5002,-;PM: hibernation: Image mismatch: architecture specific data\n"
		"no semicolon: mismatch\n"
		"4,1004,5003,-;PM: hibernation: \x1b[31mmismatch";
	char said[SNAPSHOT_SAID_SIZE] = "", tiny[24] = "";

	snapshot_kmsg_pick(records, sizeof(records) - 1, said, sizeof(said));
	ck_assert_str_eq(said, "\"Hibernate inconsistent memory map detected!\"; "
			       "\"PM: hibernation: Image mismatch: architecture specific data\"; "
			       "\"PM: hibernation: ?[31mmismatch\"");
	/* cut to fit, still terminated */
	snapshot_kmsg_pick(records, sizeof(records) - 1, tiny, sizeof(tiny));
	ck_assert_uint_eq(strlen(tiny), sizeof(tiny) - 1);
	said[0] = '\0';
	snapshot_kmsg_pick("", 0, said, sizeof(said));
	ck_assert_str_eq(said, "");
}
END_TEST

START_TEST(test_foreign_first_page)
{
	uint8_t page[PAGE];
	struct snapshot *s;
	char *err;

	/* a zero page */
	memset(page, 0, sizeof(page));
	s = open_ok("sim", SNAPSHOT_MODE_RESUME);
	ck_assert_int_eq(s->ops->freeze(s), 0);
	capture_start();
	ck_assert_int_eq(s->ops->write_page(s, page), -EPERM);
	ck_assert_int_eq(s->ops->atomic_restore(s), -EPERM);
	err = capture_end(logged, sizeof(logged));
	ck_assert_msg(strstr(err, "not the header of a simulated image"), "%s", err);
	ck_assert_uint_eq(s->pages_written, 0);
	snapshot_close(s);

	/* a well-formed swsusp_info of a real kernel: not a sim image */
	sim_generate_header(1, 1 << 20, "6.1.0-18-amd64", page);
	memset(page + SIM_OFF_TRAILER, 0, 64);
	s = open_ok("sim", SNAPSHOT_MODE_RESUME);
	capture_start();
	ck_assert_int_eq(s->ops->write_page(s, page), -EPERM);
	capture_end(logged, sizeof(logged));
	ck_assert_uint_eq(s->pages_written, 0);
	snapshot_close(s);
}
END_TEST

/* ---- snapshot_parse_info on pages laid out like the kernel's ---- */

static void
put64(uint8_t *p, size_t off, uint64_t v)
{
	memcpy(p + off, &v, 8);
}

static void
put32(uint8_t *p, size_t off, uint32_t v)
{
	memcpy(p + off, &v, 4);
}

/* struct swsusp_info of an architecture that stores the utsname, built
 * by hand from the C layout of x86_64 (offsets derived independently). */
struct swsusp_info_x86_64 {
	char sysname[65], nodename[65], release[65], version[65];
	char machine[65], domainname[65];
	uint32_t version_code;
	unsigned long num_physpages;
	int cpus;
	unsigned long image_pages;
	unsigned long pages;
	unsigned long size;
};

START_TEST(test_parse_info_kernel_layout)
{
	union {
		struct swsusp_info_x86_64 info;
		uint8_t page[PAGE];
	} u;
	struct snapshot_info info;

	memset(&u, 0, sizeof(u));
	strcpy(u.info.sysname, "Linux");
	strcpy(u.info.nodename, "box");
	strcpy(u.info.release, "6.1.0-18-amd64");
	strcpy(u.info.version, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)");
	strcpy(u.info.machine, "x86_64");
	strcpy(u.info.domainname, "(none)");
	u.info.version_code = (6 << 16) | (1 << 8) | 76;
	u.info.num_physpages = 131072;
	u.info.cpus = 0;
	u.info.image_pages = 25000;
	u.info.pages = 25123;
	u.info.size = 25123UL * PAGE;

	ck_assert_uint_eq(sizeof(struct swsusp_info_x86_64), SWSUSP_INFO_SIZE);
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), 0);
	ck_assert_str_eq(info.release, "6.1.0-18-amd64");
	ck_assert_str_eq(info.version, "#1 SMP PREEMPT_DYNAMIC Debian 6.1.76-1 (2024-02-01)");
	ck_assert_uint_eq(info.version_code, (6 << 16) | (1 << 8) | 76);
	ck_assert_uint_eq(info.num_physpages, 131072);
	ck_assert_uint_eq(info.image_pages, 25000);
	ck_assert_uint_eq(info.pages, 25123);
	ck_assert_uint_eq(info.size, 25123UL * PAGE);
	ck_assert(!info.arch_header);
	ck_assert_str_eq(info.machine, "x86_64");

	/* out of range -> -EBADMSG */
	u.info.pages = 0;
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), -EBADMSG);
	u.info.pages = 25123;
	u.info.size = 25123UL * PAGE + 1;
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), -EBADMSG);
	u.info.size = 25123UL * PAGE;
	u.info.image_pages = 25123;
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), -EBADMSG);
	u.info.image_pages = 25000;
	memset(u.info.release, 'x', sizeof(u.info.release));
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), -EBADMSG);
	u.info.release[0] = '\0';
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), -EBADMSG);
	strcpy(u.info.release, "6.1.0\x01");
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), -EBADMSG);
	strcpy(u.info.release, "6.1.0-18-amd64");
	u.info.cpus = -1;
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), -EBADMSG);
	u.info.cpus = 4;
	ck_assert_int_eq(snapshot_parse_info(u.page, PAGE, &info), 0);
	ck_assert_uint_eq(info.cpus, 4);
	ck_assert_int_eq(snapshot_parse_info(u.page, 100, &info), -EINVAL);
}
END_TEST

/* x86 kernels store struct restore_data_record over the utsname. */
START_TEST(test_parse_info_x86_arch_header)
{
	uint8_t page[PAGE];
	struct snapshot_info info;
	struct utsname u;

	memset(page, 0, sizeof(page));
	put64(page, 0, UINT64_C(0xffffffff81e5a000));	/* jump_address */
	put64(page, 8, UINT64_C(0x1e5a000));		/* jump_address_phys */
	put64(page, 16, UINT64_C(0x10a4000));		/* cr3 */
	put64(page, 24, SWSUSP_X86_MAGIC);		/* magic */
	put64(page, 32, UINT64_C(0x5a17c0de));		/* e820 checksum */
	put64(page, 400, 131072);			/* num_physpages */
	put64(page, 416, 25000);			/* image_pages */
	put64(page, 424, 25123);			/* pages */
	put64(page, 432, UINT64_C(25123) * PAGE);	/* size */

	ck_assert_int_eq(uname(&u), 0);
	ck_assert_int_eq(snapshot_parse_info(page, PAGE, &info), 0);
	ck_assert_str_eq(info.release, u.release);
	ck_assert_str_eq(info.version, u.version);
	ck_assert_uint_eq(info.pages, 25123);
	ck_assert_uint_eq(info.version_code, 0);
	/* the page does not say which kernel wrote it */
	ck_assert(info.arch_header);
	ck_assert_str_eq(info.machine, "x86_64");

	/* without the magic it is neither layout */
	put64(page, 24, 0x1234);
	ck_assert_int_eq(snapshot_parse_info(page, PAGE, &info), -EBADMSG);
	/* older kernels' magic */
	put64(page, 24, SWSUSP_X86_MAGIC_OLD);
	ck_assert_int_eq(snapshot_parse_info(page, PAGE, &info), 0);
	put32(page, 200, 7);	/* junk in the rest of the uts area */
	ck_assert_int_eq(snapshot_parse_info(page, PAGE, &info), -EBADMSG);
}
END_TEST

START_TEST(test_running_release)
{
	struct snapshot probe = { .kind = TORPOR_SNAPSHOT_SIM };
	char buf[65], tiny[2];
	struct utsname u;

	ck_assert_int_eq(uname(&u), 0);
	setenv("TORPOR_SIM_KERNEL_RELEASE", "5.10.0-fake", 1);
	ck_assert_int_eq(snapshot_running_release(&probe, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, "5.10.0-fake");
	ck_assert_int_eq(snapshot_running_release(&probe, tiny, sizeof(tiny)), -ERANGE);
	probe.kind = TORPOR_SNAPSHOT_KERNEL;
	ck_assert_int_eq(snapshot_running_release(&probe, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, u.release);
	unsetenv("TORPOR_SIM_KERNEL_RELEASE");
	probe.kind = TORPOR_SNAPSHOT_SIM;
	ck_assert_int_eq(snapshot_running_release(&probe, buf, sizeof(buf)), 0);
	ck_assert_str_eq(buf, u.release);
}
END_TEST

/* ---- the kernel source, where it needs no root ---- */

START_TEST(test_kernel_no_device)
{
	struct snapshot *s = NULL;
	char *err;

	capture_start();
	ck_assert_int_eq(snapshot_open("/nonexistent/torpor/snapshot",
				       SNAPSHOT_MODE_HIBERNATE, &s), -ENOENT);
	ck_assert_int_eq(snapshot_open("/nonexistent/torpor/snapshot",
				       SNAPSHOT_MODE_RESUME, &s), -ENOENT);
	err = capture_end(logged, sizeof(logged));
	ck_assert_ptr_null(s);
	ck_assert_msg(strstr(err, "/nonexistent/torpor/snapshot") &&
		      strstr(err, "no snapshot device") &&
		      strstr(err, "CONFIG_HIBERNATION_SNAPSHOT_DEV"), "%s", err);
}
END_TEST

static char *
write_temp(const char *text)
{
	char *path = strdup("/tmp/torpor-snapshot-test-XXXXXX");
	int fd;

	ck_assert_ptr_nonnull(path);
	fd = mkstemp(path);
	ck_assert_int_ge(fd, 0);
	ck_assert_int_eq(write(fd, text, strlen(text)), (ssize_t)strlen(text));
	close(fd);
	return path;
}

START_TEST(test_kernel_eperm_reason)
{
	char *integrity = write_temp("none [integrity] confidentiality\n");
	char *secret = write_temp("none integrity [confidentiality]\n");
	char *none = write_temp("[none] integrity confidentiality\n");
	char *cmd_no = write_temp("BOOT_IMAGE=/vmlinuz root=/dev/vda ro nohibernate quiet\n");
	char *cmd_no2 = write_temp("root=/dev/vda hibernate=no\n");
	char *cmd_ok = write_temp("root=/dev/vda ro quiet nohibernatex\n");
	char *cmd_tab = write_temp("root=/dev/vda\tnohibernate\tquiet\n");
	char buf[256];

	/* The reason codes setup uses; words may be separated by tabs. */
	ck_assert_int_eq(snapshot_kernel_block(integrity, cmd_no, buf, sizeof(buf)),
			 SNAPSHOT_BLOCK_LOCKDOWN);
	ck_assert_int_eq(snapshot_kernel_block(none, cmd_tab, buf, sizeof(buf)),
			 SNAPSHOT_BLOCK_CMDLINE);
	ck_assert_ptr_nonnull(strstr(buf, "'nohibernate' on the kernel command line"));
	ck_assert_int_eq(snapshot_kernel_block(none, cmd_ok, buf, sizeof(buf)),
			 SNAPSHOT_BLOCK_NONE);

	ck_assert_ptr_nonnull(strstr(snapshot_kernel_eperm_reason(integrity, cmd_ok, buf, sizeof(buf)),
				     "lockdown (integrity"));
	ck_assert_ptr_nonnull(strstr(snapshot_kernel_eperm_reason(secret, cmd_no, buf, sizeof(buf)),
				     "lockdown (confidentiality"));
	ck_assert_ptr_nonnull(strstr(snapshot_kernel_eperm_reason(none, cmd_no, buf, sizeof(buf)),
				     "nohibernate"));
	ck_assert_ptr_nonnull(strstr(snapshot_kernel_eperm_reason("/nonexistent", cmd_no2, buf, sizeof(buf)),
				     "nohibernate"));
	ck_assert_ptr_nonnull(strstr(snapshot_kernel_eperm_reason(none, cmd_ok, buf, sizeof(buf)),
				     "secretmem"));
	ck_assert_ptr_nonnull(strstr(snapshot_kernel_eperm_reason("/nonexistent", "/nonexistent", buf, sizeof(buf)),
				     "secretmem"));
	unlink(integrity);
	unlink(secret);
	unlink(none);
	unlink(cmd_no);
	unlink(cmd_no2);
	unlink(cmd_ok);
	unlink(cmd_tab);
	free(integrity);
	free(secret);
	free(none);
	free(cmd_no);
	free(cmd_no2);
	free(cmd_ok);
	free(cmd_tab);
}
END_TEST

Suite *snapshot_sim_suite(void);

/* ---- one call at a time, as /dev/snapshot wants it ---- */

struct reader {
	struct snapshot *s;
	volatile int done;
};

/* Read the whole image, as the cycle's thread does. */
static void *
read_all(void *arg)
{
	struct reader *rd = arg;
	uint8_t page[PAGE];

	while (rd->s->ops->read_page(rd->s, page) > 0)
		;
	rd->done = 1;
	return NULL;
}

/* How often an ioctl on s from this thread failed with EBUSY while
 * another thread read the image: the writer thread's position. */
static unsigned
busy_while_reading(struct snapshot *s)
{
	struct reader rd = { .s = s };
	unsigned busy = 0;
	pthread_t t;
	int in_suspend;

	ck_assert_int_eq(s->ops->freeze(s), 0);
	ck_assert_int_eq(s->ops->create_image(s, &in_suspend), 0);
	ck_assert_int_eq(pthread_create(&t, NULL, read_all, &rd), 0);
	while (!rd.done)
		busy += s->ops->avail_swap(s) == -EBUSY;
	pthread_join(t, NULL);
	return busy;
}

/*
 * The sim keeps the kernel's lock: its own entry points (the device
 * itself) give EBUSY to an ioctl while another thread is inside read(),
 * and snapshot_open()'s, which every caller gets, never let that happen.
 */
START_TEST(test_one_call_at_a_time)
{
	struct snapshot *dev = NULL, *s;

	ck_assert_int_eq(snapshot_sim_open("sim:64M:2", SNAPSHOT_MODE_HIBERNATE, &dev), 0);
	ck_assert_uint_gt(busy_while_reading(dev), 0);
	dev->ops->close(dev);

	s = open_ok("sim:64M:2", SNAPSHOT_MODE_HIBERNATE);
	ck_assert_uint_eq(busy_while_reading(s), 0);
	snapshot_close(s);
}
END_TEST

Suite *
snapshot_sim_suite(void)
{
	Suite *s = suite_create("snapshot-sim");
	TCase *tc = tcase_create("sim");
	TCase *parse = tcase_create("parse");
	TCase *kernel = tcase_create("kernel");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_specs_good);
	tcase_add_test(tc, test_specs_bad);
	tcase_add_test(tc, test_specs_parser);
	tcase_add_test(tc, test_apply_prefs);
	tcase_add_test(tc, test_apply_prefs_sim);
	tcase_add_test(tc, test_deterministic);
	tcase_add_test(tc, test_page_count);
	tcase_add_test(tc, test_header_parses);
	tcase_add_test(tc, test_page_mix);
	tcase_add_test(tc, test_hibernate_state);
	tcase_add_test(tc, test_one_call_at_a_time);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_batches);
	tcase_add_test(tc, test_premade_pages);
	tcase_add_test(tc, test_flipped_byte);
	tcase_add_test(tc, test_incomplete);
	tcase_add_test(tc, test_header_mismatch);
	tcase_add_test(tc, test_other_kernel);
	tcase_add_test(tc, test_kernel_judges_image);
	tcase_add_test(tc, test_kmsg_pick);
	tcase_add_test(tc, test_foreign_first_page);
	suite_add_tcase(s, tc);

	tcase_add_test(parse, test_parse_info_kernel_layout);
	tcase_add_test(parse, test_parse_info_x86_arch_header);
	tcase_add_test(parse, test_running_release);
	suite_add_tcase(s, parse);

	tcase_add_test(kernel, test_kernel_no_device);
	tcase_add_test(kernel, test_kernel_eperm_reason);
	suite_add_tcase(s, kernel);
	return s;
}
