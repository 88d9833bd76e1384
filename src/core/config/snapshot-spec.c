/* SPDX-License-Identifier: GPL-2.0-or-later */
#include <errno.h>
#include <string.h>

#include "config.h"
#include "snapshot-spec.h"
#include "text.h"

enum torpor_snapshot_kind
snapshot_spec_kind(const char *spec)
{
	if (spec && strncmp(spec, "sim", 3) == 0 &&
	    (spec[3] == '\0' || spec[3] == ':'))
		return TORPOR_SNAPSHOT_SIM;
	return TORPOR_SNAPSHOT_KERNEL;
}

/* SIZE, then ":SEED" or the end; p is just after "sim:". */
static int
parse_size_seed(const char *p, uint64_t *ret_size, uint64_t *ret_seed)
{
	uint64_t size, seed = SIM_DEFAULT_SEED;
	int r, r_seed = 0;

	r = config_parse_size_prefix(p, true, &p, &size);
	if (r == -EINVAL)
		return r;
	if (*p == ':') {
		r_seed = config_parse_u64_prefix(p + 1, &p, &seed);
		if (r_seed == -EINVAL)
			return r_seed;
	}
	/* Junk is the first thing to say: it may be why a number is long. */
	if (*p != '\0')
		return -EINVAL;
	if (r < 0 || r_seed < 0)
		return -ERANGE;
	if (size == 0 || size % SIM_PAGE_SIZE)
		return -EDOM;
	*ret_size = size;
	*ret_seed = seed;
	return 0;
}

int
snapshot_spec_parse(const char *spec, uint64_t *ret_size, uint64_t *ret_seed,
		    bool *ret_named)
{
	uint64_t size = SIM_DEFAULT_SIZE, seed = SIM_DEFAULT_SEED;
	bool named = false;
	int r;

	if (snapshot_spec_kind(spec) != TORPOR_SNAPSHOT_SIM)
		return -EINVAL;
	if (spec[3] == ':') {
		r = parse_size_seed(spec + 4, &size, &seed);
		if (r < 0)
			return r;
		named = true;
	}
	*ret_size = size;
	*ret_seed = seed;
	*ret_named = named;
	return 0;
}

const char *
snapshot_spec_strerror(int r)
{
	switch (r) {
	case 0:
		return "valid";
	case -ERANGE:
		return "a number does not fit in 64 bits";
	case -EDOM:
		return "SIZE must be a positive multiple of "
		       TEXT_OF(SIM_PAGE_SIZE) " bytes";
	}
	return "expected sim, sim:SIZE or sim:SIZE:SEED, SIZE in bytes with "
	       "an optional K, M, G or T suffix, SEED a decimal number";
}
