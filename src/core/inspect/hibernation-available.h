/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Whether the running kernel lets anyone hibernate now, and why not: what
 * the kernel's own hibernation_available() checks (lockdown, nohibernate,
 * secretmem), read from its files under sysroot().  torpor status and
 * torpor setup both ask this, and say its reasons in their own words
 * around them.
 */
#ifndef TORPOR_HIBERNATION_AVAILABLE_H
#define TORPOR_HIBERNATION_AVAILABLE_H

#include <stddef.h>

enum hibernation_available {
	HIBERNATION_AVAILABLE,		/* /sys/power/state lists "disk" */
	HIBERNATION_STATE_UNREAD,	/* /sys/power/state could not be read */
	HIBERNATION_LOCKDOWN,		/* kernel lockdown (Secure Boot) */
	HIBERNATION_CMDLINE,		/* nohibernate, hibernate=no */
	HIBERNATION_SECRETMEM,		/* no "disk": a process holds secretmem */
	HIBERNATION_NO_DISK,		/* no "disk", and no cause seen */
};

/*
 * Which of the above; but for AVAILABLE and STATE_UNREAD, the reason as
 * one sentence in why (the lockdown's and the command line's are
 * snapshot_kernel_block()'s, which the snapshot device's refusal gives
 * too).
 */
enum hibernation_available hibernation_available(char *why, size_t size);

#endif
