/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * Naming block devices (device-names.c): a specification to a /dev node,
 * a device number to its node, the UUID of what a device holds.
 */
#ifndef TORPOR_BD_DEVICE_NAMES_H
#define TORPOR_BD_DEVICE_NAMES_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/*
 * Turn a device specification (a path, UUID=, LABEL=, PARTUUID=,
 * PARTLABEL=, or MAJ:MIN) into a /dev path in buf.  Tries /dev/disk/by-*
 * first and otherwise scans /sys/class/block, reading the superblocks of
 * swap areas (including ones that carry torpor's signature), ext2/3/4, xfs
 * and btrfs, and GPT partition entries.  -ENODEV when nothing matches.
 */
int bd_resolve(const char *spec, char *buf, size_t size);

/* bd_resolve() of UUID= with these 16 bytes; -ENODEV when no device has
 * it. */
int bd_resolve_uuid(const uint8_t uuid[16], char *buf, size_t size);

/* bd_resolve(), then the number of the block device it names into *ret:
 * -ENOTBLK when the path is something else. */
int bd_resolve_dev(const char *spec, char *buf, size_t size, dev_t *ret);

/* The /dev path of block device dev (via /sys/dev/block/MAJ:MIN/uevent). */
int bd_devnode(dev_t dev, char *buf, size_t size);

/* The kernel's new_encode_dev() form of dev, as SNAPSHOT_SET_SWAP_AREA
 * wants it. */
uint32_t bd_kernel_dev(dev_t dev);

/*
 * The UUID (swap area or filesystem) of the block device at path, as the
 * kernel's resume= accepts it ("01234567-89ab-..."), into buf.  -ENOENT
 * when the device has none that we recognise.
 */
int bd_uuid_of(const char *path, char *buf, size_t size);

/* A 16-byte UUID as text ("01234567-89ab-..."; buf of 37 bytes or more). */
void bd_format_uuid(const uint8_t u[16], char *buf, size_t size);

/* Whether the n bytes at p are all zero. */
bool bd_all_zero(const uint8_t *p, size_t n);

#endif
