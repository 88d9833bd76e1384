/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The simulated snapshot device (snapshot-sim.c): what the programs and
 * tests that link the simulator may ask of it besides the snapshot
 * interface (snapshot.h), and the tests' levers on the machine it
 * simulates.  Linked, it is the source of "sim:SIZE[:SEED]" specs.
 */
#ifndef TORPOR_SNAPSHOT_SIM_H
#define TORPOR_SNAPSHOT_SIM_H

#include <stdint.h>

#include "snapshot.h"

/*
 * The levers, environment variables read by the simulated device only:
 * the kernel release it runs as (default: the running kernel's), the
 * machine it runs as (written into the header page's utsname; "x86_64",
 * the default, judges images by the memory map, any other by the
 * release), the name of the firmware memory map it sees, the path whose
 * filesystem stands for its root filesystem (default "/"), and a shell
 * command run while it is "off" (the next boot).
 */
#define SIM_KERNEL_RELEASE_ENV	"TORPOR_SIM_KERNEL_RELEASE"
#define SIM_MACHINE_ENV		"TORPOR_SIM_MACHINE"
#define SIM_MEMORY_MAP_ENV	"TORPOR_SIM_MEMORY_MAP"
#define SIM_ROOT_GUARD_ENV	"TORPOR_SIM_ROOT_GUARD"
#define SIM_NEXT_BOOT_ENV	"TORPOR_SIM_NEXT_BOOT"

/* Open a simulated device; snapshot_open() calls it for sim specs. */
int snapshot_sim_open(const char *spec, enum snapshot_mode mode,
		      struct snapshot **ret);

/*
 * torpor bench's premade image: make pages 1.. of the sim image (size,
 * seed) once, into memory that this process and the children it forks
 * share.  A sim of that image then hands out and checks those pages
 * instead of generating them (the same bytes), so that a benchmark
 * measures the pipeline more than the generator.  It takes `size` bytes
 * of memory until snapshot_sim_premade_drop().  0 or -errno (no memory:
 * the sim generates as before).
 */
int snapshot_sim_premake(uint64_t size, uint64_t seed);
void snapshot_sim_premade_drop(void);

/*
 * The first page a resume-mode sim found different from its image:
 * returns 1 and sets *ret_page, or 0 when every page so far matched.
 * -EINVAL when s is not a sim.
 */
int sim_first_mismatch(const struct snapshot *s, uint64_t *ret_page);

/* The pages a sim took from the premade image (snapshot_sim_premake())
 * instead of generating them; 0 when s is not a sim. */
uint64_t sim_premade_served(const struct snapshot *s);

/* How the last cycle left a hibernate-mode sim: "poweroff", "reboot",
 * "suspend", or NULL (not yet, or s is not a sim). */
const char *sim_after(const struct snapshot *s);

#endif
