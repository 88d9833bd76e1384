/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What a snapshot source's spec ([torpor] snapshot =) says: which source,
 * and for the simulator its size and seed.  The configuration checks a
 * spec when it reads it and the snapshot sources (snapshot.h) open what
 * it names, so its syntax sits below both.
 */
#ifndef TORPOR_SNAPSHOT_SPEC_H
#define TORPOR_SNAPSHOT_SPEC_H

#include <stdbool.h>
#include <stdint.h>

#include <torpor/plugin.h>

/* The simulator's pages, and its image when the spec names no size. */
#define SIM_PAGE_SIZE		4096
#define SIM_DEFAULT_SIZE	(UINT64_C(64) << 20)
#define SIM_DEFAULT_SEED	1

/* The source torpor reads when the configuration names none. */
#define SNAPSHOT_DEFAULT_SPEC	"/dev/snapshot"

/*
 * Which kind of source a spec names: the sim for "sim" and "sim:...", the
 * kernel for anything else.  Says nothing about whether spec is valid.
 */
enum torpor_snapshot_kind snapshot_spec_kind(const char *spec);

/*
 * The one parser of the simulator's spec: "sim", "sim:SIZE" or
 * "sim:SIZE:SEED".  SIZE is bytes with an optional K, M, G or T suffix
 * (either case), a positive multiple of the sim's page size; SEED is
 * decimal.  *ret_named says whether SIZE (and SEED) were given; without
 * them the defaults are returned.  -EINVAL when spec is malformed,
 * -ERANGE when a number does not fit in 64 bits, -EDOM when SIZE is zero
 * or not a multiple of the page size.  Outputs are untouched on failure.
 */
int snapshot_spec_parse(const char *spec, uint64_t *ret_size,
			uint64_t *ret_seed, bool *ret_named);

/* Why snapshot_spec_parse() returned r, in words for a message. */
const char *snapshot_spec_strerror(int r);

#endif
