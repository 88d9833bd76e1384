/* SPDX-License-Identifier: GPL-2.0-or-later */
/* Finding, checking and restoring an image: torpor-resume and torpor verify. */
#ifndef TORPOR_RESUME_H
#define TORPOR_RESUME_H

#include <stdbool.h>
#include <stdint.h>

#include "session.h"
#include "stream-in.h"

enum resume_mode {
	RESUME_RESTORE,		/* torpor-resume */
	RESUME_VERIFY,		/* torpor verify: read and check, change nothing */
	/* torpor status: every check a resume makes before it reads the
	 * stream (header, kernel, --test flag, chain), quietly: nothing is
	 * printed on stdout, nothing changes, the data is not read. */
	RESUME_INSPECT,
};

/* Why an image was refused: whether it could ever be resumed. */
enum resume_refusal {
	REFUSAL_NONE,
	REFUSAL_CORRUPT,	/* corrupt or tampered: never resumable */
	REFUSAL_KEY,		/* wrong passphrase: asking again may work */
	REFUSAL_ELSEWHERE,	/* another kernel, key, plugin set or
				 * configuration could resume it */
};

/* The phases of a resume, in order (`torpor-resume -v` prints them). */
enum resume_phase {
	RESUME_PHASE_START,	/* exec to resume_run(): loading, config, plugins */
	RESUME_PHASE_HEADER,	/* find the image, read and check its header,
				 * rebuild the chain, allocate */
	RESUME_PHASE_READ,	/* freeze, then read, check and decode every
				 * chunk and hand its pages on */
	RESUME_PHASE_RESTORE,	/* the atomic restore (returns only on the sim
				 * source: with the kernel, its time is the
				 * resumed system's to measure) */
	RESUME_N_PHASES
};

struct resume_options {
	enum resume_mode mode;
	bool noresume;		/* `noresume` on the kernel command line */
	/* Told after each chunk (NULL: nobody listens). */
	stream_progress_fn progress;
	void *progress_ctx;

	/* The result, set by every resume_run(): */
	enum resume_refusal refusal;	/* why, with EXIT_REFUSED */
	bool image_left;	/* an image was found and not invalidated */
	uint64_t pages_handed;	/* to the snapshot device, restored or not */
	bool restored;		/* the restore happened (the sim's returns) */
	/* Chunks decoded where the read-ahead ring holds them; the others
	 * (wrapping around its end, or larger than it) were copied out. */
	uint64_t chunks_in_place;
	/* The image's facts, once its header parsed (header_valid). */
	bool header_valid;
	bool test_image;	/* written by `hibernate --test` */
	bool stale_root;	/* refused: its root filesystem was mounted
				 * since it was written (the root guard) */
	/* Another kernel (release, or with the kernel's device its build)
	 * wrote the image; where the kernel judges images by its
	 * architecture header it is handed over all the same. */
	bool other_kernel;
	/* Refused because this is not the kernel that wrote it: by the
	 * release where the kernel compares releases, or by the kernel's own
	 * check of its header.  The kernel that wrote it could resume it. */
	bool wrong_kernel;
	uint8_t uuid[16];
	uint64_t created;	/* unix time */
	uint64_t page_count;
	uint32_t page_size;
	uint64_t stored_bytes;
	char kernel_release[65];
	/* The boot menu entry that starts the kernel that wrote it (format
	 * 4; "" when not recorded). */
	char boot_entry[IMAGE_BOOT_ENTRY_SIZE];
	/* What a restore left in the header's resume-stats slot (resumed_at
	 * 0: no restore). */
	struct image_resume_stats stats;
	/* Seconds per phase; one not reached is 0.  With verbose they are
	 * printed on stderr before the restore. */
	double times[RESUME_N_PHASES];
	bool verbose;
};

/*
 * Returns 0 (restored — on the sim source: restored and every page
 * verified —, verified, or no image), EXIT_REFUSED (an image exists and was
 * refused, nothing was restored; it is left as it was unless it was
 * already invalidated, and for a corrupt one the writer's refused() hook
 * ran), or a negative errno for any other error.  The stream is read
 * once: a resume hands pages to the snapshot device as it goes, and a
 * chunk refused half-way closes the device, which drops them.  Everything is said on stderr; the
 * one-line summary on stdout.
 */
int resume_run(struct torpor_session *s, struct resume_options *o);

/* After resume_run() returned r: whether an image that a later boot could
 * still resume remains on the storage (refused for a reason another kernel
 * or key could overcome, or an error before the image was invalidated).
 * The system must not boot normally over it. */
bool resume_left_resumable_image(const struct resume_options *o, int r);

/* Parse a kernel command line for noresume, resume= and resume_offset=;
 * the values are copied into the caller's buffers ("" when absent). */
void resume_parse_cmdline(const char *cmdline, bool *noresume,
			  char *resume, size_t resume_size,
			  char *offset, size_t offset_size);

#endif
