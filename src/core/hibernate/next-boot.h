/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * What the next boot means for an image written now (issue 42): the
 * boot loader's answer (bootloader.h) judged against the running
 * kernel's release.  torpor status and torpor setup say it; the cycle
 * refuses on it, or sets a one-shot boot of the running kernel's entry
 * (boot-once.h).  Only the same release is known to resume an image:
 * whether another kernel's x86-64 header check passes cannot be told
 * ahead.
 */
#ifndef TORPOR_NEXT_BOOT_H
#define TORPOR_NEXT_BOOT_H

#include <stdbool.h>

#include "bootloader.h"
#include "snapshot.h"

enum next_boot_verdict {
	/* Cannot tell, and nothing is refused: no boot loader torpor
	 * knows (a kernel started by QEMU -kernel, a container, a test
	 * root), its files unreadable, or an entry whose kernel it cannot
	 * name and no one-shot to make sure. */
	NEXT_BOOT_UNKNOWN,
	NEXT_BOOT_RUNNING,	/* the running kernel's release boots */
	NEXT_BOOT_REDIRECT,	/* another kernel; a one-shot of the running
				 * kernel's entry makes the next boot its */
	NEXT_BOOT_REFUSE,	/* another release, no one-shot possible */
};

/* Large (the boot loader's menu): allocate it. */
struct next_boot {
	struct boot_next b;
	bool inspected;		/* boot_next_inspect() answered 0 */
	enum next_boot_verdict verdict;
	char root[256];		/* where the boot loader's files are */
	char running[BOOT_RELEASE_SIZE];
	char release[BOOT_RELEASE_SIZE]; /* the next boot's, "" unknown */
	char once_id[BOOT_NAME_SIZE];	/* REDIRECT: what the one-shot names */
	char line[1024];	/* what it means, for status and setup */
	char fix[512];		/* REFUSE: what the user can do */
};

/* The verdict's word in JSON: "unknown", "running", "redirect",
 * "refuse". */
const char *next_boot_verdict_name(enum next_boot_verdict v);

/*
 * Look at the boot loader under root ("" or "/" for the machine's) for a
 * kernel of release running, and fill *ret (never fails: what cannot be
 * read is NEXT_BOOT_UNKNOWN with the reason in line).
 */
void next_boot_plan(const char *root, const char *running,
		    struct next_boot *ret);

/*
 * The root the boot loader's files are read under for a snapshot source
 * of that kind: sysroot() for the kernel's device ("", the machine's,
 * but in a test); NULL for the simulated device without a test's root
 * (its resume is torpor-resume run by hand: no boot).
 */
const char *next_boot_root(enum torpor_snapshot_kind kind);

#endif
