/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A one-shot boot of the running kernel's entry, set before the freeze
 * and taken back when the cycle ends (failed, cancelled, --test, or
 * resumed): GRUB's next_entry in grubenv, systemd-boot's
 * LoaderEntryOneShot in efivarfs.  The boot loader's default is never
 * touched, and what was there before (a one-shot of the user's, or none)
 * is what is left afterwards.
 *
 * grubenv is written in place, its 1024 bytes at offset 0, as GRUB
 * writes it, after the file is checked again through the descriptor
 * written to: a regular file of 1024 bytes, one link, root's and
 * writable by root alone, in a folder of root's alone, reached without
 * a symbolic link, and holding the very block the plan read (a change in
 * between is refused, never merged).
 */
#ifndef TORPOR_BOOT_ONCE_H
#define TORPOR_BOOT_ONCE_H

#include <stdbool.h>
#include <stddef.h>

#include "next-boot.h"

/* systemd's loader variables: 4 bytes of attributes, then the UTF-16LE
 * string and its NUL. */
#define BOOT_ONCE_EFIVAR_MAX (4 + 2 * BOOT_NAME_SIZE)

struct boot_once {
	enum boot_loader loader;	/* BOOT_LOADER_UNKNOWN: nothing set */
	char root[256];
	char id[BOOT_NAME_SIZE];	/* the entry the one-shot names */
	/* GRUB: the block before and the one written; the one-shot the
	 * user had set, if any. */
	char before[GRUBENV_SIZE];
	char written[GRUBENV_SIZE];
	char prev_next[BOOT_NAME_SIZE];
	/* systemd-boot: LoaderEntryOneShot's file before (attributes and
	 * data), prev_len 0 when there was none, and the one written. */
	unsigned char prev_var[BOOT_ONCE_EFIVAR_MAX];
	size_t prev_len;
	unsigned char var[BOOT_ONCE_EFIVAR_MAX];
	size_t var_len;
};

/*
 * Set the one-shot that p (NEXT_BOOT_REDIRECT) planned, then read the boot
 * loader again to make sure the next boot now starts p->running.  0 with
 * *ret filled (for boot_once_restore()), or -errno with the reason in
 * why and nothing changed (what was written is taken back).
 */
int boot_once_set(const struct next_boot *p, struct boot_once *ret,
		  char *why, size_t why_size);

/*
 * Take the one-shot back: what was there before is put back when the
 * one-shot is still torpor's, or was used by the boot loader (GRUB
 * clears next_entry, systemd-boot removes LoaderEntryOneShot) while
 * another one had been set before.  A one-shot someone else set since is
 * left alone (said in why, returns -EBUSY).  Nothing set: 0.
 */
int boot_once_restore(struct boot_once *o, char *why, size_t why_size);

#endif
