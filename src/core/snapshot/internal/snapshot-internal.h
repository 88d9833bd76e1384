/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Private to the snapshot sources (snapshot.c, snapshot-kernel.c, sim/)
 * and their tests: the layout of the image's first page and the kernel
 * source's constructor.
 */
#ifndef TORPOR_SNAPSHOT_INTERNAL_H
#define TORPOR_SNAPSHOT_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "snapshot.h"

/*
 * struct swsusp_info (kernel/power/power.h) as an x86_64 kernel lays it
 * out in the first page of the image:
 *
 *	struct new_utsname uts;		6 x char[65]: sysname, nodename,
 *					release, version, machine, domainname
 *	u32 version_code;		offset 392 (390 rounded up to 4)
 *	unsigned long num_physpages;	offset 400 (8-byte aligned)
 *	int cpus;			offset 408
 *	unsigned long image_pages;	offset 416
 *	unsigned long pages;		offset 424
 *	unsigned long size;		offset 432, struct ends at 440
 *
 * The struct is __aligned(PAGE_SIZE) and the kernel zeroes it before
 * filling it in, so the rest of the page is zero.  pages is the whole
 * image (data + metadata + this page), size = pages << PAGE_SHIFT,
 * image_pages the data pages only.  The kernel no longer sets cpus.
 *
 * Kernels built with CONFIG_ARCH_HIBERNATION_HEADER (x86 always is) do
 * not store the utsname at all: init_header_complete() hands the uts area
 * to arch_hibernation_header_save(), which writes a struct
 * restore_data_record there (jump_address, jump_address_phys, cr3,
 * magic, e820 checksum: five unsigned longs) and leaves version_code 0.
 * That is also why the kernel reports a mismatch as "architecture
 * specific data".  snapshot_parse_info() recognises that layout by the
 * magic at offset 24.
 */
#define SWSUSP_UTS_LEN			65
#define SWSUSP_OFF_SYSNAME		0
#define SWSUSP_OFF_NODENAME		65
#define SWSUSP_OFF_RELEASE		130
#define SWSUSP_OFF_VERSION		195
#define SWSUSP_OFF_MACHINE		260
#define SWSUSP_OFF_DOMAINNAME		325
#define SWSUSP_UTS_SIZE			390
#define SWSUSP_OFF_VERSION_CODE		392
#define SWSUSP_OFF_NUM_PHYSPAGES	400
#define SWSUSP_OFF_CPUS			408
#define SWSUSP_OFF_IMAGE_PAGES		416
#define SWSUSP_OFF_PAGES		424
#define SWSUSP_OFF_SIZE			432
#define SWSUSP_INFO_SIZE		440

/* x86's restore_data_record in the uts area (arch/x86/power/hibernate_64.c) */
#define SWSUSP_X86_RDR_SIZE		40
#define SWSUSP_X86_OFF_MAGIC		24
#define SWSUSP_X86_MAGIC_OLD		UINT64_C(0x23456789ABCDEF01)
#define SWSUSP_X86_MAGIC		UINT64_C(0x23456789ABCDEF02)

/* The kernel's log. */
#define KMSG_PATH		"/dev/kmsg"

/* Pick the hibernation code's lines out of kmsg records (text, len bytes)
 * and append them to said (NUL-terminated, size bytes), quoted, joined by
 * "; ", at most four; said is cut to fit.  For the kernel source's
 * refusal_said() and its tests. */
void snapshot_kmsg_pick(const char *text, size_t len, char *said, size_t size);

/* Open the kernel's source; snapshot_open() picks it for a path. */
int snapshot_kernel_open(const char *path, enum snapshot_mode mode,
			 struct snapshot **ret);

/* snapshot_kernel_block()'s reason: buf, or NULL when there is none. */
const char *snapshot_kernel_disabled_by(const char *lockdown_path,
					const char *cmdline_path, char *buf,
					size_t size);
/*
 * Why opening the snapshot device failed with EPERM, as one line in buf:
 * kernel lockdown (from lockdown_path, normally
 * /sys/kernel/security/lockdown), `nohibernate` on the command line
 * (cmdline_path, normally /proc/cmdline), or else secretmem / not
 * permitted.  Returns buf.
 */
const char *snapshot_kernel_eperm_reason(const char *lockdown_path,
					 const char *cmdline_path,
					 char *buf, size_t size);

#endif
