/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The hibernation cycle (doc/design.md, "The cycle"): one function for the
 * daemon and for `torpor hibernate --direct`.
 */
#ifndef TORPOR_CYCLE_H
#define TORPOR_CYCLE_H

#include <signal.h>
#include <stdbool.h>
#include <stdint.h>

#include "chain.h"
#include "cycle-phase.h"
#include "pool.h"
#include "session.h"
#include "stream-out.h"

/* Called on the cycle's thread when a phase begins (done = false) and when
 * it ends (done = true); with user space frozen between FREEZE and RESUMED,
 * so it must not wait on another process. */
typedef void (*cycle_phase_fn)(void *ctx, enum cycle_phase p, bool done);

struct cycle_options {
	bool test;		/* write the image, then thaw and return */
	/* Hibernate even when the initramfs the next boot loads lacks what
	 * a resume needs (initramfs-check.h): the failed check is a
	 * warning. */
	bool force;
	/* Told after each chunk of the stream (NULL: nobody listens);
	 * progress_print() logs it. */
	stream_progress_fn progress;
	void *progress_ctx;
	cycle_phase_fn phase;	/* NULL: nobody listens */
	void *phase_ctx;
	/* When non-NULL and set (by a signal handler or another thread)
	 * before the point of no return (the commit), the cycle aborts with
	 * -ECANCELED: tasks thawed, image invalidated. */
	const volatile sig_atomic_t *cancel;
	/* When non-NULL, filled with the phase times of this cycle (in the
	 * resumed system: those measured before the snapshot plus the ones
	 * the image-writing side recorded, when known). */
	struct cycle_times *times;
	/* What the plugins' sleep_event() is told (plugin.h); NULL: the
	 * sleep [torpor] after makes, "hibernate" or "hybrid-sleep".
	 * suspend-then-hibernate's second step gives
	 * CYCLE_SLEEP_S2H_HIBERNATE. */
	const char *sleep_action;
};

/* systemd-sleep's words for suspend-then-hibernate's hibernation step:
 * the hooks get "suspend-then-hibernate", SYSTEMD_SLEEP_ACTION=hibernate. */
#define CYCLE_SLEEP_S2H_HIBERNATE "suspend-then-hibernate/hibernate"

/* How many bytes of memory the image will take, before it is taken: the
 * sim's size, else the smaller of /sys/power/image_size (the kernel
 * shrinks the image to it when it can) and the memory in use; 0 when
 * unknown. */
uint64_t cycle_expected_image_bytes(enum torpor_snapshot_kind kind,
				    const char *spec);

/* "WHAT: phases (s): program-start S, start-up S, ..." on stderr: the
 * seconds from exec to the cycle (program_start; left out when negative),
 * then the phases before `end` (CYCLE_N_PHASES: all) that ran in this
 * process.  In a resumed system write, sync and power-off ran in the
 * process that wrote the image, whose memory is gone: that one printed
 * them before the power-off. */
void cycle_print_times(const char *what, double program_start,
		       const struct cycle_times *t, enum cycle_phase end);

/*
 * What a cycle needs before the freeze, built ahead of it: the chain, the
 * plugins initialised for a cycle, memory and the header's room checked,
 * and every buffer of the stream (the pool's slots, worker buffers and
 * thread stacks, the heap the filter states will take, the writer's
 * buffer, the page read ahead) allocated and touched.  torpord builds it
 * when it loads its configuration, so that its errors are found then and a
 * request goes straight to the freeze (only the writer is initialised
 * again when the cycle begins, so that where it writes is current);
 * torpor hibernate --direct builds it
 * at the start of its cycle.  A plugin is initialised for one cycle
 * (plugin.h): a cycle spends the prepared state, and torpord builds it
 * again once the cycle is over.  Whatever it holds is in the image, as it
 * was when the cycle allocated it itself.
 */
struct cycle_prepared {
	struct torpor_session *s;	/* NULL: nothing prepared */
	struct chain chain;
	struct pool pool;		/* points at chain: never copied */
	struct stream_out out;
	uint8_t *first_page;
	unsigned threads;		/* the pool's, within the memory room */
	bool write_thread;		/* the stream's writer thread: decided
					 * once, for the memory check and the
					 * buffers alike */
	bool got;			/* registry_get() taken */
	bool initialised;		/* registry_initialise(1) done */
	bool ready;			/* all of it */
};

/* Build p (in place) for the arranged session s and pages of page_size
 * bytes (snapshot_page_size()).  On failure (logged) nothing is held. */
int cycle_prepare(struct torpor_session *s, size_t page_size,
		  struct cycle_prepared *p);

/* Give back all of it (plugins cleaned up); a zeroed p is fine. */
void cycle_prepared_free(struct cycle_prepared *p);

/* Run one cycle with the arranged session.  Returns 0 once the system is
 * back (resumed, or --test done), -errno when it aborted (everything undone:
 * image invalidated, tasks thawed).  Refuses before freezing anything when
 * the plugins and buffers need more memory than is available, when their
 * saved configurations would not fit the image header, or when the writer
 * has no room. */
int cycle_hibernate(struct torpor_session *s, const struct cycle_options *o);

/* The same with what p holds, built by cycle_prepare() for s (or built
 * now, once the snapshot device is open, when p is zeroed).  p is spent
 * when it returns (everything given back). */
int cycle_hibernate_prepared(struct torpor_session *s, struct cycle_prepared *p,
			     const struct cycle_options *o);

#endif
