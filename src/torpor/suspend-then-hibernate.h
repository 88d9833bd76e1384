/* SPDX-License-Identifier: GPL-2.0-or-later */
/* torpor suspend-then-hibernate (suspend-then-hibernate.c). */
#ifndef TORPOR_SUSPEND_THEN_HIBERNATE_H
#define TORPOR_SUSPEND_THEN_HIBERNATE_H

#include <stdint.h>

/* systemd 252's HibernateDelaySec= when it is not set and the machine has
 * no battery: 2 hours. */
#define S2H_DEFAULT_DELAY (2 * 3600)

struct s2h_args {
	const char *delay;	/* --delay, or NULL */
	const char *config;	/* --config, or NULL: the default file */
	const char *plugin_dir;	/* --plugin-dir, or NULL */
	/* The hibernation step (`torpor hibernate` with the system-sleep
	 * hooks told suspend-then-hibernate): its exit status. */
	int (*hibernate)(void);
};

/*
 * Parse a systemd time span ("90", "90s", "5min", "1h 30min", "1.5h",
 * "infinity": UINT64_MAX) into whole seconds, rounded up.  -EINVAL when it
 * is not one, -ERANGE when it is too large.
 */
int s2h_parse_timespan(const char *text, uint64_t *ret_seconds);

/* Suspend to RAM with an RTC wake alarm after the delay; if the alarm woke
 * the machine, hibernate through args->hibernate.  The exit status. */
int torpor_suspend_then_hibernate(const struct s2h_args *args);

#endif
