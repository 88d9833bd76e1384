/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_KERNEL_LOCATION_H
#define TORPOR_KERNEL_LOCATION_H

#include <stdbool.h>

/*
 * torpor resume-args --kernel: hand the image's location, as the kernel
 * command line words `words` name it ("resume=SPEC [resume_offset=N]"),
 * to the running kernel: the offset to /sys/power/resume_offset, the
 * device's MAJ:MIN to /sys/power/resume.  systemd >= 255's logind offers
 * hibernation on a machine that did not boot through EFI only when the
 * kernel has a resume device that matches an active swap area; this
 * gives it torpor's without a resume= word that the kernel, the
 * initramfs or the initrd's systemd would act on at the next boot.
 * (Writing /sys/power/resume makes the kernel look there for an image of
 * its own; torpor's signature is not one.)  /sys is sysroot()'s.  Returns
 * 0 or -errno, logged.
 */
int kernel_location_apply(const char *words);

/*
 * Whether the next boot needs the location words on its kernel command
 * line: only a location inside a file system (a swap file, the file
 * writer: resume_offset=), which the initramfs cannot read before it
 * mounts that file system.  A partition or a device is found through the
 * configuration the initramfs carries, and a resume= word for it only
 * makes the initramfs's own resume step wait for a swap signature that
 * torpor's image has replaced.
 */
bool kernel_location_words_needed(const char *words);

#endif
