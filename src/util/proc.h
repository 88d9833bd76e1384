/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What the programs read of /proc about the system and about themselves.
 * Nothing here logs: a value that cannot be read is 0 (or -1), and the
 * caller decides what that means. */
#ifndef TORPOR_PROC_H
#define TORPOR_PROC_H

#include <stddef.h>
#include <stdint.h>

/* A /proc/meminfo value ("MemTotal", "MemAvailable") in bytes; 0 when it
 * cannot be read. */
uint64_t proc_meminfo(const char *key);
/* The same from a meminfo file at path (a test's fake /proc). */
uint64_t proc_meminfo_at(const char *path, const char *key);

/* The number a line of /proc/self/status gives KEY ("Threads", "VmHWM"
 * in kB): 0, -ENOENT when there is no such line, -errno when the file
 * cannot be read.  *ret is untouched on failure. */
int proc_self_status(const char *key, uint64_t *ret);

/* The threads of this process (/proc/self/status); 0 when unknown. */
unsigned proc_thread_count(void);

/* Seconds since this process was started (exec, loading included), from
 * /proc/self/stat and CLOCK_BOOTTIME, to the kernel's clock tick; -1 when
 * unknown. */
double proc_process_age(void);

/*
 * What this process holds in memory, from /proc/self/status: " NAME N KiB"
 * for each of RssAnon, RssFile, RssShmem, VmLck and VmPTE it lists, in its
 * order, into buf (size bytes; "" when none).  -errno when the file cannot
 * be opened, else 0.
 */
int proc_footprint(char *buf, size_t size);

#endif
