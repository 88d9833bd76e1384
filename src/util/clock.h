/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_CLOCK_H
#define TORPOR_CLOCK_H

/* Seconds since an arbitrary point (CLOCK_MONOTONIC): what every phase,
 * rate and deadline of torpor is measured with. */
double clock_now(void);

#endif
