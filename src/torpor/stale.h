/* SPDX-License-Identifier: GPL-2.0-or-later */
#ifndef TORPOR_STALE_H
#define TORPOR_STALE_H

/*
 * torpor invalidate --stale: wait up to wait_seconds for the configured
 * writer's storage; discard an image found there (stale once the system
 * has booted), logging one line with the reason the initramfs left.
 * Silent when there is no image.  Returns the exit status: 0 also when
 * the storage never appeared (said in one line), 1 when the image could
 * not be discarded or the configuration is wrong.
 */
int torpor_invalidate_stale(const char *config_path, const char *plugin_dir,
			    unsigned wait_seconds);

#endif
