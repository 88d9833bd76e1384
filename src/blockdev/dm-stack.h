/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What device-mapper stacks under a block device (dm-stack.c). */
#ifndef TORPOR_BD_DM_STACK_H
#define TORPOR_BD_DM_STACK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Whether dev (/dev/dm-N or /dev/mapper/NAME) is a dm-crypt mapping that
 * /etc/crypttab opens with a new random key at each boot (key file
 * /dev/urandom, /dev/random or /dev/hw_random): 1, with its crypttab
 * words (name, source, key) in entry; else 0.  root prefixes /sys and
 * /etc ("" for the running system; a test root).
 */
int bd_random_key_swap(const char *root, const char *dev, char *entry, size_t size);

/* What lies under a block device: the dm-crypt
 * mappings and the LVM logical volumes, by their device-mapper names, the
 * device's own first, then down its slaves. */
#define BD_DM_STACK_MAX 4
struct bd_dm_stack {
	char crypt[BD_DM_STACK_MAX][128];
	unsigned n_crypt;
	char lvm[BD_DM_STACK_MAX][128];
	unsigned n_lvm;
};

/* Fill st for dev (none found: all zero).  root prefixes /sys ("" for
 * the running system). */
void bd_dm_stack(const char *root, dev_t dev, struct bd_dm_stack *st);

#endif
