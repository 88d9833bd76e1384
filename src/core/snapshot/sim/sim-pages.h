/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The simulator's memory image: what its pages hold, made from (seed,
 * page number) alone, so that the resume side can rebuild any page of an
 * image it never kept.  The simulated device (snapshot-sim.c) hands these
 * pages out and checks them back; the tests and tools that forge images
 * make them here.
 *
 * An image is SIZE / 4096 pages: page 0 is a header laid out like struct
 * swsusp_info (utsname with the release of snapshot_running_release())
 * followed by a trailer at SIM_OFF_TRAILER that names the seed and the
 * size, so that the resume side can rebuild the very same image from the
 * header alone.  Pages 1.. come in runs of 1..64 pages of one kind.
 */
#ifndef TORPOR_SIM_PAGES_H
#define TORPOR_SIM_PAGES_H

#include <stdbool.h>
#include <stdint.h>

#include "snapshot-spec.h"

#define SIM_MAGIC		"TORPORSIM"
#define SIM_FORMAT_VERSION	1
#define SIM_OFF_TRAILER		512	/* char magic[16] */
#define SIM_OFF_FORMAT		528	/* u32 */
#define SIM_OFF_PAGE_SIZE	532	/* u32 */
#define SIM_OFF_SEED		536	/* u64 */
#define SIM_OFF_BYTES		544	/* u64 */
/* The simulated firmware memory map the image was written under, the
 * stand-in for x86's e820 digest: $TORPOR_SIM_MEMORY_MAP at hibernation,
 * NUL-padded; all zero (as in images of older sims) when it was unset. */
#define SIM_OFF_MEMORY_MAP	552	/* char[32] */
#define SIM_MEMORY_MAP_SIZE	32

/* Runs of one kind never cross a block of this many data pages. */
#define SIM_RUN_BLOCK		64

enum sim_page_kind {
	SIM_PAGE_HEADER,
	SIM_PAGE_ZERO,
	SIM_PAGE_CODE,		/* x86-like machine code */
	SIM_PAGE_TEXT,		/* words and lines */
	SIM_PAGE_RANDOM,	/* incompressible (already compressed data) */
	SIM_PAGE_HEAP,		/* pointers, small integers, zero padding */
	SIM_PAGE_KIND_MAX,
};

const char *sim_page_kind_name(enum sim_page_kind kind);

/* The kind of page `page` (0 is the header) in the image of `seed`. */
enum sim_page_kind sim_page_kind(uint64_t seed, uint64_t page);

/* Fill buf (SIM_PAGE_SIZE bytes) with data page `page` >= 1. */
void sim_generate_page(uint64_t seed, uint64_t page, void *buf);

/* Fill buf with the header page of an image of `size` bytes. */
void sim_generate_header(uint64_t seed, uint64_t size, const char *release,
			 void *buf);

/* Write the simulated kernel's architecture into a header page: the
 * machine into its utsname, the memory map into its trailer. */
void sim_header_set_arch(void *buf, const char *machine,
			 const char *memory_map);

/* LINUX_VERSION_CODE of a release such as "6.1.0-18-amd64" (0 when it
 * does not start with two numbers), as the header page carries it. */
uint32_t sim_version_code(const char *release);

/*
 * The data pages of one image, made one after the other: the same bytes
 * as sim_generate_page(), faster, since what neighbouring pages share is
 * kept (the run layout of their block, and the image's code and text
 * libraries, about 0.9 MiB, made at the first page that needs them).
 */
struct sim_library;
struct sim_pages {
	uint64_t seed;
	uint64_t cached_block;
	bool have_block;
	uint8_t kinds[SIM_RUN_BLOCK];
	struct sim_library *lib;
};

/* Start making the pages of seed's image (g's memory is the caller's). */
void sim_pages_init(struct sim_pages *g, uint64_t seed);

/* Fill buf (SIM_PAGE_SIZE bytes) with data page `page` >= 1. */
void sim_pages_fill(struct sim_pages *g, uint64_t page, void *buf);

/* Free what g kept; it can then be started again. */
void sim_pages_release(struct sim_pages *g);

#endif
