/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Before anything is frozen: can the next boot resume the image?  The
 * initramfs it loads must hold torpor-resume, the plugins of the configured
 * chain, a torpor.conf naming the same resume location and the key files
 * the chain reads at resume.  A stale initramfs otherwise loses the session
 * (or, worse, keeps an image a later boot restores over a filesystem
 * written since).
 */
#ifndef TORPOR_INITRAMFS_CHECK_H
#define TORPOR_INITRAMFS_CHECK_H

#include <stdbool.h>

#include "session.h"

struct initramfs_check_options {
	const char *boot_dir;	/* where auto looks; NULL: /boot */
	const char *release;	/* the kernel's; NULL: the running one */
	/* Check also where the cycle would not: a sim source with
	 * initramfs = auto (torpor setup checks what it built). */
	bool required;
	bool force;		/* what fails is a warning, not a refusal */
};

/*
 * Check the initramfs [torpor] initramfs names (auto: the running kernel's
 * /boot/initrd.img-RELEASE, else /boot/initramfs-RELEASE.img) against the
 * arranged session s.  initramfs = none, and auto on the sim source (unless
 * required), check nothing.  With auto on the kernel source and no
 * initramfs found, or when something a resume needs is missing, every
 * problem and the fix (update-initramfs -u, dracut -f) are logged and
 * -ESTALE is returned; with force they are warnings and 0 is returned.
 */
int initramfs_check(struct torpor_session *s,
		    const struct initramfs_check_options *o);

#endif
